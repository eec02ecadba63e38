"""`rocketspec gate` on tiny configurations: exit codes, JUnit XML that a JUnit parser loads
(junitparser), the markdown summary, budgets and bounded checks, verdicts of traces, mutants."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

junitparser = pytest.importorskip("junitparser")

from rocketspec.conformance import gate as G  # noqa: E402
from rocketspec.reference import runner  # noqa: E402
from rocketspec.reference.scenario import load_scenario  # noqa: E402
from rocketspec.spec.replay import check_trace  # noqa: E402

MICRO = """name = "micro"
consumers = 1
queues = 1
messages = 1
failures = 0
faults = 0
"""
# one message that fails once with maxReconsumeTimes 0: the DLQ; the #2724 profile keeps the
# delay level on the DLQ copy, which the explorer finds at depth 5
DLQ = """name = "dlq"
consumers = 1
queues = 1
messages = 1
max_reconsume_times = 0
failures = 1
faults = 0
"""


def write_trace(path: Path, events):
    path.write_text("".join(json.dumps(e) + "\n" for e in events))


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("traces")
    evs = runner.run_to_list(load_scenario("real-basic"), 1, "rocketmq-5.3.3")
    write_trace(d / "clean.jsonl", evs)
    # the same run declaring a violation it does not show: judged against its verdict, it fails
    lying = [dict(e) for e in evs]
    lying[0]["config"] = dict(lying[0].get("config", {}), expect=["INV-LOSS-1"])
    write_trace(d / "declares-loss.jsonl", lying)
    bug = runner.run_to_list(load_scenario("bug-5481"), 1, "rocketmq-4.9.8")
    write_trace(d / "bug-5481.jsonl", bug)
    return d


def config(tmp_path, traces, scopes, extra=""):
    (tmp_path / "micro.toml").write_text(MICRO)
    (tmp_path / "dlq.toml").write_text(DLQ)
    text = f"""budget_s = 300
{scopes}
[statemachine]
enabled = false

[traces]
dirs = ["{traces}"]
[traces.expect]
"bug-5481.jsonl" = ["INV-RETRY-3"]

[mutants]
only = ["rebalance-takes-every-queue", "commit-batch-max"]
seeds = [1]
profiles = ["rocketmq-5.3.3"]
scenarios = ["basic", "rebalance"]
budget_s = 60
{extra}
"""
    p = tmp_path / "gate.toml"
    p.write_text(text)
    return p


def gate(*args):
    return subprocess.run([sys.executable, "-c", "from rocketspec.cli import main; main()", "gate", *map(str, args)], capture_output=True,
                          text=True, timeout=300)


PASSING = """[[scopes]]
name = "micro.toml"
profiles = ["rocketmq-5.3.3"]
budget_s = 60
"""


def test_a_passing_gate_writes_junit_a_parser_loads_and_a_summary(tmp_path, traces):
    (traces / "declares-loss.jsonl").rename(tmp_path / "declares-loss.jsonl")
    try:
        cfg = config(tmp_path, traces, PASSING)
        junit, summary = tmp_path / "out.xml", tmp_path / "summary.md"
        r = gate("--config", cfg, "--junit", junit, "--summary", summary, "--mutants", "--out-dir", tmp_path / "o")
    finally:
        (tmp_path / "declares-loss.jsonl").rename(traces / "declares-loss.jsonl")
    assert r.returncode == 0, r.stdout + r.stderr
    xml = junitparser.JUnitXml.fromfile(str(junit))
    cases = {(s.name, c.name): c for s in xml for c in s}
    assert set(cases) == {("exhaustive", "micro [rocketmq-5.3.3]"), ("traces", "bug-5481.jsonl"),
                          ("traces", "clean.jsonl"), ("mutants", "rebalance-takes-every-queue"),
                          ("mutants", "commit-batch-max")}
    assert all(c.is_passed for c in cases.values())
    md = summary.read_text()
    assert "## rocketspec gate: passed" in md and "| micro [rocketmq-5.3.3] |" in md
    assert "killed by" in md


def test_a_violation_fails_with_the_shortest_counterexample(tmp_path, traces):
    scopes = """[[scopes]]
