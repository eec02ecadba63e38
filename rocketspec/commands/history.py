"""`rocketspec history PATH`: check the black-box guarantees on a history of produce and
consume records (spec/history, docs/history.md).

Exit codes: 0 every judged guarantee holds (skipped and suspect ones allowed), 1 a violation,
4 incomplete (no guarantee could judge anything: never a pass on nothing), 2 bad input (a missing file, an unknown format, a bad --groups file, a history with no readable
record, more unreadable records than readable ones, or no send or delivery at all; with
--strict or --complete, any unparseable record).
"""
from __future__ import annotations

import sys

import click

from rocketspec import jsonout


def render_text(rep, max_listed: int) -> str:
    d = rep.to_dict(max_listed)
    out = [f"{d['path']}: {d['verdict'].upper()} ({d['format']}, "
           f"{'complete' if d['complete'] else 'lossy: an absent record is unobserved, not lost'}; "
           f"{d['produced']} sends, {d['consumed']} deliveries, {d['dead_letters']} dead letters, "
           f"groups: {', '.join(d['groups']) or '-'})"]
    if d["unparseable"]:
        shown = f" (the first {len(d['problems'])})" if len(d["problems"]) < d["unparseable"] else ""
        out.append(f"  {d['unparseable']} unparseable record(s), not used{shown}:")
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
        for group, why in v["not_judged"].items():
            out.append(f"      not judged for group {group}: {why}")
    return "\n".join(out)


@click.command("history")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--format", "fmt", type=click.Choice(["trace", "msgtrace", "openchaos"]), default=None,
              help="trace (a rocketspec trace: its history is derived), msgtrace (RMQ_SYS_TRACE_TOPIC message "
                   "bodies, or an export of the trace messages with their bornHost, the consumer: JSON lines "
                   "{body, bornHost} or `mqadmin printMsg -d true` output), openchaos (an OpenChaos history file). "
                   "Default: told by each file's first bytes.")
@click.option("--complete/--lossy", "complete", default=None,
              help="Declare that every record is present and the run had settled (an unconsumed message is "
                   "lost), or not (unobserved). Default: the source's own (trace: ended quiescent; "
                   "openchaos: complete; msgtrace: lossy). With --complete, a record that cannot be read is bad "
                   "input (exit 2).")
@click.option("--groups", "groups_file", default=None,
              help="JSON file declaring what the source does not carry, per group: consume_mode, "
                   "message_model, max_reconsume_times, consume_timeout_ms, consume_from_where (where a new group "
                   "starts: CONSUME_FROM_FIRST_OFFSET owes every message sent), subscriptions {topic: expr}. Checked "
                   "before any history is read.")
@click.option("--profile", default=None, help="Profile whose defaults apply (maxReconsumeTimes -1 -> 16).")
@click.option("--strict", is_flag=True, help="Any unparseable record is bad input (exit 2).")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable JSON report (several paths: one "
                                                        "object with a report per path under 'histories').")
@click.option("--max-listed", default=20, show_default=True, type=click.IntRange(0, 1_000_000),
              help="List at most this many findings per guarantee.")
@click.option("--window-ms", default=None, type=click.IntRange(20_000, 10**9),
              help="Record time a message is held after its last record before it is judged (default 120000): "
                   "memory grows with the messages of a window, not with the history.")
@click.option("--quiet", is_flag=True, help="No progress display.")
def history(paths, fmt, complete, groups_file, profile, strict, as_json, max_listed, window_ms, quiet):
    """Check the user-visible guarantees on the history at each PATH (plain, gzip or zstd): every
    subscribed message consumed or dead-lettered, the retry limit, orderly exclusivity and order,
    duplicates only for a reason. A guarantee whose fields the history lacks is skipped, and the
    report says which. Each history is streamed: memory in proportion to its live messages and
    queues, not its length. Each PATH is judged on its own. A history that could not be read
    (no readable record, mostly unreadable, or not one send or delivery) is bad input, never a
    verdict."""

    from rocketspec.commands.options import progress_bar, read_groups_file
    from rocketspec.errors import UserError
    from rocketspec.spec.history import check_path
    from rocketspec.spec.history.judge import WINDOW_MS
    from rocketspec.rocketmq.profiles import get_profile

    groups = read_groups_file(groups_file)
    prof = get_profile(profile) if profile else None
    reps = []
    for path in paths:
        bar = progress_bar(enabled=not quiet, unit=" records", desc=str(path))
        progress = None
        if bar is not None:
            def progress(done, bar=bar):
                bar.update(done - bar.n)
        try:
            rep = check_path(path, fmt, complete, groups, None if prof is None else prof.default_max_reconsume_times,
                             window_ms or WINDOW_MS, progress)
        finally:
            if bar is not None:
                bar.close()
        h = rep.history
        if h.problem_count and (strict or complete):
            # --complete declares every record present: a record that could not be read says otherwise
            p = h.problems[0]
            why = "" if strict else (f"; --complete declares every record present, and {h.problem_count} of "
                                     f"{h.records} could not be read (give --lossy to judge the rest)")
            raise UserError(f"{p.message} ({h.problem_count} unparseable record(s) in all){why}", file=p.file,
                            line=p.line)
        reps.append(rep)
    verdicts = {r.verdict for r in reps}
    worst = next(v for v in ("violated", "incomplete", "holds") if v in verdicts)
    if as_json:
        d = reps[0].to_dict(max_listed) if len(reps) == 1 else {
            "ok": worst == "holds", "verdict": worst, "histories": [r.to_dict(max_listed) for r in reps]}
        sys.stdout.write(jsonout.dumps(d) + "\n")
    else:
        click.echo("\n".join(render_text(r, max_listed) for r in reps))
    sys.exit({"holds": 0, "violated": 1, "incomplete": 4}[worst])
