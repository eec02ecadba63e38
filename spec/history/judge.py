"""The streaming judge of the black-box level: a history's records in, one pass, the verdict of
every guarantee out (rules: `guarantees.py`).

Memory goes with the live keys, not with the history's length, as `check` does for traces:
- open messages: sent and not yet settled for every unit that must receive them (a lost or
  still-retrying message is live until the end), and messages touched within the last
  `window_ms` of record time (their redeliveries and retries are judged together);
- per queue: orderly listener calls of the window (H-ORDER-1), first deliveries of the window
  (H-ORDER-2), successful calls and unfinished offsets of the window (H-DUP-1), the consumed
  offsets as runs (a redelivery of a message already retired from the window is recognised
  by its queue and offset), the retention low mark;
- per group: members; faults, membership changes and operator resets, whole (a handful per run).

A message is judged when it *retires*: quiet for `window_ms` and settled (`SETTLED`: consumed,
dead-lettered, filtered out...), or at the end. Records may arrive out of time order within the
window (message-trace dispatchers flush asynchronously; a trace emits a listener call when it
returns). A redelivery of a message retired from the window is judged against the earlier
delivery its queue's offset runs remember: the consumer, and the earliest time of that run of
offsets (docs/history.md says what that approximates).
"""
from __future__ import annotations

import bisect
from collections import Counter, defaultdict, deque

from . import guarantees as G
from ...traces.history.model import Consume, DeadLetter, Disruption, Expired, Produce, Reset

# Record time, in ms, that a message stays after its last record before it is judged; every
# rule's own reach (10 s of offset lag, 1 s to the DLQ) fits well inside it.
WINDOW_MS = 120_000
SWEEP_EVERY = 1 << 14
MAX_KEPT = 1000                 # findings kept (listed) per guarantee; every one is counted

_PRODUCE_FIELDS = ("topic", "queue", "offset", "tags", "props", "sharding_key")
_CONSUME_FIELDS = ("group", "client", "success", "reconsume_times", "copy", "queue", "end")


_NONE: dict = {}     # an empty prior or firsts, shared until a message needs its own (most never do)


class Msg:
    """What the judge holds of one message while it is live."""
    __slots__ = ("id", "p", "dels", "dlq", "born", "touch", "prior", "firsts", "rank")

    def __init__(self, mid, ts):
        self.id, self.p, self.dels, self.dlq = mid, None, [], []
        self.born = self.touch = ts
        self.prior = _NONE      # unit -> a delivery consumed before the window (from the offset runs)
        self.firsts = _NONE     # (unit, mode) whose first delivery was judged for order
        self.rank = None        # position among its sharding key's acknowledged sends

    def deliveries(self, u):
        if len(u) == 1:
            return [c for c in self.dels if c.group == u[0]]
        return [c for c in self.dels if c.group == u[0] and c.client == u[1]]

    def units(self, groups):
        return list(dict.fromkeys(G.unit(groups.get(c.group), c) for c in self.dels))

    def retrying(self) -> bool:
        """A retry chain is under way: a failed delivery not yet followed by its retry (a delivery
        with a higher reconsume count, or, where counts are unknown, a later success), and no
        dead letter."""
        if self.dlq:
            return False
        for f in self.dels:
            if f.success is False and not any(
                    (c.reconsume_times > f.reconsume_times) if c.reconsume_times is not None
                    and f.reconsume_times is not None else (c.success is True and _ts(c) > _ts(f))
                    for c in self.dels):
                return True
        return False


def _ts(c):
    return c.ts if c.ts is not None else (c.end if c.end is not None else -1)


