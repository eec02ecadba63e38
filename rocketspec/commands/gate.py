"""`rocketspec gate [--config gate.toml] [--junit OUT.xml] [--summary OUT.md] [--mutants]`: the
conformance gate for CI (conformance/gate.py, docs/gate.md).

Exit codes: 0 every case passed, 1 a case failed, 2 bad configuration, an unreadable trace or
history, or no case at all, 3 an internal error, 4 a case incomplete (a budget ran out) and none
failed.
"""
from __future__ import annotations

import sys

import click


def _defaults_text() -> str:
    """What the gate runs without --config, read from the defaults themselves."""
    from pathlib import Path

    from rocketspec.conformance.gate import DEFAULTS, REPO

    scopes = DEFAULTS["scopes"]
    names = ", ".join(s["name"] for s in scopes)
    profiles = list(dict.fromkeys(p for s in scopes for p in s["profiles"]))
    dirs = ", ".join(str(Path(d).relative_to(REPO)) if Path(d).is_relative_to(REPO) else d
                     for d in DEFAULTS["traces"]["dirs"])
    return (f"{len(scopes)} scopes ({names}), each searched in full under {' and '.join(profiles)}; the Hypothesis state "
            f"machine under {' and '.join(DEFAULTS['statemachine']['profiles'])}; every trace in {dirs}")


@click.command("gate")
@click.option("--config", "config_path", default=None,
              help=f"Gate configuration (TOML; docs/gate.md). Default: the project's defaults: {_defaults_text()}.")
@click.option("--junit", "junit_path", default=None, help="Write JUnit XML here (one test case per scope, "
                                                          "state machine, trace and mutant).")
@click.option("--summary", "summary_path", default=None,
              help="Write a markdown summary here (e.g. $GITHUB_STEP_SUMMARY).")
@click.option("--mutants", "with_mutants", is_flag=True, help="Also run the semantic mutants of the reference: "
                                                               "each must be killed by a spec finding.")
@click.option("--out-dir", "out_dir", default=None,
              help="Directory for counterexample traces (default: the config's out_dir, else gate-out).")
@click.option("--json", "as_json", is_flag=True, help="Print the cases as JSON instead of text.")
@click.option("--quiet", is_flag=True, help="Print only the verdict and the cases that did not pass.")
@click.option("--require-end", "require_end", is_flag=True,
              help="A trace with no trace_ended event is bad input (exit 2), instead of being judged for "
                   "safety only.")
def gate(config_path, junit_path, summary_path, with_mutants, out_dir, as_json, quiet, require_end):
    """Run the conformance gate within its time budget: exhaustive scopes, the Hypothesis state
    machine on the reference, every configured trace and history (message traces, OpenChaos)
    against its verdict, a client program under test ([client]: each scenario recorded through
    the driver protocol on real RocketMQ, then judged by check and history, with a verdict
    table and a coverage report) and, with --mutants, the mutants of the reference.

    Exit 0 when every case passed, 1 when one failed, 2 on bad configuration (an expectation
    naming no file included), an unreadable trace or history, or a gate that judged no case, 3
    on an internal error, 4 when a case ran out of budget (and is not declared a bounded check).

    Each case is shown as it starts, with its budget, and as it ends; the last lines are the
    verdict and each case that did not pass, with its cause."""
    import orjson

    from rocketspec.conformance.gate import junit_xml, load_config, markdown_summary, run_gate
    from rocketspec.outputs import refuse_input_as_output, write_bytes

    refuse_input_as_output(junit_path, "--junit", [("--config", config_path)])
    refuse_input_as_output(summary_path, "--summary", [("--config", config_path)])
    cfg, source = load_config(config_path)

    shown = not quiet and not as_json

    def started(suite, name, budget_s):
        if shown:
            budget = f"budget {budget_s:.0f} s" if budget_s is not None else "no budget of its own"
            click.echo(f"[{suite}] {name}: started ({budget})")

    def progress(c):
        if shown:
            click.echo(f"[{c.suite}] {c.name}: {c.status} ({c.seconds:.1f} s) {c.message}")

    out_dir = out_dir or cfg.get("out_dir") or "gate-out"
    from rocketspec.commands.record import record

    res = run_gate(cfg, source=source, mutants=with_mutants, out_dir=out_dir, progress=progress, started=started,
                   require_end=require_end, record=record)
    if junit_path:
        write_bytes(junit_path, junit_xml(res))      # whole or not at all
    if summary_path:
        write_bytes(summary_path, markdown_summary(res).encode("utf-8"), append=True)
    if as_json:
        sys.stdout.write(orjson.dumps({"exit_code": res.exit_code, "seconds": res.seconds,
                                       "counts": res.counts(), "notes": res.notes, "reports": res.reports,
                                       "cases": [c.to_dict() for c in res.cases]}).decode() + "\n")
    else:
        click.echo("\n".join(verdict_lines(res)))
    sys.exit(res.exit_code)


VERDICT = {0: "PASSED", 1: "FAILED", 2: "BAD INPUT", 3: "INTERNAL ERROR", 4: "INCOMPLETE"}


def verdict_lines(res) -> list[str]:
    """The gate's verdict, then each case that did not pass (or was skipped) with its cause."""
    counts = ", ".join(f"{n} {s}" for s, n in sorted(res.counts().items()))
    out = [f"gate: {VERDICT.get(res.exit_code, res.exit_code)} (exit {res.exit_code}): {len(res.cases)} cases in "
           f"{res.seconds:.0f} s: {counts}"]
    for c in res.cases:
        if c.status != "passed":
            out.append(f"  {c.status}: [{c.suite}] {c.name}: {c.message}")
    out.extend(f"  note: {n}" for n in getattr(res, "notes", []))
    reports = getattr(res, "reports", [])
    return ([""] + reports + [""] + out) if reports else out
