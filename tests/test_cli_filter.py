"""`rocketspec filter`: JSON Lines in, JSON Lines out, bad lines answered, never a crash."""
from __future__ import annotations

import subprocess
import sys

import orjson
import pytest
from click.testing import CliRunner

from rocketspec.cli import main

P4, P5 = "rocketmq-4.9.8", "rocketmq-5.3.3"


def run(lines, *args):
    """Run the command on `lines` (dicts are JSON-encoded, str/bytes sent as they are)."""
    payload = b"".join(
        (orjson.dumps(line) if isinstance(line, dict) else line.encode() if isinstance(line, str) else line) + b"\n"
        for line in lines)
    result = CliRunner().invoke(main, ["filter", *args], input=payload)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, [orjson.loads(line) for line in result.stdout_bytes.splitlines()]


@pytest.mark.parametrize("profile", [P4, P5])
def test_digest_vectors(profile):
    def req(i, expr, props):
        return {"id": i, "expr": expr, "props": props, "profile": profile}
    code, out = run([
        req(1, "A = 1", {"a": "1"}),
        req(2, "a > 5", {"a": "6"}),
        req(3, "a > 3", {"a": "3.5"}),
        req(4, "a > 3", {"a": "abc"}),
        req(5, "a = b", {"a": "2", "b": "2.0"}),
        req(6, "a = TRUE", {"a": "true"}),
        req(7, "a = TRUE", {"a": "TRUE"}),
        req(8, "a = TRUE", {"a": "yes"}),
        req(9, "a = 0.0", {}),
        {"id": 10, "tag": "TagA"},
        {"id": 11, "tag": "*"},
    ])
    assert code == 0
    assert out[0] == {"id": 1, "ok": True, "result": None, "matched": False}
    assert out[1] == {"id": 2, "ok": True, "result": True, "matched": True}
    for i in (2, 3):
        assert out[i]["ok"] is False and out[i]["phase"] == "evaluate"
        assert "NumberFormatException" in out[i]["error"]
    assert out[4] == {"id": 5, "ok": True, "result": False, "matched": False}
    assert out[5]["result"] is True and out[6]["result"] is True and out[7]["result"] is False
    assert out[8]["ok"] is False and out[8]["phase"] == "compile"
    assert "line 1, column 5" in out[8]["error"]
    assert out[9] == {"id": 10, "ok": True, "tags_code": 2598919}
    assert out[10] == {"id": 11, "ok": True, "tags_code": 42}


def test_string_functions_follow_the_profile():
    code, out = run([
        {"id": 1, "expr": "a CONTAINS 'b'", "props": {"a": "abc"}, "profile": P5},
        {"id": 2, "expr": "a CONTAINS 'b'", "props": {"a": "abc"}, "profile": P4},
        {"id": 3, "expr": "a NOT CONTAINS 'b'", "props": {"a": "abc"}, "profile": P4},
        {"id": 4, "expr": "a STARTSWITH 'a'", "props": {"a": "abc"}},
    ], "--profile", P4)
    assert code == 0
    assert out[0] == {"id": 1, "ok": True, "result": True, "matched": True}
    assert out[1] == {"id": 2, "ok": True, "result": False, "matched": False}  # 'CONTAINS' is an identifier
    assert out[2]["ok"] is False and out[2]["phase"] == "compile"
    assert out[3] == {"id": 4, "ok": True, "result": False, "matched": False}  # --profile 4.9.8 applied


def test_subscriptions():
    code, out = run([
        {"id": 1, "sub": "TagA || TagB"},
        {"id": 2, "sub": " * "},
        {"id": 3, "sub": None},
        {"id": 4, "sub": "||"},
        {"id": 5, "sub": "a > 1", "type": "SQL92"},
        {"id": 6, "sub": "", "type": "SQL92"},
        {"id": 7, "tag": None},
        {"id": 8, "tag": ""},
    ])
    assert code == 0
    assert out[0] == {"id": 1, "ok": True, "sub_string": "TagA || TagB", "expression_type": "TAG",
                      "tags": ["TagA", "TagB"], "codes": [2598919, 2598920]}
    assert out[1]["tags"] == ["*"] and out[1]["codes"] == [42]
    assert out[2] == {"id": 3, "ok": True, "sub_string": "*", "expression_type": "TAG", "tags": [], "codes": []}
    assert out[3]["ok"] is False and out[3]["phase"] == "subscription"
    assert out[4] == {"id": 5, "ok": True, "sub_string": "a > 1", "expression_type": "SQL92", "tags": [], "codes": []}
    assert out[5]["ok"] is False and out[5]["phase"] == "subscription"
    assert out[6]["tags_code"] == 0 and out[7]["tags_code"] == 0