class _Runs:
    """Consumed offsets of one queue (one consumer's) as sorted disjoint runs [lo, hi], with
    the time the run's first and last offsets were consumed: memory in proportion to the gaps,
    not to the offsets. An offset inside a run gets a time interpolated between its ends (a
    consumer takes a queue's offsets in order)."""
    __slots__ = ("lo", "hi", "tlo", "thi")

    def __init__(self):
        self.lo, self.hi, self.tlo, self.thi = [], [], [], []

    def add(self, off, t):
        lo, hi = self.lo, self.hi
        i = bisect.bisect_right(lo, off) - 1
        if i >= 0 and lo[i] <= off <= hi[i]:
            return
        if i >= 0 and hi[i] == off - 1:
            hi[i], self.thi[i] = off, t
            if i + 1 < len(lo) and lo[i + 1] == off + 1:
                hi[i], self.thi[i] = hi[i + 1], self.thi[i + 1]
                del lo[i + 1], hi[i + 1], self.tlo[i + 1], self.thi[i + 1]
            return
        if i + 1 < len(lo) and lo[i + 1] == off + 1:
            lo[i + 1], self.tlo[i + 1] = off, t
            return
        lo.insert(i + 1, off)
        hi.insert(i + 1, off)
        self.tlo.insert(i + 1, t)
        self.thi.insert(i + 1, t)

    def find(self, off):
        i = bisect.bisect_right(self.lo, off) - 1
        if i < 0 or off > self.hi[i]:
            return None
        lo, hi, tlo, thi = self.lo[i], self.hi[i], self.tlo[i], self.thi[i]
        return tlo if hi == lo else tlo + (thi - tlo) * (off - lo) // (hi - lo)


# H-ORDER-2's count of the pairs out of order that G.order_excused lets pass
EXCUSED = "pairs out of order, allowed: the earlier message not owed at the group's start, then reset back to"


