"""`rocketspec simulate` and `rocketspec scenarios`."""
from __future__ import annotations

import sys
import time

import click

from rocketspec.commands.options import SEED, progress_bar
from rocketspec.spec.profiles import DEFAULT_PROFILE, get_profile


@click.command()
@click.option("--scenario", "scenario_name", default="basic", show_default=True,
              help="A built-in scenario name (see `rocketspec scenarios`) or a .toml/.json scenario file.")
@click.option("--seed", default=1, show_default=True, type=SEED,
              help="Seed of the simulator's random source (0 to 2^63-1).")
@click.option("--profile", default=DEFAULT_PROFILE, show_default=True, help="Version profile (see `rocketspec profiles`).")
@click.option("--out", "out", default="trace.jsonl", show_default=True,
              help="Trace file to write: .jsonl or .parquet; - for standard output (JSON Lines).")
@click.option("--quiet", is_flag=True, help="Print nothing on success, and no progress.")
def simulate(scenario_name, seed, profile, out, quiet):
    """Run a scenario on the reference broker and client and write its trace.

    Progress is shown on standard error when it is a terminal."""
    from rocketspec.reference.runner import run
    from rocketspec.reference.scenario import load_scenario
    from rocketspec.traces.io import open_writer

    # bad input (profile, scenario, output path) raises a UserError: the CLI's one error path
    prof = get_profile(profile)
    sc = load_scenario(scenario_name)
    writer = open_writer(out)
    count = 0
    bar = progress_bar(enabled=not quiet, total=sc["duration_ms"] / 1000, unit=" s simulated")

    def sink(ev):
        nonlocal count
        count += 1
        writer.write(ev)
        if bar is not None and not count & 4095:
            bar.update(ev["ts"] / 1000 - bar.n)
            bar.set_postfix(events=count, refresh=False)

    t0 = time.perf_counter()
    try:
        reason = run(sc, seed, prof, sink)
    finally:
        if bar is not None:
            bar.close()
        writer.close()
    dt = time.perf_counter() - t0
    if not quiet:
        # the summary goes to stderr when the trace itself goes to stdout
        click.echo(f"{sc['name']} seed={seed} profile={prof.name}: {count} events, ended {reason}, "
                   f"{dt:.2f}s -> {'standard output' if out == '-' else out}", err=out == "-")


@click.command()
def scenarios():
    """List the built-in scenarios."""
    from rocketspec.reference.scenario import builtin_names, load_scenario

    for name in builtin_names():
        sc = load_scenario(name)
        first = " ".join(sc["description"].split())
        click.echo(f"{name:24} {first}")
