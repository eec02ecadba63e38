"""RebalanceImpl / RebalancePushImpl and the RebalanceService loop (digest section 2).

Every 20 s (or at once when the broker says the group changed) the client allocates each
subscribed topic's queues among the group's clients, drops the ProcessQueues it no longer
owns, creates ProcessQueues for new ones with their first pull offset, and dispatches pull
requests for them.
"""
from __future__ import annotations

import hashlib

from ..allocation import AllocationError, allocate
from ..broker.broker import BrokerUnavailable
from ..footprint import footprint
from ..message import is_retry_topic, retry_topic
from ..message_queue import MessageQueue, sort_cids, sort_mqs
from .offset_store import READ_FROM_STORE
from ..sim import Timer
from .process_queue import ProcessQueue

CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"
DEFAULT_TIMESTAMP_LOOKBACK_MS = 30 * 60 * 1000


def view_digest(mqs, cids) -> str:
    text = "|".join(f"{t},{b},{q}" for t, b, q in mqs) + "#" + "|".join(cids)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


class PullRequest:
    __slots__ = ("mq", "pq", "next_offset", "previously_locked")

    def __init__(self, mq, pq, next_offset):
        self.mq = mq
        self.pq = pq
        self.next_offset = next_offset
        self.previously_locked = False


def rebalance_footprint(rb):
    """A concurrently-consuming client's rebalance (one run of doRebalance), from the state it
    starts in: the route, each subscribed topic's member list (at every broker the chooser may
    ask), the client's table of ProcessQueues and its settings. Each queue it would take or drop
    is written whole: its ProcessQueue, its offset entry (a query of the broker for a queue
    taken, which reads the queue's committed offset and end and first delivers the client's
    one-way offset updates still on their way), its pull (dispatched at once when
    dispatch_pull_delay_ms is 0: covered here); a queue dropped sends its offset one way (a
    later millisecond). A queue it keeps: only whether it was dropped is read, and its last pull
    time when that already makes it idle (a pull sets it to now, which keeps a queue that is not
    idle so). When its table may change: the table, the pull thresholds spread over it, and the
    heartbeat it sends (heartbeat_footprint). No promise for an orderly client (locks at the
    broker)."""
    c = rb.c
    if c.orderly:
        return None
    cid = c.client_id
    taken, dropped = rb.would_change()
    reads = {("route",), ("topics",), ("up",), ("client", cid, "table"), ("client", cid, "settings")}
    writes = {("client", cid, "rebalance")}
    for name in c.net.brokers:
        reads.add(("consumers", name, c.group, "ids"))
    idle = rb.profile.pull_max_idle_ms
    for mq, pq in rb.pq_table.items():
        reads.add(("client", cid, mq, "pq"))
        if pq.is_pull_expired(rb.sim.now, idle):
            reads.add(("client", cid, mq, "pull"))
    if taken:
        writes.add(("faults", cid))
    for mq in taken:
        topic, broker, queue = mq
        reads |= {("offsets", broker, c.group, topic, queue), ("store", broker, topic, queue)}
        writes |= {("client", cid, mq), ("pull", broker, cid, mq)}
    for broker in {mq[1] for mq in taken}:
        for _timer, (group, topic, queue, _offset, _client), _inc in c.net._persists.get((cid, broker), ()):
            writes.add(("offsets", broker, group, topic, queue))
    if taken or dropped:
        writes |= {("client", cid, "table"), ("client", cid, "settings"), ("persist", cid)}
        writes |= {("client", cid, mq) for mq in dropped}
        r, w = c.heartbeat_footprint()
        reads |= r
        writes |= w
    return reads, writes


