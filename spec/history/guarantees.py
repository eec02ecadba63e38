"""The black-box level of the spec: the guarantees a RocketMQ user sees, checked from a
history of produce and consume records alone (no broker or client internals).

Each guarantee states what must hold, why RocketMQ makes it hold, and the fields it needs
(`needs`: field paths, see `judge.Judge.has`). Where a history lacks one, the guarantee is
*skipped* and the report names what was missing. Where the history is lossy (not `complete`),
an absent record proves nothing: a message never seen consumed is *unobserved*, not lost, and
an apparent reordering is *suspect*, not a violation.

The rules are stated here once, per message (`deliver`, `retry_limit`, `one_copy_per_failure`,
`dlq_prompt`, `duplicates`) or per queue as its deliveries arrive (`orderly_exclusive`,
`orderly_order`); `judge.Judge` streams a history through them, keeping only live keys.

Ids are stable (H-...); the state-level invariants of the white-box spec are `INV-...`
(spec/invariants.py): docs/history.md maps the known bugs onto both. Each guarantee here is the
history-level check of one user guarantee (`user_guarantee`, a G-... id of
spec/user_guarantees.py), which the invariants that protect it name too.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ..filtering import decide, subscription
from ..limits import resolve_max_reconsume

# A redelivery is explained by a disruption up to this long after the earlier delivery
# succeeded: the committed offset lags consumption by up to the client's persist interval
# (5 s), and a broker reloads offsets from its last flush (every 5 s) when it restarts. A
# graceful handover persists the offset when the old owner drops the queue.
DISRUPTION_REACH_MS = 10_000
# The DLQ copy is stored when the last retry's send-back reaches the broker; the detour of
# #2724 goes through the schedule first, whose shortest delay level is 1 s.
DLQ_PROMPT_MS = 1_000

# Changes of a group's membership or of its queues' owners: "joined" and "left" (a consumer
# registered or unregistered), "rebalanced" (a consumer's allocation changed, as RocketMQ's client
# log records it: docs/history.md).
MEMBERSHIP = frozenset({"joined", "left", "rebalanced"})

FAULTS = frozenset({"crashed", "paused", "resumed", "broker restarted", "unregistered", "one-way call lost",
                    "killed", "fault"})


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
    findings: list = field(default_factory=list)   # the first findings, at most Judge.max_kept
    counts: Counter = field(default_factory=Counter)
    notes: list = field(default_factory=list)
    suspect: bool = False                           # findings that a lossy history cannot confirm
    n_findings: int = 0                             # every finding, kept or not
    unjudged: list = field(default_factory=list)    # fields lacking for every record it could judge: skipped
    not_judged: dict = field(default_factory=dict)  # group -> why the guarantee could not be judged for it
    # group -> class -> [[message id, stored id, consumer]] of the messages left unjudged (UNJUDGED),
    # when the judge lists them; consumer: a broadcasting unit's, else None
    unjudged_msgs: dict | None = None

    def add(self, f: HFinding, keep: int) -> None:
        self.n_findings += 1
        if len(self.findings) < keep:
            self.findings.append(f)

    def left_unjudged(self, why: str, unit: tuple, p) -> None:
        if self.unjudged_msgs is not None:
            self.unjudged_msgs.setdefault(unit[0], {}).setdefault(why, []).append(
                [p.id, p.stored_id, unit[1] if len(unit) > 1 else None])


@dataclass(frozen=True)
class Guarantee:
    id: str
    title: str
    statement: str
    why: str
    needs: tuple
    applies: str = "every group"
    user_guarantee: str = ""     # the G- id it checks (spec/user_guarantees.py)


# ----------------------------------------------------------------- helpers

def orderly(g) -> bool:
    return g is not None and g.consume_mode == "ORDERLY"


def broadcast(g) -> bool:
    return g is not None and g.message_model == "BROADCASTING"


def pop(g) -> bool:
    """The group consumes by POP (docs/pop.md): the broker hands each message out with an invisible
    time, and revive puts back what is not acked by then."""
    return g is not None and g.pop is not None


def pop_expired(c) -> bool:
    """A POP delivery whose call returned (or did not) only once its handle's invisible time had run
    out, or whose ack the proxy refused because the handle ran out on its way: its ack may come too
    late, and revive may have put the message back already."""
    return c.deadline is not None and (c.end is None or c.end >= c.deadline or c.settle_refused)


def unit(g, c):
    """Who must receive a message: the group (clustering) or each consumer (broadcasting)."""
    return (c.group, c.client) if broadcast(g) else (c.group,)


def _key(group=None, msg=None, queue=None, client=None) -> dict:
    k = {"group": group, "msg": msg, "client": client}
    if queue is not None:
        k["queue"] = "/".join(map(str, queue))
    return {a: b for a, b in k.items() if b is not None}


def max_reconsume(g, default_max):
    if g is None or g.max_reconsume_times is None:
        return None
    return resolve_max_reconsume(g.max_reconsume_times, orderly(g), default_max)


def _ts(c):
    return c.ts if c.ts is not None else -1


# ----------------------------------------------------------------- H-DELIVER-1

# Classes of a (message, unit) that no later record can turn into a finding.
NOT_JUDGED_BEFORE_START = "not judged: sent before the first consumption, start position unknown"
NOT_JUDGED_UNNAMED = "not judged: broadcasting group, consumers not named"
# DefaultMQPushConsumerImpl.processPopResult and ConsumeMessagePopConcurrentlyService (5.5.0): the
# push consumer in POP mode has no DLQ; a message that failed at maxReconsumeTimes is acked
# (checkNeedAckOrDelay), or its revived copy past the limit is acked without a listener call
POP_PUSH_PAST_LIMIT = "failed at maxReconsumeTimes: the push consumer in POP mode acks it, no DLQ"
UNNAMED_BROADCAST = ("broadcasting: each consumer must get each message, and the history names no consumer of the "
                     "group (message-trace bodies name none; an export with bornHost does)")

SEND_UNKNOWN = "send outcome unknown or failed"
KILLED_UNOBSERVED = ("unobserved: a consumer of the group was killed after it was sent (its unsent trace records are "
                     "lost)")
FILTER_UNKNOWN = "not consumed, filter unknown"
# A failed delivery then an operator reset past the message: RocketMQ's records do not show whether
# the client tried its send-back. One that failed (the broker unreachable) leaves the message in the
# ProcessQueue, and the reset then skips it by design; one never tried (a client that acks what its
# listener declared not consumed) lost it before the reset. The reset only moves the topic's
# offset (resetOffsetByTimestamp), never a stored %RETRY% copy.
FAILED_THEN_RESET = ("failed, then an operator reset passed it: whether its send-back was tried is not in the "
                     "records")

SETTLED = frozenset({NOT_JUDGED_UNNAMED, POP_PUSH_PAST_LIMIT,
    "consumed", "consumed (broadcasting drops a failure)", "dead-lettered", "filtered out by the subscription",
    SEND_UNKNOWN, "consumer left before it was sent",
    NOT_JUDGED_BEFORE_START, "removed by retention",
    "skipped by an operator reset past it", FAILED_THEN_RESET})
# The classes that leave a (message, unit) unjudged: the history cannot tell whether the unit got
# the message, nor that it was not owed. The judge lists these messages by unit and class when
# asked (Judge(list_unjudged=True)): a finding of the white-box level about one of them is one the
# history could not have shown.
UNJUDGED = frozenset({NOT_JUDGED_BEFORE_START, NOT_JUDGED_UNNAMED, SEND_UNKNOWN, KILLED_UNOBSERVED, FILTER_UNKNOWN,
    FAILED_THEN_RESET,
    "delivered, result unknown", "presumed dead-lettered (the DLQ is not observed)", "failed, then unobserved",
    "failed, retried: its retry copy is stored, the copy's delivery not recorded", "unobserved"})


def deliver(J, m) -> list:
    """[(class, finding or None, unit)] for message `m` and each unit that must receive it (a
    group's name, and a broadcasting consumer's: `unit`), from what is known now. Every subscribed
    message is consumed or dead-lettered (H-DELIVER-1)."""
    h, p, out = J.h, m.p, []
    if p is None:
        return out
    if p.ok is not True:
        for g in h.groups.values():
            if g.subscriptions and p.topic in g.subscriptions and p.ok is None:
                out.append((SEND_UNKNOWN, None, (g.name,)))
        return out
    for g in h.groups.values():
        subs = g.subscriptions or {}
        if p.topic not in subs:
            continue
        sub_t, sub_e = subs[p.topic]
        if g.subscriptions_inferred or (sub_t == "SQL92" and not J.has("produce.props")) or \
                (sub_t == "TAG" and sub_e.strip() not in ("*", "") and not J.has("produce.tags")):
            match = None        # the history cannot evaluate the filter
        else:
            match = decide(subscription(sub_t, sub_e), p.tags, None, p.props)[1]
        if broadcast(g):
            units = sorted((g.name, c) for c in J.members(g.name))
            if not units:
                # each consumer must get each message, and the history names none of them
                # (message-trace bodies do not): the group is not judged, and the report says so
                J.not_judged.setdefault(("H-DELIVER-1", g.name), UNNAMED_BROADCAST)
                out.append((NOT_JUDGED_UNNAMED, None, (g.name,)))
                continue
        else:
            units = [(g.name,)]
        for u in units:
            out.append((*_deliver_unit(J, m, g, u, match), u))
    return out


def before_start(J, g, u, p) -> bool:
    """Was message `p` possibly sent before unit `u` of group `g` had a position in its topic
    (so not owed to it; the reasons are in `_deliver_unit`)?"""
    first = J.first.get((u, p.topic))
    started = g.members.get(u[1], (None,))[0] if len(u) > 1 else g.started_ts
    if g.consume_from_where == "CONSUME_FROM_FIRST_OFFSET" and (first is not None or started is not None):
        return False
    start = first if first is not None else started     # nothing of the topic consumed: from when it started
    return start is None or p.ts is None or p.ts < start


def _deliver_unit(J, m, g, u, match):
    h, p = J.h, m.p
    if broadcast(g):
        joined, left = g.members.get(u[1], (None, None))
        if left is not None and (p.ts is None or left <= p.ts):
            return ("consumer left before it was sent", None)
    dels = m.deliveries(u)
    if match is False and not dels:
        return ("filtered out by the subscription", None)
    if dels and broadcast(g):
        return ("consumed (broadcasting drops a failure)", None)
    if any(c.success is True for c in dels):
        return ("consumed", None)
    if any(d.group == g.name for d in m.dlq):
        return ("dead-lettered", None)
    if any(c.success is None for c in dels):
        return ("delivered, result unknown", None)
    if not dels and before_start(J, g, u, p):
        # Where a group with no committed offset starts (RebalancePushImpl.computePullFromWhere,
        # 4.9.8): FIRST_OFFSET at 0, which the broker moves up to the queue's minimum, so it owes
        # every message its queues retain; LAST_OFFSET at 0 while the queue's first message is
        # still in the broker's memory (ConsumerManageProcessor.queryConsumerOffset), else at the
        # queue's end when it gets the queue; TIMESTAMP at the declared time. A history shows
        # neither memory nor the moment a queue is assigned: before the group's (the consumer's)
        # first consumption of the topic, the message is not judged.
        # (a FIRST_OFFSET group of which nothing shows that it ran is not judged either)
        return (NOT_JUDGED_BEFORE_START, None)
    if p.queue is not None and p.offset is not None and J.expired.get(p.queue, -1) > p.offset:
        return ("removed by retention", None)
    if J.reset_past(g.name, p):
        # (every delivery here failed: a success or an unknown result returned above)
        return (FAILED_THEN_RESET if dels else "skipped by an operator reset past it", None)
    who = f"group {g.name}" + (f" consumer {u[1]}" if len(u) > 1 else "")
    if p.ts is not None and J.killed_after(g.name, p.ts):
        return (KILLED_UNOBSERVED, None)
    if dels:
        last = max(dels, key=_ts)
        mx = max_reconsume(g, J.default_max)
        observes_dlq = "dead_letters" in h.observes
        if not observes_dlq and mx is not None and last.reconsume_times is not None \
                and last.reconsume_times >= mx:
            return ("presumed dead-lettered (the DLQ is not observed)", None)
        if g.pop == "POP_PUSH" and mx is not None and last.reconsume_times is not None \
                and last.reconsume_times >= mx:
            return (POP_PUSH_PAST_LIMIT, None)
        if not h.complete or not observes_dlq:
            return ("failed, then unobserved", None)
        again = h.retried.get((g.name, p.id))
        if again is not None and last.reconsume_times is not None and again > last.reconsume_times:
            # the send-back of the last failure is in the store, ready to be pulled: its delivery
            # records are what is missing (a client's trace dispatcher sends its records late or
            # never: random real run 11013, the last batch of a group never reached the broker)
            return ("failed, retried: its retry copy is stored, the copy's delivery not recorded", None)
        return ("failed, never dead-lettered", HFinding(
            "H-DELIVER-1", f"message {p.id} (topic {p.topic}) reached {who} {len(dels)} time(s), every "
            f"call failed, and it was neither consumed nor dead-lettered", last.where,
            _key(g.name, p.id, p.queue, u[1] if len(u) > 1 else None)))
    if match is None:
        return (FILTER_UNKNOWN, None)
    if not h.complete:
        return ("unobserved", None)
    return ("lost", HFinding(
        "H-DELIVER-1", f"message {p.id} (topic {p.topic}"
        f"{', queue ' + '/'.join(map(str, p.queue)) + ' offset ' + str(p.offset) if p.queue else ''}"
        f", sent at ts {p.ts}) never reached {who}, which subscribes to it", p.where,
        _key(g.name, p.id, p.queue, u[1] if len(u) > 1 else None)))


# ----------------------------------------------------------------- H-RETRY-1

def retry_limit(J, m, out: Outcome) -> None:
    """At most maxReconsumeTimes retries before the DLQ (clustering groups)."""
    flagged = set()
    for c in m.dels:
        g = J.h.groups.get(c.group)
        if broadcast(g) or c.reconsume_times is None:
            continue
        out.counts["deliveries"] += 1
        mx = max_reconsume(g, J.default_max)
        if mx is not None and c.reconsume_times > mx and c.group not in flagged:
            flagged.add(c.group)
            out.add(HFinding(
                "H-RETRY-1", f"message {c.id} was delivered to group {c.group} with reconsume_times "
                f"{c.reconsume_times} > maxReconsumeTimes {mx}: after {mx} retries it must go to %DLQ%{c.group}",
                c.where, _key(c.group, c.id, client=c.client)), J.max_kept)
    # A retry chain longer than the limit. Each mode counts along its own lineage: a concurrent
    # failure sends back one stored copy carrying count + 1 (the broker dead-letters it at the
    # limit), so the count is the lineage's depth; an orderly ProcessQueue counts its message's
    # failures in memory, from the stored count.
    for group in sorted({c.group for c in m.dels} - flagged):
        g = J.h.groups.get(group)
        mx = max_reconsume(g, J.default_max)
        if broadcast(g) or mx is None:
            continue
        dels = sorted((c for c in m.dels if c.group == group and c.success is not None), key=lambda c: c.ts or 0)
        f = (_orderly_chain if orderly(g) else _concurrent_chain)(J, group, mx, dels, out)
        if f is not None:
            flagged.add(group)
            out.add(f, J.max_kept)
    out.counts["messages over the limit"] += len(flagged)


# After a membership change the members rebalance on views that differ for a moment (each
# rebalances at once on the broker's NOTIFY_CONSUMER_IDS_CHANGED), and two may own one queue:
# a copy handed out within this long after a change may be the other owner's duplicate, even
# when the change came before the copy's first hand-out (random real run 4019: a member joined,
# and both members handed out the same original 50 ms apart). It also covers the client log's
# clock placement (conformance.client_log). The window reaches after the copy too: a member that
# lost its channel (paused, or cut off) and comes back hands out what its stale ProcessQueues hold
# before its heartbeat makes it a member again and the group rebalances (random real run 6034: a
# client resumed after 8.7 s delivered a message its held pull had brought in, 4 ms after the
# resume and 14 ms before the broker registered it again, after the queue's new owner had
# dead-lettered it).
REBALANCE_SETTLE_MS = 1000


def _concurrent_chain(J, group, mx, dels, out):
    """A concurrent group's deliveries of one message, by lineage: each failed delivery at count k
    below the limit made one %RETRY% copy at k + 1, and one at the limit went to the DLQ. A copy
    at the limit delivered again when every copy at that count had already failed (been
    dead-lettered) is a chain past the limit, unless the queue changed hands or an operator reset
    the group since that copy was last handed out (a new owner pulls the copy again from the
    broker's lagging offset). The history names no copy, so the copy handed out again is taken to
    be the one handed out longest ago (the reading that claims least). A copy below the limit
    handed out again (two owners at once, or an operator reset back to the original) is a
    duplicate; its failure makes a lineage of its own, counted by its own copies' counts: the
    copies an earlier failure sent back stay in %RETRY% whatever the reset did."""
    fails, outs, calls = Counter(), defaultdict(list), set()
    for c in dels:
        k = c.reconsume_times
        if k is None:
            continue
        copies = 1 if k == 0 else fails[k - 1]
        seen = outs[k]              # when each copy at count k was last handed out
        again = copies and len(seen) >= copies
        if again and k == mx and fails[k] >= copies:
            since = min(seen)
            if c.ts is None or not (J.membership_between(group, since, c.ts)
                                    or J.membership_between(group, c.ts - REBALANCE_SETTLE_MS,
                                                            c.ts + REBALANCE_SETTLE_MS)
                                    or J.reset_between(group, since, c.ts, c) is not None):
                return HFinding(
                    "H-RETRY-1", f"message {c.id} was delivered to group {group} at ts {c.ts} with reconsume_times {k} "
                    f"after each of its {copies} stored cop{'y' if copies == 1 else 'ies'} at that count had failed "
                    f"({fails[k]} failed deliveries; maxReconsumeTimes {mx}: the send-back at the limit goes to "
                    f"%DLQ%{group}), with no membership change or reset since", c.where,
                    _key(group, c.id, client=c.client))
            out.counts["delivered again after its dead letter, the queue having changed hands"] += 1
        elif again and k < mx and fails[k] >= copies:
            out.counts["a copy handed out again below the limit (its failures make their own lineage)"] += 1
        if c.ts is not None:
            if again:
                seen.remove(min(seen))
            seen.append(c.ts)
        # one call fails each copy it holds once; a call holding two copies of the message (a
        # %RETRY% copy and a later one, pulled in one batch) fails both lineages
        if c.success is False and (c.batch or c.where, k) not in calls:
            calls.add((c.batch or c.where, k))
            fails[k] += 1
    return None


def _orderly_chain(J, group, mx, dels, out):
    """An orderly group's deliveries of one message: its ProcessQueue counts failures in memory
    (checkReconsumeTimes), so one owner's chain is every failure it saw; a new ProcessQueue
    starts again from the stored count (0). A delivery after more than maxReconsumeTimes + 1
    failures of one chain is past the limit (#6163: the dead letter bounced through %RETRY%)."""
    batches, n, last, handed = set(), 0, None, {}
    for c in dels:
        if n and last is not None and c.ts is not None and J.reset_between(group, last, c.ts, c) is not None:
            # an operator reset the group back to the message since its last failure: the
            # original copy is handed out again and its retries count afresh
            batches, n = set(), 0
        elif n and last is not None and c.ts is not None and c.reconsume_times == 0:
            # the stored copy (count 0) handed out again after the queue changed hands since it
            # was last handed out: another owner's ProcessQueue counts from 0. (A message
            # dead-lettered and handed out again with its batch by the same owner keeps its
            # count, and no change comes between.)
            since = handed.get(0, last)
            if J.membership_between(group, since, c.ts) or J.reset_between(group, since, c.ts, c) is not None:
                batches, n = set(), 0
        if c.reconsume_times is not None and c.ts is not None:
            handed[c.reconsume_times] = c.ts
        last = c.ts if c.ts is not None else last
        if n > mx:
            return HFinding(
                "H-RETRY-1", f"message {c.id} failed {n} times in group {group} (maxReconsumeTimes {mx}: at most "
                f"{mx + 1} failed deliveries) and was delivered again at ts {c.ts}", c.where,
                _key(group, c.id, client=c.client))
        if c.success is False and (c.batch or c.where) not in batches:
            batches.add(c.batch or c.where)
            n += 1
    return None


# ----------------------------------------------------------------- H-RETRY-2

def one_copy_per_failure(J, m, out: Outcome) -> None:
    """One retry copy per failed (or expired) delivery, concurrent clustering groups."""
    for group in sorted({c.group for c in m.dels}):
        g = J.h.groups.get(group)
        if g is None or g.consume_mode != "CONCURRENTLY" or broadcast(g):
            continue
        dels = [c for c in m.dels if c.group == group]
        timeout = g.consume_timeout_ms
        failures, copies = Counter(), {}
        for c in dels:
            if c.reconsume_times is None:
                continue
            copies.setdefault(c.reconsume_times, set()).add(c.copy)
            # cleanExpiredMsg sends back a message consumed longer than consumeTimeout; one
            # delivery is sent back once, whether it failed, expired, or both. POP: revive puts
            # back once a message whose handle ran out before the call returned
            expired = (pop_expired(c) if pop(g) else
                       timeout is not None and c.end is not None and c.ts is not None and c.end - c.ts > timeout)
            if c.success is False or expired:
                failures[c.reconsume_times] += 1
        for k, cs in sorted(copies.items()):
            if k == 0 or len(cs) <= failures[k - 1]:
                continue
            if k - 1 not in copies:
                # no delivery at k - 1 in the history (a lossy one, or the chain began before the
                # judge's window): its failures are unknown, not absent
                out.counts["retry copies whose earlier delivery is not in the history"] += 1
                continue
            fails = [c.end for c in dels if c.reconsume_times == k - 1 and c.end is not None]
            lo = min(fails) if fails else None
            hi = max(c.ts for c in dels if c.reconsume_times == k and c.ts is not None)
            fault = J.fault_between(lo - DISRUPTION_REACH_MS, hi) if lo is not None else None
            if fault is not None:
                out.counts[f"extra copy allowed: after a fault ({fault.what})"] += 1
                continue
            out.add(HFinding(
                "H-RETRY-2", f"message {m.id}: {len(cs)} retry copies with reconsume_times {k} "
                f"({', '.join(sorted(map(str, cs)))}) from {failures[k - 1]} failed delivery(ies) at {k - 1}",
                next(c.where for c in dels if c.reconsume_times == k), _key(group, m.id)), J.max_kept)
        out.counts["messages"] += 1


# ----------------------------------------------------------------- H-RETRY-3

def dlq_prompt(J, m, out: Outcome) -> None:
    """The DLQ copy is stored within DLQ_PROMPT_MS of the last failed delivery."""
    for d in m.dlq:
        out.counts["dead letters"] += 1
        if pop(J.h.groups.get(d.group)):
            # the proxy stores a POP group's DLQ copy when it receives the revived copy past the
            # limit (PopMessageResultFilterImpl): after the last failure's invisible time and the
            # next pop, not at the failure
            out.counts["dead letters of a POP group (stored at the next pop, not judged by time)"] += 1
            continue
        fails = [c for c in m.dels if c.group == d.group and c.success is False and c.end is not None]
        if not fails or d.ts is None:
            continue
        if d.reconsume_times is not None and not any(
                c.reconsume_times is not None and c.reconsume_times >= d.reconsume_times - 1 for c in fails):
            # the DLQ copy's count says which failure sent it there; when that call left no record
            # (a trace dispatcher's lost batch: random real run 12009), its time is not known
            out.counts["dead letters whose last failure is not recorded"] += 1
            continue
        t = max(c.end for c in fails)
        if d.ts - t > DLQ_PROMPT_MS:
            out.add(HFinding(
                "H-RETRY-3", f"message {d.id} reached %DLQ%{d.group} {d.ts - t} ms after its last failed delivery "
                f"(at ts {t}): the DLQ copy took a delayed detour", d.where, _key(d.group, d.id)), J.max_kept)


# ----------------------------------------------------------------- H-ORDER-1

def orderly_exclusive(q, new, old):
    """Two listener calls `new` and `old` ([client, start, end, where, POP deadline]) of an orderly clustering
    group on queue `q` = (group, queue): (finding, (client, client)) if they were inside the
    queue at once, else None. One consume thread per queue inside a client, the broker lock
    across clients."""
    a, b = (old, new) if old[1] <= new[1] else (new, old)       # by start; ties: the earlier seen first
    if a[2] is not None and a[2] <= b[1]:
        return None
    if a[4] is not None and a[4] <= b[1]:
        # orderly POP: the order info blocks the queue only until the attempt's invisible time
        # runs out (ConsumerOrderInfoManager.checkBlock); then another attempt may pop it
        return None
    if b[4] is not None and b[4] <= b[1]:
        # the same, the other way: the later call began on a message of an attempt whose invisible
        # time had run out (a SimpleConsumer goes on through a received batch), so another attempt
        # may already hold the queue (random real run 25081, 5.5.0 proxy)
        return None
    group, queue = q
    who = "two calls of " + b[0] if a[0] == b[0] else f"{a[0]} and {b[0]}"
    return HFinding(
        "H-ORDER-1", f"orderly group {group}, queue {'/'.join(map(str, queue))}: {who} were inside a "
        f"listener call at once ({a[0]} from ts {a[1]} to {a[2]}, {b[0]} from ts {b[1]})",
        b[3], _key(group, queue=queue, client=b[0])), (a[0], b[0])


# ----------------------------------------------------------------- H-ORDER-2

def orderly_order(u, stream, by_queue, lower, higher) -> HFinding:
    """`higher` (position, Consume) was first delivered before `lower`, a message that comes
    before it in the stream (queue offset, or acknowledged send order per sharding key)."""
    what = "queue " + "/".join(map(str, stream)) if by_queue else f"sharding key {stream}"
    (hp, hc), (lp, lc) = higher, lower
    return HFinding(
        "H-ORDER-2", f"orderly group {u[0]}{' consumer ' + u[1] if len(u) > 1 else ''}, {what}: message "
        f"{hc.id} (position {hp}) was first delivered at ts {hc.ts}, before message {lc.id} "
        f"(position {lp}), sent before it, at ts {lc.ts}",
        hc.where, _key(u[0], hc.id, stream if by_queue else None, u[1] if len(u) > 1 else None))


def order_excused(J, g, u, lower, higher) -> bool:
    """Is `lower` = (Produce, Consume), first delivered after `higher`'s first delivery (a
    Consume) though it comes first in the stream, no break? When the group may have started
    past it (not owed, as for H-DELIVER-1: CONSUME_FROM_LAST_OFFSET takes the queue's end when
    it gets the queue, RebalancePushImpl.computePullFromWhereWithException) and an operator
    reset between the two deliveries took the group back to it, the reset made it owed: its
    first delivery comes in the reset's pass, after the later messages of the first one."""
    (p, lc), hc = lower, higher
    if p is None or lc.ts is None or hc.ts is None or not before_start(J, g, u, p):
        return False
    return J.reset_between(u[0], hc.ts, lc.ts, p) is not None


# ----------------------------------------------------------------- H-DUP-1

def duplicates(J, m, out: Outcome) -> None:
    """A successfully consumed message comes back only for a reason, counted by reason."""
    judged = "disruptions" in J.h.observes
    for u in m.units(J.h.groups):
        g = J.h.groups.get(u[0])
        done = m.prior.get(u)       # consumed before the judge's window (Judge._consume)
        for d in sorted(m.deliveries(u), key=_ts):
            if done is None:
                if d.success is True:
                    done = d
                continue
            if d.batch is not None and d.batch == done.batch:
                continue
            if d.copy is not None and done.copy is not None and d.copy != done.copy:
                out.counts["another stored copy (judged by H-RETRY-2)"] += 1
                continue
            if not judged:
                out.counts["redelivered after success (not judged: disruptions not observed)"] += 1
                continue
            reason = _explain(J, g, done, d, m.p)
            if reason is not None:
                out.counts[f"allowed: {reason[0]}"] += 1
                continue
            out.counts["not allowed"] += 1
            by = f"by {done.client}" if done.client is not None else "(before the judge's window)"
            out.add(HFinding(
                "H-DUP-1", f"message {m.id} was consumed {by} at ts {done.ts} and delivered again to "
                f"{d.client} at ts {d.ts} in group {u[0]} with no fault, reset, membership change or failed call "
                f"to explain it{_orderly_note(g)}", d.where, _key(u[0], m.id, d.queue, d.client)), J.max_kept)


def _orderly_note(g):
    return (" (orderly: a graceful handover redelivers at most the previous owner's batch in flight)"
            if orderly(g) else "")


def _explain(J, g, done, d, p):
    """Why RocketMQ may deliver `d` after `done` succeeded; (reason, detail) or None."""
    lo, hi = (done.ts or 0) - DISRUPTION_REACH_MS, d.ts if d.ts is not None else float("inf")
    # the disruption came after the earlier delivery, or at most the offset lag before it
    r = J.reset_between(d.group, lo, hi, p if p is not None else d)
    if r is not None:
        return ("operator offset reset", r)
    x = J.fault_between(lo, hi)
    if x is not None:
        return (f"after a fault ({x.detail or x.what})", x.ts)
    if pop_expired(done) and (d.ts is None or d.ts >= done.deadline):
        # the handle ran out before the call returned: revive put the message back before the ack
        return ("POP: the invisible time ran out before the call returned", done.deadline)
    membership = J.membership_between(d.group, lo, hi)
    if membership is None:
        return None
    if not orderly(g) and done.queue is not None and done.offset is not None and done.ts is not None and \
            done.ts < membership[1] and not J.lagging(done.group, done.queue, done.offset, membership[1]):
        # Graceful handover of a concurrent queue: the old owner persists the lowest offset
        # still in its ProcessQueue; a message consumed before the change comes back only if
        # one below it was unfinished. (After the change, old and new owner may both hold the
        # queue until the old one rebalances: anything goes.)
        return None
    if orderly(g) and done.queue is not None and done.client is not None and \
            J.later_batch(done.group, done.queue, done.client, done.ts, done.batch, d.ts or 0):
        # Graceful handover of an orderly queue: the old owner persists its offset and unlocks
        # before the new owner locks (removeUnnecessaryMessageQueue), so only the batch in
        # flight may come back: a later successful batch of the old owner on the queue says
        # the offset had moved past this message.
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
        ("produce.topic", "consume.group", "group.subscriptions"), user_guarantee="G-DELIVER"),
    Guarantee(
        "H-RETRY-1", "At most maxReconsumeTimes retries before the DLQ",
        "No message is delivered to a clustering group with a reconsume count above the group's "
        "maxReconsumeTimes (-1: 16 for concurrent consumers, unlimited for orderly ones), and no retry chain of "
        "one copy's lineage is longer than that.",
        "The broker dead-letters a send-back whose reconsume count reached the maximum "
        "(SendMessageProcessor); an orderly client dead-letters itself (checkReconsumeTimes).",
        ("consume.reconsume_times", "group.max_reconsume_times", "group.consume_mode"),
        "clustering groups", user_guarantee="G-RETRY-LIMIT"),
    Guarantee(
        "H-RETRY-2", "One retry copy per failed delivery",
        "For a concurrent clustering group, the distinct stored copies of a message delivered with reconsume "
        "count k+1 are no more than its failed deliveries at count k (a delivery that outlived consumeTimeout, "
        "or a POP handle's invisible time, counts as failed).",
        "Each failed delivery is sent back once (processConsumeResult, or cleanExpiredMsg for an expired one); "
        "a duplicate delivery of one copy is the same copy.",
        ("consume.copy", "consume.reconsume_times", "consume.success", "group.consume_mode"), "concurrent clustering groups",
        user_guarantee="G-ONE-RETRY"),
    Guarantee(
        "H-RETRY-3", "The DLQ copy is stored at once",
        f"A message lands in %DLQ% within {DLQ_PROMPT_MS} ms of its last failed delivery.",
        "The send-back of the last retry is stored in %DLQ% directly, without a delay level.",
        ("dead_letter.ts", "consume.end", "consume.success", "observes.dead_letters"), user_guarantee="G-DLQ"),
    Guarantee(
        "H-ORDER-1", "Orderly: one consumer at a time inside a queue",
        "For an orderly clustering group, no two listener calls on one queue overlap in time, across all "
        "consumers of the group.",
        "One consume thread per queue inside a client (messageQueueLock); across clients the broker lock, "
        "held by the client lease shorter than the broker lock.",
        ("group.consume_mode", "group.message_model", "consume.queue", "consume.client", "consume.end"), "orderly clustering groups",
        user_guarantee="G-ORDER-EXCLUSIVE"),
    Guarantee(
        "H-ORDER-2", "Orderly: per-queue (or per sharding key) order kept",
        "For an orderly group, messages of one queue are first delivered in their offset order (per sharding "
        "key: in the order their sends were acknowledged), to each consumer in broadcasting; a message the group "
        "may have started past (as H-DELIVER-1 reads the start) is owed only once an operator reset takes the "
        "group back to it, and then comes after the later ones.",
        "takeMessages hands out the lowest offsets of the ProcessQueue first and a failed batch is retried "
        "before the next one (suspend, rollback).",
        ("group.consume_mode", "produce.queue|produce.sharding_key"), "orderly groups", user_guarantee="G-ORDER"),
    Guarantee(
        "H-DUP-1", "Duplicates only for a reason",
        "A message consumed successfully is delivered again only after an operator reset, a fault (a crash, a "
        "pause, a broker restart, a lost call, a consumer unregistered), or a membership change of the group "
        f"no more than {DISRUPTION_REACH_MS // 1000} s before; for an orderly group a graceful handover "
        "redelivers only the previous owner's batch in flight. Every duplicate is counted by reason.",
        "At-least-once: a consumer resumes from the committed offset, which lags consumption by the persist "
        "interval and is persisted before an orderly queue changes hands.",
        ("consume.client", "consume.success", "observes.disruptions"), user_guarantee="G-NO-DUP-WITHOUT-CAUSE"),
)

