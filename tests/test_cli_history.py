"""`rocketspec history`: exit codes, the JSON report and the one error path."""
from __future__ import annotations

import os

import orjson
from click.testing import CliRunner

from rocketspec.cli import main

HERE = os.path.dirname(__file__)
REAL_BASIC = os.path.join(HERE, "fixtures", "real", "real-basic.jsonl")


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_a_clean_real_run_holds(tmp_path):
    res = cli("history", REAL_BASIC, "--json")
    assert res.exit_code == 0, res.output
    d = orjson.loads(res.stdout)
    assert d["ok"] and d["format"] == "trace" and d["complete"] and d["produced"] == 40
    assert {v["id"]: v["status"] for v in d["guarantees"]}["H-DELIVER-1"] == "holds"


def test_a_known_bug_run_exits_1_with_located_findings(tmp_path):
    out = tmp_path / "t.jsonl"
    assert cli("simulate", "--scenario", "bug-2724", "--profile", "bug-2724-rocketmq-4.9.1", "--out", out,
               "--quiet").exit_code == 0
    res = cli("history", out)
    assert res.exit_code == 1
    assert "H-RETRY-3    VIOLATED" in res.stdout and f"{out}:" in res.stdout


def test_lossy_declaration_turns_loss_into_unobserved(tmp_path):
    # drop every consume record of one message: lost when complete, unobserved when --lossy
    lines = open(REAL_BASIC).read().splitlines()
    victim = next(orjson.loads(ln)["msg_ids"][0] for ln in lines if '"consume_started"' in ln)
    kept = [ln for ln in lines if not ('"consume_' in ln and victim in ln)]
    # consume_finished has no msg ids: keep the trace valid by dropping its start only
    p = tmp_path / "cut.jsonl"
    p.write_text("\n".join(kept) + "\n")
    res = cli("history", p, "--format", "trace", "--json")
    d = orjson.loads(res.stdout)
    assert res.exit_code in (0, 1)
    lossy = orjson.loads(cli("history", p, "--lossy", "--json").stdout)
    assert lossy["ok"] and not lossy["complete"]


def test_bad_groups_file_is_bad_input(tmp_path):
    g = tmp_path / "groups.json"
    g.write_text('{"G": {"consume_mode": "SOMETIMES"}}')
    res = cli("history", REAL_BASIC, "--groups", g, "--json")
    assert res.exit_code == 2
    d = orjson.loads(res.stdout)
    assert d["verdict"] == "bad_input" and d["field"] == "G.consume_mode" and "ORDERLY" in d["message"]


def test_unknown_format_content_is_bad_input(tmp_path):
    p = tmp_path / "x.txt"
    p.write_text("hello world\n")
    res = cli("history", p)
    assert res.exit_code == 2 and "give --format" in res.stderr


def test_a_bad_groups_file_is_named_with_its_line_not_the_history(tmp_path):
    g = tmp_path / "groups.json"
    g.write_text('{\n  "G": {\n    "max_reconsume_times": 3,\n    "consume_mode": "SOMETIMES"\n  }\n}\n')
    d = orjson.loads(cli("history", REAL_BASIC, "--groups", g, "--json").stdout)
    assert d["verdict"] == "bad_input" and d["file"] == str(g) and d["line"] == 4, d
    assert d["field"] == "G.consume_mode"
    # a subscription's expression, at its own line; and the minimizer reads the file the same way
    g.write_text('{"G": {"subscriptions": {\n  "T": "TagA",\n  "U": 5}}}')
    for args in (["history", REAL_BASIC], ["minimize", REAL_BASIC, "--format", "trace", "-o", tmp_path / "m.jsonl"]):
        res = cli(*args, "--groups", g, "--json")
        d = orjson.loads(res.stdout)
        assert res.exit_code == 2 and d["file"] == str(g) and d["line"] == 3 and d["field"] == "G.subscriptions.U", d


def test_a_groups_file_that_is_not_json_names_its_line(tmp_path):
    g = tmp_path / "groups.json"
    g.write_text('{"G": {"consume_mode": "ORDERLY"},\n "G": {}}')
    res = cli("history", REAL_BASIC, "--groups", g, "--json")
    d = orjson.loads(res.stdout)
    assert res.exit_code == 2 and d["file"] == str(g) and d["line"] == 2 and "duplicate key" in d["message"]
