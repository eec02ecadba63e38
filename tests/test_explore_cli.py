"""`rocketspec explore` as TLC runs: it stops at the first violation (breadth-first, so a shortest
counterexample that `check` rejects), `--continue` searches on, a search cut by `--max-states`
is INCOMPLETE (exit 4), `--max-depth` is a bounded check, and bad input exits 2."""
from __future__ import annotations

import json

from click.testing import CliRunner

from rocketspec.cli import main
from rocketspec.model_checks.refexplore import RefExplorer
from rocketspec.model_checks.scopes import BUG_SCOPES, load_scope
from rocketspec.rocketmq.profiles import PROFILES

BUG = "bug-4215-rocketmq-4.9.3"


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def bug_scope_file(tmp_path, bug="#4215"):
    """The bug's scope (a named scope and overrides) as a scope file the CLI takes."""
    name, over = BUG_SCOPES[bug]
    d = load_scope(name, **over).to_dict()
    path = tmp_path / f"scope-{bug[1:]}.toml"
    path.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in d.items()))
    return path


def _rejected_by_check(v):
    c = cli("check", v["trace"], "--json")
    assert c.exit_code == 1, c.output
    assert v["invariant"] in [x["invariant"] for x in json.loads(c.stdout)["violations"]]


def test_the_first_violation_stops_the_search_with_a_shortest_counterexample(tmp_path):
    scope = bug_scope_file(tmp_path)
    r = cli("explore", "--scope", scope, "--profile", BUG, "--json", "--quiet", "--out-dir", tmp_path)
    assert r.exit_code == 1, r.output
    d = json.loads(r.stdout)
    assert d["stopped_at_first_violation"] is True and d["verdict"] == "violated"
    assert [v["invariant"] for v in d["violations"]] == [PROFILES[BUG].expected_violation]
    for v in d["violations"]:
        _rejected_by_check(v)
    # shortest: no run of fewer choices violates anything
    depth = d["violations"][0]["depth"]
    shorter = RefExplorer(load_scope(str(scope)), BUG, max_depth=depth - 1).run()
    assert shorter.bounded and shorter.complete and shorter.violations == []
    text = cli("explore", "--scope", scope, "--profile", BUG, "--quiet", "--out-dir", tmp_path).output
    assert "STOPPED at the first violation" in text and "rejects it" in text


def test_continue_searches_on_past_the_first_violation(tmp_path):
    scope = bug_scope_file(tmp_path)
    first = json.loads(cli("explore", "--scope", scope, "--profile", BUG, "--json", "--quiet",
                           "--out-dir", tmp_path / "a").stdout)
    r = cli("explore", "--scope", scope, "--profile", BUG, "--json", "--quiet", "--continue",
            "--out-dir", tmp_path / "b")
    assert r.exit_code == 1, r.output
    d = json.loads(r.stdout)
    assert d["stopped_at_first_violation"] is False and d["states_distinct"] > first["states_distinct"]
    assert PROFILES[BUG].expected_violation in [v["invariant"] for v in d["violations"]]
    for v in d["violations"]:
        _rejected_by_check(v)


def test_a_state_cap_is_incomplete(tmp_path):
    r = cli("explore", "--scope", "tiny", "--max-states", 50, "--json", "--quiet", "--out-dir", tmp_path)
    assert r.exit_code == 4, r.output
    d = json.loads(r.stdout)
    assert d["complete"] is False and d["violations"] == [] and d["verdict"] == "holds"
    # the cap is the whole search's, however many fault kinds it is split into, and with workers
    assert d["states_distinct"] <= 50 and len(d["fault_kinds"]) == 5
    d2 = json.loads(cli("explore", "--scope", "tiny", "--max-states", 50, "--workers", 2, "--json", "--quiet",
                        "--out-dir", tmp_path).stdout)
    assert d2["complete"] is False and d2["states_distinct"] <= 50
    text = cli("explore", "--scope", "tiny", "--max-states", 50, "--quiet", "--out-dir", tmp_path).output
    assert "INCOMPLETE" in text and "INV-" not in text


def test_max_depth_is_a_bounded_check(tmp_path):
    r = cli("explore", "--scope", "tiny", "--max-depth", 3, "--json", "--quiet")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["bounded"] is True and d["complete"] is True and d["verdict"] == "holds" and d["depth"] == 3
    text = cli("explore", "--scope", "tiny", "--max-depth", 3, "--quiet").output
    assert "BOUNDED: every run of at most 3 choices" in text
    assert cli("explore", "--scope", "tiny", "--max-depth", 0, "--quiet").exit_code == 2


def test_bad_input_exits_2(tmp_path):
    r = cli("explore", "--scope", "nope", "--quiet")
    assert r.exit_code == 2 and "unknown scope" in r.output
    assert cli("explore", "--scope", "tiny", "--profile", "nope", "--quiet").exit_code == 2
    r = cli("explore", "--engine", "model", "--quiet")
    assert r.exit_code == 2 and "retired" in r.output
    old = tmp_path / "old.toml"
    old.write_text('consumers = 2\npersistent_sets = true\n')
    r = cli("explore", "--scope", old, "--quiet")
    assert r.exit_code == 2 and "persistent_sets" in r.output and "retired" in r.output
    # `--engine reference`, the only engine, is still taken
    assert cli("explore", "--engine", "reference", "--max-states", 5, "--quiet").exit_code == 4


def test_each_fault_kind_reports_as_it_ends(tmp_path):
    # a search split by fault kind can take an hour: without --quiet, each kind's figures go to
    # stderr as its search ends (stdout keeps the JSON report alone)
    r = cli("explore", "--scope", "tiny-choices", "--json", "--out-dir", tmp_path)
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    lines = [x for x in r.stderr.splitlines() if x.startswith("fault kind ")]
    assert [x.split()[2] for x in lines] == list(d["fault_kinds"])
    for x in lines:
        k = x.split()[2]
        assert f"{d['fault_kinds'][k]['states_distinct']} distinct" in x and "exhausted" in x
