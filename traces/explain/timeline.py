"""A trace as a timeline: one lane per queue per group, for `rocketspec explain`.

Each lane (group, topic, broker, queue) has a broker row (the broker's lock entry, committed
offsets, stored messages, send-backs and the DLQ) and one row per client that touched the queue
(its ProcessQueue's life = ownership, its lease, pulls, listener calls, offset updates, pauses
and crashes). The intervals are read off the events as they are recorded: this module draws
what happened; what is *wrong* comes from the spec's verdict (spec.replay), never from here.
The renderers (traces/explain/explain_html.py, traces/explain/explain_png.py) only draw this structure.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..kinds import KINDS
from .narrate import describe, offs, qname, secs

LANE_FIELDS = ("group", "topic", "broker", "queue")
MAX_LANES = 24          # past this, the lanes with a violation and the first others are shown
MAX_MATTERS = 40        # events that matter listed per violation
MAX_OWNERS = 8          # ownerships named per lane in the lanes' summary

# Lane key as a user types it: "GROUP/TOPIC/BROKER/QUEUE" or "field=value,..." (see parse_key).
KEY_FIELDS = ("group", "topic", "broker", "queue", "client", "origin_msg_id")


@dataclass
class Row:
    y: float
    lane: tuple
    who: str                 # "broker" or a client id
    label: str


@dataclass
class Bar:
    row: int
    t0: int
    t1: int
    cat: str                 # pq | lease | lock | lock_expired | call | pull | pause
    client: str | None
    text: str
    seqs: tuple
    open: bool = False       # still going when the trace (or its client) ended
    status: str | None = None
    s0: float = 0            # the same interval in event order (seq), for traces whose clock stands still
    s1: float = 0


@dataclass
class Mark:
    row: int
    t: int
    cat: str
    client: str | None
    text: str
    seq: int
    label: str | None = None


@dataclass
class Violation:
    inv: str
    title: str
    statement: str
    guarantee: str | None
    message: str
    seq: int | None
    ts: int | None
    lane: tuple | None
    row: int | None
    key: dict | None
    matters: list = field(default_factory=list)   # seqs of the events that matter, ascending


@dataclass
class Timeline:
    path: str
    profile: str
    ok: bool
    n_events: int
    ended: str | None
    t_min: int
    t_max: int
    lanes: list
    rows: list
    bars: list
    marks: list
    violations: list
    clients: list
    counts: dict
    hidden_lanes: int = 0
    all_lanes: int = 0
    by_seq: dict = field(default_factory=dict)    # seq -> event (events on the shown lanes and globals)
    steps: bool = False      # draw against event order: the trace's clock barely moves (explorer traces)
    s_min: int = 0
    s_max: int = 0
    errors: int = 0          # errors in the whole trace, as `check` counts them
    more: dict = field(default_factory=dict)      # invariant -> [Violation]: the next few after its first, in brief
    summary: dict = field(default_factory=dict)   # lane -> what happened on it (owners, calls, retries, ...)

    def error_counts(self) -> dict:
        """Errors per invariant, as `check` counts them (warnings left out)."""
        from rocketspec.spec import invariants as inv_cat

        return {k: n for k, n in self.counts.items() if inv_cat.severity(k) == "error"}

    def listed(self) -> list:
        """Every violation the timeline knows: the first of each invariant and the next few."""
        out = list(self.violations)
        for vs in self.more.values():
            out.extend(vs)
        return out

    def lane_name(self, lane) -> str:
        return lane_name(lane)

    def x(self, ts, seq) -> float:
        """Where a point goes on the x axis: seconds, or its seq in step mode."""
        return float(seq) if self.steps else ts / 1000.0

    def bar_x(self, b) -> tuple:
        return (b.s0, b.s1) if self.steps else (b.t0 / 1000.0, b.t1 / 1000.0)

    def x_label(self) -> str:
        return ("event order (seq): the trace's clock barely moves, so events are spaced one per step"
                if self.steps else "time (s)")


def lane_name(lane) -> str:
    g, t, b, q = lane
    return f"{g} · {t}/{b}/{q}"


# Events about a retry copy in the schedule carry the schedule topic's queue: not a lane of the group.
NOT_LANE_KINDS = frozenset(n for n, k in KINDS.items() if k.lane == "schedule")


def lane_of(ev) -> tuple | None:
    if ev.get("kind") in NOT_LANE_KINDS:
        return None
    try:
        k = (ev["group"], ev["topic"], ev["broker"], ev["queue"])
    except KeyError:
        return None
    return k if None not in k else None


def parse_key(text: str) -> dict:
    """`--key`: "GROUP/TOPIC/BROKER/QUEUE" (trailing parts optional), or comma-separated
    field=value pairs over group, topic, broker, queue, client, origin_msg_id."""
    from rocketspec.errors import UserError

    text = (text or "").strip()
    if not text:
        raise UserError("empty key: expected GROUP/TOPIC/BROKER/QUEUE or field=value,...", field="--key")
    out: dict = {}
    if "=" in text:
        for part in text.split(","):
            if "=" not in part:
                raise UserError(f"{part!r} is not field=value (fields: {', '.join(KEY_FIELDS)})", field="--key")
            k, v = (x.strip() for x in part.split("=", 1))
            if k not in KEY_FIELDS:
                raise UserError(f"unknown key field {k!r}: expected one of {', '.join(KEY_FIELDS)}", field="--key")
            out[k] = v
    else:
        parts = text.split("/")
        # topics never hold '/', but a %RETRY% topic is fine: split from the right for broker/queue
        if len(parts) > 4:
            raise UserError(f"{text!r}: expected at most GROUP/TOPIC/BROKER/QUEUE", field="--key")
        out = dict(zip(LANE_FIELDS, parts))
    if "queue" in out:
        try:
            out["queue"] = int(out["queue"])
        except ValueError:
            raise UserError(f"queue {out['queue']!r} is not an integer", field="--key") from None
    return out


class _Builder:
    """Reads the events of the shown lanes into rows, bars and marks. With keep_items False (text
    only) it keeps no bar or mark, only each lane's summary: memory then follows the open
    intervals, not the trace."""

    def __init__(self, lanes, lease_ms, msg_lane, keep_items=True, default_lease_ms=None):
        self.keep = keep_items
        self.stored_lanes: dict = {}
        for ln in lanes:
            self.stored_lanes.setdefault((ln[1], ln[2], ln[3]), []).append(ln)
        self.summary = {ln: {"owners": [], "owned": 0, "calls": 0, "retries": 0, "dlq": 0, "commit": None}
                        for ln in lanes}
        self.rows: list[Row] = []
        self.row_of: dict = {}
        self.bars: list[Bar] = []
        self.marks: list[Mark] = []
        self.lanes = lanes
        self.lease_ms = lease_ms          # client -> its lease (client_lock_max_live_ms)
        self.default_lease_ms = default_lease_ms  # the profile's, for a client the trace gave no config
        self.msg_lane = msg_lane          # (group, msg_id) -> lane where it was stored or consumed
        self.open_pq: dict = {}
        self.open_lock: dict = {}
        self.open_lease: dict = {}
        self.open_call: dict = {}
        self.open_pull: dict = {}
        self.open_pause: dict = {}
        self.cur_seq = 0
        self.cur_ts = None
        self.closed_now: list = []       # (lane, seqs, client) of the intervals closed at cur_ts
        self.ts_list: list | None = None  # (ts, seq) of every event, to place a time in event order
        self.client_rows: dict = {}      # client -> [row index]
        self.broker_rows: dict = {}      # broker -> [row index]
        self.lane_rows: dict = {}        # lane -> [row index]

    # ---------------------------------------------------------------- rows
    def make_rows(self, lane_clients):
        y = 0.0
        for lane in self.lanes:
            whos = ["broker"] + lane_clients.get(lane, [])
            for who in whos:
                label = (f"{lane[0]}\n{lane[1]}/{lane[2]}/{lane[3]} (broker)" if who == "broker" else f"{who}")
                idx = len(self.rows)
                self.rows.append(Row(y, lane, who, label))
                self.row_of[(lane, who)] = idx
                self.lane_rows.setdefault(lane, []).append(idx)
                if who == "broker":
                    self.broker_rows.setdefault(lane[2], []).append(idx)
                else:
                    self.client_rows.setdefault(who, []).append(idx)
                y += 1.0
            y += 0.6

    def row(self, lane, who):
        return self.row_of.get((lane, who))

    # ---------------------------------------------------------------- items
    def seq_at(self, ts) -> float:
        """The event order of a moment that is no event (an expiry): just before the first
        event after it."""
        import bisect

        if self.ts_list is None:
            return self.cur_seq
        i = bisect.bisect_right(self.ts_list, (ts, float("inf")))
        return (self.ts_list[i][1] - 0.5) if i < len(self.ts_list) else self.cur_seq

    def bar(self, row, t0, t1, cat, client, text, seqs, open_=False, status=None, s0=None, s1=None):
        if row is not None:
            sm = self.summary.get(self.rows[row].lane)
            if sm is not None and cat == "pq":
                sm["owned"] += 1
                if len(sm["owners"]) < MAX_OWNERS:
                    sm["owners"].append((t0, f"{client} {secs(t0)}-{'end' if open_ else secs(t1)}"))
            elif sm is not None and cat == "call":
                sm["calls"] += 1
            if cat in ("pq", "lock", "lock_expired", "lease", "call") and self.cur_ts is not None and t1 >= self.cur_ts:
                # closed at this very moment: still open at the time of an event that follows it
                self.closed_now.append((self.rows[row].lane, seqs, client))
            if not self.keep:
                return
            a = seqs[0] if seqs and seqs[0] is not None else self.cur_seq
            z = seqs[1] if len(seqs) > 1 and seqs[1] is not None else self.cur_seq
            self.bars.append(Bar(row, t0, max(t0, t1), cat, client, text, tuple(s for s in seqs if s is not None),
                                 open_, status, a if s0 is None else s0, max(a, z if s1 is None else s1)))

    def mark(self, row, ev, cat, label=None, client=None):
        if row is not None:
            sm = self.summary.get(self.rows[row].lane)
            if sm is not None:
                if cat == "retry":
                    sm["retries"] += 1
                elif cat == "dlq":
                    sm["dlq"] += 1
                elif cat == "commit":
                    sm["commit"] = label
            if not self.keep:
                return
            self.marks.append(Mark(row, ev["ts"], cat, client if client is not None else ev.get("client"),
                                   f"seq {ev['seq']} · {secs(ev['ts'])}<br>{describe(ev)}", ev["seq"], label))

    def _close_lock(self, lane, t, seq, why, open_=False):
        lk = self.open_lock.pop(lane, None)
        if lk is None:
            return
        client, t0, seq0, exp = lk
        row = self.row(lane, "broker")
        text = f"broker lock held by {client} from {secs(t0)}" + (f" until {secs(t)} ({why})" if not open_ else "")
        if exp is not None and exp < t:
            sx = self.seq_at(exp)
            self.bar(row, t0, exp, "lock", client, text + f"; valid until {secs(exp)}", (seq0, seq), open_, s1=sx)
            self.bar(row, exp, t, "lock_expired", client, f"{client}'s lock entry expired at {secs(exp)} "
                     f"(nobody took it yet)", (seq0, seq), open_, s0=sx)
        else:
            self.bar(row, t0, t, "lock", client, text, (seq0, seq), open_)

    def _close_lease(self, lane, client, t, seq, open_=False):
        ls = self.open_lease.pop((lane, client), None)
        if ls is None:
            return
        t0, seq0, last = ls
        until = last + self.lease_ms.get(client, self.default_lease_ms)
        row = self.row(lane, client)
        end = min(t, until)
        self.bar(row, t0, end, "lease", client, f"{client}'s lease of the queue: locked at {secs(last)}, "
                 f"valid until {secs(until)}", (seq0, seq), open_ and t <= until,
                 s1=self.seq_at(until) if until < t else None)

    def _close_pq(self, lane, client, t, seq, why, open_=False):
        p = self.open_pq.pop((lane, client), None)
        self._close_lease(lane, client, t, seq, open_)
        if p is None:
            return
        t0, seq0, first = p
        self.bar(self.row(lane, client), t0, t, "pq", client,
                 f"{client} owns {qname(dict(zip(LANE_FIELDS, lane)))} (ProcessQueue from {secs(t0)}, first pull at "
                 f"{first}" + (f"; {why} at {secs(t)}" if why else "") + ")", (seq0, seq), open_)

    def _close_call(self, k, t, seq, how, open_=False):
        c = self.open_call.pop(k, None)
        if c is None:
            return
        lane, client, cid = k
        t0, seq0, offsets = c
        self.bar(self.row(lane, client), t0, t, "call", client,
                 f"{client}'s listener call #{cid} on offsets {offs(offsets)}: {secs(t0)} - {secs(t)} "
                 f"({t - t0} ms){', ' + how if how else ''}", (seq0, seq), open_, status=how)

    def _close_pull(self, k, t, seq, how, open_=False):
        p = self.open_pull.pop(k, None)
        if p is None:
            return
        lane, client, pid = k
        t0, seq0, off = p
        self.bar(self.row(lane, client), t0, t, "pull", client,
                 f"{client}'s pull #{pid} from offset {off}: {secs(t0)} - {secs(t)}{', ' + how if how else ''}",
                 (seq0, seq), open_, status=how)

    def _client_gone(self, client, t, seq, why):
        for (lane, c) in [k for k in self.open_pq if k[1] == client]:
            self._close_pq(lane, c, t, seq, why)
        for (lane, c) in [k for k in self.open_lease if k[1] == client]:
            self._close_lease(lane, c, t, seq)
        for k in [k for k in self.open_call if k[1] == client]:
            self._close_call(k, t, seq, f"never returned ({why})", open_=True)
        for k in [k for k in self.open_pull if k[1] == client]:
            self._close_pull(k, t, seq, f"never answered ({why})")

    def event(self, ev):
        kind = ev["kind"]
        t, seq = ev["ts"], ev["seq"]
        self.cur_seq = seq
        if t != self.cur_ts:
            self.cur_ts = t
            self.closed_now = []
        lane = lane_of(ev)
        if lane is not None and lane not in self.lane_rows:
            lane = None if kind != "message_stored" else lane
        draw = _LANE_BEHAVIOURS.get(kind)
        if draw is not None:
            draw(self, ev, kind, lane, ev.get("client"), t, seq)

    # One method per lane behaviour a kind names in the registry (traces/kinds.py: Kind.lane).
    # Each takes (ev, kind, lane, client, t, seq); lane is None for an event of no shown lane.

    def _lane_none(self, ev, kind, lane, client, t, seq):
        """Not drawn."""

    # events about a retry copy in the schedule carry the schedule topic's queue (NOT_LANE_KINDS)
    _lane_schedule = _lane_none

    def _lane_pq_open(self, ev, kind, lane, client, t, seq):
        if lane:
            self._close_pq(lane, client, t, seq, "replaced")
            self.open_pq[(lane, client)] = (t, seq, ev.get("offset"))

    def _lane_pq_close(self, ev, kind, lane, client, t, seq):
        if lane and kind == "pq_dropped":
            self._close_pq(lane, client, t, seq, f"dropped: {ev.get('reason')}")
            self.mark(self.row(lane, client), ev, "drop")

    def _lane_lease(self, ev, kind, lane, client, t, seq):
        if lane:
            self._close_lease(lane, client, t, seq)
            if ev.get("locked"):
                self.open_lease[(lane, client)] = (t, seq, ev.get("last_lock_ts", t))

    def _lane_lease_end(self, ev, kind, lane, client, t, seq):
        if lane:
            self._close_lease(lane, client, t, seq)
            self.mark(self.row(lane, client), ev, "lease_expired", "lease expired")

    def _lane_lock_grant(self, ev, kind, lane, client, t, seq):
        if lane:
            cur = self.open_lock.get(lane)
            if cur is not None and cur[0] == client:
                self.open_lock[lane] = (cur[0], cur[1], cur[2], ev.get("expires_at"))
            else:
                self._close_lock(lane, t, seq, f"taken over by {client}")
                self.open_lock[lane] = (client, t, seq, ev.get("expires_at"))
                self.mark(self.row(lane, "broker"), ev, "lock_new", f"lock -> {client}")

    def _lane_lock_end(self, ev, kind, lane, client, t, seq):
        if lane:
            self._close_lock(lane, t, seq, "released" if kind == "lock_released" else "found expired")
            self.mark(self.row(lane, "broker"), ev, "lock_end")

    def _lane_lock_refused(self, ev, kind, lane, client, t, seq):
        if lane:
            self.mark(self.row(lane, "broker"), ev, "lock_refused")

    def _lane_pull_open(self, ev, kind, lane, client, t, seq):
        if lane:
            self.open_pull[(lane, client, ev.get("pull_id"))] = (t, seq, ev.get("offset"))

    def _lane_pull_close(self, ev, kind, lane, client, t, seq):
        if lane:
            k = (lane, client, ev.get("pull_id"))
            st = ev.get("status")
            self._close_pull(k, t, seq, st)
            self.mark(self.row(lane, client), ev, "pull_found" if ev.get("offsets") else
                      ("pull_illegal" if st == "OFFSET_ILLEGAL" else "pull_empty"))

    def _lane_pull_failed(self, ev, kind, lane, client, t, seq):
        if lane:
            self._close_pull((lane, client, ev.get("pull_id")), t, seq, f"failed ({ev.get('reason')})")
            self.mark(self.row(lane, client), ev, "pull_failed")

    def _lane_call_open(self, ev, kind, lane, client, t, seq):
        if lane:
            self.open_call[(lane, client, ev.get("consume_id"))] = (t, seq, ev.get("offsets"))

    def _lane_call_close(self, ev, kind, lane, client, t, seq):
        if lane:
            how = ev.get("status") + (" (dropped)" if ev.get("dropped") else "")
            self._close_call((lane, client, ev.get("consume_id")), t, seq, how)

    def _lane_offset(self, ev, kind, lane, client, t, seq):
        if lane:
            self.mark(self.row(lane, client), ev, "offset")

    def _lane_persist(self, ev, kind, lane, client, t, seq):
        if lane:
            self.mark(self.row(lane, client), ev, "persist_lost" if ev.get("lost") else "persist")

    def _lane_flushed(self, ev, kind, lane, client, t, seq):
        if lane:
            self.mark(self.row(lane, client if client is not None else "broker"), ev, "flushed")

    def _lane_commit(self, ev, kind, lane, client, t, seq):
        if lane:
            self.mark(self.row(lane, "broker"), ev, "commit", str(ev.get("offset")))

    def _lane_suspend(self, ev, kind, lane, client, t, seq):
        if lane:
            self.mark(self.row(lane, client), ev, "suspend")

    def _lane_stored(self, ev, kind, lane, client, t, seq):
        for ln in self.stored_lanes.get((ev["topic"], ev["broker"], ev["queue"]), ()):
            self.mark(self.row(ln, "broker"), ev, "stored", client="")

    def _lane_retention(self, ev, kind, lane, client, t, seq):
        for ln in self.stored_lanes.get((ev.get("topic"), ev.get("broker"), ev.get("queue")), ()):
            self.mark(self.row(ln, "broker"), ev, "retention", client="")

    def _lane_retry_request(self, ev, kind, lane, client, t, seq):
        ln = lane or self.msg_lane.get((ev.get("group"), ev.get("msg_id")))
        if ln is not None and ln in self.lane_rows:
            self.mark(self.row(ln, client), ev, "retry", "retry")

    def _lane_retry_outcome(self, ev, kind, lane, client, t, seq):
        ln = self.msg_lane.get((ev.get("group"), ev.get("msg_id")))
        if ln is not None and ln in self.lane_rows:
            cat = {"message_dead_lettered": "dlq", "send_back_failed": "retry_failed"}.get(kind, "sent_back")
            if kind == "message_sent_back" and ev.get("outcome") == "dlq":
                cat = "dlq"
            self.mark(self.row(ln, "broker" if kind != "send_back_failed" else client), ev, cat,
                      "DLQ" if cat == "dlq" else None)

    def _lane_pause(self, ev, kind, lane, client, t, seq):
        self.open_pause[client] = (t, seq, ev.get("duration") or 0)

    def _lane_resume(self, ev, kind, lane, client, t, seq):
        self._end_pause(client, t, seq)

    def _lane_crash(self, ev, kind, lane, client, t, seq):
        self._end_pause(client, t, seq)
        self._client_gone(client, t, seq, "crashed")
        for r in self.client_rows.get(client, []):
            self.mark(r, ev, "crash", "crash")

    def _lane_stop(self, ev, kind, lane, client, t, seq):
        self._end_pause(client, t, seq)
        self._client_gone(client, t, seq, "stopped")
        for r in self.client_rows.get(client, []):
            self.mark(r, ev, "stop", None)

    def _lane_start(self, ev, kind, lane, client, t, seq):
        for r in self.client_rows.get(client, []):
            self.mark(r, ev, "start")

    def _lane_restart(self, ev, kind, lane, client, t, seq):
        for r in self.broker_rows.get(ev.get("broker"), []):
            lane_r = self.rows[r].lane
            self._close_lock(lane_r, t, seq, "broker restarted")
            self.mark(r, ev, "crash", "restart", client="")

    def _end_pause(self, client, t, seq):
        p = self.open_pause.pop(client, None)
        if p is None:
            return
        t0, seq0, dur = p
        for r in self.client_rows.get(client, []):
            self.bar(r, t0, t, "pause", client, f"{client} frozen {secs(t0)} - {secs(t)} ({t - t0} ms)", (seq0, seq))

    def finish(self, t_end, last_seq):
        self.cur_seq = (last_seq if last_seq is not None else 0) + 0.5
        for lane in list(self.open_lock):
            self._close_lock(lane, t_end, None, "", open_=True)
        for k in list(self.open_call):
            self._close_call(k, t_end, None, "still running at the end of the trace", open_=True)
        for k in list(self.open_pull):
            self._close_pull(k, t_end, None, "in flight at the end of the trace", open_=True)
        for (lane, c) in list(self.open_pq):
            self._close_pq(lane, c, t_end, None, "", open_=True)
        for (lane, c) in list(self.open_lease):
            self._close_lease(lane, c, t_end, None, open_=True)
        for c, (t0, seq0, dur) in list(self.open_pause.items()):
            self._end_pause(c, max(t_end, t0 + dur) if dur else t_end, None)


# kind -> its lane behaviour (the registry's Kind.lane)
_LANE_BEHAVIOURS = {n: getattr(_Builder, "_lane_" + k.lane) for n, k in KINDS.items()}


def _key_matches(lane, key, lane_clients, chain_lanes) -> bool:
    for f, v in key.items():
        if f in LANE_FIELDS:
            if lane[LANE_FIELDS.index(f)] != v:
                return False
        elif f == "client":
            if v not in lane_clients.get(lane, ()):
                return False
        elif f == "origin_msg_id":
            if lane not in chain_lanes.get(v, ()):
                return False
    return True


BRIEF_PER_INVARIANT = 10     # violations of one invariant listed in brief after its first


def explain_findings(max_brief: int = BRIEF_PER_INVARIANT):
    """The findings' sink of explain's replay: `check`'s own (spec.replay.Findings: the same
    counts, the same warnings' examples), listing per invariant its first error in full and the
    next `max_brief` in brief, instead of the first N errors of the trace (which may all be of
    one invariant). Memory: a few findings per invariant, whatever the trace's length."""
    from rocketspec.spec import invariants as inv_cat
    from rocketspec.spec.replay import Finding, Findings

    class ExplainFindings(Findings):
        def __init__(self, st, max_listed=50, warn_examples=3):
            super().__init__(st, max_listed=0, warn_examples=warn_examples)
            self.first: dict = {}      # invariant -> its first error, in order of first occurrence
            self.brief: dict = {}      # invariant -> the next few

        def report(self, inv, message, key=None, state=None):
            super().report(inv, message, key, state)
            if inv_cat.severity(inv) != "error":
                return
            ev = self.ev or {}
            if inv in self.first:
                lst = self.brief.setdefault(inv, [])
                if len(lst) >= max_brief:
                    return
            else:
                lst = None
            f = Finding(inv, "error", message, key, ev.get("seq"), self.line, ev.get("kind"), dict(ev) if ev else None,
                        None)
            if lst is None:
                self.first[inv] = f
            else:
                lst.append(f)

    return ExplainFindings