def test_good_and_bad_lines_in_one_stream():
    code, out = run([
        {"id": 1, "expr": "a = 1", "props": {"a": "1"}},
        "this is not json",
        "",
        b"\xff\xfe{}",
        "[1, 2]",
        {"id": 2},
        {"id": 3, "expr": "a", "tag": "x"},
        {"id": 4, "expr": 5},
        {"id": 5, "expr": "a = 1", "props": {"a": 1}},
        {"id": 6, "expr": "a = 1", "props": ["a"]},
        {"id": 7, "expr": "a = 1", "profile": "rocketmq-0.0"},
        {"id": 8, "expr": "a = 1", "extra": True},
        {"id": 9, "tag": 5},
        {"id": 10, "sub": "a", "type": "CLASS"},
        {"expr": "a IS NULL"},
    ])
    assert code == 0
    assert out[0] == {"id": 1, "ok": True, "result": True, "matched": True}
    bad = out[1:-1]
    assert [o["line"] for o in bad] == [2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]
    for o in bad:
        assert o["ok"] is False and o["phase"] == "input"
        assert o["error"].startswith(f"line {o['line']}: ")
    assert "not valid JSON" in bad[0]["error"]
    assert "UTF-8" in bad[1]["error"]
    assert "expected a JSON object" in bad[2]["error"]
    assert bad[3]["id"] == 2 and '"expr", "tag" or "sub"' in bad[3]["error"]
    assert "exclude each other" in bad[4]["error"]
    assert "field 'expr'" in bad[5]["error"]
    assert "expected a string value" in bad[6]["error"]
    assert "field 'props'" in bad[7]["error"]
    assert "unknown profile" in bad[8]["error"]
    assert "unknown field" in bad[9]["error"]
    assert "field 'tag'" in bad[10]["error"]
    assert "field 'type'" in bad[11]["error"]
    assert out[-1] == {"id": None, "ok": True, "result": True, "matched": True}  # no id: null


def test_hostile_expressions_are_answered():
    code, out = run([
        {"id": 1, "expr": "(" * 10000 + "a" + ")" * 10000},
        {"id": 2, "expr": "x" * 300_000},
        {"id": 3, "expr": "NOT " * 1000 + "a"},     # RocketMQ compiles it too
        {"id": 4, "expr": "a = '\\u0000\U0001F600'", "props": {"a": "\x00\U0001F600"}},
        {"id": 5, "expr": "TRUE = a", "props": {"a": "true"}},
    ])
    assert code == 0
    assert [o["ok"] for o in out] == [False, False, True, True, False]
    assert "nest too deeply" in out[0]["error"] and "too long" in out[1]["error"]
    assert out[3]["result"] is False  # the literal holds a backslash, not NUL
    assert out[4]["phase"] == "evaluate" and "ClassCastException" in out[4]["error"]


def test_input_file_and_bad_profile_option(tmp_path):
    f = tmp_path / "in.jsonl"
    f.write_bytes(orjson.dumps({"id": "x", "tag": "TagA"}) + b"\n")
    code, out = run([], "--input", str(f))
    assert code == 0 and out == [{"id": "x", "ok": True, "tags_code": 2598919}]
    result = CliRunner().invoke(main, ["filter", "--profile", "nope"], input=b"")
    assert result.exit_code == 2 and "unknown profile" in result.output


def test_real_process_exit_code_and_no_traceback():
    payload = b'{"id":1,"expr":"a > 5","props":{"a":"6"}}\nnot json\n{"id":2,"tag":"TagA"}\n'
    proc = subprocess.run([sys.executable, "-c", "from rocketspec.cli import main; main()", "filter"],
                          input=payload, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert b"Traceback" not in proc.stderr
    lines = [orjson.loads(x) for x in proc.stdout.splitlines()]
    assert lines[0]["matched"] is True and lines[1]["line"] == 2 and lines[2]["tags_code"] == 2598919
