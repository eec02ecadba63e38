"""`rocketspec minimize TRACE [-o MIN.jsonl] [--invariant ID] [--profile P] [--match guard|invariant]
[--json] [--quiet]`: shrink a failing trace to a short one that `check` rejects with the same
invariant (traces/minimize/minimize.py; docs/minimize.md). With --format msgtrace|openchaos|trace
[--groups F] [--complete|--lossy] (or an H-... --invariant, or a file that is not a trace): a
failing history, `rocketspec history` as the oracle, written in its own format
(traces/minimize/minimize_history.py).

Exit codes: 1 the minimized trace was written (it fails, as the input did: a finding); 2 bad
input, including a trace that holds (nothing to minimize) or that does not violate --invariant;
3 an internal error.
"""
from __future__ import annotations

import sys

import click

from rocketspec import jsonout

from rocketspec.errors import EXIT_FINDING

SHOW_UNITS = 6      # unit names listed per kind in the text report


def render_text(res, out: str | None) -> str:
    d = res.to_dict()
    lines = [f"{res.invariant} kept: {res.original_events} -> {len(res.events)} events "
             f"({100 * len(res.events) / max(1, res.original_events):.1f}%), {res.tests} replays, "
             f"{res.seconds:.2f} s, profile {res.profile}"]
    lines.append(f"  {res.invariant} {d['title']}")
    if res.key:
        lines.append("    key: " + ", ".join(f"{k}={v}" for k, v in res.key.items()))
    lines.append(f"    {res.message}")
    if not res.exact:
        lines.append("  NOTE: other events of the result are rejected too (with other ids): they could not be "
                     "removed without losing the violation")
    lines.append("")
    lines.append("  removed:")
    by_kind: dict[str, list] = {}
    for r in res.removed:
        by_kind.setdefault(r.kind, []).append(r)
    for kind, rs in by_kind.items():
        n = sum(r.events for r in rs)
        if kind in ("after", "slice", "rejected"):
            for r in rs:
                lines.append(f"    {r.unit}: {r.events} events")
            continue
        if kind == "event":
            lines.append(f"    single events: {n}")
            continue
        names = ", ".join(r.unit for r in rs[:SHOW_UNITS]) + (f", ... ({len(rs)} in all)" if len(rs) > SHOW_UNITS else "")
        lines.append(f"    {len(rs)} {kind.replace('_', ' ')} unit{'s' * (len(rs) != 1)}, {n} events: {names}")
    lines.append("")
    lines.append("  the minimized trace, and why each event stays:")
    reasons = {r.seq: r for r in res.reasons}
    for ev in res.events:
        brief = _brief(ev)
        lines.append(f"    {ev['seq']:>3} ts {ev['ts']:<8} {ev['kind']:<22} {brief}")
        r = reasons.get(ev["seq"])
        if r is not None:
            lines.append(f"          -> {r.text()}")
    if out is not None:
        lines.append("")
        where = "standard output" if out == "-" else out
        lines.append(f"  wrote {where}: `rocketspec check` rejects it with {res.invariant}; "
                     f"`rocketspec explain` draws it")
    return "\n".join(lines)


_SKIP = frozenset({"seq", "ts", "kind", "config", "subscriptions", "schema_version", "msg_ids", "origin_msg_ids",
                   "reconsume_list", "expr", "expr_type", "max_nums", "view", "mqs"})


def _brief(ev) -> str:
    parts = []
    for k, v in ev.items():
        if k in _SKIP or v is None:
            continue
        parts.append(f"{k}={v}")
    text = " ".join(parts)
    return text if len(text) <= 110 else text[:107] + "..."


@click.command("minimize")
@click.argument("path")
@click.option("-o", "--out", "out", default=None,
              help="Where to write the minimized trace (JSON Lines; - for standard output). Default: "
                   "TRACE.min.jsonl next to the input. Never one of the inputs.")
@click.option("--invariant", default=None,
              help="The invariant id to keep (default: the trace's first violation's).")
@click.option("--profile", default=None,
              help="Version profile (default: the one named by the trace's trace_started event).")
