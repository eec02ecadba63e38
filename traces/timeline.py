"""A trace as a timeline: one lane per queue per group, for `rocketspec explain`.

Each lane (group, topic, broker, queue) has a broker row (the broker's lock entry, committed
offsets, stored messages, send-backs and the DLQ) and one row per client that touched the queue
(its ProcessQueue's life = ownership, its lease, pulls, listener calls, offset updates, pauses
and crashes). The intervals are read off the events as they are recorded: this module draws
what happened; what is *wrong* comes from the spec's verdict (spec.replay), never from here.
The renderers (traces/explain_html.py, traces/explain_png.py) only draw this structure.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .narrate import describe, offs, qname, secs

LANE_FIELDS = ("group", "topic", "broker", "queue")
MAX_LANES = 24          # past this, the lanes with a violation and the first others are shown
MAX_MATTERS = 40        # events that matter listed per violation

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


def lane_of(ev) -> tuple | None:
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
    def __init__(self, lanes, lease_ms, msg_lane):
        self.rows: list[Row] = []
        self.row_of: dict = {}
        self.bars: list[Bar] = []
        self.marks: list[Mark] = []
        self.lanes = lanes
        self.lease_ms = lease_ms          # client -> its lease (client_lock_max_live_ms)
        self.msg_lane = msg_lane          # (group, msg_id) -> lane where it was stored or consumed
        self.open_pq: dict = {}
        self.open_lock: dict = {}
        self.open_lease: dict = {}
        self.open_call: dict = {}
        self.open_pull: dict = {}
        self.open_pause: dict = {}
        self.cur_seq = 0
        self.ts_list: list = []          # (ts, seq) of every event, to place a time in event order
        self.client_rows: dict = {}      # client -> [row index]
        self.broker_rows: dict = {}      # broker -> [row index]
        self.lane_rows: dict = {}        # lane -> [row index]

    # ---------------------------------------------------------------- rows
    def make_rows(self, lane_clients):
        y = 0.0
        for lane in self.lanes:
            whos = ["broker"] + lane_clients.get(lane, [])
            for who in whos:
                label = (f"{lane_name(lane)} · {lane[2]}" if who == "broker" else f"{who}")
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

        i = bisect.bisect_right(self.ts_list, (ts, float("inf")))
        return (self.ts_list[i][1] - 0.5) if i < len(self.ts_list) else self.cur_seq

    def bar(self, row, t0, t1, cat, client, text, seqs, open_=False, status=None, s0=None, s1=None):
        if row is not None:
            a = seqs[0] if seqs and seqs[0] is not None else self.cur_seq
            z = seqs[1] if len(seqs) > 1 and seqs[1] is not None else self.cur_seq
            self.bars.append(Bar(row, t0, max(t0, t1), cat, client, text, tuple(s for s in seqs if s is not None),
                                 open_, status, a if s0 is None else s0, max(a, z if s1 is None else s1)))

    def mark(self, row, ev, cat, label=None, client=None):
        if row is not None:
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
        until = last + self.lease_ms.get(client, 30000)
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
        lane = lane_of(ev)
        if lane is not None and lane not in self.lane_rows:
            lane = None if kind != "message_stored" else lane
        client = ev.get("client")
        if kind == "pq_created" and lane:
            self._close_pq(lane, client, t, seq, "replaced")
            self.open_pq[(lane, client)] = (t, seq, ev.get("offset"))
        elif kind in ("pq_dropped", "pq_removed") and lane:
            if kind == "pq_dropped":
                self._close_pq(lane, client, t, seq, f"dropped: {ev.get('reason')}")
                self.mark(self.row(lane, client), ev, "drop")
        elif kind == "pq_lock_changed" and lane:
            self._close_lease(lane, client, t, seq)
            if ev.get("locked"):
                self.open_lease[(lane, client)] = (t, seq, ev.get("last_lock_ts", t))
        elif kind == "lease_expired" and lane:
            self._close_lease(lane, client, t, seq)
            self.mark(self.row(lane, client), ev, "lease_expired", "lease expired")
        elif kind == "lock_acquired" and lane:
            cur = self.open_lock.get(lane)
            if cur is not None and cur[0] == client:
                self.open_lock[lane] = (cur[0], cur[1], cur[2], ev.get("expires_at"))
            else:
                self._close_lock(lane, t, seq, f"taken over by {client}")
                self.open_lock[lane] = (client, t, seq, ev.get("expires_at"))
                self.mark(self.row(lane, "broker"), ev, "lock_new", f"lock -> {client}")
        elif kind in ("lock_released", "lock_expired") and lane:
            self._close_lock(lane, t, seq, "released" if kind == "lock_released" else "found expired")
            self.mark(self.row(lane, "broker"), ev, "lock_end")
        elif kind in ("lock_rejected", "lock_release_ignored") and lane:
            self.mark(self.row(lane, "broker"), ev, "lock_refused")
        elif kind == "pull_issued" and lane:
            self.open_pull[(lane, client, ev.get("pull_id"))] = (t, seq, ev.get("offset"))
        elif kind == "pull_answered" and lane:
            k = (lane, client, ev.get("pull_id"))
            st = ev.get("status")
            self._close_pull(k, t, seq, st)
            self.mark(self.row(lane, client), ev, "pull_found" if ev.get("offsets") else
                      ("pull_illegal" if st == "OFFSET_ILLEGAL" else "pull_empty"))
        elif kind == "pull_failed" and lane:
            self._close_pull((lane, client, ev.get("pull_id")), t, seq, f"failed ({ev.get('reason')})")
            self.mark(self.row(lane, client), ev, "pull_failed")
        elif kind == "consume_started" and lane:
            self.open_call[(lane, client, ev.get("consume_id"))] = (t, seq, ev.get("offsets"))
        elif kind == "consume_finished" and lane:
            how = ev.get("status") + (" (dropped)" if ev.get("dropped") else "")
            self._close_call((lane, client, ev.get("consume_id")), t, seq, how)
        elif kind in ("offset_updated", "pq_committed") and lane:
            self.mark(self.row(lane, client), ev, "offset")
        elif kind == "offset_persisted" and lane:
            self.mark(self.row(lane, client), ev, "persist_lost" if ev.get("lost") else "persist")
        elif kind == "offset_committed" and lane:
            self.mark(self.row(lane, "broker"), ev, "commit", str(ev.get("offset")))
        elif kind in ("consume_suspended", "pull_flow_controlled", "pq_rolled_back", "consume_resubmitted") and lane:
            self.mark(self.row(lane, client), ev, "suspend")
        elif kind == "message_stored":
            for ln in self.lanes:
                if (ln[1], ln[2], ln[3]) == (ev["topic"], ev["broker"], ev["queue"]):
                    self.mark(self.row(ln, "broker"), ev, "stored", client="")
        elif kind in ("messages_deleted", "queue_snapshot"):
            for ln in self.lanes:
                if (ln[1], ln[2], ln[3]) == (ev["topic"], ev["broker"], ev["queue"]):
                    self.mark(self.row(ln, "broker"), ev, "retention", client="")
        elif kind == "send_back_requested":
            ln = lane or self.msg_lane.get((ev.get("group"), ev.get("msg_id")))
            if ln is not None and ln in self.lane_rows:
                self.mark(self.row(ln, client), ev, "retry", "retry")
        elif kind in ("message_sent_back", "message_dead_lettered", "send_back_failed"):
            ln = self.msg_lane.get((ev.get("group"), ev.get("msg_id")))
            if ln is not None and ln in self.lane_rows:
                cat = {"message_dead_lettered": "dlq", "send_back_failed": "retry_failed"}.get(kind, "sent_back")
                if kind == "message_sent_back" and ev.get("outcome") == "dlq":
                    cat = "dlq"
                self.mark(self.row(ln, "broker" if kind != "send_back_failed" else client), ev, cat,
                          "DLQ" if cat == "dlq" else None)
        elif kind == "client_paused":
            self.open_pause[client] = (t, seq, ev.get("duration") or 0)
        elif kind == "client_resumed":
            self._end_pause(client, t, seq)
        elif kind in ("client_crashed", "client_stopped"):
            self._end_pause(client, t, seq)
            self._client_gone(client, t, seq, "crashed" if kind == "client_crashed" else "stopped")
            for r in self.client_rows.get(client, []):
                self.mark(r, ev, "crash" if kind == "client_crashed" else "stop",
                          "crash" if kind == "client_crashed" else None)
        elif kind == "client_started":
            for r in self.client_rows.get(client, []):
                self.mark(r, ev, "start")
        elif kind == "broker_restarted":
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


def build(events: list, report, key: dict | None = None) -> Timeline:
    """The timeline of `events` (a whole trace, replayed by spec.replay into `report`)."""
    from rocketspec.spec import invariants as inv_cat
    from rocketspec.spec.limits import ClientLimits
    from rocketspec.spec.profiles import get_profile

    prof = get_profile(report.profile)
    lane_clients: dict = {}
    lane_first: dict = {}
    msg_lane: dict = {}
    chain_lanes: dict = {}
    lease_ms: dict = {}
    for ev in events:
        kind = ev["kind"]
        if kind == "client_started":
            try:
                lease_ms[ev["client"]] = ClientLimits(prof, ev.get("config")).lease_ms
            except ValueError:
                pass
        lane = lane_of(ev)
        if lane is not None and kind != "message_stored":
            lane_first.setdefault(lane, ev["seq"])
            c = ev.get("client")
            if c is not None:
                lst = lane_clients.setdefault(lane, [])
                if c not in lst:
                    lst.append(c)
            if kind == "consume_started":
                for mid in ev.get("msg_ids") or ():
                    msg_lane[(ev["group"], mid)] = lane
                for o in ev.get("origin_msg_ids") or ():
                    chain_lanes.setdefault(o, set()).add(lane)
        elif kind == "message_stored" and ev.get("group") is not None:
            lane = (ev["group"], ev["topic"], ev["broker"], ev["queue"])
            msg_lane.setdefault((ev["group"], ev["msg_id"]), lane)
        if kind == "message_stored":
            o = ev.get("origin_msg_id")
            if o is not None:
                for ln in lane_first:
                    if (ln[1], ln[2], ln[3]) == (ev["topic"], ev["broker"], ev["queue"]):
                        chain_lanes.setdefault(o, set()).add(ln)
    # a lane exists for a queue a group did something on (not just a stored message)
    lanes = sorted(lane_first, key=lambda ln: (ln[0], ln[1].startswith("%"), ln[1], ln[2], ln[3]))
    all_lanes = len(lanes)

    errors = list(report.findings.errors)
    viol_lanes = []
    for f in errors:
        ln = _finding_lane(f, msg_lane)
        if ln is not None and ln not in viol_lanes:
            viol_lanes.append(ln)
    if key:
        lanes = [ln for ln in lanes if _key_matches(ln, key, lane_clients, chain_lanes)]
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

    b = _Builder(lanes, lease_ms, msg_lane)
    b.ts_list = [(ev["ts"], ev["seq"]) for ev in events]
    b.make_rows(lane_clients)
    shown = set(lanes)
    shown_stored = {(x[1], x[2], x[3]) for x in shown}
    by_seq = {}
    for ev in events:
        b.event(ev)
        ln = lane_of(ev)
        if ln is None or ln in shown or (ln[1], ln[2], ln[3]) in shown_stored:
            by_seq[ev["seq"]] = ev
    t_min = events[0]["ts"] if events else 0
    t_max = events[-1]["ts"] if events else 0
    b.finish(t_max, events[-1]["seq"] if events else None)

    by_all = {ev["seq"]: ev for ev in events} if errors else {}
    viols = []
    for f in errors:
        cat = inv_cat.BY_ID.get(f.inv)
        ln = _finding_lane(f, msg_lane)
        ev = f.event or {}
        row = None
        if ln is not None and ln in shown:
            row = b.row(ln, ev.get("client")) if ev.get("client") else None
            if row is None:
                row = b.row(ln, "broker")
        v = Violation(f.inv, cat.title if cat else "guard of the action", cat.statement if cat else
                      "The event is not a step the spec allows in this state (a failed guard).",
                      (cat.guarantee or None) if cat else None, f.message, f.seq, ev.get("ts"), ln, row,
                      f.key_dict())
        v.matters = events_that_matter(events, by_all, f, ln, b)
        viols.append(v)
    clients = []
    for r in b.rows:
        if r.who != "broker" and r.who not in clients:
            clients.append(r.who)
    distinct = len({ev["ts"] for ev in events})
    steps = distinct <= max(2, len(events) // 4)
    return Timeline(str(report.path), report.profile, report.ok, report.events, report.ended, t_min, t_max,
                    lanes, b.rows, b.bars, b.marks, viols, clients, dict(sorted(report.findings.counts.items())),
                    hidden, all_lanes, by_seq, steps, events[0]["seq"] if events else 0,
                    events[-1]["seq"] if events else 0)


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


def events_that_matter(events, by_seq, finding, lane, b: _Builder) -> list:
    """The events a reader needs to see the violation: the rejected event; what was going on in
    its lane at that moment (ownerships, lock entries, leases, listener calls and pulls open at
    its time); the events about the same messages (offsets, message ids, retry chain); and the
    pauses and crashes of the clients involved before it. Ascending seqs, at most MAX_MATTERS
    (the nearest in time kept)."""
    ev = finding.event or {}
    seq, ts = finding.seq, ev.get("ts")
    if seq is None or ts is None:
        return []
    out = {seq}
    involved = {ev.get("client")} - {None}
    if lane is not None:
        rows = set(b.lane_rows.get(lane, ()))
        for bar in b.bars:
            if bar.row in rows and bar.cat in ("pq", "lock", "lock_expired", "lease", "call") \
                    and bar.t0 <= ts and (bar.t1 >= ts or bar.open):
                s0 = bar.seqs[0] if bar.seqs else None
                if s0 is not None and s0 <= seq:
                    out.update(bar.seqs)
                    if bar.client:
                        involved.add(bar.client)
    ids = set(ev.get("msg_ids") or ()) | ({ev["msg_id"]} if ev.get("msg_id") else set())
    origin = ev.get("origin_msg_id")
    offsets = set(ev.get("offsets") or ())
    for e in events:
        if e["seq"] > seq:
            break
        if e["seq"] == seq:
            continue
        if origin is not None and e.get("origin_msg_id") == origin:
            out.add(e["seq"])
            continue
        if ids and (set(e.get("msg_ids") or ()) & ids or e.get("msg_id") in ids):
            out.add(e["seq"])
            continue
        if lane is not None and lane_of(e) == lane and offsets and set(e.get("offsets") or ()) & offsets:
            out.add(e["seq"])
    last_pause = {}
    for e in events:
        if e["seq"] > seq:
            break
        if e["kind"] in ("client_paused", "client_crashed", "broker_restarted", "client_resumed") and \
                (e.get("client") in involved or e["kind"] == "broker_restarted" and lane and e.get("broker") == lane[2]):
            last_pause[(e["kind"], e.get("client"))] = e["seq"]
    out.update(last_pause.values())
    if lane is not None and ev.get("kind") in ("offset_read", "pq_created", "pull_issued", "pull_answered",
                                               "offset_updated", "pq_committed", "offset_persisted"):
        # the broker's committed offset the client should have started from or kept to
        prev = [e["seq"] for e in events if e["seq"] < seq and e["kind"] == "offset_committed" and lane_of(e) == lane]
        if prev:
            out.add(prev[-1])
    if lane is not None and ev.get("kind") in ("offset_committed", "offset_updated", "pq_committed"):
        # the previous value of the same offset store, to see the jump
        prev = [e["seq"] for e in events if e["seq"] < seq and e["kind"] == ev["kind"] and lane_of(e) == lane
                and (ev["kind"] == "offset_committed" or e.get("client") == ev.get("client"))]
        if prev:
            out.add(prev[-1])
    res = sorted(out)
    if len(res) > MAX_MATTERS:
        res = sorted(sorted(res, key=lambda s: abs(s - seq))[:MAX_MATTERS])
    return res
