"""`rocketspec prove`: z3 proofs of the allocation strategies and of the lock lease.

Without lease options it runs every proof (or those named with ``--only``; a name or a
prefix such as ``avg``, ``circle``, ``lease``) and prints each statement with its verdict:

\b
  PROVED    the statement holds for every value of its variables
  REFUTED   z3 found a counterexample, printed as its model
  UNKNOWN   z3 gave up (timeout)

Demonstrations (a deliberately wrong allocation rule, unsafe lease settings) are expected
to be REFUTED; that counts as holding.

With any of ``--client-lease``, ``--broker-lock``, ``--renew-period``, ``--consume-max``,
``--latency`` (or ``--profile``) it answers "is this lease configuration safe?" instead: it proves that no
run lets two clients consume one orderly queue at once, or prints one that does, and
checks liveness (whether a client's own lease lapses between renewals). Unset values come
from the profile (L, T, R), and ``--consume-max`` defaults to the largest safe value.

Exit status: 0 when every result is as expected (configuration mode: the configuration is
safe; a liveness warning does not fail it); 1 otherwise; 2 for a usage error.
"""
from __future__ import annotations

import sys
import time

import click

LEASE_OPTIONS = ("client_lease", "broker_lock", "renew_period", "consume_max", "latency")


def _fmt_value(v) -> str:
    from fractions import Fraction
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, Fraction):
        return f"{float(v):.3f}"
    return str(v)


def _print_result(r, verbose: bool = True, config: bool = False) -> None:
    from rocketspec.model_checks.proofs.lease import describe_counterexample

    verdict = r.status.upper()
    tag = "" if r.holds else "   <-- UNEXPECTED (expected " + r.expected.upper() + ")"
    if r.holds and r.expected != "proved":
        tag = f"   (expected: {r.kind})"
    if config:
        tag = ""
    click.echo(f"{verdict:8} {r.name}  [{r.seconds:.3f} s]{tag}")
    click.echo(f"  {r.statement}")
    if r.model and verbose:
        if any(k in r.model for k in ("a_call_start", "check_time")):
            click.echo("  counterexample:")
            for line in describe_counterexample(r.model):
                click.echo(f"    {line}")
        else:
            click.echo("  model: " + ", ".join(f"{k}={_fmt_value(v)}" for k, v in r.model.items()))
    for note in r.notes:
        click.echo(f"  note: {note}")
    click.echo("")


def _emit_json(payload) -> None:
    import orjson
    sys.stdout.write(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode() + "\n")


@click.command("prove", help=__doc__.replace("`", ""))
@click.option("--only", "only", multiple=True, metavar="NAME",
              help="Run only this proof (a name or a prefix: avg, circle, lease); repeatable.")
@click.option("--list", "list_names", is_flag=True, help="List the proofs' names and exit.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--client-lease", type=click.IntRange(min=0), default=None, metavar="MS",
              help="L: client lock lease (REBALANCE_LOCK_MAX_LIVE_TIME); profile default 30000.")
@click.option("--broker-lock", type=click.IntRange(min=0), default=None, metavar="MS",
              help="T: broker lock lifetime; profile default 60000.")
@click.option("--renew-period", type=click.IntRange(min=1), default=None, metavar="MS",
              help="R: lockAll period (REBALANCE_LOCK_INTERVAL); profile default 20000.")
@click.option("--consume-max", type=click.IntRange(min=1), default=None, metavar="MS",
              help="C: longest listener call, wall clock; default: the largest safe value.")
@click.option("--latency", type=click.IntRange(min=0), default=None, metavar="MS",
              help="D: longest lock round trip (send to reply handled); default 0. "
                   "RocketMQ's lock RPC times out after 1000.")
@click.option("--renewals", type=click.Choice(["lossy", "reliable"]), default="lossy",
              show_default=True,
              help="Configuration mode: may renewals be lost (RocketMQ: yes), or only paused?")
@click.option("--profile", "profile_name", default=None, metavar="NAME",
              help="Version profile for the default L, T, R.")