BY_ID = {g.id: g for g in GUARANTEES}

# A liveness bug's run ends at its horizon (trace_ended reason horizon), which a history reads as
# incomplete (traces/history/from_trace.py): it has nothing to show.
_HORIZON_UNSEEN = ("the run ends at its 30 s horizon, not quiescent, so the history is incomplete and "
                   "a message not yet consumed is unobserved, not lost (a history cannot tell a client "
                   "that never consumes from one that has not yet); the white-box spec judges the "
                   "settled horizon (INV-LIVE-1)")

# Each known-bug profile (rocketspec/rocketmq/profiles.py) -> the guarantee its built-in scenario breaks at the
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
    "bug-5465-rocketmq-4.9.4": (None, "not shown: the broadcasting orderly client never pulls; " + _HORIZON_UNSEEN),
    "bug-8772-rocketmq-5.3.1": (None, "not shown: the second broadcasting orderly client starves on the broker "
                                "lock; " + _HORIZON_UNSEEN),
    "bug-10955-rocketmq-5.5.1": (None, "not shown: " + (_10955_UNSEEN := (
        "the messages are stored while b1 is stopped, and a history cannot tell whether the stopped client's "
        "offsets file holds the queue: one that holds none restarts at CONSUME_FROM_LAST_OFFSET by design and "
        "owes nothing stored before; the white-box spec sees the ProcessQueue b1 created and its offset table "
        "that never had an entry (INV-LOSS-1 naming A-OFFSET-ENTRY)"))),
    "bug-3731-rocketmq-5.5.1": (None, "not shown: " + (_3731_UNSEEN := (
        "a history has each delivery and its time but not the delay level the listener asked for, so it "
        "cannot tell that a retry copy came back at level 3 + r instead of the context's; the white-box spec "
        "compares the fallback's DELAY with the consumer send-back's level (INV-RETRY-2)"))),
    "bug-9281-rocketmq-5.5.1": ("H-DELIVER-1", _9281_SEEN := (
        "b1 joined before the messages were sent and they never reach it: its first rebalance, which "
        "start() only wakes, started the queue at the end it read then")),
    "bug-8490-rocketmq-5.3.1-SNAPSHOT": ("H-DELIVER-1", "the three messages were popped and acked as past their "
                                         "retries at their first delivery, before any listener call: none ever "
                                         "reaches the group"),
    "bug-8332-rocketmq-5.3.0": ("H-RETRY-1", "with maxReconsumeTimes 0 the revived copies, one reconsumption past "
                                "the limit, are delivered again: the slow message once and the poison one at 1, 2 "
                                "and 3 reconsumptions"),
    "bug-7914-rocketmq-5.2.0": ("H-DELIVER-1", "the message's only listener call failed, and revive skipped it "
                                "as stored after its pop time (the pop read the queue after taking that time): it is "
                                "neither consumed again nor dead-lettered"),
    "bug-10276-rocketmq-5.5.0": ("H-DELIVER-1", _10276_SEEN := (
        "the message's only listener call failed, and the change of its invisible time kept the deadline, so the "
        "change deleted its own new record: the message is never revived, neither consumed again nor "
        "dead-lettered")),
    "bug-7724-rocketmq-5.5.1": ("H-RETRY-2", _7724_SEEN := (
        "retention deleted the un-acked message's commit-log data before its consume queue was corrected, and "
        "revive put back the next message in its place, one the group had acked: a retry copy with no failed "
        "delivery")),
    "bug-10827-rocketmq-5.5.0": (None, "not shown: " + (_10827_UNSEEN := (
        "the lost batch's message is consumed in the end, once the proxy stops renewing its handle 3 h on; a "
        "history holds when each message was delivered, not how long a queue may wait, nor the retried "
        "receive's attempt id the white-box spec reads (INV-POP-ORDER-2)"))),
    "bug-10985-rocketmq-5.5.1": ("H-DELIVER-1", _10985_SEEN := (
        "the message's only listener call failed, and revive, whose read failed, never puts it back: it is "
        "neither consumed again nor dead-lettered")),
}


