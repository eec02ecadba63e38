"""Mutants of the Go client under test, each killed on real RocketMQ by the gate's client suite
with the invariant or guarantee it breaks.

    python -m bench.client_mutants [--only ID,ID] [--no-controls] [--client PATH] [--out DIR] [--json]

Two kinds, one table (the `where` column):
- driver: our driver program run with `--mutant ID` (clients/go/mutants.go), a real change of
  what it does with the library (it acks a failed call, skips a message, builds an orderly
  group's consumer concurrent, reports its stop before it stops, fails a call the application
  succeeded, acks before the listener returns);
- library: a one-line edit of upstream's rocketmq-client-go source (bench/go_library_mutants.py:
  the file, an anchor occurring once, its replacement, the mistake), a mistake a client author
  could make (commit past a message still in flight, ack before the listener returns, skip the
  send-back, commit a failed orderly batch, take the newest message first, keep a rebalanced
  queue, ...). Each is built before the first run into build/go-client/mutants/<id>/ with
  `go build -overlay` on a copy of the pinned module (upstream code is never edited in place
  nor committed).
Never an edit of a trace. Each mutant's scenario (examples/go-client/mutants/) is recorded through
the driver protocol and judged as the gate judges a client (conformance/client_gate.py: check at
the trace's level, history black-box) against the unmutated Go client's declared verdict (its
known over-retry, H-RETRY-1, on the orderly scenario). A mutant is killed when the judgement fails
and reports the id the table expects. The controls (the unmutated client on each scenario) must
pass. Prints one row per run, then `killed K of N`; exit 0 when every mutant is killed and every
control passes, else 1; 2 when Go or the pinned module is missing, 3 when a library mutant no
longer applies to the pinned module or does not build (both told before any run). Real runs, one
at a time, 15-45 s each (docs/notes/go-client.md has the table, its figures and the time).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from bench import go_library_mutants as LIB

ROOT = Path(__file__).resolve().parent.parent
SCEN = ROOT / "examples" / "go-client" / "mutants"
CLIENT = ROOT / "build" / "go-client" / "rocketspec-go-client"

# scenario file -> the unmutated Go client's verdict (docs/notes/go-client.md, Finding 1)
DECLARED = {"orderly-burst.toml": ["H-RETRY-1", "INV-RETRY-1"], "concurrent-stop.toml": "holds",
            "concurrent-fail-join.toml": "holds", "concurrent-handover.toml": "holds"}

# (mutant, scenario, the id that must kill it, the mistake)
MUTANTS = [
    ("ack-failed", "orderly-burst.toml", "H-DELIVER-1",
     "a failed listener call is acked: the library is handed success whatever the listener returned"),
    ("skip-message", "orderly-burst.toml", "H-DELIVER-1",
     "a message at an offset 4 mod 5 is acked on its first delivery without reaching the listener"),
    ("orderly-as-concurrent", "orderly-burst.toml", "H-ORDER-1",
     "an ORDERLY group's consumer is built without WithConsumerOrder(true): consumed concurrently"),
    ("stop-early", "concurrent-stop.toml", "INV-CLIENT-1",
     "`stopped` is reported at once on shutdown and the consumer shut down 3 s later"),
    ("nack-succeeded", "orderly-burst.toml", "H-DUP-1",
     "a succeeded first delivery at an offset 2 mod 5 is handed to the library as a failure"),
    ("ack-before-listener", "orderly-burst.toml", "H-ORDER-1",
     "the library is told success at once; the listener runs on its own goroutine"),
]


def judge(command: str, scenario: str, out: Path) -> dict:
    """One recording judged as the gate's client suite judges it."""
    from rocketspec.conformance import client_gate
    from rocketspec.conformance.gate import Case

    cl = client_gate.validate({"command": command, "name": "go", "scenarios": [str(SCEN / scenario)],
                               "expect": {str(SCEN / scenario): DECLARED[scenario]}}, "bench.client_mutants")
    cases = []
    t0 = time.monotonic()
    from rocketspec.commands.record import record

    rows = client_gate.run_client(cl, "bench.client_mutants", out, lambda: 600.0, Case, cases.append,
                                  lambda *a: None, record=record)
    r = rows[0]
    got = set()
    if r.report is not None:
        got |= {f.inv for f in r.report.findings.errors}
    if r.history_report is not None:
        got |= set(r.history_report.violated())
    failed = [c for c in cases if c.status != "passed"]
    return {"run": r.run, "check": r.check, "history": r.history, "got": sorted(got),
            "status": failed[0].status if failed else "passed",
            "why": failed[0].message if failed else "", "seconds": round(time.monotonic() - t0, 1)}