name = "dlq.toml"
profiles = ["bug-2724-rocketmq-4.9.1"]
budget_s = 60
"""
    cfg = config(tmp_path, traces, scopes, extra="")
    junit = tmp_path / "out.xml"
    r = gate("--config", cfg, "--junit", junit, "--out-dir", tmp_path / "o")
    assert r.returncode == 1, r.stdout + r.stderr
    xml = junitparser.JUnitXml.fromfile(str(junit))
    cases = {c.name: c for s in xml for c in s}
    ex = cases["dlq [bug-2724-rocketmq-4.9.1]"]
    (failure,) = ex.result
    assert isinstance(failure, junitparser.Failure) and "INV-DLQ-1" in failure.message
    assert "counterexample:" in failure.text and '"kind":"message_stored"' in failure.text.replace(" ", "")
    # a trace that declares a verdict it does not show fails, naming both
    (lying,) = cases["declares-loss.jsonl"].result
    assert "expected INV-LOSS-1" in lying.message and "verdict holds" in lying.message
    assert cases["bug-5481.jsonl"].is_passed and cases["clean.jsonl"].is_passed


def test_a_config_naming_the_engine_and_workers_still_runs(tmp_path, traces):
    # `engine = "reference"` (from when the explorer had a second engine) is still taken, and
    # workers search in parallel: the clean scope passes, and the #2724 profile's DLQ copy is
    # found with its shortest trace
    scopes = """[[scopes]]
name = "micro.toml"
profiles = ["rocketmq-5.3.3"]
engine = "reference"
workers = 2
budget_s = 60
[[scopes]]
name = "dlq.toml"
profiles = ["bug-2724-rocketmq-4.9.1"]
engine = "reference"
budget_s = 60
"""
    junit = tmp_path / "out.xml"
    r = gate("--config", config(tmp_path, traces, scopes), "--junit", junit, "--out-dir", tmp_path / "o")
    assert r.returncode == 1, r.stdout + r.stderr
    cases = {c.name: c for s in junitparser.JUnitXml.fromfile(str(junit)) for c in s if s.name == "exhaustive"}
    assert cases["micro [rocketmq-5.3.3]"].is_passed
    (failure,) = cases["dlq [bug-2724-rocketmq-4.9.1]"].result
    assert "INV-DLQ-1" in failure.message and "counterexample:" in failure.text


def test_a_scope_out_of_budget_is_incomplete_unless_declared_bounded(tmp_path, traces):
    (traces / "declares-loss.jsonl").rename(tmp_path / "declares-loss.jsonl")
    try:
        slow = """[[scopes]]
