"""The black-box level of the spec: the guarantees a RocketMQ user sees, checked from a
history of produce and consume records alone (no broker or client internals).

Each guarantee states what must hold, why RocketMQ makes it hold, and the fields it needs
(`needs`: `History.has` paths). Where a history lacks one, the guarantee is *skipped* and the
report names what was missing. Where the history is lossy (not `complete`), an absent record
proves nothing: a message never seen consumed is *unobserved*, not lost, and an apparent
reordering is *suspect*, not a violation.

Ids are stable (H-...); the state-level invariants of the white-box spec are `INV-...`
(spec/invariants.py): docs/history.md maps the known bugs onto both.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Callable

from ..filtering import decide, subscription
from ..limits import resolve_max_reconsume
from .model import History

# A redelivery is explained by a disruption up to this long after the earlier delivery
# succeeded: the committed offset lags consumption by up to the client's persist interval
# (5 s), and a broker reloads offsets from its last flush (every 5 s) when it restarts. A
# graceful handover persists the offset when the old owner drops the queue.
DISRUPTION_REACH_MS = 10_000
# The DLQ copy is stored when the last retry's send-back reaches the broker; the detour of
# #2724 goes through the schedule first, whose shortest delay level is 1 s.
DLQ_PROMPT_MS = 1_000


@dataclass
class HFinding:
    guarantee: str
    message: str
    where: str | None = None
    key: dict | None = None

    def to_dict(self):
        return {"guarantee": self.guarantee, "message": self.message, "where": self.where, "key": self.key}


@dataclass
class Outcome:
    findings: list = field(default_factory=list)   # violations (or suspects, for a lossy history)
    counts: Counter = field(default_factory=Counter)
    notes: list = field(default_factory=list)
    suspect: bool = False                           # findings that a lossy history cannot confirm


@dataclass(frozen=True)
class Guarantee:
    id: str
    title: str
    statement: str
    why: str
    needs: tuple
    check: Callable[[History, int], Outcome]
    applies: str = "every group"


# ----------------------------------------------------------------- helpers

def _orderly(g) -> bool:
    return g is not None and g.consume_mode == "ORDERLY"


def _broadcast(g) -> bool:
    return g is not None and g.message_model == "BROADCASTING"


def _unit(g, c):
    """Who must receive a message: the group (clustering) or each consumer (broadcasting)."""
    return (c.group, c.client) if _broadcast(g) else (c.group,)


def _by_unit_and_id(h: History) -> dict:
    out = defaultdict(list)
    for c in h.consumes:
        out[(_unit(h.groups.get(c.group), c), c.id)].append(c)
    for v in out.values():
        v.sort(key=lambda c: (c.ts if c.ts is not None else -1))
    return out


def _produced(h: History) -> dict:
    return {p.id: p for p in h.produces}


def _key(group=None, msg=None, queue=None, client=None) -> dict:
    k = {"group": group, "msg": msg, "client": client}
    if queue is not None:
        k["queue"] = "/".join(map(str, queue))
    return {a: b for a, b in k.items() if b is not None}


# ----------------------------------------------------------------- H-DELIVER-1

def check_delivery(h: History, default_max: int) -> Outcome:
    out = Outcome()
    per = _by_unit_and_id(h)
    dlq = {(d.group, d.id) for d in h.dead_letters}
    observes_dlq = h.has("observes.dead_letters")
    # a consumer has a position in a topic once it consumed something of it: where a new
    # consumer starts (consume_from_where) is not a guarantee of delivery
    topic_of = {p.id: p.topic for p in h.produces}
    first = {}
    for c in h.consumes:
        g = h.groups.get(c.group)
        u = (_unit(g, c), topic_of.get(c.id))
        if c.ts is not None and (u not in first or c.ts < first[u]):
            first[u] = c.ts
    expired = defaultdict(list)
    for e in h.expired:
        expired[e.queue].append(e)
    carries_tags, carries_props = h.has("produce.tags"), h.has("produce.props")
    for g in h.groups.values():
        subs = g.subscriptions or {}
        if _broadcast(g):
            units = sorted({(g.name, c.client) for c in h.consumes if c.group == g.name and c.client is not None})
        else:
            units = [(g.name,)]
        for p in h.produces:
            if p.topic not in subs:
                continue
            if p.ok is not True:
                out.counts["send outcome unknown or failed"] += p.ok is None
                continue
            sub_t, sub_e = subs[p.topic]
            if g.subscriptions_inferred or (sub_t == "SQL92" and not carries_props) or \
                    (sub_t == "TAG" and sub_e.strip() not in ("*", "") and not carries_tags):
                match = None        # the history cannot evaluate the filter
            else:
                match = decide(subscription(sub_t, sub_e), p.tags, None, p.props)[1]
            for u in units:
                if _broadcast(g):
                    joined, left = g.members.get(u[1], (None, None))
                    if left is not None and (p.ts is None or left <= p.ts):
                        out.counts["consumer left before it was sent"] += 1
                        continue
                dels = per.get((u, p.id), [])
                if match is False and not dels:
                    out.counts["filtered out by the subscription"] += 1
                    continue
                if dels and _broadcast(g):
                    out.counts["consumed (broadcasting drops a failure)"] += 1
                    continue
                if any(c.success is True for c in dels):
                    out.counts["consumed"] += 1
                    continue
                if (g.name, p.id) in dlq:
                    out.counts["dead-lettered"] += 1
                    continue
                if any(c.success is None for c in dels):
                    out.counts["delivered, result unknown"] += 1
                    continue
                start = first.get((u, p.topic))
                if start is None:       # nothing of the topic consumed: from when it started
                    start = g.members.get(u[1], (None,))[0] if len(u) > 1 else g.started_ts
                if not dels and (start is None or p.ts is None or p.ts < start):
                    out.counts["before the consumer had a position (consume_from_where)"] += 1
                    continue
                if p.queue is not None and p.offset is not None and any(
                        e.below > p.offset for e in expired.get(p.queue, ())):
                    out.counts["removed by retention"] += 1
                    continue
                if _reset_past(h, g.name, p):
                    out.counts["skipped by an operator reset past it"] += 1
                    continue
                who = f"group {g.name}" + (f" consumer {u[1]}" if len(u) > 1 else "")
                if dels:
                    last = dels[-1]
                    mx = _max(g, default_max)
                    if not observes_dlq and mx is not None and last.reconsume_times is not None \
                            and last.reconsume_times >= mx:
                        out.counts["presumed dead-lettered (the DLQ is not observed)"] += 1
                        continue
                    if not h.complete or not observes_dlq:
                        out.counts["failed, then unobserved"] += 1
                        continue
                    out.findings.append(HFinding(
                        "H-DELIVER-1", f"message {p.id} (topic {p.topic}) reached {who} {len(dels)} time(s), every "
                        f"call failed, and it was neither consumed nor dead-lettered", last.where,
                        _key(g.name, p.id, p.queue, u[1] if len(u) > 1 else None)))
                    out.counts["failed, never dead-lettered"] += 1
                    continue
                if match is None:
                    out.counts["not consumed, filter unknown"] += 1
                    continue
                if not h.complete:
                    out.counts["unobserved"] += 1
                    continue
                out.counts["lost"] += 1
                out.findings.append(HFinding(
                    "H-DELIVER-1", f"message {p.id} (topic {p.topic}"
                    f"{', queue ' + '/'.join(map(str, p.queue)) + ' offset ' + str(p.offset) if p.queue else ''}"
                    f", sent at ts {p.ts}) never reached {who}, which subscribes to it", p.where,
                    _key(g.name, p.id, p.queue, u[1] if len(u) > 1 else None)))
    if any(g.subscriptions_inferred for g in h.groups.values()):
        out.notes.append("subscriptions inferred from what each group consumed (filters unknown): a message a "
                         "group never consumed may have been filtered out; give --groups to state them")
    return out


def _reset_past(h, group, p) -> bool:
    """An operator moved the group's position past the message (resetOffsetByTimestamp, or an
    offset set by hand): not consuming it is what was asked for."""
    for r in h.resets:
        if r.group != group:
            continue
        if r.queue is None or p.queue is None or r.offset is None or p.offset is None:
            if p.ts is not None and r.ts >= p.ts:
                return True
        elif r.queue == p.queue and r.offset > p.offset:
            return True
    return False


def _max(g, default_max):
    if g is None or g.max_reconsume_times is None:
        return None
    return resolve_max_reconsume(g.max_reconsume_times, _orderly(g), default_max)


# ----------------------------------------------------------------- H-RETRY-1

def check_retry_limit(h: History, default_max: int) -> Outcome:
    out = Outcome()
    seen = set()
    for c in h.consumes:
        g = h.groups.get(c.group)
        if _broadcast(g):
            continue            # broadcasting drops failures: no retries
        mx = _max(g, default_max)
        if c.reconsume_times is None:
            continue
        out.counts["deliveries"] += 1
        if mx is not None and c.reconsume_times > mx and (c.group, c.id) not in seen:
            seen.add((c.group, c.id))
            out.findings.append(HFinding(
                "H-RETRY-1", f"message {c.id} was delivered to group {c.group} with reconsume_times "
                f"{c.reconsume_times} > maxReconsumeTimes {mx}: after {mx} retries it must go to %DLQ%{c.group}",
                c.where, _key(c.group, c.id, client=c.client)))
    # A message that failed more than max + 1 times and came back: the send-back of its last
    # allowed failure should have dead-lettered it (#6163: it bounced through %RETRY%).
    fails = defaultdict(list)
    for c in h.consumes:
        g = h.groups.get(c.group)
        if not _broadcast(g) and c.success is not None:
            fails[(c.group, c.id)].append(c)
    for (group, mid), dels in fails.items():
        mx = _max(h.groups.get(group), default_max)
        if mx is None or (group, mid) in seen:
            continue
        batches, n = set(), 0
        for c in sorted(dels, key=lambda c: c.ts or 0):
            if n > mx:
                seen.add((group, mid))
                out.findings.append(HFinding(
                    "H-RETRY-1", f"message {mid} failed {n} times in group {group} (maxReconsumeTimes {mx}: at most "
                    f"{mx + 1} failed deliveries) and was delivered again at ts {c.ts}", c.where,
                    _key(group, mid, client=c.client)))
                break
            if c.success is False and (c.batch or c.where) not in batches:
                batches.add(c.batch or c.where)
                n += 1
    out.counts["messages over the limit"] = len(seen)
    return out


# ----------------------------------------------------------------- H-RETRY-2

def check_one_copy_per_failure(h: History, default_max: int) -> Outcome:
    out = Outcome()
    per = defaultdict(list)
    for c in h.consumes:
        g = h.groups.get(c.group)
        if g is not None and g.consume_mode == "CONCURRENTLY" and not _broadcast(g):
            per[(c.group, c.id)].append(c)
    for (group, mid), dels in per.items():
        g = h.groups[group]
        timeout = g.consume_timeout_ms
        failures, copies = Counter(), defaultdict(set)
        for c in dels:
            if c.reconsume_times is None:
                continue
            copies[c.reconsume_times].add(c.copy)
            # cleanExpiredMsg sends back a message consumed longer than consumeTimeout; one
            # delivery is sent back once, whether it failed, expired, or both
            expired = timeout is not None and c.end is not None and c.ts is not None and c.end - c.ts > timeout
            if c.success is False or expired:
                failures[c.reconsume_times] += 1
        for k, cs in sorted(copies.items()):
            if k == 0:
                continue
            if len(cs) > failures[k - 1]:
                fails = [c.end for c in dels if c.reconsume_times == k - 1 and c.end is not None]
                lo = min(fails) if fails else None
                hi = max(c.ts for c in dels if c.reconsume_times == k and c.ts is not None)
                fault = _fault_between(h, lo, hi) if lo is not None else None
                if fault is not None:
                    out.counts[f"extra copy allowed: after a fault ({fault.what})"] += 1
                    continue
                out.findings.append(HFinding(
                    "H-RETRY-2", f"message {mid}: {len(cs)} retry copies with reconsume_times {k} "
                    f"({', '.join(sorted(map(str, cs)))}) from {failures[k - 1]} failed delivery(ies) at {k - 1}",
                    next(c.where for c in dels if c.reconsume_times == k), _key(group, mid)))
        out.counts["messages"] += 1
    return out


def _fault_between(h, lo, hi):
    """A fault between a send-back and the copies it made: a broker restart reloads the
    schedule's delivery offsets from its last flush and delivers a scheduled copy again."""
    for x in h.disruptions:
        if lo - DISRUPTION_REACH_MS <= x.ts <= hi and x.what in _FAULTS:
            return x
    return None