def plan(only: set | None) -> list[dict]:
    """The chosen mutants, driver's and library's, each as a row to run."""
    rows = [{"mutant": mid, "where": "driver", "scenario": sc, "expected": kill, "mistake": mistake}
            for mid, sc, kill, mistake in MUTANTS]
    rows += [{"mutant": m.id, "where": "library", "scenario": m.scenario, "expected": m.kill, "mistake": m.mistake,
              "file": m.file} for m in LIB.MUTANTS]
    return [r for r in rows if only is None or r["mutant"] in only]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=None, help="comma-separated mutant ids")
    ap.add_argument("--no-controls", action="store_true", help="skip the unmutated client's runs")
    ap.add_argument("--client", default=str(CLIENT), help="the driver program (make go-client)")
    ap.add_argument("--out", default=None, help="keep the recordings here")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    only = set(a.only.split(",")) if a.only else None
    chosen = plan(only)
    if only and len(chosen) != len(only):
        ap.error(f"unknown mutant in --only; known: {', '.join(r['mutant'] for r in plan(None))}")
    # every library mutant is built before the first real run: a table that no longer applies to
    # the pinned module, or a missing toolchain, is told at once
    try:
        for r in chosen:
            if r["where"] == "library":
                r["command"] = str(LIB.build(LIB.BY_ID[r["mutant"]]))
            else:
                r["command"] = f"{a.client} --mutant {r['mutant']}"
    except LIB.MutantBuildError as e:
        print(f"bench.client_mutants: {e}", file=sys.stderr)
        return 2
    except LIB.MutantDefect as e:
        print(f"bench.client_mutants: {e}", file=sys.stderr)
        return 3
    out = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="client-mutants-"))
    rows = []
    if not a.no_controls:
        for sc in sorted({r["scenario"] for r in chosen}):
            res = judge(a.client, sc, out / f"control-{Path(sc).stem}")
            rows.append({"mutant": "(none: control)", "where": "-", "scenario": sc, "expected": "passes", **res,
                         "ok": res["status"] == "passed"})
    for r in chosen:
        res = judge(r["command"], r["scenario"], out / r["mutant"])
        rows.append({**r, **res, "ok": res["status"] == "failed" and r["expected"] in res["got"]})
    n = len(chosen)
    k = sum(r["ok"] for r in rows if not r["mutant"].startswith("(none"))
    controls_ok = all(r["ok"] for r in rows if r["mutant"].startswith("(none"))
    if a.json:
        print(json.dumps({"rows": rows, "killed": k, "mutants": n, "controls_pass": controls_ok}, indent=1))
    else:
        print("| mutant | where | scenario | check | history | killed by | expected | result | time |")
        print("|---|---|---|---|---|---|---|---|---:|")
        for r in rows:
            res = ("passed" if r["ok"] else f"FAILED: {r['why'][:80]}") if r["mutant"].startswith("(none") else \
                  ("killed" if r["ok"] else "SURVIVED")
            print(f"| {r['mutant']} | {r['where']} | {r['scenario']} | {r['check'] or '-'} | {r['history'] or '-'} | "
                  f"{', '.join(r['got']) or '-'} | {r['expected']} | {res} | {r['seconds']} s |")
        print(f"killed {k} of {n}" + ("" if controls_ok else "; a control did not pass"))
    return 0 if k == n and controls_ok else 1


if __name__ == "__main__":
    sys.exit(main())
