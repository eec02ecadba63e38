"""`rocketspec explain`: a failing (or clean) trace told as a timeline and a story.

`explain(path, profile, key)` replays the trace through the spec (spec.replay: the one verdict),
builds the timeline (traces/timeline.py) and returns an `Explanation` that renders as narrated
text, JSON, a self-contained HTML page (traces/explain_html.py, plotly) or a PNG
(traces/explain_png.py, matplotlib). The style table below is shared by both pictures.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass

from .narrate import describe, secs
from .timeline import LANE_FIELDS, Timeline, build, lane_name, lane_of

MAX_STORY = 150          # a story longer than this shows the events that matter and their surroundings
STORY_BEFORE = 25        # lane events shown before the (first) violation when the story is cut
STORY_AFTER = 5

# Clients get these colours in order (matplotlib's tab10, colour-blind friendly enough).
CLIENT_COLORS = ["#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f",
                 "#ff7f0e", "#aec7e8"]
VIOLATION_COLOR = "#d62728"

# Bars: category -> (legend name, y offset in the row, height, opacity). The row's y axis runs
# downwards, so a positive offset is below the row's centre line.
BARS = {
    "pq": ("owns the queue (ProcessQueue)", 0.0, 0.78, 0.22),
    "lock": ("broker lock entry", 0.0, 0.5, 0.75),
    "lock_expired": ("broker lock entry, expired", 0.0, 0.5, 0.3),
    "lease": ("client lease (locked)", -0.3, 0.12, 0.9),
    "call": ("listener call", 0.0, 0.38, 0.95),
    "pull": ("pull in flight", 0.3, 0.08, 0.7),
    "pause": ("client frozen (pause)", 0.0, 0.96, 0.35),    # drawn last: over what it froze
}
# Marks: category -> (legend name, plotly symbol, matplotlib marker, y offset, size)
MARKS = {
    "stored": ("message stored", "line-ns", "|", 0.3, 6),
    "retention": ("retention / snapshot", "x-thin", "x", 0.3, 7),
    "commit": ("broker commits offset", "diamond", "D", -0.28, 7),
    "lock_new": ("lock granted to a new holder", "star-triangle-up", "^", 0.0, 9),
    "lock_end": ("lock released / found expired", "line-ew-open", "_", 0.0, 9),
    "lock_refused": ("lock refused / unlock ignored", "x", "x", 0.0, 7),
    "pull_found": ("pull answered with messages", "triangle-right", ">", 0.3, 6),
    "pull_empty": ("pull answered, nothing new", "triangle-right-open", ">", 0.3, 5),
    "pull_illegal": ("pull answered OFFSET_ILLEGAL", "triangle-right", ">", 0.3, 8),
    "pull_failed": ("pull failed", "x", "x", 0.3, 7),
    "offset": ("client offset updated", "line-ns-open", "|", -0.3, 7),
    "persist": ("offset sent to the broker", "circle", "o", -0.3, 5),
    "persist_lost": ("offset send lost", "circle-open", "o", -0.3, 6),
    "suspend": ("suspended / postponed / rolled back", "hourglass", "8", 0.0, 7),
    "lease_expired": ("lease expired", "hexagram", "h", -0.3, 8),
    "drop": ("queue dropped", "square-open", "s", 0.0, 8),
    "retry": ("sent back for retry", "circle-cross", "P", 0.0, 9),
    "retry_failed": ("send-back failed", "circle-x", "X", 0.0, 9),
    "sent_back": ("broker stores a retry copy", "circle-cross-open", "P", 0.0, 8),
    "dlq": ("dead-lettered (DLQ)", "square", "s", 0.0, 10),
    "start": ("client started", "triangle-up", "^", 0.0, 7),
    "stop": ("client stopped", "square", "s", 0.0, 7),
    "crash": ("crash / broker restart", "x-thick", "X", 0.0, 12),
}
FIXED_MARK_COLORS = {"stored": "#999999", "retention": "#555555", "commit": "#333333", "dlq": "#000000",
                     "crash": "#000000", "pull_illegal": "#ff7f0e", "retry_failed": "#ff7f0e",
                     "lock_refused": "#555555", "sent_back": "#555555"}


@dataclass
class Explanation:
    timeline: Timeline
    story: list          # [(seq, ts, text, tag)] tag: "!" the violation, "*" matters, "" other, or None (elision)
    story_title: str
    lanes_summary: list  # lines

    def client_color(self, client) -> str:
        tl = self.timeline
        if client in tl.clients:
            return CLIENT_COLORS[tl.clients.index(client) % len(CLIENT_COLORS)]
        return "#444444"

    # ------------------------------------------------------------------ text
    def text(self, width: int = 100) -> str:
        tl = self.timeline
        out = []
        verdict = "HOLDS" if tl.ok else "VIOLATED"
        out.append(f"{tl.path}: {verdict} under profile {tl.profile} ({tl.n_events} events, "
                   f"{secs(tl.t_min)} - {secs(tl.t_max)}, ended {tl.ended or 'without trace_ended'})")
        shown = f"{len(tl.lanes)} of {tl.all_lanes}" if len(tl.lanes) != tl.all_lanes else f"{len(tl.lanes)}"
        out.append(f"{shown} lane(s), one per queue per group; clients: {', '.join(tl.clients) or 'none'}")

        def wrap(label, body):
            return textwrap.fill(body, width=width, initial_indent=f"  {label}", subsequent_indent=" " * (2 + len(label)))

        for i, v in enumerate(tl.violations, 1):
            out.append("")
            out.append(f"VIOLATION {i} of {len(tl.violations)}: {v.inv} {v.title}")
            if v.guarantee:
                out.append(f"  guarantee lost: {v.guarantee}")
            out.append(wrap("the rule: ", v.statement))
            out.append(wrap("what broke it: ", v.message))
            where = lane_name(v.lane) if v.lane else ", ".join(f"{k}={x}" for k, x in (v.key or {}).items()) or "-"
            out.append(f"  where: {where}; event seq {v.seq} at {secs(v.ts) if v.ts is not None else '?'}")
            out.append(f"  events that matter: {len(v.matters)} (marked * in the story below)")
        if tl.ok and tl.counts:
            out.append("")
            out.append("allowed anomalies counted: " + ", ".join(f"{k} {n}" for k, n in tl.counts.items()))
        out.append("")
        out.append(self.story_title)
        for seq, ts, txt, tag in self.story:
            if seq is None:
                out.append(f"        {txt}")
            else:
                out.append(f"  {tag or ' '} {secs(ts):>10} {seq:>7}  {txt}")
        out.append("")
        out.append("LANES")
        out.extend("  " + ln for ln in self.lanes_summary)
        if tl.hidden_lanes:
            out.append(f"  ... and {tl.hidden_lanes} more lanes not shown (choose with --key)")
        if not tl.ok:
            out.append("")
            out.append("Next: `rocketspec minimize` shrinks the trace to the events that matter; "
                       "`--html OUT.html` / `--png OUT.png` draw this timeline.")
        return "\n".join(out)

    def to_dict(self) -> dict:
        tl = self.timeline
        return {
            "path": tl.path, "profile": tl.profile, "verdict": "holds" if tl.ok else "violated",
            "events": tl.n_events, "ended": tl.ended, "t_min": tl.t_min, "t_max": tl.t_max,
            "lanes": [dict(zip(LANE_FIELDS, ln)) for ln in tl.lanes], "hidden_lanes": tl.hidden_lanes,
            "clients": tl.clients, "counts": tl.counts,
            "violations": [{"invariant": v.inv, "title": v.title, "statement": v.statement,
                            "guarantee": v.guarantee, "message": v.message, "seq": v.seq, "ts": v.ts,
                            "lane": dict(zip(LANE_FIELDS, v.lane)) if v.lane else None, "key": v.key,
                            "matters": v.matters} for v in tl.violations],
            "story": [{"seq": s, "ts": t, "text": x, "tag": g} for s, t, x, g in self.story],
            "lanes_summary": self.lanes_summary,
        }


def load(path, profile=None):
    """(events, report): the trace read once and replayed by the spec (bad input raises the
    CLI's TraceInputError)."""
    from rocketspec.spec.replay import check_trace

    events: list = []
    rep = check_trace(path, profile, max_listed=1000, keep=events)
    return events, rep


def explain(path, profile=None, key: dict | None = None) -> Explanation:
    events, rep = load(path, profile)
    return explain_events(events, rep, key)


def explain_events(events, rep, key=None) -> Explanation:
    tl = build(events, rep, key)
    story, title = _story(tl, events)
    return Explanation(tl, story, title, _lanes_summary(tl))


def _scope(tl: Timeline, events, focus):
    """Events of the focus lanes, with the client, broker and retry-chain events about them."""
    clients = {r.who for r in tl.rows if r.lane in focus and r.who != "broker"}
    brokers = {ln[2] for ln in focus}
    groups = {ln[0] for ln in focus}
    stored = {(ln[1], ln[2], ln[3]) for ln in focus}
    out = []
    for ev in events:
        ln = lane_of(ev)
        k = ev["kind"]
        if ln is not None and k != "message_stored":
            if ln in focus:
                out.append(ev)
        elif k == "message_stored":
            if (ev["topic"], ev["broker"], ev["queue"]) in stored:
                out.append(ev)
        elif k in ("trace_started", "trace_ended"):
            out.append(ev)
        elif k.startswith("client_") or k.startswith("consumer_"):
            if ev.get("client") in clients:
                out.append(ev)
        elif k.startswith("broker_"):
            if ev.get("broker") in brokers:
                out.append(ev)
        elif k in ("send_back_requested", "send_back_failed", "message_sent_back", "message_dead_lettered",
                   "message_scheduled", "schedule_delivered", "oneway_lost", "lock_requested",
                   "allocation_computed"):
            if ev.get("group") in groups and (ev.get("client") is None or ev.get("client") in clients):
                out.append(ev)
    return out


def _story(tl: Timeline, events):
    if tl.violations and any(v.lane in tl.lanes for v in tl.violations if v.lane):
        first = next(v for v in tl.violations if v.lane in tl.lanes)
        focus = {first.lane}
        focus_name = lane_name(first.lane)
    else:
        first = None
        focus = set(tl.lanes)
        focus_name = lane_name(tl.lanes[0]) if len(tl.lanes) == 1 else f"{len(tl.lanes)} lane(s)"
    scope = _scope(tl, events, focus)
    bad = {v.seq for v in tl.violations if v.seq is not None}
    matters = set()
    for v in tl.violations:
        if v.lane in focus or v.lane is None:
            matters.update(v.matters)
    # the violation's own events are in the story even when they are not on its lane
    extra = [tl.by_seq.get(s) or next((e for e in events if e["seq"] == s), None) for s in matters | bad]
    have = {e["seq"] for e in scope}
    scope = sorted(scope + [e for e in extra if e is not None and e["seq"] not in have], key=lambda e: e["seq"])

    def line(ev):
        tag = "!" if ev["seq"] in bad else ("*" if ev["seq"] in matters else "")
        return (ev["seq"], ev["ts"], describe(ev), tag)

    if len(scope) <= MAX_STORY:
        story = [line(ev) for ev in scope]
        title = f"STORY of {focus_name} ({len(scope)} events; ! = the violation, * = an event that matters)"
        return story, title
    if first is not None:
        idx = next((i for i, e in enumerate(scope) if e["seq"] >= first.seq), len(scope) - 1)
        keep_idx = set(range(max(0, idx - STORY_BEFORE), min(len(scope), idx + STORY_AFTER + 1)))
    else:
        keep_idx = set(range(0, 60)) | set(range(len(scope) - 20, len(scope)))
    keep_idx |= {i for i, e in enumerate(scope) if e["seq"] in matters or e["seq"] in bad
                 or e["kind"] in ("client_paused", "client_resumed", "client_crashed", "client_started",
                                  "client_stopped", "broker_restarted", "pq_created", "pq_dropped",
                                  "trace_started", "trace_ended")}
    story, gap = [], 0
    for i, ev in enumerate(scope):
        if i in keep_idx:
            if gap:
                story.append((None, None, f"... {gap} more event(s) ...", None))
                gap = 0
            story.append(line(ev))
        else:
            gap += 1
    if gap:
        story.append((None, None, f"... {gap} more event(s) ...", None))
    shown = sum(1 for s in story if s[0] is not None)
    title = (f"STORY of {focus_name} ({shown} of its {len(scope)} events: the events that matter, ownership "
             f"changes, pauses and crashes, and the surroundings of the violation; ! = the violation, "
             f"* = an event that matters)")
    return story, title


def _lanes_summary(tl: Timeline) -> list:
    out = []
    by_row = {}
    for b in tl.bars:
        by_row.setdefault(b.row, []).append(b)
    marks_by_row = {}
    for m in tl.marks:
        marks_by_row.setdefault(m.row, []).append(m)
    for ln in tl.lanes:
        rows = [i for i, r in enumerate(tl.rows) if r.lane == ln]
        owners, calls, retries, dlq, commits = [], 0, 0, 0, None
        for i in rows:
            for b in by_row.get(i, ()):
                if b.cat == "pq":
                    owners.append((b.t0, f"{b.client} {secs(b.t0)}-{'end' if b.open else secs(b.t1)}"))
                elif b.cat == "call":
                    calls += 1
            for m in marks_by_row.get(i, ()):
                if m.cat == "retry":
                    retries += 1
                elif m.cat == "dlq":
                    dlq += 1
                elif m.cat == "commit":
                    commits = m.label
        owners.sort()
        bad = [v.inv for v in tl.violations if v.lane == ln]
        parts = [f"owned by {', '.join(o for _, o in owners)}" if owners else "never owned",
                 f"{calls} listener call(s)"]
        if retries:
            parts.append(f"{retries} send-back(s)")
        if dlq:
            parts.append(f"{dlq} dead-lettered")
        if commits is not None:
            parts.append(f"broker offset {commits} at the end")
        if bad:
            parts.append("VIOLATED: " + ", ".join(dict.fromkeys(bad)))
        out.append(f"{lane_name(ln)}: " + "; ".join(parts))
    return out