class LaneIndex:
    """What explain learns while `check`'s replay reads the trace (it is the replay's `keep`
    sink): the lanes and their clients, where each consumed message lives, the clock. Holds no
    event, unless asked to (`events`: standard input, which cannot be read twice)."""

    def __init__(self, keep_events: bool = False, origin: str | None = None):
        self.lane_first: dict = {}
        self.lane_clients: dict = {}
        self.configs: dict = {}
        self.msg_lane: dict = {}
        self.chain_lanes: dict = {}
        self.origin = origin
        self.events = [] if keep_events else None
        self.n = 0
        self.distinct_ts = 0
        self.t_min = self.t_max = None
        self.s_min = self.s_max = None

    def append(self, ev) -> None:
        if self.events is not None:
            self.events.append(ev)
        ts = ev["ts"]
        if self.t_max is None or ts != self.t_max:
            self.distinct_ts += 1
        if self.t_min is None:
            self.t_min, self.s_min = ts, ev["seq"]
        self.t_max, self.s_max = ts, ev["seq"]
        self.n += 1
        kind = ev["kind"]
        if kind == "client_started":
            self.configs[ev.get("client")] = ev.get("config")
        lane = lane_of(ev)
        if lane is not None and kind != "message_stored":
            if lane not in self.lane_first:
                self.lane_first[lane] = ev["seq"]
            c = ev.get("client")
            if c is not None:
                lst = self.lane_clients.setdefault(lane, [])
                if c not in lst:
                    lst.append(c)
            if kind == "consume_started":
                g = ev["group"]
                for mid in ev.get("msg_ids") or ():
                    self.msg_lane[(g, mid)] = lane
                if self.origin is not None and self.origin in (ev.get("origin_msg_ids") or ()):
                    self.chain_lanes.setdefault(self.origin, set()).add(lane)
        elif kind == "message_stored":
            if ev.get("group") is not None:
                self.msg_lane.setdefault((ev["group"], ev["msg_id"]), (ev["group"], ev["topic"], ev["broker"],
                                                                        ev["queue"]))
            if self.origin is not None and ev.get("origin_msg_id") == self.origin:
                for ln in self.lane_first:
                    if (ln[1], ln[2], ln[3]) == (ev["topic"], ev["broker"], ev["queue"]):
                        self.chain_lanes.setdefault(self.origin, set()).add(ln)

    def lease_ms(self, prof) -> dict:
        from rocketspec.spec.limits import ClientLimits

        out = {}
        for c, cfg in self.configs.items():
            try:
                out[c] = ClientLimits(prof, cfg).lease_ms
            except ValueError:
                pass
        return out