class Judge:
    """feed(record) for each record of one history, then finish() -> {id: Outcome}.

    `h` is the history's header (model.History: source, format, complete, observes, groups),
    which its adapter updates while it streams (group settings, problems)."""

    def __init__(self, h, default_max: int, only=None, window_ms: int = WINDOW_MS, max_kept: int = MAX_KEPT,
                 sweep_every: int = SWEEP_EVERY, list_unjudged: bool = False):
        self.h, self.default_max, self.window, self.max_kept = h, default_max, window_ms, max_kept
        self.sweep_every = sweep_every
        self.only = only
        self.out = {g.id: G.Outcome() for g in G.GUARANTEES}
        if list_unjudged:
            # every message H-DELIVER-1 leaves unjudged, by unit and class (kept to the end: one
            # entry per such message, however long the history)
            self.out["H-DELIVER-1"].unjudged_msgs = {}
        self.order_q, self.order_k = G.Outcome(), G.Outcome()   # H-ORDER-2 by queue, by sharding key
        self.msgs: dict = {}                # id -> Msg, oldest touch first
        self.waiting: dict = {}             # id -> Msg: quiet but not settled (lost, retrying)
        self.wm = None                      # the latest record time seen
        self.n = Counter()                  # records by kind
        self._absent = {"produce": set(_PRODUCE_FIELDS), "consume": set(_CONSUME_FIELDS), "dead_letter": {"ts"}}
        self.first = {}                     # (unit, topic) -> first consume ts
        self._members = defaultdict(set)    # group -> clients seen consuming
        self.expired = {}                   # queue -> retention low mark
        # faults, membership changes and operator resets are kept whole, by ts: a handful per
        # run, however many messages it has
        self.dis: list = []
        self.resets: list = []
        self.calls = {}                     # H-ORDER-1: (group, queue) -> {batch: [client, start, end, where]}
        self.pairs = defaultdict(set)       # H-ORDER-1: pairs reported per queue
        self.streams = {}                   # H-ORDER-2: (mode, unit, stream) -> deque of [pos, c, flagged, p]
        self.shard_n = Counter()            # H-ORDER-2: acknowledged sends per sharding key
        self.unnamed = set()                # H-ORDER-2: orderly broadcasting groups whose consumers are not named
        self.not_judged = {}                # (guarantee, group) -> why the guarantee could not be judged for it
        self.ok_calls = defaultdict(deque)  # H-DUP-1: (group, queue, client) -> (start, batch) of successes
        self.ok_before = {}                 # H-DUP-1: (group, queue, client) -> latest success start before the window
        self.pending = defaultdict(dict)    # H-DUP-1: (group, queue) -> offset -> [first success end|None, seen]
        self.runs = {}                      # (unit, queue) -> {client: consumed offsets of retired messages}
        self.retired = 0
        self.peak_live = 0
        self._since = 0

    # ------------------------------------------------------------ fields

    def has(self, path: str) -> bool:
        """Does the history carry the field (some record has it, or there is no record of the
        kind)? `produce.queue`, `consume.client`, `group.max_reconsume_times`, or an observable:
        `observes.dead_letters`."""
        kind, _, name = path.partition(".")
        if kind == "observes":
            return name in self.h.observes
        if kind == "group":
            gs = self.h.groups.values()
            return not gs or any(getattr(g, name) is not None for g in gs)
        return not self.n[kind] or name not in self._absent[kind]

    def _seen(self, kind, rec):
        absent = self._absent[kind]
        for f in absent:
            if getattr(rec, f) is not None:
                self._absent[kind] = {a for a in absent if getattr(rec, a) is None}
                return

    def members(self, group):
        g = self.h.groups.get(group)
        return self._members[group] | (set(g.members) if g is not None else set())

    # ------------------------------------------------------------ context the rules read

    def killed_after(self, group, ts):
        """A consumer of `group` killed at or after `ts` (a SIGKILLed client's message-trace records
        still in its AsyncTraceDispatcher are never sent: what it consumed may show nowhere)."""
        i = bisect.bisect_left(self.dis, (ts,), key=lambda d: (d.ts,))
        return any(x.what == "killed" and (x.group is None or x.group == group) for x in self.dis[i:])

    def fault_between(self, lo, hi):
        """A fault in [lo, hi]: in the window, or (before it) the latest one if it is late enough."""
        i = bisect.bisect_left(self.dis, (lo,), key=lambda d: (d.ts,))
        for x in self.dis[i:]:
            if x.ts > hi:
                break
            if x.what in G.FAULTS:
                return x
        return None

    def membership_between(self, group, lo, hi):
        i = bisect.bisect_left(self.dis, (lo,), key=lambda d: (d.ts,))
        for x in self.dis[i:]:
            if x.ts > hi:
                break
            if x.what in G.MEMBERSHIP and (x.group is None or x.group == group):
                return (f"rebalance ({x.what})", x.ts)
        return None

    def reset_between(self, group, lo, hi, p):
        """A reset of the group in [lo, hi] that moved it back to the message `p` (its send, or a
        delivery of it from that queue), if it names a queue and offset."""
        for r in self.resets:
            if r.group == group and lo <= r.ts <= hi and (r.offset is None or p is None or p.offset is None
                                                           or r.queue != p.queue or r.offset <= p.offset):
                return r.ts
        return None

    def reset_past(self, group, p) -> bool:
        """An operator moved the group's position past the message (resetOffsetByTimestamp, or
        an offset set by hand): not consuming it is what was asked for."""
        for r in self.resets:
            if r.group != group:
                continue
            if r.queue is None or p.queue is None or r.offset is None or p.offset is None:
                if p.ts is not None and r.ts >= p.ts:
                    return True
            elif r.queue == p.queue and r.offset > p.offset:
                return True
        return False

    def lagging(self, group, queue, offset, ts) -> bool:
        """Was some delivered message below `offset` of the queue not yet consumed at `ts`?"""
        for off, (end, _) in self.pending.get((group, queue), {}).items():
            if off < offset and (end is None or end > ts):
                return True
        return False

    def later_batch(self, group, queue, client, after, batch, before) -> bool:
        """Did `client` finish another successful call on the queue between `after` and `before`?"""
        k = (group, queue, client)
        t = self.ok_before.get(k)
        return (t is not None and after < t < before) or \
            any(after < t < before and b != batch for t, b in self.ok_calls.get(k, ()))

    # ------------------------------------------------------------ feeding

    def feed(self, rec) -> None:
        t = type(rec)
        if t is Consume:
            self._consume(rec)
        elif t is Produce:
            self.n["produce"] += 1
            self._seen("produce", rec)
            m = self._touch(rec.id, rec.ts)
            if m.p is None:
                m.p = rec
                if rec.ok is True and rec.sharding_key is not None:
                    m.rank = self.shard_n[rec.sharding_key]
                    self.shard_n[rec.sharding_key] += 1
            if self.h.infer_subscriptions:
                for c in m.dels:
                    self._infer(c.group, rec.topic)
        elif t is DeadLetter:
            self.n["dead_letter"] += 1
            self._seen("dead_letter", rec)
            self._touch(rec.id, rec.ts).dlq.append(rec)
        elif t is Disruption:
            bisect.insort(self.dis, rec, key=lambda d: d.ts)
            self._time(rec.ts)
        elif t is Reset:
            bisect.insort(self.resets, rec, key=lambda r: r.ts)
            self._time(rec.ts)
        elif t is Expired:
            self.expired[rec.queue] = max(self.expired.get(rec.queue, -1), rec.below)
            self._time(rec.ts)
        else:
            raise TypeError(f"not a history record: {rec!r}")
        self._since += 1
        if self._since >= self.sweep_every:
            self.sweep()

    def _time(self, ts):
        if ts is not None and (self.wm is None or ts > self.wm):
            self.wm = ts

    def _touch(self, mid, ts) -> Msg:
        m = self.msgs.pop(mid, None)
        if m is None:
            m = self.waiting.pop(mid, None)
        if m is None:
            m = Msg(mid, ts)
        if ts is not None:
            if m.touch is None or ts > m.touch:
                m.touch = ts
            if m.born is None or ts < m.born:
                m.born = ts
            self._time(ts)
        self.msgs[mid] = m
        return m

    def _infer(self, group, topic):
        if topic is None:
            return
        g = self.h.group(group)
        if g.subscriptions is None:
            g.subscriptions, g.subscriptions_inferred = {}, True
        if g.subscriptions_inferred:
            g.subscriptions.setdefault(topic, ("TAG", "*"))

    def _consume(self, c: Consume) -> None:
        self.n["consume"] += 1
        self._seen("consume", c)
        self.out["H-DUP-1"].counts["deliveries"] += 1
        h = self.h
        g = h.groups.get(c.group)
        if g is None:
            g = h.group(c.group)
        u = G.unit(g, c)
        if c.client is not None:
            self._members[c.group].add(c.client)
        new = c.id not in self.msgs and c.id not in self.waiting
        m = self._touch(c.id, c.ts if c.ts is not None else c.end)
        if new and c.queue is not None and c.offset is not None and u not in m.prior:
            for who, runs in self.runs.get((u, c.queue), {}).items():
                done = runs.find(c.offset)
                if done is not None:    # consumed before the window: a redelivery of a retired message
                    if m.prior is _NONE:
                        m.prior = {}
                    m.prior[u] = Consume(c.group, c.id, done, done, who, c.queue, c.offset, None, True, None,
                                         "(before the window)", None)
                    break
        m.dels.append(c)
        p = m.p
        if p is not None:
            if c.ts is not None and p.topic is not None:
                k = (u, p.topic)
                if k not in self.first or c.ts < self.first[k]:
                    self.first[k] = c.ts
            if h.infer_subscriptions:
                self._infer(c.group, p.topic)
        if c.queue is not None and c.offset is not None and not m.prior:
            # (an offset consumed before the window is not pending again: its first success counts)
            pend = self.pending[(c.group, c.queue)]
            e = pend.get(c.offset)
            seen = c.ts if c.ts is not None else c.end
            if c.success is True:
                end = c.end if c.end is not None else c.ts
                self.ok_calls[(c.group, c.queue, c.client)].append((c.ts, c.batch))
                if e is None or e[0] is None or (end is not None and end < e[0]):
                    pend[c.offset] = [end, seen]
            elif e is None:
                pend[c.offset] = [None, seen]
        if G.orderly(g) and c.ts is not None:
            if not G.broadcast(g) and c.client is not None and c.queue is not None:
                self._exclusive(c)
            if p is not None:
                if G.broadcast(g) and c.client is None:
                    # each consumer of a broadcasting group is its own stream: unnamed, the
                    # deliveries of all of them would read as one stream out of order
                    self.unnamed.add(c.group)
                else:
                    self._order(m, u, c)

    def _exclusive(self, c):
        q = (c.group, c.queue)
        calls = self.calls.get(q)
        if calls is None:
            calls = self.calls[q] = {}
        b = c.batch or c.where
        cur = calls.get(b)
        if cur is not None:
            if c.end is not None and (cur[2] is None or c.end > cur[2]):
                cur[2] = c.end
            if c.deadline is not None and (cur[4] is None or c.deadline > cur[4]):
                cur[4] = c.deadline
            return
        new = [c.client, c.ts, c.end, c.where, c.deadline]
        self.out["H-ORDER-1"].counts["listener calls"] += 1
        for old in calls.values():
            r = G.orderly_exclusive(q, new, old)
            if r is not None and r[1] not in self.pairs[q]:
                self.pairs[q].add(r[1])
                self.out["H-ORDER-1"].add(r[0], self.max_kept)
        calls[b] = new

    def _order(self, m, u, c):
        p = m.p
        if m.firsts is _NONE:
            m.firsts = set()
        if p.queue is not None and p.offset is not None and c.queue == p.queue and (u, "q") not in m.firsts:
            m.firsts.add((u, "q"))
            self._first(self.order_q, ("q", u, p.queue), True, p.offset, c, p)
        if p.ok is True and p.sharding_key is not None and (u, "k") not in m.firsts:
            m.firsts.add((u, "k"))
            self._first(self.order_k, ("k", u, p.sharding_key), False, m.rank, c, p)

    def _first(self, out, key, by_queue, pos, c, p):
        """A first delivery (position `pos`, of message `p`) of an orderly stream: a later
        position first delivered earlier in time than an earlier one breaks the order (pairs
        within the window), unless `G.order_excused`."""
        items = self.streams.get(key)
        if items is None:
            items = self.streams[key] = deque()
            out.counts["streams"] += 1
        if items and not (pos > items[-1][0] and c.ts >= items[-1][1].ts):
            u, stream = key[1], key[2]
            g = self.h.groups.get(u[0])
            before = [it for it in items if it[0] < pos and it[1].ts > c.ts]
            kept = [it for it in before if not G.order_excused(self, g, u, (it[3], it[1]), c)]
            if len(kept) < len(before):
                out.counts[EXCUSED] += len(before) - len(kept)
            late = max(kept, key=lambda it: it[1].ts, default=None)
            new = [pos, c, late is not None, p]
            if late is not None:
                out.add(G.orderly_order(u, stream, by_queue, (late[0], late[1]), (pos, c)), self.max_kept)
            for it in items:
                if not it[2] and it[0] > pos and it[1].ts < c.ts:
                    if G.order_excused(self, g, u, (p, c), it[1]):
                        out.counts[EXCUSED] += 1
                        continue
                    it[2] = True
                    out.add(G.orderly_order(u, stream, by_queue, (pos, c), (it[0], it[1])), self.max_kept)
            items.append(new)
        else:
            items.append([pos, c, False, p])

    # ------------------------------------------------------------ retiring

    def sweep(self, final=False) -> None:
        """Judge the messages quiet for the window and settled; prune the window's context."""
        self._since = 0
        live = len(self.msgs) + len(self.waiting)
        self.peak_live = max(self.peak_live, live)
        if self.wm is None:
            return
        edge = self.wm - self.window
        quiet = []
        for mid, m in self.msgs.items():        # oldest touch first
            if m.touch is not None and m.touch >= edge and not final:
                break
            quiet.append(m)
        for m in quiet:
            mid = m.id
            del self.msgs[mid]
            classes = G.deliver(self, m)
            if final or (not m.retrying() and (all(k in G.SETTLED for k, *_ in classes) or not self._can_lose())):
                self._retire(m, classes)
            else:
                self.waiting[mid] = m
        if final:
            for m in self.waiting.values():
                self._retire(m, G.deliver(self, m))
            self.waiting.clear()
            return
        # the context (faults, resets, calls) reaches back to the oldest message still delivered
        oldest = min((m.born for m in (*self.msgs.values(), *self.waiting.values()) if m.born is not None and m.dels),
                     default=self.wm)
        self._prune(min(edge, oldest) - G.DISRUPTION_REACH_MS)

    def _can_lose(self) -> bool:
        # a lossy history never reports a loss: a quiet message is not worth keeping for it
        return self.h.declared_complete if self.h.declared_complete is not None else self.h.complete is not False

    def _retire(self, m, classes) -> None:
        self.retired += 1
        o = self.out["H-DELIVER-1"]
        for k, f, u in classes:
            o.counts[k] += 1
            if f is not None:
                o.add(f, self.max_kept)
            if k in G.UNJUDGED:
                o.left_unjudged(k, u, m.p)
        G.retry_limit(self, m, self.out["H-RETRY-1"])
        G.one_copy_per_failure(self, m, self.out["H-RETRY-2"])
        G.dlq_prompt(self, m, self.out["H-RETRY-3"])
        G.duplicates(self, m, self.out["H-DUP-1"])
        for c in m.dels:
            if c.success is True and c.queue is not None and c.offset is not None:
                u = G.unit(self.h.groups.get(c.group), c)
                by = self.runs.setdefault((u, c.queue), {})
                runs = by.get(c.client)
                if runs is None:
                    runs = by[c.client] = _Runs()
                runs.add(c.offset, c.ts if c.ts is not None else c.end)

    def _prune(self, horizon) -> None:
        for q, calls in list(self.calls.items()):
            for b in [b for b, c in calls.items() if c[2] is not None and c[2] < horizon]:
                del calls[b]
            if not calls:
                del self.calls[q]
        for k, items in list(self.streams.items()):
            while items and items[0][1].ts < horizon:
                items.popleft()
        for k, dq in list(self.ok_calls.items()):
            while dq and (dq[0][0] is None or dq[0][0] < horizon):
                t = dq.popleft()[0]
                if t is not None and (k not in self.ok_before or t > self.ok_before[k]):
                    self.ok_before[k] = t
            if not dq:
                del self.ok_calls[k]
        for k, pend in list(self.pending.items()):
            # an offset whose message was consumed, or failed and was sent back (its retry copy
            # is another queue's), long enough ago no longer holds a queue's handover back
            for off in [o for o, (end, seen) in pend.items() if max(end or -1, seen or -1) < horizon]:
                del pend[off]
            if not pend:
                del self.pending[k]

    # ------------------------------------------------------------ the end

    def finish(self):
        """{guarantee id: Outcome}, after judging every message still held."""
        self.sweep(final=True)
        by_queue = self.has("produce.queue") and self.has("produce.offset") and self.has("consume.queue")
        o2 = self.order_q if by_queue else self.order_k
        o2.suspect = not self.h.complete
        groups = self.h.groups.values()
        if not any(G.orderly(g) for g in groups):
            o2.notes.append("no orderly group: nothing to judge")
        elif not by_queue:
            o2.notes.append("order judged per sharding key, in the order the sends were acknowledged")
        if not self.n["produce"]:
            o2.notes.append("no produce records")
        if self.unnamed:
            o2.notes.append(f"orderly broadcasting group(s) {', '.join(sorted(self.unnamed))} not judged: the history "
                            "does not name the consumer of their deliveries, and each consumer is its own stream")
            if not o2.counts["streams"]:
                o2.unjudged = [f"consume.client (of orderly broadcasting group(s) {', '.join(sorted(self.unnamed))})"]
        self.out["H-ORDER-2"] = o2
        for (gid, group), why in sorted(self.not_judged.items()):
            self.out[gid].not_judged[group] = why
        o1 = self.out["H-DELIVER-1"]
        if o1.counts[G.NOT_JUDGED_BEFORE_START]:
            o1.notes.append("a message sent before a group's first consumption of its topic is not judged unless the "
                            "group declares consume_from_where CONSUME_FROM_FIRST_OFFSET (--groups): 4.9.8 starts such "
                            "a new group at the queue's first retained message; from LAST_OFFSET or TIMESTAMP the "
                            "start depends on what a history does not show")
        if o1.not_judged and not any(n for k, n in o1.counts.items() if not k.startswith("not judged")):
            # not one message judged for any group: never a pass on nothing
            o1.unjudged = [f"consume.client (of broadcasting group(s) {', '.join(sorted(o1.not_judged))})"]
        if not any(G.orderly(g) and not G.broadcast(g) for g in groups):
            self.out["H-ORDER-1"].notes.append("no orderly clustering group: nothing to judge")
        if any(g.subscriptions_inferred for g in groups):
            self.out["H-DELIVER-1"].notes.append(
                "subscriptions inferred from what each group consumed (filters unknown): a message a group never "
                "consumed may have been filtered out; give --groups to state them")
        return self.out