# ----------------------------------------------------------------- H-RETRY-3

def check_dlq_prompt(h: History, default_max: int) -> Outcome:
    out = Outcome()
    last_fail = {}
    for c in h.consumes:
        if c.success is False and c.end is not None:
            k = (c.group, c.id)
            last_fail[k] = max(last_fail.get(k, c.end), c.end)
    for d in h.dead_letters:
        out.counts["dead letters"] += 1
        t = last_fail.get((d.group, d.id))
        if t is None or d.ts is None:
            continue
        if d.ts - t > DLQ_PROMPT_MS:
            out.findings.append(HFinding(
                "H-RETRY-3", f"message {d.id} reached %DLQ%{d.group} {d.ts - t} ms after its last failed delivery "
                f"(at ts {t}): the DLQ copy took a delayed detour", d.where, _key(d.group, d.id)))
    return out


# ----------------------------------------------------------------- H-ORDER-1

def check_orderly_exclusive(h: History, default_max: int) -> Outcome:
    out = Outcome()
    calls = defaultdict(dict)   # (group, queue) -> batch -> [client, start, end, where]
    for c in h.consumes:
        g = h.groups.get(c.group)
        if not _orderly(g) or _broadcast(g) or c.ts is None:
            continue
        b = calls[(c.group, c.queue)].setdefault(c.batch or c.where, [c.client, c.ts, c.end, c.where])
        if c.end is not None and (b[2] is None or c.end > b[2]):
            b[2] = c.end
    if not any(_orderly(g) and not _broadcast(g) for g in h.groups.values()):
        out.notes.append("no orderly clustering group: nothing to judge")
    for (group, q), bs in calls.items():
        seq = sorted(bs.values(), key=lambda b: b[1])
        out.counts["listener calls"] += len(seq)
        running = []    # calls whose end is after the current start
        reported = set()
        for b in seq:
            running = [r for r in running if r[2] is None or r[2] > b[1]]
            for r in running:
                pair = (r[0], b[0])
                if pair in reported:
                    continue
                reported.add(pair)
                who = "two calls of " + b[0] if r[0] == b[0] else f"{r[0]} and {b[0]}"
                out.findings.append(HFinding(
                    "H-ORDER-1", f"orderly group {group}, queue {'/'.join(map(str, q))}: {who} were inside a "
                    f"listener call at once ({r[0]} from ts {r[1]} to {r[2]}, {b[0]} from ts {b[1]})",
                    b[3], _key(group, queue=q, client=b[0])))
            running.append(b)
    return out


