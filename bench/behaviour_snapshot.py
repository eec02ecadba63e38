"""One JSON snapshot of rocketspec's deterministic outputs, to diff before and after a refactor.

    python -m bench.behaviour_snapshot [--out FILE] [--seeds 1,2] [--scopes tiny,tiny-tags]
                                       [--replay] [--quick]

Writes (to FILE, default standard output) a JSON object, keys sorted, with no timings, paths
or other run-dependent values in it:

  simulate  every built-in scenario under rocketmq-4.9.8 and rocketmq-5.3.3 for each seed,
            and each known-bug profile on its own scenario: sha256 of the trace bytes
            `rocketspec simulate --out t.jsonl` writes (the same writer and runner), events,
            how the run ended, and `check`'s verdict, error count and per-invariant counts
            of that trace;
  check     every trace fixture in tests/traces and tests/fixtures (JSON Lines): verdict,
            judged, errors, counts, the (invariant, seq, line) of every violation and warning,
            or the one-line error a bad input gives;
  explain   `rocketspec explain --json` on every fixture check can read (verdict, lanes,
            marks, the story told);
  minimize  `rocketspec minimize --json` on every violated fixture, and the sha256 of the
            trace it writes;
  history   the black-box histories in tests/fixtures/history: `rocketspec history --json`
            without its timing fields;
  explore   each scope (default tiny and tiny-tags, profile rocketmq-5.3.3, stopping at the
            first violation as the CLI does): verdict, states generated and distinct, depth,
            runs ended, each violation's invariant, kind, depth and events;
  replay    (--replay: starts one local Spark session, about half a minute more) `rocketspec
            replay --json` on each check fixture that is a valid trace, one command per trace:
            its report without Spark's own figures (application, executors, timings).

Before and after a change: run it twice and `diff` the two files; any line that differs is a
change in behaviour. The default run takes about 2 minutes of one core (docs/notes/
layering-plan.md has the measured figure); --quick simulates one seed and explores tiny only.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RELEASES = ("rocketmq-4.9.8", "rocketmq-5.3.3")
FIXTURE_DIRS = ("tests/traces", "tests/fixtures", "tests/fixtures/real", "tests/fixtures/statemachine",
                "tests/fixtures/history")
HISTORY_DIR = "tests/fixtures/history"


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _finding(f) -> dict:
    return {"invariant": f.inv, "severity": f.severity, "seq": f.seq, "line": f.line, "kind": f.kind}


def _check(path: str, profile=None) -> dict:
    from rocketspec.errors import UserError
    from rocketspec.spec.replay import check_trace

    try:
        rep = check_trace(path, profile)
    except UserError as exc:
        return {"error": type(exc).__name__, "message": str(exc).replace(str(ROOT) + os.sep, "")}
    f = rep.findings
    return {"events": rep.events, "ended": rep.ended, "verdict": "holds" if rep.ok else "violated",
            "judged": "safety" if rep.liveness_not_judged else "safety and liveness",
            "profile": rep.profile, "errors": f.error_count, "counts": dict(sorted(f.counts.items())),
            "violations": [_finding(e) for e in f.errors], "warnings": [_finding(w) for w in f.warnings]}


def simulate_one(name: str, seed: int, profile: str, tmp: str) -> dict:
    """What `rocketspec simulate --scenario NAME --seed SEED --profile P --out t.jsonl` writes."""
    from rocketspec.reference.runner import run
    from rocketspec.reference.scenario import load_scenario
    from rocketspec.rocketmq.profiles import get_profile
    from rocketspec.traces.io import open_writer

    path = os.path.join(tmp, "t.jsonl")
    writer = open_writer(path)
    count = 0

    def sink(ev):
        nonlocal count
        count += 1
        writer.write(ev)

    with writer:
        reason = run(load_scenario(name), seed, get_profile(profile), sink)
    rep = _check(path)
    return {"sha256": _sha256(path), "events": count, "ended": reason, "check": {
        k: rep.get(k) for k in ("verdict", "errors", "counts", "judged")}}


def simulate_all(seeds, tmp: str) -> dict:
    from rocketspec.reference.scenario import bug_scenario, builtin_names
    from rocketspec.rocketmq.profiles import PROFILES

    out = {}
    for name in builtin_names():
        for profile in RELEASES:
            for seed in seeds:
                out[f"{name} {profile} seed={seed}"] = simulate_one(name, seed, profile, tmp)
    for prof in PROFILES.values():
        bug = getattr(prof, "known_bug", None)
        scenario = bug_scenario(bug) if bug else None
        if scenario and prof.name not in RELEASES:
            out[f"{scenario} {prof.name} seed=1"] = simulate_one(scenario, 1, prof.name, tmp)
    return out


def fixtures() -> list[str]:
    found = []
    for d in FIXTURE_DIRS:
        p = ROOT / d
        if p.is_dir():
            found += sorted(str(f.relative_to(ROOT)) for f in p.glob("*.jsonl"))
    return found


def check_all() -> dict:
    return {rel: _check(str(ROOT / rel)) for rel in fixtures()}


def history_all() -> dict:
    """`rocketspec history --json` on each history fixture, through the CLI in this process."""
    from click.testing import CliRunner

    from rocketspec.cli import main as cli

    out = {}
    d = ROOT / HISTORY_DIR
    for f in sorted(d.iterdir()) if d.is_dir() else []:
        if f.name.endswith(".trace.jsonl"):
            continue   # a trace, judged by `check` above; the msgtrace and OpenChaos files are histories
        r = CliRunner().invoke(cli, ["history", str(f), "--json"])
        try:
            body = json.loads(r.output)
        except ValueError:
            body = {"output": r.output.replace(str(ROOT) + os.sep, "")}
        out[str(f.relative_to(ROOT))] = {"exit": r.exit_code, "report": _without_timings(body)}
    return out


def _without_timings(x):
    if isinstance(x, dict):
        return {k: _without_timings(v) for k, v in x.items()
                if k not in ("seconds", "cpu_seconds", "wall_seconds", "states_per_second", "events_per_second")}
    if isinstance(x, list):
        return [_without_timings(v) for v in x]
    if isinstance(x, str):
        return x.replace(str(ROOT) + os.sep, "")
    return x


def _cli(args: list[str]) -> dict:
    from click.testing import CliRunner

    from rocketspec.cli import main as cli

    r = CliRunner().invoke(cli, args)
    try:
        body = json.loads(r.output)
    except ValueError:
        body = {"output": r.output}
    return {"exit": r.exit_code, "report": _without_timings(body)}


def explain_all(checked: dict) -> dict:
    """`rocketspec explain --json` on each fixture `check` could read: story, lanes, marks."""
    return {rel: _cli(["explain", str(ROOT / rel), "--json"]) for rel, r in checked.items() if "error" not in r}


def minimize_all(checked: dict, tmp: str) -> dict:
    """`rocketspec minimize --json` on each violated fixture, and the sha256 of what it wrote."""
    out = {}
    for rel, r in checked.items():
        if r.get("verdict") != "violated":
            continue
        path = os.path.join(tmp, "min.jsonl")
        if os.path.exists(path):
            os.remove(path)
        res = _cli(["minimize", str(ROOT / rel), "--json", "--quiet", "-o", path])
        res["report"] = _without_paths(res["report"], path)
        res["written_sha256"] = _sha256(path) if os.path.exists(path) else None
        out[rel] = res
    return out


def _without_paths(x, path: str):
    if isinstance(x, dict):
        return {k: _without_paths(v, path) for k, v in x.items()}
    if isinstance(x, list):
        return [_without_paths(v, path) for v in x]
    return x.replace(path, "<out>") if isinstance(x, str) else x


def explore_all(scopes, profile: str = "rocketmq-5.3.3") -> dict:
    from rocketspec.model_checks.refexplore import RefExplorer
    from rocketspec.model_checks.scopes import load_scope

    out = {}
    for name in scopes:
        res = RefExplorer(load_scope(name), profile, stop_at_first=True).run()
        d = _without_timings(res.to_dict())
        d["verdict"] = "violated" if res.violations else "holds"
        d["violations"] = [{"invariant": v.invariant, "kind": v.kind, "depth": v.depth, "events": len(v.events),
                            "events_sha256": hashlib.sha256(json.dumps(v.events, sort_keys=True).encode()).hexdigest()}
                           for v in res.violations]
        out[f"{name} {profile}"] = d
    return out


def replay_all() -> dict:
    """`rocketspec replay --json` on each valid fixture trace, one trace per command (several
    paths would be parts of one trace), all in one local Spark session."""
    from click.testing import CliRunner

    from rocketspec.cli import main
    from rocketspec.traces.spark.spark_replay import spark_session

    valid = [rel for rel, r in check_all().items() if "error" not in r]
    spark = spark_session("local[2]", app="behaviour-snapshot", conf={"spark.ui.enabled": "false"})
    out = {}
    try:
        for rel in valid:
            res = CliRunner().invoke(main, ["replay", "--quiet", "--json", str(ROOT / rel)])
            d = {"exit": res.exit_code}
            try:
                rep = _without_timings(json.loads(res.stdout.strip().splitlines()[-1]))
                rep.pop("spark", None)      # the application's id, executors and timings
                d["report"] = rep
            except (ValueError, IndexError):
                d["output"] = res.output[-2000:]
            out[rel] = d
    finally:
        spark.stop()
    return out


def snapshot(seeds, scopes, replay: bool) -> tuple[dict, dict]:
    timings = {}
    snap = {}
    with tempfile.TemporaryDirectory() as tmp:
        for part, fn in (("simulate", lambda: simulate_all(seeds, tmp)), ("check", check_all),
                         ("explain", lambda: explain_all(snap["check"])),
                         ("minimize", lambda: minimize_all(snap["check"], tmp)),
                         ("history", history_all), ("explore", lambda: explore_all(scopes)),
                         *((("replay", replay_all),) if replay else ())):
            t0 = time.process_time()
            snap[part] = fn()
            timings[part] = time.process_time() - t0
    return snap, timings


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.behaviour_snapshot", description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="-", help="the snapshot file (default: standard output)")
    ap.add_argument("--seeds", default="1,2", help="seeds to simulate each built-in scenario with")
    ap.add_argument("--scopes", default="tiny,tiny-tags", help="explorer scopes (rocketmq-5.3.3)")
    ap.add_argument("--replay", action="store_true", help="also replay the fixtures on Spark")
    ap.add_argument("--quick", action="store_true", help="seed 1 and scope tiny only")
    a = ap.parse_args(argv)
    seeds = [1] if a.quick else [int(s) for s in a.seeds.split(",") if s]
    scopes = ["tiny"] if a.quick else [s for s in a.scopes.split(",") if s]
    t0, w0 = time.process_time(), time.perf_counter()
    snap, timings = snapshot(seeds, scopes, a.replay)
    text = json.dumps(snap, indent=1, sort_keys=True) + "\n"
    if a.out == "-":
        sys.stdout.write(text)
    else:
        Path(a.out).write_text(text)
    parts = ", ".join(f"{k} {v:.1f}" for k, v in timings.items())
    print(f"behaviour snapshot: {len(snap['simulate'])} simulations, {len(snap['check'])} checked fixtures "
          f"({len(snap['explain'])} explained, {len(snap['minimize'])} minimized), {len(snap['history'])} histories, {len(snap['explore'])} explorations"
          f"{', replay' if a.replay else ''}; CPU s {parts}; total {time.process_time() - t0:.1f} CPU s, "
          f"{time.perf_counter() - w0:.1f} s wall", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
