"""`rocketspec history PATH`: check the black-box guarantees on a history of produce and
consume records (spec/history, docs/history.md).

Exit codes: 0 every judged guarantee holds (skipped and suspect ones allowed), 1 a violation,
2 bad input (a missing file, an unknown format, a bad --groups file; with --strict, any
unparseable record).
"""
from __future__ import annotations

import sys

import click


def render_text(rep, max_listed: int) -> str:
    d = rep.to_dict(max_listed)
    out = [f"{d['path']}: {'HOLDS' if d['ok'] else 'VIOLATED'} ({d['format']}, "
           f"{'complete' if d['complete'] else 'lossy: an absent record is unobserved, not lost'}; "
           f"{d['produced']} sends, {d['consumed']} deliveries, {d['dead_letters']} dead letters, "
           f"groups: {', '.join(d['groups']) or '-'})"]
    if d["unparseable"]:
        out.append(f"  {d['unparseable']} unparseable record(s), not used:")
        out.extend(f"    {p}" for p in d["problems"])
    for n in d["notes"]:
        out.append(f"  note: {n}")
    for v in d["guarantees"]:
        line = f"  {v['id']:<12} {v['status'].upper():<9} {v['title']}"
        if v["status"] == "skipped":
            line += f" (the history lacks {', '.join(v['missing'])})"
        out.append(line)
        if v["counts"]:
            out.append("      " + ", ".join(f"{k} {n}" for k, n in v["counts"].items() if n))
        for f in v["listed"]:
            out.append(f"      {f['where'] or '-'}: {f['message']}")
        if v["findings"] > len(v["listed"]):
            out.append(f"      ... and {v['findings'] - len(v['listed'])} more")
        for n in v["notes"]:
            out.append(f"      note: {n}")
    return "\n".join(out)


@click.command("history")
@click.argument("path")
@click.option("--format", "fmt", type=click.Choice(["trace", "msgtrace", "openchaos"]), default=None,
              help="trace (a rocketspec trace: its history is derived), msgtrace (RMQ_SYS_TRACE_TOPIC message "
                   "bodies), openchaos (an OpenChaos history file). Default: told by the file's first bytes.")
@click.option("--complete/--lossy", "complete", default=None,
              help="Declare that every record is present and the run had settled (an unconsumed message is "
                   "lost), or not (unobserved). Default: the source's own (trace: ended quiescent; "
                   "openchaos: complete; msgtrace: lossy).")
@click.option("--groups", "groups_file", default=None,
              help="JSON file declaring what the source does not carry, per group: consume_mode, "
                   "message_model, max_reconsume_times, consume_timeout_ms, subscriptions {topic: expr}.")
@click.option("--profile", default=None, help="Profile whose defaults apply (maxReconsumeTimes -1 -> 16).")
@click.option("--strict", is_flag=True, help="Any unparseable record is bad input (exit 2).")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable JSON report.")
@click.option("--max-listed", default=20, show_default=True, type=click.IntRange(0, 1_000_000),
              help="List at most this many findings per guarantee.")
def history(path, fmt, complete, groups_file, profile, strict, as_json, max_listed):
    """Check the user-visible guarantees on the history at PATH: every subscribed message consumed
    or dead-lettered, the retry limit, orderly exclusivity and order, duplicates only for a reason.
    A guarantee whose fields the history lacks is skipped, and the report says which."""
    import orjson

    from rocketspec.errors import UserError
    from rocketspec.spec.history import check_history, load_history
    from rocketspec.spec.profiles import get_profile

    groups = None
    if groups_file is not None:
        try:
            with open(groups_file, "rb") as fh:
                groups = orjson.loads(fh.read())
        except orjson.JSONDecodeError as exc:
            raise UserError(f"not JSON: {exc}", file=groups_file) from None
    h = load_history(path, fmt, complete, groups)
    if h.problems and strict:
        p = h.problems[0]
        raise UserError(f"{p.message} ({len(h.problems)} unparseable record(s) in all)", file=p.file, line=p.line)
    prof = get_profile(profile) if profile else None
    rep = check_history(h, None if prof is None else prof.default_max_reconsume_times)
    if as_json:
        sys.stdout.write(orjson.dumps(rep.to_dict(max_listed), default=str).decode() + "\n")
    else:
        click.echo(render_text(rep, max_listed))
    sys.exit(0 if rep.ok else 1)
