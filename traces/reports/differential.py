"""The differential report of one scenario: the reference against real RocketMQ.

Both traces are measured alike (traces/reports/stats.py) and checked (the spec's replay); the report
puts the figures side by side and flags every difference. `build_report` makes it,
`render_text` and `render_markdown` print it; `simulate_reference` runs the reference side of a
scenario. Used by `rocketspec diff` and by the generated reports of docs/differential/
(traces/reports/diff_reports.py).
"""
from __future__ import annotations

# Figures of a group, in report order: (key, label, kind). kind: count (equal or differs),
# time (differs beyond the tolerance), info (shown, never flagged).
GROUP_ROWS = [
    ("mode", "message model", "count"),
    ("consume_mode", "consume mode", "count"),
    ("clients", "clients", "count"),
    ("produced", "messages produced (subscribed topics)", "count"),
    ("listener_calls", "listener calls", "count"),
    ("deliveries", "deliveries (messages handed to the listener)", "count"),
    ("delivered", "delivered (distinct messages)", "count"),
    ("duplicates", "duplicates (deliveries beyond the first)", "count"),
    ("duplicates_retry", "  of which retry", "count"),
    ("duplicates_rebalance", "  of which rebalance", "count"),
    ("duplicates_crash", "  of which crash", "count"),
    ("duplicates_pause", "  of which pause", "count"),
    ("duplicates_reset", "  of which offset reset", "count"),
    ("duplicates_other", "  of which other", "count"),
    ("failed_calls", "failed listener calls", "count"),
    ("send_backs_requested", "send-backs requested", "count"),
    ("send_backs_accepted", "send-backs accepted by the broker", "count"),
    ("retry_topic_deliveries", "retry-topic deliveries", "count"),
    ("dlq", "DLQ entries", "count"),
    ("never_consumed", "never consumed (matching, after the start offset)", "count"),
    ("skipped_before_start", "skipped (before the group's start offset)", "count"),
    ("filtered_out", "filtered out by the subscription", "count"),
]


def _differs(a, b, kind, tol) -> bool:
    if kind == "info":
        return False
    if a is None or b is None:
        return (a is None) != (b is None)
    if kind == "time":
        return abs(a - b) > tol
    return a != b


def compare(ref: dict, real: dict, vref: dict, vreal: dict, tol: int = 1000) -> list[dict]:
    """Rows of the report: {section, figure, ref, real, differs, ref_note, real_note}."""
    rows: list[dict] = []

    def row(section, label, a, b, kind="count", na=None, nb=None):
        rows.append({"section": section, "figure": label, "ref": a, "real": b,
                     "differs": _differs(a, b, kind, tol), "ref_note": na, "real_note": nb})

    row("checker", "verdict", vref["verdict"], vreal["verdict"], na=vref.get("message"), nb=vreal.get("message"))
    row("checker", "errors", vref.get("errors"), vreal.get("errors"))
    for inv in sorted(set(vref.get("invariants") or {}) | set(vreal.get("invariants") or {})):
        row("checker", f"errors {inv}", (vref.get("invariants") or {}).get(inv, 0) if vref["errors"] is not None else None,
            (vreal.get("invariants") or {}).get(inv, 0) if vreal["errors"] is not None else None)
    row("checker", "allowed anomalies listed", vref.get("warnings"), vreal.get("warnings"), kind="info")
    row("trace", "scenario", ref.get("scenario"), real.get("scenario"))
    row("trace", "profile", ref.get("profile"), real.get("profile"))
    row("trace", "ended", ref.get("ended"), real.get("ended"))
    row("trace", "events", ref.get("events"), real.get("events"), kind="info")
    for topic in sorted(set(ref["produced"]) | set(real["produced"])):
        row("trace", f"produced on {topic}", ref["produced"].get(topic, 0), real["produced"].get(topic, 0))
        ta, tb = ref.get("produced_tags", {}).get(topic, {}), real.get("produced_tags", {}).get(topic, {})
        if set(ta) | set(tb) != {"None"}:
            for tag in sorted(set(ta) | set(tb)):
                row("trace", f"  with tag {tag}", ta.get(tag, 0), tb.get(tag, 0))
    for gname in sorted(set(ref["groups"]) | set(real["groups"])):
        a, b = ref["groups"].get(gname), real["groups"].get(gname)
        sect = f"group {gname}"
        if a is None or b is None:
            row(sect, "group present", a is not None, b is not None)
            continue
        na, nb = a["notes"], b["notes"]
        for key, label, kind in GROUP_ROWS:
            row(sect, label, a.get(key), b.get(key), kind, na.get(key), nb.get(key))
        ca, cb = a.get("committed"), b.get("committed")
        if ca is None or cb is None:
            row(sect, "final committed offsets", None if ca is None else "computed",
                None if cb is None else "computed", na=na.get("committed"), nb=nb.get("committed"))
        for q in sorted(set(ca or {}) | set(cb or {})):
            row(sect, f"committed {q}", None if ca is None else ca.get(q), None if cb is None else cb.get(q),
                na=None if ca is None or q in ca else "no offset_committed for this queue",
                nb=None if cb is None or q in cb else "no offset_committed for this queue")
        ra, rb = a.get("reassign_ms"), b.get("reassign_ms")
        if ra is None or rb is None:
            row(sect, "queue reassignment time (ms)", None if ra is None else "computed",
                None if rb is None else "computed", na=na.get("reassign_ms"), nb=nb.get("reassign_ms"))
        if ra is not None or rb is not None:
            row(sect, "queue reassignments", a.get("reassignments"), b.get("reassignments"))
        if ra is not None and rb is not None:
            row(sect, "queue overlaps (two clients holding one queue)", a.get("overlaps"), b.get("overlaps"))
            row(sect, "longest overlap (ms)", a.get("overlap_max_ms"), b.get("overlap_max_ms"), "time")
            row(sect, "reassignment times (ms), in order", " ".join(map(str, ra["list"])) or "none",
                " ".join(map(str, rb["list"])) or "none", "info")
            for stat in ("min", "median", "max"):
                row(sect, f"reassignment time {stat} (ms)", ra[stat], rb[stat], "time",
                    na.get("reassign_ms") if stat == "min" else None, nb.get("reassign_ms") if stat == "min" else None)
    return rows


