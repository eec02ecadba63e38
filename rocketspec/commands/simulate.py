"""`rocketspec simulate` and `rocketspec scenarios`."""
from __future__ import annotations

import sys
import time

import click

from rocketspec.spec.profiles import DEFAULT_PROFILE, UnknownProfile, get_profile


@click.command()
@click.option("--scenario", "scenario_name", default="basic", show_default=True,
              help="A built-in scenario name (see `rocketspec scenarios`) or a .toml/.json scenario file.")
@click.option("--seed", default=1, show_default=True, type=int, help="Seed of the simulator's random source.")
@click.option("--profile", default=DEFAULT_PROFILE, show_default=True, help="Version profile (see `rocketspec profiles`).")
@click.option("--out", "out", default="trace.jsonl", show_default=True, help="Trace file to write: .jsonl or .parquet.")
@click.option("--quiet", is_flag=True, help="Print nothing on success.")
def simulate(scenario_name, seed, profile, out, quiet):
    """Run a scenario on the reference broker and client and write its trace."""
    from rocketspec.reference.runner import run
    from rocketspec.reference.scenario import ScenarioError, load_scenario
    from rocketspec.traces.io import TraceInputError, open_writer

    try:
        prof = get_profile(profile)
        sc = load_scenario(scenario_name)
        writer = open_writer(out)
    except (UnknownProfile, ScenarioError, TraceInputError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except OSError as exc:
        click.echo(f"error: cannot write {out}: {exc.strerror}", err=True)
        sys.exit(2)
    count = 0

    def sink(ev):
        nonlocal count
        count += 1
        writer.write(ev)

    t0 = time.perf_counter()
    try:
        reason = run(sc, seed, prof, sink)
    finally:
        writer.close()
    dt = time.perf_counter() - t0
    if not quiet:
        click.echo(f"{sc['name']} seed={seed} profile={prof.name}: {count} events, ended {reason}, "
                   f"{dt:.2f}s -> {out}")


@click.command()
def scenarios():
    """List the built-in scenarios."""
    from rocketspec.reference.scenario import builtin_names, load_scenario

    for name in builtin_names():
        sc = load_scenario(name)
        first = " ".join(sc["description"].split())
        click.echo(f"{name:24} {first}")