name = "tiny"
profiles = ["rocketmq-5.3.3"]
budget_s = 1
"""
        r = gate("--config", config(tmp_path, traces, slow), "--json")
        assert r.returncode == 4, r.stdout + r.stderr
        (case,) = [c for c in json.loads(r.stdout)["cases"] if c["suite"] == "exhaustive"]
        assert case["status"] == "incomplete" and "budget of 1 s ran out" in case["message"]
        r = gate("--config", config(tmp_path, traces, slow.replace("budget_s = 1", "budget_s = 1\nbounded = true")),
                 "--json")
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        (tmp_path / "declares-loss.jsonl").rename(traces / "declares-loss.jsonl")


@pytest.mark.parametrize("text, field", [
    ('budget_s = "soon"', "budget_s"),
    ('[[scopes]]\nname = "nope"', "scopes[0].name"),
    ('[mutants]\nonly = ["no-such-mutant"]', "mutants.only[0]"),
    ('[traces]\ndirs = ["/no/such/dir"]', "traces.dirs"),
    ('colour = 1', None),
    ('[[scopes]]\nname = "tiny"\nengine = "tlc"', "scopes[0].engine"),
    ('[[scopes]]\nname = "tiny"\nengine = "model"', "scopes[0].engine"),
    ('[[scopes]]\nname = "tiny"\nworkers = 0', "scopes[0].workers"),
    ('[[scopes]]\nname = "tiny"\npersistent_sets = true', "scopes[0].persistent_sets"),
    ('[[scopes]]\nname = "tiny"\nliveness = false', "scopes[0].liveness"),
])
def test_bad_configuration_exits_2_naming_the_field(tmp_path, text, field):
    p = tmp_path / "gate.toml"
    p.write_text(text + "\n")
    r = gate("--config", p)
    assert r.returncode == 2, r.stdout + r.stderr
    assert str(p) in r.stderr and (field is None or field in r.stderr)


def test_exit_code_order():
    mk = lambda *st: G.GateResult([G.Case("s", str(i), s) for i, s in enumerate(st)], 0.0, "t")  # noqa: E731
    assert mk("passed", "skipped").exit_code == 0
    assert mk("passed", "incomplete").exit_code == 4
    assert mk("incomplete", "failed").exit_code == 1
    assert mk("failed", "bad_input").exit_code == 2
    assert mk("failed", "error").exit_code == 3


def test_junit_text_survives_control_characters(tmp_path):
    res = G.GateResult([G.Case("traces", "x\x01.jsonl", "failed", 0.1, "bad \x00 byte", "details\x1b[0m")], 0.1, "t")
    p = tmp_path / "j.xml"
    p.write_bytes(G.junit_xml(res))
    xml = junitparser.JUnitXml.fromfile(str(p))
    (case,) = [c for s in xml for c in s]
    assert "\\x00" in case.result[0].message


def test_the_defaults_are_valid_and_name_committed_fixtures():
    cfg, source = G.load_config(None)
    assert source == "defaults"
    (d,) = cfg["traces"]["dirs"]
    names = {p.name for p in Path(d).glob("*.jsonl")}
    assert set(cfg["traces"]["expect"]) <= names
    from test_real_verdicts import BROKE

    assert {k.removesuffix(".jsonl"): set(v) for k, v in cfg["traces"]["expect"].items()} == BROKE
    assert all(s["budget_s"] <= cfg["budget_s"] for s in cfg["scopes"])


def test_mutants_in_process_a_known_survivor_is_skipped_with_its_reason(tmp_path, monkeypatch):
    from rocketspec.conformance import mutants as M

    # the catalogue has no survivor today; one documented as equivalent is skipped, with its reason
    monkeypatch.setitem(M.SURVIVORS, "orderly-commit-first-key", "equivalent under every scenario (test)")
    cfg = G.validate({"budget_s": 120, "scopes": [], "statemachine": {"enabled": False}, "traces": {"dirs": []},
                      "mutants": {"only": ["sendback-fixed-delay", "orderly-commit-first-key"], "seeds": [1],
                                  "profiles": ["rocketmq-5.3.3"], "scenarios": ["basic"]}}, "test")
    res = G.run_gate(cfg, mutants=True, out_dir=str(tmp_path))
    by = {c.name: c for c in res.cases}
    assert by["sendback-fixed-delay"].status == "passed" and "INV-RETRY-2" in by["sendback-fixed-delay"].message
    assert by["sendback-fixed-delay"].artifacts and Path(by["sendback-fixed-delay"].artifacts[0]).is_file()
    skipped = by["orderly-commit-first-key"]
    assert skipped.status == "skipped" and "known survivor" in skipped.message and "equivalent" in skipped.message
    assert res.exit_code == 0


def test_a_mutant_killed_by_exhaustive_search_of_the_mutated_reference(tmp_path):
    # the explorer of the reference, on the mutated reference: a shortest trace check rejects
    cfg = G.validate({"budget_s": 120, "scopes": [], "statemachine": {"enabled": False}, "traces": {"dirs": []},
                      "mutants": {"only": ["rebalance-duplicate-pq"], "methods": ["exhaustive"],
                                  "profiles": ["rocketmq-5.3.3"]}}, "test")
    res = G.run_gate(cfg, mutants=True, out_dir=str(tmp_path))
    (case,) = res.cases
    assert case.status == "passed" and "(exhaustive" in case.message and "INV-PQ-1" in case.message
    (trace,) = case.artifacts
    rep = check_trace(trace)
    assert not rep.ok and "INV-PQ-1" in {f.inv for f in rep.findings.errors}


def test_the_state_machine_case_runs_the_reference_under_hypothesis():
    pytest.importorskip("rocketspec.conformance.statemachine")
    case = G.run_statemachine({"max_examples": 3, "budget_s": 60}, "rocketmq-5.3.3", 60)
    assert case.status == "passed" and "3 examples, no finding" in case.message


def test_each_case_is_shown_as_it_starts_with_its_budget_and_the_verdict_leads_the_end(tmp_path, traces):
    cfg = config(tmp_path, traces, PASSING)
    r = gate("--config", cfg, "--out-dir", tmp_path / "o")
    assert r.returncode == 1, r.stdout + r.stderr      # declares-loss.jsonl does not show its loss
    lines = r.stdout.splitlines()
    names = [("exhaustive", "micro [rocketmq-5.3.3]", "(budget 60 s)")] + [
        ("traces", n, "(no budget of its own)") for n in ("bug-5481.jsonl", "clean.jsonl", "declares-loss.jsonl")]
    for suite, name, budget in names:
        start = lines.index(f"[{suite}] {name}: started {budget}")
        end = next(i for i, ln in enumerate(lines) if ln.startswith(f"[{suite}] {name}: ") and i != start)
        assert start + 1 == end, lines        # one case at a time: its start, then its end
    tail = lines[-2:]
    assert tail[0].startswith("gate: FAILED (exit 1): 4 cases in ")
    assert tail[1].startswith("  failed: [traces] declares-loss.jsonl: verdict holds; expected INV-LOSS-1")
    q = gate("--config", cfg, "--out-dir", tmp_path / "o", "--quiet")
    ql = q.stdout.splitlines()       # --quiet: the verdict and the cases that did not pass, nothing else
    assert ql[0].startswith("gate: FAILED (exit 1): 4 cases in ") and ql[1:] == tail[1:]


def test_a_running_case_is_shown_before_it_ends(tmp_path, traces):
    # the start line reaches a pipe (a CI log) while the case still runs
    slow = """[[scopes]]
