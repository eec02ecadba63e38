"""`rocketspec allocate`: JSON Lines in, JSON Lines out, bad lines answered, never a crash."""
from __future__ import annotations

import subprocess
import sys

import orjson
import pytest
from click.testing import CliRunner

from rocketspec.cli import main


def q(n, topic="topic_test", broker="brokerName"):
    return [[topic, broker, i] for i in range(n)]


def run(lines, *args):
    """Run the command on `lines` (dicts are JSON-encoded, str/bytes sent as they are)."""
    payload = b"".join(
        (orjson.dumps(line) if isinstance(line, dict) else line.encode() if isinstance(line, str) else line) + b"\n"
        for line in lines)
    result = CliRunner().invoke(main, ["allocate", *args], input=payload)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, [orjson.loads(line) for line in result.stdout_bytes.splitlines()]


def test_good_and_bad_lines_in_one_stream():
    code, out = run([
        {"id": 1, "strategy": "AVG", "mqs": q(10), "cids": ["c0", "c1", "c2", "c3"], "all": True},
        "this is not json",
        "",
        {"id": "two", "strategy": "AVG_BY_CIRCLE", "mqs": q(10), "cids": ["c0", "c1", "c2", "c3"], "cid": "c2"},
        {"id": 3, "strategy": "NOPE", "mqs": q(1), "cids": ["a"], "cid": "a"},
        "[1, 2]",
        {"id": 4, "strategy": "AVG", "mqs": [], "cids": ["a"], "cid": "a"},
        {"id": 5, "strategy": "AVG", "cids": ["a"], "cid": "a"},
    ])
    assert code == 0
    assert out[0] == {"id": 1, "ok": True, "allocation": {
        "c0": q(10)[0:3], "c1": q(10)[3:6], "c2": q(10)[6:8], "c3": q(10)[8:10]}}
    assert out[1]["ok"] is False and out[1]["line"] == 2 and out[1]["error"].startswith("line 2: not valid JSON")
    assert out[2] == {"id": "two", "ok": True, "allocation": {"c2": [q(10)[2], q(10)[6]]}}
    assert out[3]["id"] == 3 and out[3]["line"] == 5 and "expected one of AVG" in out[3]["error"]
    assert out[4]["line"] == 6 and "expected a JSON object" in out[4]["error"]
    assert out[5] == {"id": 4, "ok": False, "error": "mqAll is null or mqAll empty",
                      "exception": "IllegalArgumentException"}
    assert out[6]["id"] == 5 and out[6]["line"] == 8 and "missing field 'mqs'" in out[6]["error"]
    assert len(out) == 7  # the blank line is skipped


def test_consistent_hash_vectors_and_virtual_nodes():
    cids = [f"CID-{i}" for i in range(3)]
    code, out = run([
        {"id": 1, "strategy": "CONSISTENT_HASH", "mqs": q(8), "cids": cids, "all": True},
        {"id": 2, "strategy": "CONSISTENT_HASH", "mqs": q(8), "cids": cids, "all": True, "virtual_node_cnt": 0},
        {"id": 3, "strategy": "CONSISTENT_HASH", "mqs": q(8), "cids": cids, "cid": "CID-0", "virtual_node_cnt": -1},
        {"id": 4, "strategy": "CONSISTENT_HASH", "mqs": q(8), "cids": cids, "cid": "CID-0", "virtual_node_cnt": True},
        {"id": 5, "strategy": "CONSISTENT_HASH", "mqs": q(8), "cids": cids, "cid": "CID-0", "virtual_node_cnt": 10**9},
    ])
    assert code == 0
    owner = {tuple(mq)[2]: cid for cid, got in out[0]["allocation"].items() for mq in got}
    assert [owner[i] for i in range(8)] == [f"CID-{i}" for i in (2, 0, 1, 2, 2, 2, 0, 0)]
    assert out[1]["allocation"] == {c: [] for c in cids}
    assert out[2]["ok"] is False and out[2]["error"] == "illegal virtualNodeCnt :-1"
    assert "line 4" in out[3]["error"] and "expected an integer" in out[3]["error"]
    assert "line 5" in out[4]["error"] and "at most" in out[4]["error"]