@click.option("--match", type=click.Choice(["guard", "invariant"]), default="guard", show_default=True,
              help="guard: the result fails the same guard as the input (same invariant, same kind of event, "
                   "same message but for its numbers); invariant: the same invariant id is enough.")
@click.option("--format", "fmt", type=click.Choice(["trace", "msgtrace", "openchaos"]), default=None,
              help="Minimize a history (the black-box guarantees of `rocketspec history` as the oracle) in this "
                   "format. Implied by a message-trace or OpenChaos file, or an H-... --invariant.")
@click.option("--complete/--lossy", "complete", default=None,
              help="History: as for `rocketspec history` (default: the source's own).")
@click.option("--groups", "groups_file", default=None,
              help="History: JSON file declaring per group what the source does not carry (as for "
                   "`rocketspec history`).")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable JSON report.")
@click.option("--quiet", is_flag=True, help="No progress display.")
def minimize_cmd(path, out, invariant, profile, match, fmt, complete, groups_file, as_json, quiet):
    """Shrink the failing trace at PATH to a short trace that `rocketspec check` still rejects
    with the same invariant: every other event accepted, the violation last.

    Removes whole units first (groups, brokers, topics, queues, clients, ProcessQueues, messages
    with their retries, pauses, lock requests, persists, pulls, listener calls), slicing by the
    violation's key first, then single events; compresses time. Deterministic. Prints what it
    removed and, for each remaining event, what fails without it.

    A history (--format, a message-trace or OpenChaos file, or an H-... --invariant) is
    minimized with `rocketspec history` as the oracle: the result, in the input's own format,
    still violates the same guarantee the same way (docs/minimize.md).

    Exit 1 when the minimized trace is written (it fails, as the input did), 2 on bad input: a
    trace that holds has nothing to minimize."""

    if _history_mode(path, fmt, invariant, complete, groups_file):
        return _minimize_history(path, out, invariant, profile, match, fmt, complete, groups_file, as_json, quiet)

    from rocketspec.commands.options import progress_bar
    from rocketspec.outputs import refuse_input_as_output
    from rocketspec.traces.io import input_size, read_events, write_trace
    from rocketspec.traces.minimize.minimize import default_output, minimize, validate_events

    if out is None:
        if path == "-":
            raise click.UsageError("reading standard input: give -o/--out (a file, or - for standard output)")
        out = default_output(path)
    refuse_input_as_output(out, "-o/--out", [("the trace", path)])
    total, unit = input_size(path) if not quiet else (None, "B")
    bar = progress_bar(enabled=not quiet, total=total, unit=unit, unit_scale=unit == "B", desc="reading")
    reading = None
    if bar is not None:
        def reading(done):
            bar.update(done - bar.n)
    try:
        events = validate_events(read_events(path, validate=False, progress=reading), path, numbered=True)
    finally:
        if bar is not None:
            bar.close()
    bar = progress_bar(enabled=not quiet, total=len(events), unit=" events removed", desc="minimizing")

    def progress(phase, n, tests):
        bar.update(len(events) - n - bar.n)
        bar.set_postfix(phase=phase, events=n, replays=tests, refresh=False)

    try:
        res = minimize(events, invariant=invariant, profile=profile, match=match, path=path, validate=False,
                       progress=progress if bar is not None else None)
    finally:
        if bar is not None:
            bar.close()
    write_trace(out, res.events)
    if as_json:
        d = res.to_dict()
        d.update({"ok": False, "verdict": "violated", "exit_code": EXIT_FINDING, "command": "minimize",
                  "input": path, "output": out})
        stream = sys.stderr if out == "-" else sys.stdout
        stream.write(jsonout.dumps(d, non_str_keys=True) + "\n")
    else:
        click.echo(render_text(res, out), err=out == "-")
    sys.exit(EXIT_FINDING)


def _history_mode(path, fmt, invariant, complete, groups_file) -> bool:
    if fmt is not None or (invariant or "").startswith("H-"):
        return True
    if path != "-":
        from rocketspec.traces.history.sources import detect_format

        try:
            if detect_format(path) != "trace":
                return True
        except Exception:   # noqa: BLE001 - unreadable: the trace reader says why, as before
            pass
    if complete is not None or groups_file is not None:
        raise click.UsageError("--complete/--lossy and --groups are for histories: give --format or an H-... "
                               "--invariant")
    return False