# Runs of release profiles that the white-box spec rejects, by design of their scenario
# (scenario name, profile) -> the guarantee its history breaks, or None and why it cannot show it
# (tests/test_history_levels.py checks both levels agree on every built-in scenario and real
# fixture; docs/history.md lists these).
RELEASE_SYMPTOMS: dict[tuple, tuple[str | None, str]] = {
    **{("orderly-pause-broker-lock", p): ("H-ORDER-1", "the paused client's lease outlives the broker lock: two "
                                          "consumers are inside one orderly queue at once")
       for p in ("rocketmq-4.9.8", "rocketmq-5.3.3")},
    ("orderly-long-call-handover", "rocketmq-5.3.3"): (
        "H-ORDER-1", "5.x unlocks an orderly queue 20 s after the last renewal even while a listener call runs: "
        "the new owner is inside the queue while the old call goes on"),
    ("bug-5481", "rocketmq-4.9.8"): ("H-RETRY-2", "4.9.8 has #5481 too: an expired delivery that also failed is "
                                     "sent back twice"),
    **{(name, "rocketmq-4.9.8"): (
        "H-RETRY-3", "4.9.x's send path puts the orderly producer send's DELAY back after handleRetryAndDLQ "
        "cleared it (#2724's fix covers consumerSendMsgBack only): the DLQ copy arrives a delay level late")
       for name in ("orderly-dlq", "real-orderly-dlq")},
    ("bug-8772", "rocketmq-4.9.8"): (
        None, "4.9.8 has #8772 too: the second broadcasting orderly client starves on the broker lock; "
        + _HORIZON_UNSEEN),
    **{("bug-10955", p): (None, "every release has #10955 (open): " + _10955_UNSEEN)
       for p in ("rocketmq-4.9.8", "rocketmq-5.3.3")},
    **{("bug-3731", p): (None, "every release has #3731 (open): " + _3731_UNSEEN)
       for p in ("rocketmq-4.9.8", "rocketmq-5.3.3")},
    **{("bug-9281", p): ("H-DELIVER-1", "every release has #9281 (open): " + _9281_SEEN)
       for p in ("rocketmq-4.9.8", "rocketmq-5.3.3")},
    **{("bug-10985", p): ("H-DELIVER-1", "every release has #10985 (open): " + _10985_SEEN)
       for p in ("rocketmq-5.3.3",)},
    **{("bug-7724", p): ("H-RETRY-2", "every 5.x release has #7724 (open): " + _7724_SEEN)
       for p in ("rocketmq-5.3.3",)},
    ("bug-10276", "rocketmq-5.3.3"): ("H-DELIVER-1", "5.3.3's RocksDB POP path has #10276 too (fixed in 5.5.1): "
                                      + _10276_SEEN),
    ("bug-10827", "rocketmq-5.3.3"): (None, "5.3.3's RocksDB POP path has #10827 too (fixed in 5.5.1): "
                                      + _10827_UNSEEN),
    ("random-20201-dropped-unheard-5.5.0", "rocketmq-5.5.1"): (
        "H-DELIVER-1", "a push consumer in POP mode acks a revived copy past maxReconsumeTimes that no listener "
        "call received (each pop ran out of invisible time first): six messages of a CONSUME_FROM_FIRST_OFFSET "
        "group are neither consumed nor dead-lettered"),
    ("random-21262-dropped-unheard-paused-5.5.1", "rocketmq-5.5.1"): (
        "H-DELIVER-1", "the same drop after a pause: six messages a consumer popped just before it was stopped "
        "for longer than the invisible time are acked past maxReconsumeTimes unheard; the trace holds every "
        "listener call, so the SIGKILL of another consumer of the group hides none of them"),
    **{key: ("H-RETRY-1", "every 5.x proxy in local mode gives a FIFO message the queue's minimum count of the "
             "receive's offsets (not reported upstream): the poison message, received again beside fresh offsets, "
             "is delivered a third time with maxReconsumeTimes 1")
       for key in (("pop-fifo-attempts", "rocketmq-5.3.3"), ("pop-fifo-attempts-5.5.0", "rocketmq-5.5.1"))},
    ("real-orderly-pause", "rocketmq-4.9.8"): (
        None, "the committed offset falls back (INV-ORDER-3) after the client was paused: the messages it "
        "brings back are redelivered after a fault, which at-least-once delivery allows; only the offsets show "
        "that a guarantee was lost"),
}


def missing(has, g: Guarantee) -> list[str]:
    """The fields `g` needs that a history lacks (`has`: field path -> bool; `a|b`: either will do)."""
    return [n for n in g.needs if not any(has(alt) for alt in n.split("|"))]