# ----------------------------------------------------------------- H-ORDER-2

def check_orderly_order(h: History, default_max: int) -> Outcome:
    out = Outcome(suspect=not h.complete)
    by_queue = h.has("produce.queue") and h.has("produce.offset") and h.has("consume.queue")
    prod = _produced(h)
    if by_queue:
        rank = {p.id: (p.queue, p.offset) for p in h.produces}
    else:
        n = Counter()
        rank = {}
        for p in h.produces:
            if p.ok is True and p.sharding_key is not None:
                rank[p.id] = (p.sharding_key, n[p.sharding_key])
                n[p.sharding_key] += 1
    first = {}      # (unit, stream, position) -> first delivery
    for c in h.consumes:
        g = h.groups.get(c.group)
        if not _orderly(g) or c.id not in rank or c.ts is None:
            continue
        stream, pos = rank[c.id]
        if by_queue and c.queue != stream:
            continue            # a copy in %DLQ% or %RETRY%: out of the queue's order
        k = (_unit(g, c), stream, pos)
        if k not in first or c.ts < first[k].ts:
            first[k] = c
    streams = defaultdict(list)
    for (u, s, pos), c in first.items():
        streams[(u, s)].append((pos, c))
    for (u, s), items in streams.items():
        items.sort(key=lambda x: x[0])
        out.counts["streams"] += 1
        latest = None
        for pos, c in items:
            if latest is not None and c.ts < latest[1].ts:
                what = "queue " + "/".join(map(str, s)) if by_queue else f"sharding key {s}"
                out.findings.append(HFinding(
                    "H-ORDER-2", f"orderly group {u[0]}{' consumer ' + u[1] if len(u) > 1 else ''}, {what}: message "
                    f"{c.id} (position {pos}) was first delivered at ts {c.ts}, before message {latest[1].id} "
                    f"(position {latest[0]}), sent before it, at ts {latest[1].ts}",
                    c.where, _key(u[0], c.id, s if by_queue else None, u[1] if len(u) > 1 else None)))
            if latest is None or c.ts >= latest[1].ts:
                latest = (pos, c)
    if not any(_orderly(g) for g in h.groups.values()):
        out.notes.append("no orderly group: nothing to judge")
    elif not by_queue:
        out.notes.append("order judged per sharding key, in the order the sends were acknowledged")
    if not prod:
        out.notes.append("no produce records")
    return out