class _Matters:
    """The events that matter to one violation, found while the events before it stream by: the
    rejected event; what was open in its lane at that moment (ownerships, lock entries, leases,
    listener calls); the events about the same messages (offsets, message ids, retry chain); the
    last pause, crash or restart of the clients and broker involved; and the stored offset the
    event should have kept to (the broker's committed offset, a local offsets file's flush, the
    previous value of the same store)."""

    READS = ("offset_read", "pq_created", "pull_issued", "pull_answered", "offset_updated", "pq_committed",
             "offset_persisted")
    STORES = ("offset_committed", "offset_updated", "pq_committed")

    def __init__(self, v: Violation, finding):
        ev = finding.event or {}
        self.v = v
        self.ev = ev
        self.seq, self.ts = finding.seq, ev.get("ts")
        self.lane = v.lane
        self.ids = set(ev.get("msg_ids") or ()) | ({ev["msg_id"]} if ev.get("msg_id") else set())
        self.origin = ev.get("origin_msg_id")
        self.offsets = set(ev.get("offsets") or ())
        self.out = set() if self.seq is None or self.ts is None else {self.seq}
        self.done = self.seq is None or self.ts is None

    def see(self, e, lane_e) -> None:
        """An event before the violation."""
        if self.origin is not None and e.get("origin_msg_id") == self.origin:
            self.out.add(e["seq"])
        elif self.ids and (e.get("msg_id") in self.ids or not self.ids.isdisjoint(e.get("msg_ids") or ())):
            self.out.add(e["seq"])
        elif self.offsets and lane_e == self.lane and not self.offsets.isdisjoint(e.get("offsets") or ()):
            self.out.add(e["seq"])

    def at(self, b: _Builder, life: dict, last: dict) -> None:
        """The violation's own event, before the builder reads it."""
        self.done = True
        lane, ev = self.lane, self.ev
        involved = {ev.get("client")} - {None}
        if lane is not None:
            opened = []
            lk = b.open_lock.get(lane)
            if lk is not None:
                opened.append((lk[2], lk[0]))
            for (ln, c), p in b.open_pq.items():
                if ln == lane:
                    opened.append((p[1], c))
            for (ln, c), p in b.open_lease.items():
                if ln == lane:
                    opened.append((p[1], c))
            for (ln, c, _), p in b.open_call.items():
                if ln == lane:
                    opened.append((p[1], c))
            for ln, seqs, c in b.closed_now:
                if ln == lane:
                    opened.extend((s, c) for s in seqs)
            for s, c in opened:
                if s is not None:
                    self.out.add(s)
                if c:
                    involved.add(c)
        for (kind, who), s in life.items():
            if kind == "broker_restarted":
                if lane is not None and who == lane[2]:
                    self.out.add(s)
            elif who in involved:
                self.out.add(s)
        k = ev.get("kind")
        if lane is not None and k in self.READS:
            # the broker's committed offset, or a local store's flush, the client should have kept to
            for key in (("offset_committed", lane, None), ("offset_flushed", lane, ev.get("client")),
                        ("offset_flushed", lane, None)):
                if key in last:
                    self.out.add(last[key])
        if lane is not None and k in self.STORES:
            key = (k, lane, None if k == "offset_committed" else ev.get("client"))
            if key in last:
                self.out.add(last[key])

    def result(self) -> list:
        res = sorted(self.out)
        if len(res) > MAX_MATTERS:
            res = sorted(sorted(res, key=lambda s: abs(s - self.seq))[:MAX_MATTERS])
        return res


