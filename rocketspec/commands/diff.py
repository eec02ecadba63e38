"""`rocketspec diff REF REAL` and `rocketspec diff --scenario NAME --real REAL`: the
differential report of one scenario, the reference against real RocketMQ.

Both traces are measured alike (rocketspec/traces/reports/stats.py) and checked (the spec's replay);
the report puts the figures side by side and flags every difference. Exit codes: 0 the report
was made (differences are findings to explain, not failures, unless --fail-on-difference: then
1), 2 bad input.
"""
from __future__ import annotations

import sys

import click

from rocketspec import jsonout

from rocketspec.commands.options import SEED
from rocketspec.errors import UserError
from rocketspec.traces.reports.differential import build_report, first_event, render_markdown, render_text, simulate_reference


@click.command("diff")
@click.argument("ref", required=False)
@click.argument("real", required=False)
@click.option("--scenario", "scenario", default=None,
              help="Simulate this scenario (built-in name or .toml/.json file) as the reference side.")
@click.option("--real", "real_opt", default=None, help="The real trace (with --scenario).")
@click.option("--seed", default=1, show_default=True, type=SEED, help="Seed of the simulated reference (with --scenario).")
@click.option("--profile", default=None,
              help="Profile of the simulated reference (with --scenario; default: the real trace's profile).")
@click.option("--keep-ref", default=None, help="Write the simulated reference trace here (with --scenario).")
@click.option("--time-tolerance-ms", default=1000, show_default=True, type=click.IntRange(0, None),
              help="Times (reassignment) differ when further apart than this.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.option("--markdown", is_flag=True, help="Print the report as Markdown (for docs/differential/).")
@click.option("--fail-on-difference", is_flag=True, help="Exit 1 when any difference is flagged.")
def diff(ref, real, scenario, real_opt, seed, profile, keep_ref, time_tolerance_ms, as_json, markdown,
         fail_on_difference):
    """Differential report of one scenario: the reference trace REF against the real trace REAL
    (or, with --scenario NAME --real REAL, a reference run simulated here).

    Shows both checkers' verdicts and, per group, deliveries, duplicates (by cause), retries,
    DLQ entries, never-consumed messages, final committed offsets and queue reassignment
    times, and flags every difference. Exit 0 when the report was made (1 with
    --fail-on-difference and a difference), 2 on bad input."""
    import os
    import tempfile

    if as_json and markdown:
        raise UserError("--json and --markdown exclude each other: choose one output")
    if scenario is not None:
        if ref is not None or real is not None:
            raise UserError("with --scenario, give the real trace with --real, not as arguments "
                            "(rocketspec diff --scenario NAME --real REAL.jsonl)")
        if real_opt is None:
            raise UserError("--scenario needs --real REAL.jsonl: the real trace to compare with")
        real = real_opt
        from rocketspec.outputs import refuse_input_as_output

        # --keep-ref over the real trace would destroy the recording and compare the simulation
        # with itself
        refuse_input_as_output(keep_ref, "--keep-ref", [("--real", real)]
                               + ([("--scenario", scenario)] if os.path.isfile(scenario) else []))
        first = first_event(real)
        from rocketspec.conformance.verdicts import load_checked_scenario

        sc = load_checked_scenario(scenario)
        if first.get("scenario") not in (None, sc["name"], scenario):
            raise UserError(f"the real trace was recorded from scenario {first.get('scenario')!r}, not {sc['name']!r}",
                            file=real, line=1, field="scenario")
        prof = profile or first.get("profile")
        if keep_ref is not None:
            ref = keep_ref
            simulate_reference(scenario, seed, prof, ref)
            tmp = None
        else:
            fd, tmp = tempfile.mkstemp(prefix="rocketspec-diff-ref-", suffix=".jsonl")
            os.close(fd)
            ref = tmp
            simulate_reference(scenario, seed, prof, ref)
        try:
            report = build_report(ref, real, time_tolerance_ms)
        finally:
            if tmp is not None:
                os.unlink(tmp)
        if tmp is not None:
            report["ref"]["path"] = f"simulated: --scenario {scenario} --seed {seed} --profile {prof}"
    else:
        if real_opt is not None or keep_ref is not None or profile is not None:
            raise UserError("--real, --profile and --keep-ref go with --scenario; "
                            "otherwise give two traces: rocketspec diff REF REAL")
        if ref is None or real is None:
            raise UserError("expected two traces (rocketspec diff REF REAL) or --scenario NAME --real REAL")
        report = build_report(ref, real, time_tolerance_ms)

    if as_json:

        sys.stdout.write(jsonout.dumps(report, non_str_keys=True) + "\n")
    elif markdown:
        sys.stdout.write(render_markdown(report))
    else:
        click.echo(render_text(report))
    sys.exit(1 if fail_on_difference and report["differences"] else 0)