# ----------------------------------------------------------------- H-DUP-1

_FAULTS = frozenset({"crashed", "paused", "resumed", "broker restarted", "unregistered", "one-way call lost",
                     "killed", "fault"})


def check_duplicates(h: History, default_max: int) -> Outcome:
    out = Outcome()
    judged = h.has("observes.disruptions")
    dis = sorted(h.disruptions, key=lambda d: d.ts)
    produced = _produced(h)
    per = _by_unit_and_id(h)
    by_queue_calls = defaultdict(list)   # (group, queue, client) -> successful batches' starts
    done_at = {}                         # (group, queue, offset) -> first successful call's end
    for c in h.consumes:
        if c.queue is None or c.offset is None:
            continue
        k = (c.group, c.queue, c.offset)
        if c.success is True:
            by_queue_calls[(c.group, c.queue, c.client)].append((c.ts, c.batch))
            end = c.end if c.end is not None else c.ts
            if end is not None and (done_at.get(k) is None or end < done_at[k]):
                done_at[k] = end
        else:
            done_at.setdefault(k, None)
    lagging = _Lag(done_at)
    for (u, mid), dels in per.items():
        g = h.groups.get(u[0])
        done = None        # the first successful delivery
        for d in dels:
            if done is None:
                if d.success is True:
                    done = d
                continue
            if d.batch is not None and d.batch == done.batch:
                continue
            if d.copy is not None and done.copy is not None and d.copy != done.copy:
                out.counts["another stored copy (judged by H-RETRY-2)"] += 1
                continue
            reason = _explain(h, g, done, d, dis, produced.get(mid), by_queue_calls, lagging) if judged else None
            if reason is None and not judged:
                out.counts["redelivered after success (not judged: disruptions not observed)"] += 1
                continue
            if reason is not None:
                out.counts[f"allowed: {reason[0]}"] += 1
                continue
            out.counts["not allowed"] += 1
            out.findings.append(HFinding(
                "H-DUP-1", f"message {mid} was consumed by {done.client} at ts {done.ts} and delivered again to "
                f"{d.client} at ts {d.ts} in group {u[0]} with no fault, reset, membership change or failed call "
                f"to explain it{_orderly_note(g)}", d.where, _key(u[0], mid, d.queue, d.client)))
    for c in h.consumes:
        out.counts["deliveries"] += 1
    return out


