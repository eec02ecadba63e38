"""`rocketspec profiles`: the version profiles, their switches, and the known-bug profiles with
the upstream issue each reproduces and the invariant `check` reports first on the bug's
scenario simulated under the profile (tests/test_docs_agree.py keeps the two equal)."""
from __future__ import annotations

import click


@click.command("profiles")
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--diff", "diff_base", default=None, metavar="BASE",
              help="Show only the switches that differ from profile BASE.")
def profiles(name, as_json, diff_base):
    """List the profiles, or show one profile's switches (NAME).

    A known-bug profile names its upstream issue and the invariant `check` reports first on the
    bug's scenario simulated under it (`rocketspec simulate --scenario bug-2449 --profile
    bug-2449-rocketmq-4.8.0`, then `rocketspec check`); its description says what follows."""
    import sys

    import orjson

    from rocketspec.spec import invariants
    from rocketspec.rocketmq.profiles import PROFILES, get_profile, switch_names

    chosen = [get_profile(name)] if name else list(PROFILES.values())
    base = get_profile(diff_base) if diff_base else None

    def entry(p):
        sw = p.switches()
        d = {"name": p.name, "release": p.release, "description": p.description,
             "known_bug": p.known_bug, "expected_violation": p.expected_violation}
        if p.expected_violation:
            inv = invariants.BY_ID.get(p.expected_violation)
            d["expected_violation_title"] = inv.title if inv else None
        keys = [k for k in switch_names() if k not in ("known_bug", "expected_violation")]
        if base is not None:
            bsw = base.switches()
            keys = [k for k in keys if sw[k] != bsw[k]]
        d["switches"] = {k: sw[k] for k in keys}
        return d

    data = [entry(p) for p in chosen]
    if as_json:
        sys.stdout.write(orjson.dumps(data if name is None else data[0]).decode() + "\n")
        return
    if name is None and base is None:
        click.echo("Release profiles:")
        for p in chosen:
            if not p.known_bug:
                click.echo(f"  {p.name:28} {p.description}")
        click.echo("\nKnown-bug profiles (-> the invariant `check` reports first on the bug's scenario, "
                   "bug-NNNN or, for #6163, orderly-dlq, simulated under the profile):")
        for p in chosen:
            if p.known_bug:
                click.echo(f"  {p.name:28} {p.known_bug:7} -> {p.expected_violation:12} {p.description}")
        click.echo("\n`rocketspec profiles NAME` shows a profile's switches; --diff BASE only the differences.")
        return
    for d in data:
        click.echo(f"{d['name']} (release {d['release']})")
        if d["description"]:
            click.echo(f"  {d['description']}")
        if d["known_bug"]:
            click.echo(f"  known bug {d['known_bug']}: `check` reports {d['expected_violation']} first "
                       f"({d.get('expected_violation_title')})")
        for k, v in d["switches"].items():
            click.echo(f"  {k} = {v!r}")
