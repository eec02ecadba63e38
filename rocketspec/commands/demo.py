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
@click.option("--verbose", is_flag=True, help="Print each scenario's whole description and each trace's full "
                                              "check report, with the last accepted state of each error's key.")
def demo(out_dir, seed, verbose):
    """Simulate the default scenarios and check their traces against the spec: one line per trace
    with its verdict against the scenario's declared one, then the cause of each error."""
    from rocketspec.traces.reports.verdict_text import render_text
    from rocketspec.traces.reports.verdict_text import bug_profile_hint
    from rocketspec.reference.runner import run
    from rocketspec.conformance.verdicts import load_checked_scenario
    from rocketspec.reference.scenario import expected_failures
    from rocketspec.spec.replay import check_trace
    from rocketspec.traces.io import open_writer

    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as exc:
        click.echo(f"error: cannot create {out_dir}: {exc.strerror}", err=True)
        sys.exit(2)
    differ = []
    runs = 0
    for name in DEMO_SCENARIOS:
        sc = load_checked_scenario(name)
        words = " ".join(sc["description"].split())
        click.echo(f"== {name}: {words if verbose else first_sentence(words)}")
        for profile in DEMO_PROFILES:
            path = os.path.join(out_dir, f"{name}-{profile}-seed{seed}.jsonl")
            with open_writer(path) as w:
                reason = run(sc, seed, profile, w.write)
            rep = check_trace(path)
            runs += 1
            want = expected_failures(sc, profile)
            ok, line = verdict_line(rep, want)
            if not ok:
                differ.append(f"{name} [{profile}]")
            click.echo(f"  {profile}: {line}")
            hint = bug_profile_hint(rep)
            if hint:
                click.echo(f"    {hint}")
            click.echo(f"    trace: {path}")
            if reason != "quiescent":
                click.echo(f"    note: the run ended by {reason}, not at quiescence")
            if verbose:
                click.echo("\n".join("    " + ln for ln in render_text(rep, verbose=True).splitlines()))
            else:
                for cause in causes(rep):
                    click.echo(f"    {cause}")
        click.echo("")
    if differ:
        click.echo(f"demo: {len(differ)} of {runs} verdicts DIFFER from the declared ones: {', '.join(differ)}")
    else:
        click.echo(f"demo: all {runs} verdicts as declared by their scenarios")
    click.echo("Next: `rocketspec check TRACE` (--verbose for the state of each key), `rocketspec explain TRACE`, "
               "`rocketspec scenarios`, `rocketspec simulate --scenario NAME --out t.jsonl`, `rocketspec profiles`.")
    sys.exit(1 if differ else 0)


def first_sentence(text: str) -> str:
    """A description's first sentence (the rest with --verbose)."""
    end = text.find(". ")
    return text if end < 0 else text[:end + 1] + " (...)"


def verdict_line(rep, want) -> tuple[bool, str]:
    """(whether the verdict is the declared one, the line that says it): the spec's verdict, the
    declared one, and what the verdict did not judge."""
    from rocketspec.traces.reports.verdict_text import verdict_word

    got = sorted({f.inv for f in rep.findings.errors})
    verdict = verdict_word(rep) + (f": {', '.join(got)}" if got else "")
    if want is None:
        return rep.ok, f"{verdict} (no declared verdict: it must hold)"
    said = "holds" if not want else "fails with " + ", ".join(sorted(want))
    ok = set(got) == set(want)
    return ok, f"{verdict}, {'as declared' if ok else 'DIFFERS from the declared verdict: ' + said}"


def causes(rep, limit: int = 3) -> list[str]:
    """The first error of each invariant, in one line each, and the allowed anomalies counted."""
    out, seen = [], set()
    for f in rep.findings.errors:
        if f.inv in seen:
            continue
        seen.add(f.inv)
        if len(seen) > limit:
            out.append(f"... ({rep.findings.error_count} errors in all: `rocketspec check` lists them)")
            break
        where = f"seq {f.seq}, {rep.position} {f.line}" if f.seq is not None else "at the end"
        out.append(f"{f.inv} ({where}): {f.message}")
    from rocketspec.spec.invariants import severity

    allowed = {k: n for k, n in rep.findings.counts.items() if severity(k) != "error"}
    if allowed:
        out.append("allowed: " + ", ".join(f"{k} {n}" for k, n in sorted(allowed.items())))
    return out