def test_config_and_machine_room():
    rooms = [["topic", "room1@broker-a" if i < 5 else "room2@broker-b", i] for i in range(10)]
    code, out = run([
        {"id": 1, "strategy": "CONFIG", "mqs": None, "cids": None, "cid": "x"},
        {"id": 2, "strategy": "CONFIG", "mqs": q(2), "cids": ["a", "b"], "all": True, "config_mqs": [["t", "b", 9]]},
        {"id": 3, "strategy": "MACHINE_ROOM", "mqs": rooms, "cids": ["CID_PREFIX0", "CID_PREFIX1"], "all": True,
         "consumeridcs": ["room1"]},
        {"id": 4, "strategy": "MACHINE_ROOM", "mqs": rooms, "cids": ["a"], "cid": "a"},
    ])
    assert code == 0
    assert out[0] == {"id": 1, "ok": True, "allocation": {"x": None}}
    assert out[1]["allocation"] == {"a": [["t", "b", 9]], "b": [["t", "b", 9]]}
    got = {cid: [mq[2] for mq in mqs] for cid, mqs in out[2]["allocation"].items()}
    assert got == {"CID_PREFIX0": [0, 1, 4], "CID_PREFIX1": [2, 3]}
    assert out[3]["ok"] is False and out[3]["exception"] == "NullPointerException"


def test_sort_like_rebalance_impl():
    mqs = [["t", "b", 3], ["t", "b", 1], ["t", "\ue000", 0], ["t", "\U0001F600", 0], ["t", "b", 1]]
    cids = ["\ue000", "\U0001F600", "a"]
    code, out = run([
        {"id": "sorted", "strategy": "AVG_BY_CIRCLE", "mqs": mqs, "cids": cids, "all": True, "sort": True},
        {"id": "as given", "strategy": "AVG_BY_CIRCLE", "mqs": mqs, "cids": cids, "all": True},
    ])
    assert code == 0
    # Java order: "a" < "b" < U+1F600 (surrogates 0xD83D...) < U+E000; the duplicate queue goes.
    assert list(out[0]["allocation"]) == ["a", "\U0001F600", "\ue000"]
    assert out[0]["allocation"] == {"a": [["t", "b", 1], ["t", "\ue000", 0]],
                                    "\U0001F600": [["t", "b", 3]], "\ue000": [["t", "\U0001F600", 0]]}
    assert list(out[1]["allocation"]) == cids
    assert out[1]["allocation"]["\ue000"] == [["t", "b", 3], ["t", "\U0001F600", 0]]


