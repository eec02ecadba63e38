"""`rocketspec simulate` and `rocketspec scenarios`."""
from __future__ import annotations

import sys
import time

import click

from rocketspec.commands.options import SEED, progress_bar
from rocketspec.rocketmq.profiles import DEFAULT_PROFILE, get_profile


@click.command()
@click.option("--scenario", "scenario_name", default="basic", show_default=True,
              help="A built-in scenario name (see `rocketspec scenarios`) or a .toml/.json scenario file.")
@click.option("--seed", default=1, show_default=True, type=SEED,
              help="Seed of the simulator's random source (0 to 2^63-1).")
@click.option("--profile", default=DEFAULT_PROFILE, show_default=True, help="Version profile (see `rocketspec profiles`).")
@click.option("--out", "out", default="trace.jsonl", show_default=True,
              help="Trace file to write: .jsonl or .parquet; - for standard output (JSON Lines). A file appears "
                   "only complete: an interrupted run leaves no part of it and an older file as it was.")
@click.option("--quiet", is_flag=True, help="Print nothing on success, and no progress.")
@click.option("--events", "min_events", default=None, type=click.IntRange(1, None),
              help="Large data: run seeds --seed, --seed + 1, ... until at least this many events, each run a "
                   "complete trace in OUT/run=<seed>/part-0.parquet (--out is then a directory, one writer at a "
                   "time; a run appears only complete).")
@click.option("--workers", default=None, type=click.IntRange(1, 256),
              help="With --events: worker processes (default and at most: one per usable core; no more than "
                   "the runs the events need).")
@click.option("--max-events", "max_events", default=None, type=click.IntRange(1, None),
              help="A budget: stop after this many events. A run cut short has no trace_ended (check then "
                   "judges safety only) and exits 4, incomplete.")
def simulate(scenario_name, seed, profile, out, quiet, min_events, workers, max_events):
    """Run a scenario on the reference broker and client and write its trace.

    Progress is shown on standard error when it is a terminal."""
    from rocketspec.reference.runner import run
    from rocketspec.conformance.verdicts import load_checked_scenario
    from rocketspec.traces.io import open_writer

    # bad input (profile, scenario, output path) raises a UserError: the CLI's one error path
    prof = get_profile(profile)
    sc = load_checked_scenario(scenario_name)
    _refuse_scenario_as_output(scenario_name, out)
    if max_events is not None and min_events is not None:
        raise click.UsageError("--max-events bounds one run; --events makes a dataset of complete runs")
    if min_events is not None:
        _simulate_dataset(sc, seed, prof, out, quiet, min_events, workers)
        return
    if workers is not None:
        raise click.UsageError("--workers goes with --events")
    writer = open_writer(out)
    count = 0
    bar = progress_bar(enabled=not quiet, total=sc["duration_ms"] / 1000, unit=" s simulated")

    def sink(ev):
        nonlocal count
        if count == max_events:
            raise _BudgetSpent
        count += 1
        writer.write(ev)
        if bar is not None and not count & 4095:
            bar.update(ev["ts"] / 1000 - bar.n)
            bar.set_postfix(events=count, refresh=False)

    t0 = time.perf_counter()
    # The file appears only when the run ends (or its budget does): Ctrl-C, SIGTERM or an error
    # leaves no prefix under its name, and an older file there stays as it was.
    try:
        with writer:
            try:
                reason = run(sc, seed, prof, sink)
            except _BudgetSpent:
                reason = None
    finally:
        if bar is not None:
            bar.close()
    dt = time.perf_counter() - t0
    if reason is None:
        # Not an error: the run asked for more than the budget allows (a long drain, say).
        click.echo(f"INCOMPLETE: {sc['name']} seed={seed}: stopped after {count} events (--max-events) "
                   f"before the run ended; the trace has no trace_ended, so check judges safety only",
                   err=True)
        sys.exit(4)
    if not quiet:
        # the summary goes to stderr when the trace itself goes to stdout
        click.echo(f"{sc['name']} seed={seed} profile={prof.name}: {count} events, ended {reason}, "
                   f"{dt:.2f}s -> {'standard output' if out == '-' else out}", err=out == "-")


def _refuse_scenario_as_output(scenario_name, out):
    """--out naming the scenario file (not a built-in name) would overwrite it."""
    import os

    from rocketspec.outputs import refuse_input_as_output
    from rocketspec.reference.scenario import builtin_names

    if os.path.isfile(scenario_name) and (scenario_name.endswith((".toml", ".json"))
                                          or scenario_name not in builtin_names()):
        refuse_input_as_output(out, "--out", [("--scenario", scenario_name)])


class _BudgetSpent(Exception):
    """--max-events reached: unwinds the reference's run from the sink."""


def _simulate_dataset(sc, seed, prof, out, quiet, min_events, workers):
    import os

    from rocketspec.errors import UserError
    from rocketspec.outputs import claim_directory, sigterm_interrupts
    from rocketspec.reference.bulk import simulate_dataset

    if out == "-" or out.endswith((".jsonl", ".parquet", ".gz", ".zst")):
        raise UserError("with --events, --out is a directory (one Parquet partition per run)", file=out)
    if os.path.exists(out) and not os.path.isdir(out):
        raise UserError("exists and is not an empty dataset directory: give a new one", file=out)
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create the dataset directory: {exc.strerror}", file=out) from None
    # One writer per dataset: the claim comes before the look for runs, so two writers started
    # together cannot both find the directory empty. Runs appear whole (reference/bulk.py).
    with claim_directory(out, "the dataset directory"), sigterm_interrupts():
        if any(n.startswith("run=") for n in os.listdir(out)):
            raise UserError("exists and is not an empty dataset directory: give a new one", file=out)
        bar = progress_bar(enabled=not quiet, total=min_events, unit=" events", unit_scale=True)

        def progress(n):
            bar.update(n - bar.n)

        try:
            r = simulate_dataset(sc, prof.name, out, min_events, seed, workers,
                                 progress if bar is not None else None)
        finally:
            if bar is not None:
                bar.close()
    if not quiet and workers is not None and r["workers"] < workers:
        click.echo(f"note: --workers {workers} capped to the {r['workers']} core(s) this machine gives", err=True)
    if not quiet:
        click.echo(f"{sc['name']} profile={prof.name}: {r['events']:,} events in {r['runs']} runs (seeds "
                   f"{r['seeds'][0]}..{r['seeds'][1]}), {r['seconds']:.1f}s = {r['events_per_s']:,.0f} events/s "
                   f"on {r['workers']} workers -> {out}/run=*/part-0.parquet")


@click.command()
def scenarios():
    """List the built-in scenarios."""
    from rocketspec.conformance.verdicts import load_checked_scenario
    from rocketspec.reference.scenario import builtin_names

    for name in builtin_names():
        sc = load_checked_scenario(name)
        first = " ".join(sc["description"].split())
        click.echo(f"{name:24} {first}")