# a client's or broker's life: pauses, crashes, restarts (what a violation may have followed)
LIFE_KINDS = frozenset(n for n, k in KINDS.items() if k.lane in ("pause", "resume", "crash", "restart"))


def _violation(f, cat, ln, row) -> Violation:
    ev = f.event or {}
    return Violation(f.inv, cat.title if cat else "guard of the action", cat.statement if cat else
                     "The event is not a step the spec allows in this state (a failed guard).",
                     (cat.guarantee or None) if cat else None, f.message, f.seq, ev.get("ts"), ln, row, f.key_dict())


def build(index: LaneIndex, report, events, key: dict | None = None, pictures: bool = True,
          progress=None) -> Timeline:
    """The timeline of a trace replayed by spec.replay into `report` (with `explain_findings`)
    while `index` watched it; `events` iterates the trace's events again (the second reading).
    With pictures False, no bar or mark is kept (the text needs only the lanes' summaries)."""
    from rocketspec.spec import invariants as inv_cat
    from rocketspec.rocketmq.profiles import get_profile

    prof = get_profile(report.profile)
    fd = report.findings
    firsts = sorted(fd.first.values(), key=lambda f: (f.seq is None, f.seq or 0))
    lane_first, lane_clients, msg_lane = index.lane_first, index.lane_clients, index.msg_lane
    # a lane exists for a queue a group did something on (not just a stored message)
    lanes = sorted(lane_first, key=lambda ln: (ln[0], ln[1].startswith("%"), ln[1], ln[2], ln[3]))
    all_lanes = len(lanes)
    listed = list(firsts) + [f for inv in fd.brief for f in fd.brief[inv]]
    viol_lanes = []
    for f in listed:
        ln = _finding_lane(f, msg_lane)
        if ln is not None and ln not in viol_lanes:
            viol_lanes.append(ln)
    if key:
        lanes = [ln for ln in lanes if _key_matches(ln, key, lane_clients, index.chain_lanes)]
        if not lanes:
            from rocketspec.errors import UserError

            have = ", ".join("/".join(map(str, ln)) for ln in sorted(lane_first)[:8]) or "none"
            raise UserError(f"no lane of the trace matches {key}; its lanes (group/topic/broker/queue) "
                            f"include: {have}", field="--key")
    hidden = 0
    if len(lanes) > MAX_LANES:
        keep = [ln for ln in lanes if ln in viol_lanes][:MAX_LANES]
        keep += [ln for ln in lanes if ln not in keep][:MAX_LANES - len(keep)]
        hidden = len(lanes) - len(keep)
        lanes = sorted(keep, key=lanes.index)

    steps = index.distinct_ts <= max(2, index.n // 4)
    b = _Builder(lanes, index.lease_ms(prof), msg_lane, keep_items=pictures,
                 default_lease_ms=prof.client_lock_max_live_ms)
    if pictures and steps:
        b.ts_list = []
    b.make_rows(lane_clients)
    shown = set(lanes)

    def row_of(ln, ev):
        if ln is None or ln not in shown:
            return None
        r = b.row(ln, ev.get("client")) if ev.get("client") else None
        return r if r is not None else b.row(ln, "broker")

    viols, trackers = [], []
    for f in firsts:
        ln = _finding_lane(f, msg_lane)
        v = _violation(f, inv_cat.BY_ID.get(f.inv), ln, row_of(ln, f.event or {}))
        viols.append(v)
        trackers.append(_Matters(v, f))
    more = {}
    for inv, fs in fd.brief.items():
        more[inv] = []
        for f in fs:
            ln = _finding_lane(f, msg_lane)
            more[inv].append(_violation(f, inv_cat.BY_ID.get(f.inv), ln, row_of(ln, f.event or {})))

    # the second reading: the shown lanes' rows, bars and marks, and the events that matter
    pending = sorted((t for t in trackers if not t.done), key=lambda t: t.seq)
    life: dict = {}
    last: dict = {}
    n = 0
    for ev in events:
        seq = ev["seq"]
        kind = ev["kind"]
        ln = lane_of(ev)
        while pending and pending[0].seq == seq:
            pending.pop(0).at(b, life, last)
        for t in pending:
            t.see(ev, ln)
        if b.ts_list is not None:
            b.ts_list.append((ev["ts"], seq))
        b.event(ev)
        if kind in LIFE_KINDS:
            life[(kind, ev.get("broker") if kind == "broker_restarted" else ev.get("client"))] = seq
        elif ln is not None and kind in ("offset_committed", "offset_updated", "pq_committed", "offset_flushed"):
            last[(kind, ln, None if kind == "offset_committed" else ev.get("client"))] = seq
        n += 1
        if progress is not None and not n & 0xFFF:
            progress(n)
    if progress is not None:
        progress(n)
    b.finish(index.t_max if index.t_max is not None else 0, index.s_max)
    for t in trackers:
        t.v.matters = t.result()

    clients = []
    for r in b.rows:
        if r.who != "broker" and r.who not in clients:
            clients.append(r.who)
    return Timeline(str(report.path), report.profile, report.ok, report.events, report.ended,
                    index.t_min or 0, index.t_max or 0, lanes, b.rows, b.bars, b.marks, viols, clients,
                    dict(sorted(fd.counts.items())), hidden, all_lanes, {}, steps, index.s_min or 0,
                    index.s_max or 0, fd.error_count, more, b.summary)


def _finding_lane(f, msg_lane):
    k = f.key
    if k is not None and len(k) == 4:
        return tuple(k)
    ev = f.event or {}
    ln = lane_of(ev)
    if ln is not None:
        return ln
    if ev.get("group") is not None and ev.get("msg_id") is not None:
        return msg_lane.get((ev["group"], ev["msg_id"]))
    return None
