"""POP state: what the spec remembers of each message copy a POP consumer group can be handed.

``SpecState.pop[(group, stored topic, broker, queue)]`` -> PopQueue: the copies of that queue the
trace named (by offset), and, for orderly POP, the queue's order info (the last attempt's
offsets, pop time, attempt id, acks and per-offset visibility). A copy of a revived message
lives in the group's POP retry topic's queue: the same message, another copy.

A copy's handle is *current* from its pop (or from the change of invisible time that issued
it) until it is acked, replaced by a change, revived, dead-lettered or (orderly) popped again
under a new pop time; it is *valid* while current and before its deadline (pop time +
invisible time). The spec identifies a handle by its pop time, as the broker does
(ExtraInfoUtil: an ack or change is matched to a checkpoint or order info by pop time).

A broker restart brings the consume offsets back from their last flush (every 5 s) and the
order info from its own (every 10 s), while checkpoints stay in the revive log: what was popped
or acked since the flush is popped again (at-least-once, ANOM-DUP-1). The spec sees a restart
through the broker's restart count (SpecState.dir.brokers) the first time a POP event of the
queue follows it (`PopQueue.restarts`).
"""
from __future__ import annotations

from rocketspec.rocketmq.pop import order_consumed_count

# a copy's status
STORED = "stored"           # known (a revived copy), not handed out yet
HELD = "held"               # handed out under a current handle
ACKED = "acked"             # done: acked under a current handle
REVIVED = "revived"         # its deadline passed un-acked: a copy went to the retry topic
DEAD = "dead_lettered"      # sent to %DLQ%<group>
SKIPPED = "skipped"         # revive found nothing to revive (message, topic or group gone)
LOST = "lost"               # revive gave up (outcome dropped)
DONE = (ACKED, REVIVED, DEAD, SKIPPED, LOST)
# (the statuses are the states of spec.lifecycles.PopMessageLifecycle, plus LOST: a violation's)


class Copy:
    __slots__ = ("msg_id", "origin", "reconsume", "status", "handle", "pop_time", "deadline", "client",
                 "order", "suspend", "since", "popped", "restarted", "prior", "stored_at", "same_key_deleted",
                 "calls", "attempts")

    def __init__(self, msg_id=None, origin=None, reconsume=None, status=STORED, since=0):
        self.msg_id, self.origin, self.reconsume = msg_id, origin, reconsume
        self.status = status
        self.handle = None          # the current handle (string as issued), None when none is
        self.pop_time = None        # the current handle's pop time
        self.deadline = None        # pop_time + invisible time of the current handle
        self.client = None          # who holds the current handle
        self.order = False
        self.suspend = False        # the last change was a suspend (the revived copy keeps its count)
        self.since = since          # ts of the last status change
        self.popped = 0             # how many times it was handed out
        self.restarted = False      # held or acked when its broker restarted, untouched since
        # pop time -> deadline of checkpoints the broker still holds for this copy besides the
        # current handle's: a re-pop after a restart leaves the earlier pop's checkpoint waiting
        # in the revive log, and its holder may still ack or change it
        self.prior: dict = {}
        self.stored_at = None       # its store time, where the spec keeps it (StoredQueue.stored_at)
        # the last change of invisible time kept the deadline, and the profile's KV path deletes
        # the old key even then: the new record is gone (#10276)
        self.same_key_deleted = False
        # listener calls on it since it was last handed out (a gRPC PushConsumer retries a FIFO
        # message in the client, under the one handle, before it forwards it to the DLQ)
        self.calls = 0
        # orderly: the earlier attempts the broker counts for its current pop (None: not orderly,
        # or not known since a restart reloaded the order info)
        self.attempts = None

    def current(self, pop_time) -> bool:
        """The handle of `pop_time` is this copy's current one. A dead-lettered copy keeps its
        handle until the ack that follows the DLQ put (the proxy acks the handle it popped)."""
        return self.status in (HELD, DEAD) and self.handle is not None and self.pop_time == pop_time

    def valid_at(self, ts) -> bool:
        return self.status == HELD and self.deadline is not None and ts < self.deadline


class OrderInfo:
    """ConsumerOrderInfoManager's OrderInfo of one queue: the last orderly attempt."""
    __slots__ = ("pop_time", "attempt_id", "offsets", "acked", "visible", "counts", "known", "last")

    def __init__(self, pop_time, attempt_id, last=None, known=True):
        self.pop_time, self.attempt_id = pop_time, attempt_id
        self.offsets: list = []         # popped offsets of the attempt, ascending
        self.acked: set = set()
        self.visible: dict = {}         # offset -> when it becomes visible again
        # the attempt before this one (its own `last` dropped), whose counts this one's carry on
        self.last = last
        # offset -> earlier attempts that handed it out (offsetConsumedCount); the same attempt id
        # keeps the last pop's map whole, offsets this pop does not hand out too. `known` is off
        # while a restart's reload (an older flush) may have replaced the counts the spec carried
        same = last is not None and attempt_id is not None and last.attempt_id == attempt_id
        self.counts: dict = dict(last.counts) if same else {}
        self.known = known

    def add(self, off, attempt_id):
        """An offset of this attempt's pop; its count, as the broker merges it."""
        self.offsets.append(off)
        last = self.last
        self.counts[off] = n = (order_consumed_count(last.attempt_id, last.offsets, last.counts, attempt_id, off)
                                if last is not None else 0)
        return n

    def unacked(self):
        return [o for o in self.offsets if o not in self.acked]

    def blocking(self, ts):
        """The offsets that still block the queue at `ts` (OrderInfo.needBlock): un-acked and
        not yet visible again."""
        return [o for o in self.unacked() if ts < self.visible.get(o, 0)]


class Asked:
    """An orderly pop carrying an attempt id, from its request to its answer: what it asked for
    and the (queue, offset) pairs handed out under it."""
    __slots__ = ("group", "topic", "broker", "queue", "attempt_id", "max_nums", "popped")

    def __init__(self, group, topic, broker, queue, attempt_id, max_nums):
        self.group, self.topic, self.broker, self.queue = group, topic, broker, queue
        self.attempt_id, self.max_nums = attempt_id, max_nums
        self.popped: set = set()


class PopQueue:
    __slots__ = ("key", "copies", "order", "restarts", "reloaded")

    def __init__(self, key):
        self.key = key
        self.copies: dict[int, Copy] = {}
        self.order: OrderInfo | None = None
        self.restarts = 0           # the broker's restarts the spec has applied to this queue
        self.reloaded = False       # orderly: a restart since the last attempt (order info from its flush)


def pop_queue(st, group, topic, broker, queue) -> PopQueue:
    key = (group, topic, broker, queue)
    pq = st.pop.get(key)
    if pq is None:
        pq = st.pop[key] = PopQueue(key)
        pq.restarts = st.dir.brokers.get(broker, 0)
    return pq
