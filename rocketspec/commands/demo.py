"""`rocketspec demo`: the main job on its built-in defaults.

Simulates the default scenarios on the reference broker and client under both current
profiles, writes each trace, and validates it against the spec: the whole pipeline a
newcomer needs to see once. Each scenario declares its verdict (`expect` in its file): a clean
one must hold, one that breaks a guarantee must fail with it. The demo exits 1 if any verdict
differs from the declared one."""
from __future__ import annotations

import os
import sys

import click

from rocketspec.commands.options import SEED

DEMO_SCENARIOS = ("basic", "faults", "orderly-pause-broker-lock")
DEMO_PROFILES = ("rocketmq-5.3.3", "rocketmq-4.9.8")


@click.command()
@click.option("--out-dir", default="out", show_default=True, help="Where the traces are written.")
@click.option("--seed", default=1, show_default=True, type=SEED, help="Seed of the simulator (0 to 2^63-1).")
def demo(out_dir, seed):
    """Simulate the default scenarios and check their traces against the spec."""
    from rocketspec.commands.check import render_text
    from rocketspec.reference.runner import run
    from rocketspec.reference.scenario import expected_failures, load_scenario
    from rocketspec.spec.replay import check_trace
    from rocketspec.traces.io import open_writer

    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as exc:
        click.echo(f"error: cannot create {out_dir}: {exc.strerror}", err=True)
        sys.exit(2)
    failed = False
    for name in DEMO_SCENARIOS:
        sc = load_scenario(name)
        click.echo(f"== {name}: {' '.join(sc['description'].split())}")
        for profile in DEMO_PROFILES:
            path = os.path.join(out_dir, f"{name}-{profile}-seed{seed}.jsonl")
            w = open_writer(path)
            try:
                reason = run(sc, seed, profile, w.write)
            finally:
                w.close()
            rep = check_trace(path)
            click.echo(render_text(rep))
            want = expected_failures(sc, profile)
            got = {f.inv for f in rep.findings.errors}
            if want is not None:
                said = "holds" if not want else "fails with " + ", ".join(sorted(want))
                ok = got == set(want)
                click.echo(f"  expected: {said}: {'as declared' if ok else 'DIFFERS from the declared verdict'}")
                failed |= not ok
            else:
                failed |= not rep.ok
            if reason != "quiescent":
                click.echo(f"  note: the run ended by {reason}, not at quiescence")
        click.echo("")
    click.echo("Next: `rocketspec scenarios`, `rocketspec simulate --scenario NAME --out t.jsonl`, "
               "`rocketspec check t.jsonl`, `rocketspec profiles`.")
    sys.exit(1 if failed else 0)
