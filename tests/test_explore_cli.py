"""`rocketspec explore` as TLC runs: it stops at the first violation (breadth-first, so a shortest
counterexample), `--continue` searches on, and a search cut by `--max-states` is INCOMPLETE
(exit 4) with no liveness verdict: liveness needs the whole graph."""
from __future__ import annotations

import json
from dataclasses import replace

from click.testing import CliRunner

from rocketspec.cli import main
from rocketspec.model_checks.explorer import Explorer
from rocketspec.model_checks.scopes import load_scope
from rocketspec.spec.profiles import PROFILES

BUG = "bug-4215-rocketmq-4.9.3"


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _rejected_by_check(v):
    c = cli("check", v["trace"], "--json")
    assert c.exit_code == 1, c.output
    assert v["invariant"] in [x["invariant"] for x in json.loads(c.stdout)["violations"]]


def test_the_first_violation_stops_the_search_with_a_shortest_counterexample(tmp_path):
    r = cli("explore", "--scope", "bugs", "--profile", BUG, "--json", "--quiet", "--out-dir", tmp_path)
    assert r.exit_code == 1, r.output
    d = json.loads(r.stdout)
    assert d["stopped_at_first_violation"] is True and d["verdict"] == "violated"
    assert [v["invariant"] for v in d["violations"]] == ["INV-PULL-2"]
    # liveness is not judged on the part of the graph searched before the stop
    assert d["liveness"].startswith("not checked (the search stopped at the first violation")
    # found at once: a few hundred states of the scope, not the whole of it
    assert d["states_distinct"] < 5000
    for v in d["violations"]:
        _rejected_by_check(v)
    # shortest: no run of fewer moves violates anything
    depth = d["violations"][0]["depth"]
    shorter = Explorer(replace(load_scope("bugs"), max_depth=depth - 1), PROFILES[BUG]).run()
    assert shorter.bounded and shorter.violations == []


def test_continue_searches_on_past_the_first_violation(tmp_path):
    first = json.loads(cli("explore", "--scope", "bugs", "--profile", BUG, "--json", "--quiet", "--no-liveness",
                           "--out-dir", tmp_path / "a").stdout)
    r = cli("explore", "--scope", "bugs", "--profile", BUG, "--json", "--quiet", "--no-liveness", "--continue",
            "--max-states", 3000, "--out-dir", tmp_path / "b")
    assert r.exit_code == 1, r.output
    d = json.loads(r.stdout)
    assert d["stopped_at_first_violation"] is False and d["states_distinct"] == 3000 > first["states_distinct"]
    assert "INV-PULL-2" in [v["invariant"] for v in d["violations"]]
    for v in d["violations"]:
        _rejected_by_check(v)


def test_a_state_cap_is_incomplete_with_no_liveness_verdict(tmp_path):
    # liveness on: a graph cut by the cap has states never expanded, which would read as dead
    # ends; nothing is reported from it, the run is INCOMPLETE
    for scope, cap in (("tiny", 300), ("bugs", 1500)):
        r = cli("explore", "--scope", scope, "--max-states", cap, "--json", "--quiet", "--out-dir", tmp_path)
        assert r.exit_code == 4, r.output
        d = json.loads(r.stdout)
        assert d["complete"] is False and d["violations"] == [] and d["verdict"] == "holds"
        assert d["liveness"] == "not checked (the state cap stopped the search)"
        text = cli("explore", "--scope", scope, "--max-states", cap, "--quiet", "--out-dir", tmp_path).output
        assert "INCOMPLETE" in text and "liveness not checked" in text and "INV-LIVE" not in text


def test_a_complete_search_still_checks_liveness(tmp_path):
    r = cli("explore", "--scope", "tiny", "--json", "--quiet", "--out-dir", tmp_path)
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["complete"] is True and d["stopped_at_first_violation"] is False
    assert isinstance(d["liveness"], dict) and d["liveness"]["fairness"] == "strong"