def render_history_text(res, out, read_back) -> str:
    d = res.to_dict()
    lines = [f"{res.guarantee} kept: {res.original_records} -> {len(res.records)} records "
             f"({100 * len(res.records) / max(1, res.original_records):.1f}%), {res.tests} checks, "
             f"{res.seconds:.2f} s, history ({res.format}, {'complete' if res.complete else 'lossy'})",
             f"  {res.guarantee} {d['title']}"]
    if res.key:
        lines.append("    key: " + ", ".join(f"{k}={v}" for k, v in res.key.items()))
    lines.append(f"    {res.message}")
    if res.others:
        lines.append(f"  NOTE: the result violates {', '.join(res.others)} too (as the input did): removing it "
                     "loses the target")
    lines += ["", "  removed:"]
    by_kind: dict[str, list] = {}
    for r in res.removed:
        by_kind.setdefault(r.kind, []).append(r)
    for kind, rs in by_kind.items():
        n = sum(r.records for r in rs)
        if kind in ("internals", "record"):
            lines.append(f"    {rs[0].unit if kind == 'internals' else 'single records'}: {n}")
            continue
        names = ", ".join(r.unit for r in rs[:SHOW_UNITS]) + (f", ... ({len(rs)} in all)" if len(rs) > SHOW_UNITS
                                                               else "")
        lines.append(f"    {len(rs)} {kind} unit{'s' * (len(rs) != 1)}, {n} records: {names}")
    lines += ["", "  the minimized history, and why each record stays:"]
    for text, r in zip(res.lines(), res.reasons):
        shown = text.replace("\x01", " | ").replace("\x02", "").replace("\t", " | ")
        lines.append(f"    {r.line:>3} {shown if len(shown) <= 120 else shown[:117] + '...'}")
        lines.append(f"          -> {r.text}")
    if out is not None:
        lines += ["", f"  wrote {'standard output' if out == '-' else out} ({res.format}): `{read_back}` rejects it "
                      f"with {res.guarantee}"]
    return "\n".join(lines)


def _minimize_history(path, out, invariant, profile, match, fmt, complete, groups_file, as_json, quiet):

    from rocketspec.commands.options import progress_bar, read_groups_file
    from rocketspec.outputs import refuse_input_as_output
    from rocketspec.traces.history.sources import detect_format
    from rocketspec.rocketmq.profiles import get_profile
    from rocketspec.traces.minimize.minimize_history import default_output as history_output
    from rocketspec.traces.minimize.minimize_history import minimize_history, write_history

    fmt = fmt or detect_format(path)
    if path == "-":
        raise click.UsageError("a history is read from a file, not standard input")
    out = out or history_output(path, fmt)
    refuse_input_as_output(out, "-o/--out", [("the history", path), ("--groups", groups_file)])
    groups = read_groups_file(groups_file)
    prof = get_profile(profile) if profile else None
    bar = progress_bar(enabled=not quiet, unit=" checks", desc="minimizing")

    def progress(phase, n, tests):
        bar.update(tests - bar.n)
        bar.set_postfix(phase=phase, records=n, refresh=False)

    try:
        res = minimize_history(path, fmt, guarantee=invariant, complete=complete, groups=groups,
                               default_max=None if prof is None else prof.default_max_reconsume_times,
                               match=match, progress=progress if bar is not None else None)
    finally:
        if bar is not None:
            bar.close()
    write_history(out, res)
    read_back = " ".join(["rocketspec history", out, "--format", fmt]
                         + (["--complete" if complete else "--lossy"] if complete is not None else [])
                         + (["--groups", groups_file] if groups_file else [])
                         + (["--profile", profile] if profile else []))
    if as_json:
        d = res.to_dict()
        d.update({"ok": False, "verdict": "violated", "exit_code": EXIT_FINDING, "command": "minimize",
                  "input": path, "output": out, "read_back": read_back})
        stream = sys.stderr if out == "-" else sys.stdout
        stream.write(jsonout.dumps(d, non_str_keys=True) + "\n")
    else:
        click.echo(render_history_text(res, out, read_back), err=out == "-")
    sys.exit(EXIT_FINDING)