class _Lag:
    """Per (group, queue): was some message below an offset not yet consumed at a time?"""

    def __init__(self, done_at):
        import bisect

        self._bisect = bisect.bisect_left
        per = defaultdict(list)
        for (group, q, off), end in done_at.items():
            per[(group, q)].append((off, float("inf") if end is None else end))
        self.offsets, self.latest = {}, {}
        for k, items in per.items():
            items.sort()
            run, latest = float("-inf"), []
            for _, end in items:
                run = max(run, end)
                latest.append(run)
            self.offsets[k] = [o for o, _ in items]
            self.latest[k] = latest

    def below(self, group, queue, offset, ts) -> bool:
        offs = self.offsets.get((group, queue))
        if not offs:
            return False
        i = self._bisect(offs, offset)
        return i > 0 and self.latest[(group, queue)][i - 1] > ts


def _orderly_note(g):
    return (" (orderly: a graceful handover redelivers at most the previous owner's batch in flight)"
            if _orderly(g) else "")


def _explain(h, g, done, d, dis, p, calls, lagging):
    """Why RocketMQ may deliver `d` after `done` succeeded; (reason, detail) or None."""
    lo, hi = (done.ts or 0) - DISRUPTION_REACH_MS, d.ts if d.ts is not None else float("inf")
    # the disruption came after the earlier delivery, or at most the offset lag before it
    for r in h.resets:
        if r.group == d.group and lo <= r.ts <= hi and (r.offset is None or p is None or p.offset is None
                                                        or r.queue != p.queue or r.offset <= p.offset):
            return ("operator offset reset", r.ts)
    membership = None
    for x in dis:
        if x.ts < lo:
            continue
        if x.ts > hi:
            break
        if x.what in _FAULTS:
            return (f"after a fault ({x.detail or x.what})", x.ts)
        if membership is None and x.what in ("joined", "left") and (x.group is None or x.group == d.group):
            membership = (f"rebalance ({x.what})", x.ts)
    if membership is None:
        return None
    if not _orderly(g) and done.queue is not None and done.offset is not None and done.ts is not None and \
            done.ts < membership[1] and not lagging.below(done.group, done.queue, done.offset, membership[1]):
        # Graceful handover of a concurrent queue: the old owner persists the lowest offset
        # still in its ProcessQueue; a message consumed before the change comes back only if
        # one below it was unfinished. (After the change, old and new owner may both hold the
        # queue until the old one rebalances: anything goes.)
        return None
    if _orderly(g) and done.queue is not None and done.client is not None:
        # Graceful handover of an orderly queue: the old owner persists its offset and unlocks
        # before the new owner locks (removeUnnecessaryMessageQueue), so only the batch in
        # flight may come back: a later successful batch of the old owner on the queue says
        # the offset had moved past this message.
        later = [b for t, b in calls.get((done.group, done.queue, done.client), ()) if t > done.ts and b != done.batch
                 and t < (d.ts or 0)]
        if later:
            return None
    return membership