name = "tiny"
profiles = ["rocketmq-5.3.3"]
budget_s = 8
"""
    proc = subprocess.Popen([sys.executable, "-c", "from rocketspec.cli import main; main()", "gate", "--config",
                             str(config(tmp_path, traces, slow)), "--out-dir", str(tmp_path / "o")],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        first = proc.stdout.readline()
        assert first == "[exhaustive] tiny [rocketmq-5.3.3]: started (budget 8 s)\n"
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


def test_run_gate_calls_started_before_each_case(tmp_path, traces):
    cfg, source = G.load_config(config(tmp_path, traces, PASSING))
    seen = []
    res = G.run_gate(cfg, source=source, out_dir=str(tmp_path / "o"),
                     started=lambda s, n, b: seen.append(("start", s, n, b)),
                     progress=lambda c: seen.append(("end", c.suite, c.name, c.status)))
    assert len(seen) == 2 * len(res.cases)
    for i, c in enumerate(res.cases):
        assert seen[2 * i][:3] == ("start", c.suite, c.name) and seen[2 * i + 1][:3] == ("end", c.suite, c.name)
    assert seen[0][3] == 60 and all(s[3] is None for s in seen[2::2] if s[1] == "traces")


def test_a_trace_without_its_end_is_judged_for_safety_only_or_refused(tmp_path, traces):
    d = tmp_path / "cut"
    d.mkdir()
    lines = (traces / "clean.jsonl").read_text().splitlines(keepends=True)
    assert '"trace_ended"' in lines[-1]
    (d / "cut.jsonl").write_text("".join(lines[:-1]))
    p = tmp_path / "gate.toml"
    p.write_text(f'budget_s = 60\nscopes = []\n[statemachine]\nenabled = false\n[traces]\ndirs = ["{d}"]\n')
    r = gate("--config", p, "--out-dir", tmp_path / "o")
    assert r.returncode == 0, r.stdout + r.stderr
    assert ("[traces] cut.jsonl: passed" in r.stdout
            and "holds (safety only: the trace has no trace_ended, so liveness (INV-LIVE-1, INV-POP-LIVE-1) was not judged)" in r.stdout)
    r = gate("--config", p, "--out-dir", tmp_path / "o", "--require-end")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "  bad_input: [traces] cut.jsonl: " in r.stdout and "no trace_ended" in r.stdout
    assert "--require-end expects a complete trace" in r.stdout