def prove(only, list_names, as_json, client_lease, broker_lock, renew_period, consume_max,
          latency, renewals, profile_name):
    from rocketspec.model_checks.proofs import UnknownProof, proof_names, run_proofs, select

    if list_names:
        for name in proof_names():
            click.echo(name)
        return
    lease_given = any(v is not None for v in (client_lease, broker_lock, renew_period,
                                              consume_max, latency))
    if lease_given or profile_name is not None:
        if only:
            raise click.UsageError("--only cannot be combined with the lease configuration options")
        sys.exit(_config_mode(as_json, client_lease, broker_lock, renew_period, consume_max,
                              latency, renewals, profile_name))
    try:
        select(only)
    except UnknownProof as exc:
        raise click.BadParameter(str(exc), param_hint="--only") from None
    t0 = time.perf_counter()
    results = run_proofs(only)
    total = time.perf_counter() - t0
    ok = all(r.holds for r in results)
    if as_json:
        _emit_json({"ok": ok, "seconds": round(total, 3), "results": [r.to_json() for r in results]})
    else:
        for r in results:
            _print_result(r)
        proved = sum(r.status == "proved" for r in results)
        demos = sum(r.holds and r.expected == "refuted" for r in results)
        bad = [r.name for r in results if not r.holds]
        click.echo(f"{len(results)} results in {total:.2f} s: {proved} proved, {demos} "
                   f"demonstrations refuted as expected, {len(bad)} unexpected"
                   + (f" ({', '.join(bad)})" if bad else "") + ".")
    sys.exit(0 if ok else 1)


def _config_mode(as_json, client_lease, broker_lock, renew_period, consume_max, latency,
                 renewals, profile_name) -> int:
    from rocketspec.model_checks.proofs.lease import LeaseParams, check_config
    from rocketspec.rocketmq.profiles import UnknownProfile, get_profile

    try:
        profile = get_profile(profile_name)
    except UnknownProfile as exc:
        raise click.BadParameter(str(exc), param_hint="--profile") from None
    L = profile.client_lock_max_live_ms if client_lease is None else client_lease
    T = profile.broker_lock_max_live_ms if broker_lock is None else broker_lock
    R = profile.client_lock_interval_ms if renew_period is None else renew_period
    D = 0 if latency is None else latency
    derived_c = consume_max is None
    C = consume_max if consume_max is not None else max(T - L - D, 1)
    params = LeaseParams(client_lease=L, broker_lock=T, renew_period=R, consume_max=C, latency=D)
    t0 = time.perf_counter()
    results = check_config(params, renewals=renewals)
    total = time.perf_counter() - t0
    safety = [r for r in results if r.kind == "safety"]
    safe = all(r.status == "proved" for r in safety)
    note = None
    if derived_c:
        note = (f"--consume-max not given: checked at C = {C}, the largest safe value by "
                "L + C + D <= T" if T - L - D >= 1 else
                f"--consume-max not given and T - L - D = {T - L - D} < 1: no listener call "
                "is short enough; checked at C = 1")
        if renewals == "reliable":
            note += " (the lossy-renewal bound; reliable renewals may allow more)"
    if as_json:
        _emit_json({"ok": safe, "safe": safe, "profile": profile.name, "renewals": renewals,
                    "config": params.as_dict(), "consume_max_derived": derived_c,
                    "seconds": round(total, 3), "results": [r.to_json() for r in results]})
    else:
        click.echo(f"Lease configuration (profile {profile.name}, {renewals} renewals): "
                   f"L={L} T={T} R={R} C={C} D={D} ms")
        if note:
            click.echo(note)
        click.echo("")
        for r in results:
            if r.kind == "liveness" and r.status == "refuted":
                click.echo("WARNING (liveness, not safety):")
            _print_result(r, config=True)
        click.echo("SAFE: no run lets A and B consume the queue at once." if safe else
                   "UNSAFE: the counterexample above is a run in which A and B consume the "
                   "queue at once." if any(r.status == "refuted" for r in safety) else
                   "UNDECIDED: z3 gave no answer.")
    return 0 if safe else 1