# ----------------------------------------------------------------- the catalogue

GUARANTEES: tuple[Guarantee, ...] = (
    Guarantee(
        "H-DELIVER-1", "Every subscribed message is consumed or dead-lettered",
        "Every message a producer sent successfully to a topic that a group subscribes to, and that its "
        "filter matches, is consumed successfully by the group (by each consumer, in broadcasting) or lands in "
        "the group's %DLQ%, once the consumer has a position in the topic and unless retention removed it first.",
        "At-least-once delivery: the committed offset moves only past consumed (or sent-back) messages; a "
        "failed message goes to %RETRY% and, after maxReconsumeTimes, to %DLQ%.",
        ("produce.topic", "consume.group", "group.subscriptions"), check_delivery),
    Guarantee(
        "H-RETRY-1", "At most maxReconsumeTimes retries before the DLQ",
        "No message is delivered to a clustering group with a reconsume count above the group's "
        "maxReconsumeTimes (-1: 16 for concurrent consumers, unlimited for orderly ones).",
        "The broker dead-letters a send-back whose reconsume count reached the maximum "
        "(SendMessageProcessor); an orderly client dead-letters itself (checkReconsumeTimes).",
        ("consume.reconsume_times", "group.max_reconsume_times", "group.consume_mode"), check_retry_limit,
        "clustering groups"),
    Guarantee(
        "H-RETRY-2", "One retry copy per failed delivery",
        "For a concurrent clustering group, the distinct stored copies of a message delivered with reconsume "
        "count k+1 are no more than its failed deliveries at count k (a delivery that outlived consumeTimeout "
        "counts as failed).",
        "Each failed delivery is sent back once (processConsumeResult, or cleanExpiredMsg for an expired one); "
        "a duplicate delivery of one copy is the same copy.",
        ("consume.copy", "consume.reconsume_times", "consume.success", "group.consume_mode"),
        check_one_copy_per_failure, "concurrent clustering groups"),
    Guarantee(
        "H-RETRY-3", "The DLQ copy is stored at once",
        f"A message lands in %DLQ% within {DLQ_PROMPT_MS} ms of its last failed delivery.",
        "The send-back of the last retry is stored in %DLQ% directly, without a delay level.",
        ("dead_letter.ts", "consume.end", "consume.success", "observes.dead_letters"), check_dlq_prompt),
    Guarantee(
        "H-ORDER-1", "Orderly: one consumer at a time inside a queue",
        "For an orderly clustering group, no two listener calls on one queue overlap in time, across all "
        "consumers of the group.",
        "One consume thread per queue inside a client (messageQueueLock); across clients the broker lock, "
        "held by the client lease shorter than the broker lock.",
        ("group.consume_mode", "group.message_model", "consume.queue", "consume.client", "consume.end"),
        check_orderly_exclusive, "orderly clustering groups"),
    Guarantee(
        "H-ORDER-2", "Orderly: per-queue (or per sharding key) order kept",
        "For an orderly group, messages of one queue are first delivered in their offset order (per sharding "
        "key: in the order their sends were acknowledged), to each consumer in broadcasting.",
        "takeMessages hands out the lowest offsets of the ProcessQueue first and a failed batch is retried "
        "before the next one (suspend, rollback).",
        ("group.consume_mode", "produce.queue|produce.sharding_key"), check_orderly_order, "orderly groups"),
    Guarantee(
        "H-DUP-1", "Duplicates only for a reason",
        "A message consumed successfully is delivered again only after an operator reset, a fault (a crash, a "
        "pause, a broker restart, a lost call, a consumer unregistered), or a membership change of the group "
        f"no more than {DISRUPTION_REACH_MS // 1000} s before; for an orderly group a graceful handover "
        "redelivers only the previous owner's batch in flight. Every duplicate is counted by reason.",
        "At-least-once: a consumer resumes from the committed offset, which lags consumption by the persist "
        "interval and is persisted before an orderly queue changes hands.",
        ("consume.client", "consume.success", "observes.disruptions"), check_duplicates),
)