@pytest.mark.parametrize("request_, expected", [
    ({"strategy": "AVG", "mqs": q(1), "cids": ["a"]}, "missing field 'cid'"),
    ({"strategy": "AVG", "mqs": q(1), "cids": ["a"], "cid": "a", "all": True}, "exclude each other"),
    ({"strategy": "AVG", "mqs": q(1), "cids": ["a"], "cid": 7}, "field 'cid': expected a string"),
    ({"strategy": "AVG", "mqs": q(1), "cids": ["a"], "all": "yes"}, "field 'all': expected true or false"),
    ({"strategy": "AVG", "mqs": q(1), "cids": "a", "cid": "a"}, "field 'cids': expected a list of strings"),
    ({"strategy": "AVG", "mqs": q(1), "cids": ["a", 1], "cid": "a"}, "field 'cids' item 1"),
    ({"strategy": "AVG", "mqs": [["t", "b"]], "cids": ["a"], "cid": "a"}, "field 'mqs' item 0: expected [topic"),
    ({"strategy": "AVG", "mqs": [["t", "b", True]], "cids": ["a"], "cid": "a"}, "field 'mqs' item 0"),
    ({"strategy": "AVG", "mqs": [["t", "b", 1.5]], "cids": ["a"], "cid": "a"}, "field 'mqs' item 0"),
    ({"strategy": "AVG", "mqs": [["t", "b", 2**31]], "cids": ["a"], "cid": "a"}, "outside the 32-bit"),
    ({"strategy": "AVG", "mqs": q(1), "cids": ["a"], "cid": "a", "sort": 1}, "field 'sort'"),
    ({"strategy": "AVG", "mqs": q(1), "cids": ["a"], "cid": "a", "profile": "rocketmq-0"}, "unknown profile"),
    ({"strategy": "AVG", "mqs": q(1), "cids": ["a"], "cid": "a", "profile": 5}, "field 'profile'"),
    ({"strategy": "AVG", "mqs": q(1), "cids": ["a"], "cid": "a", "cidz": 1}, "unknown field(s) 'cidz'"),
    ({"strategy": "CONFIG", "mqs": None, "cids": None, "cid": "a", "config_mqs": 3}, "field 'config_mqs'"),
    ({"strategy": "MACHINE_ROOM", "mqs": q(1), "cids": ["a"], "cid": "a", "consumeridcs": [1]},
     "field 'consumeridcs' item 0"),
    ({"mqs": q(1), "cids": ["a"], "cid": "a"}, "missing field 'strategy'"),
    ({"strategy": 1, "mqs": q(1), "cids": ["a"], "cid": "a"}, "got an integer"),
])
def test_bad_requests_name_the_line_and_the_expectation(request_, expected):
    code, out = run([{"id": {"any": ["json"]}, "strategy": "AVG", "mqs": q(1), "cids": ["a"], "cid": "a"},
                     {"id": 42, **request_}])
    assert code == 0
    assert out[0]["ok"] is True
    assert out[1]["id"] == 42 and out[1]["ok"] is False and out[1]["line"] == 2
    assert out[1]["error"].startswith("line 2: ") and expected in out[1]["error"]


def test_profiles_are_accepted_and_change_nothing():
    base = {"strategy": "CONSISTENT_HASH", "mqs": q(6), "cids": ["CID-0", "CID-1"], "all": True}
    code, out = run([base, {**base, "profile": "rocketmq-4.9.8"}, {**base, "profile": "rocketmq-5.3.3"},
                     {**base, "profile": None}])
    assert code == 0 and all(o["ok"] for o in out)
    assert len({orjson.dumps(o["allocation"]) for o in out}) == 1


def test_invalid_utf8_and_absent_id():
    code, out = run([b'{"strategy": "AVG", "x": "\xff"}', {"strategy": "AVG", "mqs": q(1), "cids": ["a"], "cid": "a"}])
    assert code == 0
    assert out[0]["line"] == 1 and "not valid UTF-8" in out[0]["error"]
    assert out[1] == {"id": None, "ok": True, "allocation": {"a": q(1)}}


def test_input_file_and_usage_errors(tmp_path):
    path = tmp_path / "requests.jsonl"
    path.write_bytes(orjson.dumps({"id": 1, "strategy": "AVG", "mqs": q(3), "cids": ["a", "b"], "all": True}) + b"\n")
    result = CliRunner().invoke(main, ["allocate", "--input", str(path)])
    assert result.exit_code == 0
    assert orjson.loads(result.stdout_bytes) == {"id": 1, "ok": True, "allocation": {"a": q(3)[:2], "b": q(3)[2:]}}
    missing = CliRunner().invoke(main, ["allocate", "--input", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 2 and "nope.jsonl" in missing.output


def test_subprocess_answers_each_line_before_the_input_ends():
    proc = subprocess.Popen([sys.executable, "-c", "from rocketspec.cli import main; main()", "allocate"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        proc.stdin.write(orjson.dumps({"id": 1, "strategy": "AVG", "mqs": q(2), "cids": ["a"], "cid": "a"}) + b"\n")
        proc.stdin.flush()
        first = orjson.loads(proc.stdout.readline())  # answered while stdin is still open
        assert first == {"id": 1, "ok": True, "allocation": {"a": q(2)}}
        rest, err = proc.communicate(b"oops\n", timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and err == b""
    assert orjson.loads(rest)["error"].startswith("line 2:")
