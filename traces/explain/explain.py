"""`rocketspec explain`: a failing (or clean) trace told as a timeline and a story.

`explain(path, profile, key)` replays the trace through the spec (spec.replay, as `check` does:
the one verdict and the same counts), builds the timeline (traces/explain/timeline.py) and returns an
`Explanation` that renders as narrated text, JSON, a self-contained HTML page
(traces/explain/explain_html.py, plotly) or a PNG (traces/explain/explain_png.py, matplotlib). The style table
below is shared by both pictures.

The trace is read three times, streaming, so memory follows the live state and the shown
lanes, not the trace's length: the replay (which also indexes the lanes), the timeline and the
events that matter, and the story. Standard input, which cannot be read twice, is kept in
memory.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass

from .narrate import describe, secs
from .timeline import LANE_FIELDS, LaneIndex, Timeline, build, explain_findings, lane_name, lane_of

MAX_STORY = 150          # a story longer than this shows the events that matter and their surroundings
STORY_BEFORE = 25        # lane events shown before the (first) violation when the story is cut
STORY_AFTER = 5
MAX_TOLD = 400           # events told in a cut story at most (the rest counted in its gaps)

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
    "flushed": ("offsets written to disk (flush)", "square-x-open", "s", -0.3, 6),
    "stop": ("client stopped", "square", "s", 0.0, 7),
    "crash": ("crash / broker restart", "x", "X", 0.0, 12),
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
    focus: set           # the lanes the story tells
    by_seq: dict         # seq -> event: the events that matter and the violations' own

    def client_color(self, client) -> str:
        tl = self.timeline
        if client in tl.clients:
            return CLIENT_COLORS[tl.clients.index(client) % len(CLIENT_COLORS)]
        return "#444444"

    def in_story(self, v) -> bool:
        return v.lane in self.focus or v.lane is None and not self.timeline.lanes

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

        per_inv = tl.error_counts()
        if not tl.ok:
            out.append(f"{tl.errors} error(s) in the trace, as `check` counts them: "
                       + ", ".join(f"{k} {per_inv.get(k, 0)}" for k in dict.fromkeys(v.inv for v in tl.violations)))
        n_inv = len(tl.violations)
        for i, v in enumerate(tl.violations, 1):
            total = per_inv.get(v.inv, 1)
            out.append("")
            out.append(f"VIOLATION {i} of {n_inv}: {v.inv} {v.title}")
            if total > 1:
                out.append(f"  the first of {total} {v.inv} violations, told in full; the next ones in brief below")
            if v.guarantee:
                out.append(f"  guarantee lost: {v.guarantee}")
            out.append(wrap("the rule: ", v.statement))
            out.append(wrap("what broke it: ", v.message))
            where = lane_name(v.lane) if v.lane else ", ".join(f"{k}={x}" for k, x in (v.key or {}).items()) or "-"
            out.append(f"  where: {where}; event seq {v.seq} at {secs(v.ts) if v.ts is not None else '?'}")
            others = [s for s in v.matters if s != v.seq]
            if self.in_story(v):
                out.append(f"  events that matter: {len(v.matters)}: the violation (marked ! in the story below)"
                           + (f" and {len(others)} more (marked *)" if others else ", and no other"))
            else:
                out.append(f"  events that matter: {len(v.matters)}" + (":" if v.matters else ""))
                for s in v.matters:
                    ev = self.by_seq.get(s)
                    if ev is not None:
                        out.append(f"  {'!' if s == v.seq else '*'} {secs(ev['ts']):>10} {s:>7}  {describe(ev)}")
            more = tl.more.get(v.inv, [])
            if more:
                cap = f" (showing {len(more)} of {total - 1})" if len(more) < total - 1 else ""
                out.append(f"  the next {v.inv} violations{cap}:")
                for m in more:
                    at = secs(m.ts) if m.ts is not None else "?"
                    w = lane_name(m.lane) if m.lane else ", ".join(f"{k}={x}" for k, x in (m.key or {}).items()) or "-"
                    msg = m.message if len(m.message) <= 120 else m.message[:117] + "..."
                    out.append(f"    seq {m.seq} at {at}, {w}: {msg}")
        if tl.counts:
            warn = {k: n for k, n in tl.counts.items() if k not in per_inv}
            if warn:
                out.append("")
                out.append("allowed anomalies counted: " + ", ".join(f"{k} {n}" for k, n in warn.items()))
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

        def vd(v):
            return {"invariant": v.inv, "title": v.title, "statement": v.statement, "guarantee": v.guarantee,
                    "message": v.message, "seq": v.seq, "ts": v.ts,
                    "lane": dict(zip(LANE_FIELDS, v.lane)) if v.lane else None, "key": v.key, "matters": v.matters}

        per_inv = tl.error_counts()
        return {
            "path": tl.path, "profile": tl.profile, "verdict": "holds" if tl.ok else "violated",
            "events": tl.n_events, "ended": tl.ended, "t_min": tl.t_min, "t_max": tl.t_max,
            "lanes": [dict(zip(LANE_FIELDS, ln)) for ln in tl.lanes], "hidden_lanes": tl.hidden_lanes,
            "clients": tl.clients, "errors": tl.errors, "counts": tl.counts,
            "violations": [vd(v) for v in tl.violations],
            "more_violations": {inv: {"count": per_inv.get(inv, 0) - 1, "listed": [vd(m) for m in ms]}
                                for inv, ms in tl.more.items()},
            "story": [{"seq": s, "ts": t, "text": x, "tag": g} for s, t, x, g in self.story],
            "lanes_summary": self.lanes_summary,
        }


def explain(path, profile=None, key: dict | None = None, pictures: bool = True, progress=None) -> Explanation:
    """Explain the trace at `path`. `progress(phase, total)`, if given, returns a callback of the
    amount done (bytes or rows while replaying, events afterwards) or None."""
    from rocketspec.spec.replay import check_trace

    from ..io import input_size, read_events

    stdin = str(path) == "-"
    index = LaneIndex(keep_events=stdin, origin=(key or {}).get("origin_msg_id"))
    rep = check_trace(path, profile, keep=index, findings=explain_findings(),
                      progress=_phase(progress, "replaying", lambda: None if stdin else input_size(path)[0]))

    def again():
        if index.events is not None:
            return iter(index.events)
        return (ev for _, ev in read_events(path, validate=False))

    return _explain(index, rep, again, key, pictures, progress)


def _phase(progress, name, total):
    return progress(name, total()) if progress is not None else None


def explain_events(events: list, rep, key=None, pictures: bool = True) -> Explanation:
    """Explain a trace held in memory, replayed by spec.replay into `rep` (its path and profile
    are taken; the replay is made again, with explain's findings)."""
    from rocketspec.rocketmq.profiles import get_profile
    from rocketspec.spec.replay import check_events

    index = LaneIndex(origin=(key or {}).get("origin_msg_id"))

    def fed():
        for i, ev in enumerate(events, 1):
            index.append(ev)
            yield i, ev

    rep2 = check_events(fed(), get_profile(rep.profile), rep.path, findings=explain_findings())
    rep2.path = rep.path
    return _explain(index, rep2, lambda: iter(events), key, pictures, None)


def _explain(index, rep, again, key, pictures, progress) -> Explanation:
    n = index.n
    tl = build(index, rep, again(), key, pictures, progress=_phase(progress, "reading the timeline", lambda: n))
    return _story(tl, again(), _phase(progress, "telling the story", lambda: n))


def _scope_filter(tl: Timeline, focus):
    """Whether an event belongs to the story of the focus lanes: their events, with the client,
    broker and retry-chain events about them."""
    clients = {r.who for r in tl.rows if r.lane in focus and r.who != "broker"}
    brokers = {ln[2] for ln in focus}
    groups = {ln[0] for ln in focus}
    stored = {(ln[1], ln[2], ln[3]) for ln in focus}
    chain = ("send_back_requested", "send_back_failed", "message_sent_back", "message_dead_lettered",
             "message_scheduled", "schedule_delivered", "oneway_lost", "lock_requested", "allocation_computed")

    def f(ev) -> bool:
        ln = lane_of(ev)
        k = ev["kind"]
        if ln is not None and k != "message_stored":
            return ln in focus
        if k == "message_stored":
            return (ev["topic"], ev["broker"], ev["queue"]) in stored
        if k in ("trace_started", "trace_ended"):
            return True
        if k.startswith("client_") or k.startswith("consumer_"):
            return ev.get("client") in clients
        if k.startswith("broker_"):
            return ev.get("broker") in brokers
        if k in chain:
            return ev.get("group") in groups and (ev.get("client") is None or ev.get("client") in clients)
        return False

    return f


ALWAYS_TOLD = frozenset({"client_paused", "client_resumed", "client_crashed", "client_started", "client_stopped",
                         "broker_restarted", "pq_created", "pq_dropped", "trace_started", "trace_ended"})
TURNS = frozenset({"pq_created", "pq_dropped", "client_crashed", "client_paused", "lock_expired", "broker_restarted"})


def _story(tl: Timeline, events, progress=None) -> Explanation:
    """The third reading: the story of the first violation's lane (or of every shown lane for a
    clean trace), cut to what matters when long, and the events the violations name."""
    from collections import deque

    first = next((v for v in tl.violations if v.lane in tl.lanes), None)
    if first is not None:
        focus = {first.lane}
        focus_name = lane_name(first.lane)
    else:
        focus = set(tl.lanes)
        focus_name = lane_name(tl.lanes[0]) if len(tl.lanes) == 1 else f"{len(tl.lanes)} lane(s)"
    in_scope = _scope_filter(tl, focus) if tl.lanes else (lambda ev: True)
    if not tl.lanes:        # nothing happened on a queue (e.g. a retry chain alone): the whole trace is the story
        focus_name = "the trace"
    listed = tl.listed()
    bad = {v.seq for v in listed if v.seq is not None and (v.lane in focus or v.lane is None)}
    matters = set()
    need = set(bad)
    for v in tl.violations:
        need.update(v.matters)
        if v.lane in focus or v.lane is None:
            matters.update(v.matters)

    by_seq: dict = {}
    head: list = []            # the first MAX_STORY + 1 events of the story: all of it when short
    kept: dict = {}            # index in the story -> event, for a long story
    ring: deque = deque(maxlen=STORY_BEFORE if first is not None else 4)
    tail: deque = deque(maxlen=10)
    after = 0
    reached = False
    n = told_extra = 0

    def keep(i, ev, must=False):
        nonlocal told_extra
        if i in kept:
            return
        if not must:
            if told_extra >= MAX_TOLD:
                return
            told_extra += 1
        kept[i] = ev

    count = 0
    for ev in events:
        count += 1
        if progress is not None and not count & 0xFFF:
            progress(count)
        s = ev["seq"]
        if s in need:
            by_seq[s] = ev
        if not (in_scope(ev) or s in matters or s in bad):
            continue
        i = n
        n += 1
        if len(head) <= MAX_STORY:
            head.append(ev)
        k = ev["kind"]
        if s in matters or s in bad:
            keep(i, ev, must=True)
        elif k in ALWAYS_TOLD:
            keep(i, ev)
        if first is not None:
            if not reached and s >= first.seq:
                reached = True
                for j, e in ring:
                    keep(j, e, must=True)
                keep(i, ev, must=True)
                after = STORY_AFTER
            elif after > 0:
                keep(i, ev, must=True)
                after -= 1
            elif not reached:
                ring.append((i, ev))
        else:
            if i < 30:
                keep(i, ev, must=True)
            if k in TURNS or (k == "lock_acquired" and ev.get("reason") != "renewed"):
                for j, e in ring:
                    keep(j, e)
                keep(i, ev)
                after = 4
            elif after > 0:
                keep(i, ev)
                after -= 1
            ring.append((i, ev))
            tail.append((i, ev))
    if progress is not None:
        progress(count)
    for j, e in tail:
        keep(j, e, must=True)

    def line(ev):
        tag = "!" if ev["seq"] in bad else ("*" if ev["seq"] in matters else "")
        return (ev["seq"], ev["ts"], describe(ev), tag)

    if n <= MAX_STORY:
        story = [line(ev) for ev in head]
        title = f"STORY of {focus_name} ({n} events; ! = the violation, * = an event that matters)"
    else:
        story, prev = [], -1
        for i in sorted(kept):
            if i > prev + 1:
                story.append((None, None, f"... {i - prev - 1} more event(s) ...", None))
            story.append(line(kept[i]))
            prev = i
        if prev < n - 1:
            story.append((None, None, f"... {n - 1 - prev} more event(s) ...", None))
        shown = len(kept)
        capped = (f"; more than {MAX_TOLD} such events, the first {MAX_TOLD} told" if told_extra >= MAX_TOLD else "")
        if first is not None:
            title = (f"STORY of {focus_name} (showing {shown} of its {n} events: the events that matter, ownership "
                     f"changes, pauses and crashes, and the surroundings of the violation{capped}; "
                     f"! = the violation, * = an event that matters)")
        else:
            title = (f"STORY of {focus_name} (showing {shown} of its {n} events: the beginning and the end, and "
                     f"around every change of owner or lock, pause and crash{capped})")
    tl.by_seq = by_seq
    return Explanation(tl, story, title, _lanes_summary(tl), focus, by_seq)


def _lanes_summary(tl: Timeline) -> list:
    out = []
    for ln in tl.lanes:
        sm = tl.summary.get(ln) or {}
        owners = sorted(sm.get("owners", ()))
        more = sm.get("owned", 0) - len(owners)
        bad = [v.inv for v in tl.listed() if v.lane == ln]
        parts = [f"owned by {', '.join(o for _, o in owners)}" + (f" and {more} more time(s)" if more > 0 else "")
                 if owners else "never owned",
                 f"{sm.get('calls', 0)} listener call(s)"]
        if sm.get("retries"):
            parts.append(f"{sm['retries']} send-back(s)")
        if sm.get("dlq"):
            parts.append(f"{sm['dlq']} dead-lettered")
        if sm.get("commit") is not None:
            parts.append(f"broker offset {sm['commit']} at the end")
        if bad:
            parts.append("VIOLATED: " + ", ".join(dict.fromkeys(bad)))
        out.append(f"{lane_name(ln)}: " + "; ".join(parts))
    return out