BY_ID = {g.id: g for g in GUARANTEES}

# Each known-bug profile (spec/profiles.py) -> the guarantee its built-in scenario breaks at the
# history level, or None and why a history cannot show it (docs/history.md lists both).
KNOWN_BUG_SYMPTOMS: dict[str, tuple[str | None, str]] = {
    "bug-6163-rocketmq-5.0.0": ("H-RETRY-1", "the poison message fails more than maxReconsumeTimes + 1 times and "
                                "keeps coming back through %RETRY% instead of the DLQ"),
    "bug-4215-rocketmq-4.9.3": ("H-DUP-1", "after the offset correction the new consumer consumes the queue again "
                                "from offset 0: messages consumed long before the handover come back"),
    "bug-1825-rocketmq-4.x": ("H-DUP-1", "the orderly queue is consumed again from the start after a graceful "
                              "handover, more than the batch in flight"),
    "bug-4016-rocketmq-4.9.7": (None, "no message is skipped on this scenario: the consumer restarts broker-b's "
                                "queues at their end (LAST_OFFSET) and nothing was stored there between its last "
                                "position and that end, so every message still reaches it and a produce/consume "
                                "history has nothing to show; the white-box spec flags the offset it computed "
                                "(INV-START-1)"),
    "bug-5481-rocketmq-5.0.0": ("H-RETRY-2", "one expired delivery that also returned RECONSUME_LATER yields two "
                                "retry copies (needs each copy's id: a trace has it, message-trace records do not)"),
    "bug-2449-rocketmq-4.8.0": ("H-DUP-1", "two pull loops per queue: the same consumer receives messages twice, "
                                "long after the resets, with no fault or membership change"),
    "bug-2708-rocketmq-4.9.0": ("H-DELIVER-1", "the new owner starts at the queue's end after a failed offset query: "
                                "the backlog is never consumed"),
    "bug-2724-rocketmq-4.9.1": ("H-RETRY-3", "the DLQ copy arrives a delay level (a minute here) after the last "
                                "failed delivery"),
}


def missing(h: History, g: Guarantee) -> list[str]:
    """The fields `g` needs that `h` lacks (`a|b`: either will do)."""
    return [n for n in g.needs if not any(h.has(alt) for alt in n.split("|"))]