def _cell(v) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _notes(rows) -> list[str]:
    out = []
    for r in rows:
        for side, key in (("reference", "ref_note"), ("real", "real_note")):
            if r[key]:
                out.append(f"{r['section']} / {r['figure'].strip()} ({side}): {r[key]}")
    return out


def render_text(report: dict) -> str:
    rows = report["rows"]
    w1 = max(len(r["figure"]) for r in rows) + 2
    w2 = max(12, max(len(_cell(r["ref"])) for r in rows if r["figure"] != "verdict" or True) + 2)
    w2 = min(w2, 40)
    out = [f"reference: {report['ref']['path']}", f"real:      {report['real']['path']}", ""]
    section = None
    for r in rows:
        if r["section"] != section:
            section = r["section"]
            out.append(f"[{section}]")
            out.append(f"  {'figure':{w1}}{'reference':>{w2}}  {'real':>{w2}}")
        flag = "  <- differs" if r["differs"] else ""
        out.append(f"  {r['figure']:{w1}}{_cell(r['ref']):>{w2}}  {_cell(r['real']):>{w2}}{flag}")
    notes = _notes(rows)
    if notes:
        out.append("")
        out.append("notes:")
        out.extend(f"  - {n}" for n in notes)
    out.append("")
    out.append(f"{report['differences']} difference(s) flagged (times differ when more than "
               f"{report['time_tolerance_ms']} ms apart)")
    return "\n".join(out)


def _md(v) -> str:
    return _cell(v).replace("|", "\\|")


def render_markdown(report: dict) -> str:
    rows = report["rows"]
    out = [f"Reference trace: `{report['ref']['path']}`  ",
           f"Real trace: `{report['real']['path']}`", ""]
    section = None
    for r in rows:
        if r["section"] != section:
            section = r["section"]
            out += ["", f"#### {section}", "", "| figure | reference | real | |", "|---|---:|---:|---|"]
        stripped = r["figure"].lstrip(" ")
        label = "&nbsp;" * (len(r["figure"]) - len(stripped)) + stripped
        out.append(f"| {_md(label)} | {_md(r['ref'])} | {_md(r['real'])} | {'**differs**' if r['differs'] else ''} |")
    notes = _notes(rows)
    if notes:
        out += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    out += ["", f"{report['differences']} difference(s) flagged (times differ when more than "
                f"{report['time_tolerance_ms']} ms apart)."]
    return "\n".join(out) + "\n"


def build_report(ref_path, real_path, tol: int = 1000, ref_profile=None, real_profile=None) -> dict:
    from rocketspec.traces.reports.stats import trace_stats, verdict

    ref = trace_stats(ref_path)
    real = trace_stats(real_path)
    vref = verdict(ref_path, ref_profile)
    vreal = verdict(real_path, real_profile)
    rows = compare(ref, real, vref, vreal, tol)
    return {"ref": ref, "real": real, "verdicts": {"ref": vref, "real": vreal}, "rows": rows,
            "differences": sum(1 for r in rows if r["differs"]), "time_tolerance_ms": tol}


def first_event(path) -> dict:
    from rocketspec.traces.io import TraceInputError, read_events

    for line, ev in read_events(path, validate=False):
        if ev.get("kind") != "trace_started":
            raise TraceInputError(path, line, f"the first event must be trace_started, got {ev.get('kind')!r}")
        return ev
    raise TraceInputError(path, None, "empty trace: expected a trace_started event first")


def simulate_reference(scenario: str, seed: int, profile: str | None, out_path: str) -> None:
    from rocketspec.reference.runner import run
    from rocketspec.reference.scenario import load_scenario
    from rocketspec.rocketmq.profiles import get_profile
    from rocketspec.traces.io import open_writer

    prof = get_profile(profile)
    sc = load_scenario(scenario)
    with open_writer(out_path) as writer:    # the file appears only when the run is complete
        run(sc, seed, prof, writer.write)