class RebalanceImpl:
    def __init__(self, consumer):
        self.c = consumer
        self.sim = consumer.sim
        self.profile = consumer.profile
        self.pq_table: dict = {}   # mq (topic, broker, queue) -> ProcessQueue
        self._timer = None
        self._last_run = None
        # #9281's fix (profile last_offset_at_start): each subscribed queue's end when start() ran
        self.start_ends: dict = {}

    # ------------------------------------------------------------------ RebalanceService
    def start(self) -> None:
        self._last_run = None       # a new life's RebalanceService has not run yet
        self._arm(self.profile.rebalance_interval_ms)

    def take_start_ends(self) -> None:
        """#9281's fix: start() reads the maxOffset of each queue of its subscribed topics (not the
        retry topic), where a first start at CONSUME_FROM_LAST_OFFSET with no offset begins."""
        c = self.c
        if c.consume_from_where != CONSUME_FROM_LAST_OFFSET:
            return
        for topic in sorted(c.subscriptions):
            if is_retry_topic(topic):
                continue
            for mq in c.net.route(topic):
                try:
                    self.start_ends[mq] = c.net.request(c, mq[1]).max_offset(mq[0], mq[2])
                except BrokerUnavailable:
                    continue

    def _arm(self, delay: int) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.sim.schedule(delay, self._service_run, owner=self.c.proc, timer=Timer())

    # (the run it arms for now is this same millisecond's: its footprint covers it)
    @footprint(rebalance_footprint)
    def rebalance_immediately(self) -> None:
        self._arm(0)

    @footprint(rebalance_footprint)
    def _service_run(self) -> None:
        self._timer = None
        p = self.profile
        minimum = p.rebalance_retry_unbalanced_ms
        if minimum is not None and self._last_run is not None and self.sim.now - self._last_run < minimum:
            self._arm(minimum - (self.sim.now - self._last_run))   # 5.x: at most one run per minInterval
            return
        balanced = self.do_rebalance()
        self._last_run = self.sim.now
        wait = p.rebalance_interval_ms if (balanced or minimum is None) else minimum
        self._arm(wait)

    # ------------------------------------------------------------------ doRebalance
    def do_rebalance(self) -> bool:
        if self.c.paused:
            return True   # a suspended consumer does not rebalance
        balanced = True
        for topic in list(self.c.subscriptions):
            if not self.rebalance_by_topic(topic):
                balanced = False
        self._truncate_not_my_topic()
        return balanced

    def _truncate_not_my_topic(self) -> None:
        for mq in [mq for mq in self.pq_table if mq[0] not in self.c.subscriptions]:
            pq = self.pq_table.pop(mq)
            if not pq.dropped:
                pq.dropped = True
                self.c.emit_pq("pq_dropped", mq, reason="unsubscribed")
            self.c.emit_pq("pq_removed", mq)

    def rebalance_by_topic(self, topic: str) -> bool:
        c = self.c
        mq_all = c.net.route(topic)
        if c.broadcasting:
            changed = self.update_pq_table(topic, set(mq_all), c.orderly and self.profile.broadcast_orderly_takes_locks)
            if changed:
                c.message_queue_changed(topic)
            return True
        if not mq_all:
            return True
        try:
            cids = c.net.find_consumer_ids(topic, c.group, c)
        except BrokerUnavailable:
            return True
        if cids is None:
            return True
        mqs = sort_mqs([MessageQueue(*mq) for mq in mq_all])
        cids = sort_cids(cids)
        mq_lists = [[m.topic, m.broker_name, m.queue_id] for m in mqs]
        view = view_digest(mq_lists, cids)
        try:
            result = self._allocate(mqs, cids)
        except AllocationError as exc:
            self.sim.emit("allocation_computed", client=c.client_id, group=c.group, topic=topic, strategy=c.strategy,
                          mqs=mq_lists, cids=cids, allocated=[], view=view, ok=False, error=str(exc))
            return False
        allocated = set()
        for m in result or ():
            allocated.add((m.topic, m.broker_name, m.queue_id))
        self.sim.emit("allocation_computed", client=c.client_id, group=c.group, topic=topic, strategy=c.strategy,
                      mqs=mq_lists, cids=cids, allocated=[list(mq) for mq in sorted(allocated)], view=view, ok=True)
        changed = self.update_pq_table(topic, allocated, c.orderly)
        if changed:
            c.message_queue_changed(topic)
        working = {mq for mq, pq in self.pq_table.items() if mq[0] == topic and not pq.dropped}
        return allocated == working

    def _allocate(self, mqs, cids):
        c = self.c
        return allocate(c.strategy, c.client_id, mqs, cids, virtual_node_cnt=c.virtual_node_cnt,
                        config_mqs=c.config_mqs, consumeridcs=c.consumeridcs)

    def would_change(self):
        """(taken, dropped) for a rebalance run now, whatever broker it asks for the group's
        members: the queues it may create a ProcessQueue for, and the held ones it may drop
        (not allocated, idle, or of a topic no longer subscribed). Reads what the run reads,
        writes nothing (rebalance_footprint)."""
        c = self.c
        now = self.sim.now
        idle = self.profile.pull_max_idle_ms
        taken = set()
        dropped = {mq for mq in self.pq_table if mq[0] not in c.subscriptions}
        for topic in c.subscriptions:
            mq_all = c.net.route(topic)
            held = {mq for mq in self.pq_table if mq[0] == topic}
            kept = {mq for mq in held if not self.pq_table[mq].is_pull_expired(now, idle)}
            if c.broadcasting:
                views = [set(mq_all)]
            elif not mq_all:
                views = []
            else:
                mqs = sort_mqs([MessageQueue(*mq) for mq in mq_all])
                views = []
                for name in sorted(c.net.brokers):
                    b = c.net.brokers[name]
                    if topic not in b.topics or not b.up:
                        continue
                    try:
                        result = self._allocate(mqs, sort_cids(b.find_consumer_ids(c.group)))
                    except AllocationError:
                        result = ()
                    views.append({(m.topic, m.broker_name, m.queue_id) for m in result or ()})
            for allocated in views:
                taken |= allocated - kept
                dropped |= (held - allocated) | (held - kept)
        return taken, dropped

    # ------------------------------------------------------------------ updateProcessQueueTableInRebalance
    def update_pq_table(self, topic: str, mq_set: set, need_lock: bool) -> bool:
        c = self.c
        now = self.sim.now
        changed = False
        victims = []
        for mq, pq in self.pq_table.items():
            if mq[0] != topic:
                continue
            if mq not in mq_set:
                victims.append((mq, pq, "reassigned"))
            elif pq.is_pull_expired(now, self.profile.pull_max_idle_ms):
                victims.append((mq, pq, "pull_expired"))
        for mq, pq, reason in victims:
            if not pq.dropped:
                pq.dropped = True
                c.emit_pq("pq_dropped", mq, reason=reason)
            if c.remove_unnecessary_message_queue(mq, pq):
                del self.pq_table[mq]
                c.emit_pq("pq_removed", mq)
                changed = True
        requests = []
        for mq in sorted(mq_set):
            if mq in self.pq_table:
                continue
            if need_lock and not c.lock(mq):
                if self.profile.rebalance_retry_unbalanced_ms is not None:
                    # 5.x rebalanceLater(500): a separate one-shot wake-up of the service, which
                    # still honours its minimum interval between runs.
                    self.sim.schedule(500, self.rebalance_immediately, owner=self.c.proc)
                continue
            c.offset_store.remove_offset(mq)   # removeDirtyOffset
            pq = ProcessQueue(now)
            if self.profile.pq_locked_on_create:
                pq.locked = True  # #5465: set unconditionally (also broadcast orderly, which takes no lock since #8772)
            next_offset = self.compute_pull_from_where(mq)
            if next_offset < 0:
                continue
            self.pq_table[mq] = pq
            if c.orderly:
                c.emit_pq("pq_created", mq, offset=next_offset, from_where=c.consume_from_where, locked=pq.locked)
            else:
                c.emit_pq("pq_created", mq, offset=next_offset, from_where=c.consume_from_where)
            if pq.locked and c.orderly:
                c.emit_pq("pq_lock_changed", mq, locked=True, last_lock_ts=pq.last_lock_ts)
            if self.profile.offset_entry_on_create:
                c.offset_store.update_offset(mq, next_offset, False)     # #10955's fix
            requests.append(PullRequest(mq, pq, next_offset))
            changed = True
        for req in requests:
            c.pull_service.execute_later(req, self.profile.dispatch_pull_delay_ms)
        return changed

    def remove_process_queue(self, mq) -> None:
        """Used after OFFSET_ILLEGAL: take the queue out now; the next rebalance may re-add it."""
        pq = self.pq_table.pop(mq, None)
        if pq is not None:
            if not pq.dropped:
                pq.dropped = True
                self.c.emit_pq("pq_dropped", mq, reason="offset_illegal")
            self.c.remove_unnecessary_message_queue(mq, pq)
            self.c.emit_pq("pq_removed", mq)

    # ------------------------------------------------------------------ computePullFromWhere
    def compute_pull_from_where(self, mq) -> int:
        """The first offset to pull, or -1 to skip the queue this round (digest section 2)."""
        c = self.c
        topic, broker, queue = mq
        last = c.offset_store.read_offset(mq, READ_FROM_STORE)
        if last >= 0:
            return last
        if last != -1:
            return -1  # 5.x throws, 4.9.x returns -1: either way the queue is skipped
        try:
            b = c.net.request(c, broker)
            where = c.consume_from_where
            if where == CONSUME_FROM_FIRST_OFFSET:
                return 0
            if where == CONSUME_FROM_TIMESTAMP:
                if is_retry_topic(topic):
                    return b.max_offset(topic, queue)
                ts = c.consume_timestamp if c.consume_timestamp is not None else self.sim.now - DEFAULT_TIMESTAMP_LOOKBACK_MS
                return b.search_offset(topic, queue, ts)
            if is_retry_topic(topic):
                return 0
            if mq in self.start_ends:
                return self.start_ends[mq]      # #9281's fix: the end when start() ran
            return b.max_offset(topic, queue)
        except BrokerUnavailable:
            return -1

    def destroy(self, reason: str) -> None:
        for mq, pq in list(self.pq_table.items()):
            if not pq.dropped:
                pq.dropped = True
                self.c.emit_pq("pq_dropped", mq, reason=reason)
        self.pq_table.clear()
        if self._timer is not None:
            self._timer.cancel()
