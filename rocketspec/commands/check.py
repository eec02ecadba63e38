"""`rocketspec check PATH [--profile P] [--json]`: validate a trace against the spec.

Exit codes: 0 the trace holds (warnings allowed) on the rules its observation level lets the spec
judge, 1 a violation, 2 bad input (malformed line, missing field, unknown event kind, events out of
order, unknown profile, missing file), 4 incomplete: the trace's observation level
(trace_started.observed) leaves no rule to judge.
"""
from __future__ import annotations

import sys

import click

from rocketspec.traces.reports.verdict_text import render_text, require_end


def _check_run(run_dir, profile, max_listed, end_required=False):
    """One run of a dataset (its one trace file, as `simulate --events` writes it): a Report, or
    the bad input as an exception (reported with the run, not raised: the other runs go on)."""
    from pathlib import Path

    from rocketspec.errors import UserError
    from rocketspec.spec.replay import check_trace

    files = sorted(str(f) for f in Path(run_dir).rglob("*")
                   if f.is_file() and not any(p.startswith((".", "_")) for p in f.relative_to(run_dir).parts))
    if len(files) != 1:
        return UserError(f"{len(files)} files in this run; `check` reads one trace file per run (`replay` reads "
                         "runs of several files)", file=run_dir)
    try:
        rep = check_trace(files[0], profile, max_listed=max_listed)
        return require_end(rep) if end_required else rep
    except UserError as exc:
        return exc


@click.command("check")
@click.argument("path")
@click.option("--profile", "profile", default=None,
              help="Version profile (default: the profile named by the trace's trace_started event).")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable JSON report.")
@click.option("--max-violations", default=50, show_default=True, type=click.IntRange(0, 1_000_000),
              help="List at most this many errors.")
@click.option("--quiet", is_flag=True, help="No progress display.")
@click.option("--verbose", is_flag=True, help="Also print the last accepted state of each error's key (JSON).")
@click.option("--require-end", "end_required", is_flag=True,
              help="A trace with no trace_ended event is bad input (exit 2), instead of being judged for "
                   "safety only.")
@click.option("--emitter", is_flag=True,
              help="Check the emitter that wrote the trace (docs/emitter.md): what its recorder left out or marked "
                   "wrongly, apart from what the client broke at the declared level. Exit 0 conforms, 1 not.")
def check(path, profile, as_json, max_violations, quiet, verbose, end_required, emitter):
    """Replay the trace at PATH through the spec: JSON Lines (- for standard input) or Parquet,
    gzip or zstd compressed or not (told by the file's first bytes). A directory of run=<id>
    partitions (what `simulate --events` writes) is a dataset of runs: each run is checked as its
    own trace, one line per run, then the reports of those that fail.

    A trace with no trace_ended event (or one that ended by something other than quiescence or a
    horizon) is judged for safety only: liveness (INV-LIVE-1) is judged at the end, and the
    verdict says it was not; --require-end makes a missing trace_ended an error, for CI.

    A trace whose trace_started declares what it observed (`observed`: broker, client_reports,
    client_internals; docs/emitter.md) is judged only on the rules whose events that level holds;
    the report lists the rules judged and each one not judged with the side it lacks. A level that
    leaves no rule to judge is incomplete (exit 4).

    Progress is shown on standard error when it is a terminal. Exit 0 when it holds, 1 on a
    violation, 2 on bad input, 4 when nothing could be judged."""
    from rocketspec import jsonout
    from rocketspec.commands.options import progress_bar, progress_shown
    from rocketspec.spec.replay import check_trace
    from rocketspec.traces.datasets import dataset_runs
    from rocketspec.traces.io import input_size

    if emitter:
        from rocketspec.traces.reports.emitter_conformance import conformance, render

        d = conformance(path, profile)
        click.echo(jsonout.dumps(d, non_str_keys=True) if as_json else render(d))
        sys.exit(0 if d["verdict"] == "conforms" else 1)
    runs = dataset_runs(path) if path != "-" else None
    if runs:
        from rocketspec.commands.runs import report_runs

        sys.exit(report_runs(path, runs, [_check_run(d, profile, max_violations, end_required) for _, d in runs], None, as_json))

    # the total only for a bar that is shown: for Parquet it reads the footer a second time
    total, unit = input_size(path) if progress_shown(not quiet) else (None, "B")
    bar = progress_bar(enabled=not quiet, total=total, unit=unit, unit_scale=unit == "B")
    progress = None
    if bar is not None:
        def progress(done):
            bar.update(done - bar.n)
    try:
        # bad input raises TraceInputError / UnknownProfile: reported by the CLI's one error path
        rep = check_trace(path, profile, max_listed=max_violations, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    if end_required:
        require_end(rep)
    if as_json:
        sys.stdout.write(jsonout.dumps(rep.to_dict(), non_str_keys=True) + "\n")
    else:
        click.echo(render_text(rep, verbose=verbose))
    sys.exit(1 if not rep.ok else 4 if rep.nothing_judged else 0)

