"""The reference broker: topics, the message store, pull processing with long polling, the
consumer table, send-back to the retry topic or the DLQ, offsets, locks and the schedule.

Calls from clients arrive as plain method calls through `reference.network` (synchronous
calls take no virtual time; pulls and one-way calls take the network latency). A broker
that is down raises BrokerUnavailable to synchronous callers.
"""
from __future__ import annotations

from rocketspec.rocketmq.profiles import SERVER_CHANNEL_MAX_IDLE_S, SERVER_CHANNEL_MAX_IDLE_TRACE_KEY
from rocketspec.rocketmq.retry import retry_delay_level

from ..footprint import footprint
from ..message import DLQ_PREFIX, Message, dlq_topic, is_retry_topic, retry_topic
from ..sim import Process
from .channels import ClientChannels
from .lock_manager import RebalanceLockManager
from .message_filter import pull_filter
from .offset_manager import ConsumerOffsetManager
from .pop import PopService
from .revive import PopReviveService
from .schedule import ScheduleMessageService
from .store import PULL_STATUS, MessageStore, response_code

BROKER_SUSPEND_MAX_TIME_MS = 15000
HOLD_SERVICE_PERIOD_MS = 5000
SHORT_POLLING_MS = 1000
CHANNEL_SCAN_PERIOD_MS = 10000
PERM_READ_WRITE = 6


def _nothing() -> None:
    pass


class BrokerUnavailable(Exception):
    pass


class PullRequestData:
    """What the client sends with a pull (PullMessageRequestHeader + subscription)."""

    __slots__ = ("client", "group", "topic", "queue", "offset", "max_nums", "subscription", "sql",
                 "commit_offset", "pull_id", "suspend", "respond", "expr_type")

    def __init__(self, *, client, group, topic, queue, offset, max_nums, subscription, sql, commit_offset,
                 pull_id, suspend, respond, expr_type):
        self.client, self.group, self.topic, self.queue, self.offset = client, group, topic, queue, offset
        self.max_nums, self.subscription, self.sql, self.commit_offset = max_nums, subscription, sql, commit_offset
        self.pull_id, self.suspend, self.respond, self.expr_type = pull_id, suspend, respond, expr_type


class Broker:
    def __init__(self, sim, name: str, profile, config: dict | None = None):
        config = config or {}
        self._config = config
        self.sim = sim
        self.name = name
        self.profile = profile
        self.proc = Process(f"broker:{name}")
        self.store = MessageStore(profile)
        self.offsets = ConsumerOffsetManager(self)
        self.locks = RebalanceLockManager(self, config.get("lock_max_live_ms", profile.broker_lock_max_live_ms))
        self.schedule = ScheduleMessageService(self, config.get("message_delay_level", profile.delay_levels))
        self.long_polling = config.get("long_polling_enable", True)
        self.enable_property_filter = config.get("enable_property_filter", False)
        self.filter_support_retry = config.get("filter_support_retry", False)
        self.retry_queue_nums = config.get("retry_queue_nums", profile.retry_queue_nums)
        self.retry_max_times = config.get("retry_max_times", 16)
        self.topics: dict[str, int] = {}
        self.consumers: dict[str, dict[str, int]] = {}       # group -> client -> last heartbeat
        self.subscriptions: dict[tuple[str, str], object] = {}  # (group, topic) -> SubscriptionData (for filterSupportRetry)
        self.held: dict[tuple[str, int], list[PullRequestData]] = {}
        self.index: dict[str, Message] = {}                  # msg_id -> stored copy (lookMessageByOffset)
        self.commitlog_offset = 0
        self.notify_group = None                             # set by the network: group -> notify clients
        self.on_idle_close = None                            # set by the network: client -> its requests fail
        self.on_reconnect = None                             # set by the network: client -> its new channel
        self.channels = ClientChannels(self, profile.server_channel_max_idle_s * 1000)
        self.on_topology_change = _nothing                   # set by the network: routes changed
        self.down_since = 0
        self.up = True
        self._matchers: dict = {}   # one compiled filter per subscription, not per pull
        # the RocksDB POP path (popConsumerKVServiceEnable; reference.broker.pop_kv)
        self.pop_kv_service = config.get("pop_consumer_kv_service", profile.pop_consumer_kv_service)
        # the POP path exists in 5.x only (profile switch `pop`)
        self.pop = PopService(self) if getattr(profile, "pop", False) else None
        self.revive = PopReviveService(self) if self.pop is not None else None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        # the configuration the spec judges by travels with the broker (schema v2, spec.limits)
        config = {
            "message_delay_level": self._config.get("message_delay_level", self.profile.delay_levels),
            "broker_lock_max_live_ms": self._config.get("lock_max_live_ms", self.profile.broker_lock_max_live_ms),
            "channel_expired_timeout_ms": self.profile.channel_expired_ms}
        if self.profile.server_channel_max_idle_s != SERVER_CHANNEL_MAX_IDLE_S:   # absent: RocketMQ's default
            config[SERVER_CHANNEL_MAX_IDLE_TRACE_KEY] = self.channels.max_idle_ms
        if self.pop_kv_service and self.pop is not None:    # absent: RocketMQ's default, off
            config["pop_consumer_kv_service"] = True
        self.sim.emit("broker_started", broker=self.name, config=config)
        self._start_periodic_services()
        self.schedule.start()

    def _start_periodic_services(self) -> None:
        p = self.profile
        self.sim.every(p.broker_offset_flush_initial_delay_ms, p.broker_offset_flush_interval_ms,
                       self.offsets.flush, owner=self.proc)
        self.sim.every(CHANNEL_SCAN_PERIOD_MS, CHANNEL_SCAN_PERIOD_MS, self._scan_channels, owner=self.proc)
        if self.revive is not None:
            self.revive.start()
        if self.pop is not None and self.pop.kv is not None:
            self.pop.kv.start()

    def stop_for_restart(self) -> None:
        self.up = False
        self.down_since = self.sim.now
        self.proc.kill()
        self.channels.clear()
        self.on_topology_change()

    def restart(self) -> None:
        """Store and flushed offsets survive; memory (offsets, locks, consumer table, held pulls) does not."""
        old = self.proc
        self.proc = Process(old.name)
        # incarnations only grow: a request sent to the old process (a one-way persist on its way,
        # network.deliver_persists) must stay stale after the restart, not match a fresh 0
        self.proc.incarnation = old.incarnation
        self.up = True
        self.on_topology_change()
        self.sim.emit("broker_restarted", broker=self.name)
        self.offsets.reload()
        self.locks.clear()
        self.consumers.clear()
        self.held.clear()
        if self.pop is not None:
            self.pop.clear()
        self._start_periodic_services()
        self.schedule.restart()

    def _check_up(self) -> None:
        if not self.up:
            raise BrokerUnavailable(f"broker {self.name} is down")

    # ------------------------------------------------------------------ topics and messages
    def create_topic(self, topic: str, queue_count: int, perm: int = PERM_READ_WRITE) -> None:
        if self.topics.get(topic) == queue_count:
            return
        self.topics[topic] = queue_count
        self.on_topology_change()
        for q in range(queue_count):
            self.store.consume_queue(topic, q)
        self.sim.emit("topic_created", topic=topic, broker=self.name, queue_count=queue_count, perm=perm)

    def _new_id(self) -> str:
        self.commitlog_offset += 1
        return f"{self.name}:{self.commitlog_offset}"

    def put_message(self, msg: Message, *, source: str = "producer", group: str | None = None) -> Message:
        """Store a message sent to this broker. A delay level diverts it to the schedule topic."""
        self._check_up()
        msg.broker = self.name
        msg.msg_id = self._new_id()
        if msg.origin_msg_id is None:
            msg.origin_msg_id = msg.msg_id
        msg.store_ts = self.sim.now
        self.index[msg.msg_id] = msg
        if msg.delay_level > 0:
            self.schedule.schedule(msg, group)
            return msg
        self._append(msg, source, group)
        return msg

    def append_and_notify(self, msg: Message, source: str) -> None:
        """Used by the schedule service: a fresh stored copy in the real topic."""
        msg.broker = self.name
        msg.msg_id = self._new_id()
        msg.store_ts = self.sim.now
        self.index[msg.msg_id] = msg
        self._append(msg, source, None)
        if msg.topic.startswith(DLQ_PREFIX):   # the pre-#2724 detour ends in the DLQ
            self._dead_lettered(msg.topic[len(DLQ_PREFIX):], msg)

    def _append(self, msg: Message, source: str, group: str | None) -> None:
        self.store.append(msg)
        sim = self.sim   # built by hand: one event per stored message is the hottest broker emit
        ev = {"seq": sim.seq, "ts": sim.now, "kind": "message_stored", "topic": msg.topic, "broker": self.name,
              "queue": msg.queue, "offset": msg.offset, "msg_id": msg.msg_id, "origin_msg_id": msg.origin_msg_id,
              "source": source}
        if msg.tags is not None:
            ev["tags"] = msg.tags
        ev["tags_code"] = msg.tags_code
        if msg.keys is not None:
            ev["keys"] = msg.keys
        if msg.props:
            ev["props"] = msg.props
        ev["body_size"] = msg.body_size
        ev["reconsume_times"] = msg.reconsume_times
        if msg.retry_topic is not None:
            ev["retry_topic"] = msg.retry_topic
        if group is not None:
            ev["group"] = group
        sim.seq += 1
        sim._sink(ev)
        self._notify_arriving(msg.topic, msg.queue)
        if self.pop is not None:
            self.pop.notify_arriving(msg.topic)

    # ------------------------------------------------------------------ consumers
    def heartbeat(self, client: str, group: str, clustering: bool) -> None:
        self._check_up()
        self.channels.io(client)
        members = self.consumers.setdefault(group, {})
        new = client not in members
        members[client] = self.sim.now
        if clustering:
            # The retry topic exists once a clustering consumer of the group heartbeats.
            self.create_topic(retry_topic(group), self.retry_queue_nums)
        if new:
            self.sim.emit("consumer_registered", broker=self.name, group=group, client=client)
            self._ids_changed(group)

    def register_subscription(self, group: str, topic: str, subscription) -> None:
        # an equal subscription from another member changes nothing (the one held stays: the
        # broker's state does not depend on which member heartbeat last)
        if self.subscriptions.get((group, topic)) != subscription:
            self.subscriptions[(group, topic)] = subscription

    def unregister(self, client: str, group: str) -> None:
        self._check_up()
        self.channels.io(client)
        if self.consumers.get(group, {}).pop(client, None) is not None:
            self.sim.emit("consumer_unregistered", broker=self.name, group=group, client=client, reason="shutdown")
            self._ids_changed(group)

    def channel_closed(self, client: str) -> None:
        """ClientHousekeepingService.onChannelClose: the client's connection closed (its process
        was killed and the OS closed its sockets). ConsumerManager.doChannelCloseEvent removes it
        from every group at once and notifies each group's remaining members. Locks stay until
        they expire (RebalanceLockManager is not told)."""
        if not self.up:
            return   # a down broker has no channel to close
        self.channels.forget(client)
        self._leave_groups(client)

    def _leave_groups(self, client: str) -> None:
        for group, members in self.consumers.items():
            if members.pop(client, None) is not None:
                self.sim.emit("consumer_unregistered", broker=self.name, group=group, client=client,
                              reason="channel_closed")
                self._ids_changed(group)

    def idle_closed(self, client: str) -> None:
        """NettyConnectManageHandler.userEventTriggered(ALL_IDLE) closed the client's channel
        (reference.broker.channels); onChannelIdle and onChannelClose both run
        doChannelCloseEvent, which unregisters it as a killed client's close does."""
        self._close_channel(client)
        self._leave_groups(client)

    def _close_channel(self, client: str) -> None:
        """The broker closes a client's channel. What the client asked on it gets no answer: a
        held pull is answered into a closed channel, and the client's request fails when its
        timeout runs out (on_idle_close). The client's next request opens a new channel."""
        self.channels.close(client)
        for key, waiting in self.held.items():
            if any(req.client == client for req in waiting):
                self.held[key] = [req for req in waiting if req.client != client]
        if self.pop is not None:
            self.pop.drop_held(client)
        if self.on_idle_close is not None:
            self.on_idle_close(self, client)

    # the group's members are told through the network (a later millisecond); an expired
    # client's held pulls are dropped with its channel
    @footprint(lambda self: ({("clients",)}, {("consumers", self.name)} | (
        {("held", self.name), ("pull", self.name)} if self._expiring() else set())))
    def _scan_channels(self) -> None:
        now = self.sim.now
        for group, members in self.consumers.items():
            for client, last in list(members.items()):
                if now - last > self.profile.channel_expired_ms:
                    del members[client]
                    if self.channels.is_open(client):   # scanNotActiveChannel closes it too
                        self._close_channel(client)
                    self.sim.emit("consumer_unregistered", broker=self.name, group=group, client=client,
                                  reason="channel_expired")
                    self._ids_changed(group)

    def _expiring(self) -> bool:
        """Whether the channel scan run now expires a client."""
        now, expiry = self.sim.now, self.profile.channel_expired_ms
        return any(now - last > expiry for members in self.consumers.values() for last in members.values())

    def _ids_changed(self, group: str) -> None:
        if self.notify_group is not None:
            self.notify_group(self, group)

    def find_consumer_ids(self, group: str) -> list[str]:
        self._check_up()
        return list(self.consumers.get(group, {}))

    # ------------------------------------------------------------------ offsets
    def query_consumer_offset(self, group: str, topic: str, queue: int) -> int | None:
        """None means QUERY_NOT_FOUND. With no offset, ConsumerManageProcessor.queryConsumerOffset
        answers 0 itself when the queue's min offset is 0 and (profile `broker_zero_if_not_found`)
        4.9.x "not_on_disk": offset 0 is not on disk (!checkInDiskByConsumeOffset: also when the
        queue has no entry at 0, i.e. it is empty); 5.x "in_memory": offset 0 is in memory
        (checkInMemByConsumeOffset(0, 1): the entry must exist, so an empty queue is not found).
        The reference store keeps every message in memory (a small broker's commit log is far
        below accessMessageInMemoryMaxRatio of RAM), so only the entry's existence differs."""
        self._check_up()
        off = self.offsets.query(group, topic, queue)
        if off >= 0:
            return off
        if self.store.min_offset(topic, queue) <= 0 and (
                self.profile.broker_zero_if_not_found == "not_on_disk" or self.store.max_offset(topic, queue) > 0):
            return 0
        return None

    def update_consumer_offset(self, group, topic, queue, offset, client) -> None:
        if self.up:
            self.channels.io(client)
            self.offsets.commit(group, topic, queue, offset, client=client, source="persist")

    def min_offset(self, topic, queue) -> int:
        self._check_up()
        return self.store.min_offset(topic, queue)

    def max_offset(self, topic, queue) -> int:
        self._check_up()
        return self.store.max_offset(topic, queue)

    def search_offset(self, topic, queue, timestamp: int) -> int:
        """First offset whose store time is >= timestamp (max offset if none)."""
        self._check_up()
        cq = self.store.consume_queue(topic, queue)
        for m in cq.messages[cq.min_offset:]:
            if m is not None and m.store_ts >= timestamp:
                return m.offset
        return cq.max_offset

    # ------------------------------------------------------------------ locks
    def lock_batch(self, group: str, mqs: list, client: str) -> set:
        self._check_up()
        self.channels.io(client)
        return self.locks.try_lock_batch(group, mqs, client)

    def unlock_batch(self, group: str, mqs: list, client: str) -> None:
        if self.up:
            self.channels.io(client)
            self.locks.unlock_batch(group, mqs, client)

    # ------------------------------------------------------------------ pull
    def pull(self, req: PullRequestData) -> None:
        """Process a pull; the answer goes to req.respond(result, status) now or after a hold."""
        self._check_up()
        self.channels.io(req.client)
        if req.commit_offset is not None and req.commit_offset >= 0 and req.suspend:
            self.offsets.commit(req.group, req.topic, req.queue, req.commit_offset, client=req.client, source="pull")
        if req.expr_type == "SQL92" and not self.enable_property_filter:
            req.respond(None, "SYSTEM_ERROR")
            return
        self._process(req)

    def _matcher(self, req: PullRequestData):
        key = (req.group, req.topic, id(req.subscription), id(req.sql))
        m = self._matchers.get(key)
        if m is None or m[0] is not req.subscription:
            m = self._matchers[key] = (req.subscription, pull_filter(self, req))
        return m[1]

    def _process(self, req: PullRequestData) -> bool:
        result = self.store.get_message(req.topic, req.queue, req.offset, req.max_nums, self._matcher(req))
        code = response_code(result.status, req.offset)
        if code == "PULL_NOT_FOUND" and req.suspend:
            self._hold(req)
            return False
        req.respond(result, PULL_STATUS[code])
        return True

    def _hold(self, req: PullRequestData) -> None:
        key = (req.topic, req.queue)
        self.held.setdefault(key, []).append(req)
        hold_ms = BROKER_SUSPEND_MAX_TIME_MS if self.long_polling else SHORT_POLLING_MS
        period = HOLD_SERVICE_PERIOD_MS if self.long_polling else SHORT_POLLING_MS
        deadline = self.sim.now + hold_ms
        # The hold service wakes every `period` ms; it answers the request at the first wake after the deadline.
        wake = -(-deadline // period) * period
        self.sim.emit("pull_held", client=req.client, group=req.group, topic=req.topic, broker=self.name,
                      queue=req.queue, pull_id=req.pull_id, offset=req.offset, duration=wake - self.sim.now)
        self.sim.schedule(wake - self.sim.now, self._hold_timeout, req, owner=self.proc)

    # the answer travels back through the network; the filter cache (_matchers) is no state
    @footprint(lambda self, req: ({("store", self.name, req.topic, req.queue), ("alive", req.client)},
                                  {("held", self.name, req.topic, req.queue), ("pull", self.name, req.client, req.pull_id)}))
    def _hold_timeout(self, req: PullRequestData) -> None:
        waiting = self.held.get((req.topic, req.queue), [])
        if req in waiting:
            waiting.remove(req)
            req.suspend = False
            self._process(req)

    def _notify_arriving(self, topic: str, queue: int) -> None:
        waiting = self.held.get((topic, queue))
        if not waiting:
            return
        max_off = self.store.max_offset(topic, queue)
        keep = []
        for req in waiting:
            if max_off > req.offset:
                req.suspend = False  # re-run once; a miss now answers NO_NEW_MSG / NO_MATCHED_MSG
                self._process(req)
            else:
                keep.append(req)
        self.held[(topic, queue)] = keep

    # ------------------------------------------------------------------ send back, retry, DLQ
    def consumer_send_msg_back(self, group: str, msg_id: str, delay_level: int, max_reconsume_times: int,
                               client: str) -> None:
        """consumerSendMsgBack: the stored copy (not the client's) decides the count."""
        self._check_up()
        original = self.index.get(msg_id)
        if original is None:
            raise BrokerUnavailable(f"message {msg_id} not found on {self.name}")
        if self.retry_queue_nums <= 0:
            self.sim.emit("message_sent_back", broker=self.name, group=group, msg_id=msg_id,
                          origin_msg_id=original.origin_msg_id, reconsume_times=original.reconsume_times,
                          outcome="discarded", via="consumer_send_back", client=client)
            return
        r = original.reconsume_times
        max_times = max_reconsume_times if max_reconsume_times is not None else self.retry_max_times
        new = original.clone()
        new.msg_id = None
        new.retry_topic = original.retry_topic or original.topic
        new.reconsume_times = r + 1
        new.origin_msg_id = original.origin_msg_id
        if r >= max_times or delay_level < 0:
            self.sim.emit("message_sent_back", broker=self.name, group=group, msg_id=msg_id,
                          origin_msg_id=original.origin_msg_id, reconsume_times=r, outcome="dlq",
                          delay_level=delay_level, via="consumer_send_back", client=client)
            self._put_dlq(group, new, kept_delay_level=min(retry_delay_level(r), self.schedule.max_level))
            return
        level = retry_delay_level(r) if delay_level == 0 else delay_level
        self.sim.emit("message_sent_back", broker=self.name, group=group, msg_id=msg_id,
                      origin_msg_id=original.origin_msg_id, reconsume_times=r, outcome="retry",
                      delay_level=level, via="consumer_send_back", client=client)
        new.topic = retry_topic(group)
        new.queue = self.sim.chooser.pick_index("retry_queue", self.retry_queue_nums)
        new.delay_level = level
        self.create_topic(new.topic, self.retry_queue_nums)
        self.put_message(new, source="send_back", group=group)

    def send_to_retry_topic(self, group: str, msg: Message, reconsume_times: int, max_reconsume_times: int,
                            delay_level: int, via: str, client: str) -> None:
        """A producer send to %RETRY%group (sendMessageBackAsNormalMessage, orderly DLQ path):
        handleRetryAndDLQ decides between the retry topic and the DLQ by the header count."""
        self._check_up()
        mode = self.profile.retry_dlq_compare
        max_times = max_reconsume_times if max_reconsume_times is not None else self.retry_max_times
        if mode == "ge":
            to_dlq = reconsume_times >= max_times
        elif mode == "gt":
            to_dlq = reconsume_times > max_times
        else:  # gt_or_locked: 5.1.1+ also dead-letters for a group that holds orderly locks
            to_dlq = reconsume_times > max_times or not self.locks.is_lock_all_expired(group)
        new = msg.clone()
        new.msg_id = None
        new.reconsume_times = reconsume_times
        new.retry_topic = msg.retry_topic or msg.topic
        self.sim.emit("message_sent_back", broker=self.name, group=group, msg_id=msg.msg_id,
                      origin_msg_id=msg.origin_msg_id, reconsume_times=reconsume_times,
                      outcome="dlq" if to_dlq else "retry", delay_level=None if to_dlq else delay_level,
                      via=via, client=client)
        if to_dlq:
            # handleRetryAndDLQ clears the level, but 4.9.x then reinstalls the request's
            # properties, DELAY with them: the copy waits in the schedule first
            self._put_dlq(group, new, request_delay_level=delay_level)
            return
        new.topic = retry_topic(group)
        new.queue = self.sim.chooser.pick_index("retry_queue", max(1, self.retry_queue_nums))
        new.delay_level = delay_level
        self.create_topic(new.topic, max(1, self.retry_queue_nums))
        self.put_message(new, source="send_back_fallback" if via == "fallback_producer" else "send_back", group=group)

    def _put_dlq(self, group: str, msg: Message, kept_delay_level: int = 0, request_delay_level: int = 0) -> None:
        """kept_delay_level: a consumer send-back's level; request_delay_level: the DELAY a producer
        send to %RETRY% carried."""
        msg.topic = dlq_topic(group)
        msg.queue = 0
        # #2724 (fixed 4.9.2): the DLQ copy must not go through the schedule again. Before the
        # fix it kept the DELAY level of the send-back, took one more schedule trip, and only
        # then landed in %DLQ%.
        msg.delay_level = 0 if self.profile.dlq_clears_delay else kept_delay_level
        if self.profile.producer_dlq_keeps_delay and not msg.delay_level:
            # the fix is in consumerSendMsgBack only: 4.9.x's send path reinstalls the request's
            # properties after handleRetryAndDLQ cleared the level, so DELAY comes back
            msg.delay_level = request_delay_level
        self.create_topic(msg.topic, 1)
        stored = self.put_message(msg, source="dlq", group=group)
        if stored.delay_level == 0:
            self._dead_lettered(group, stored)

    def _dead_lettered(self, group: str, stored: Message) -> None:
        self.sim.emit("message_dead_lettered", broker=self.name, group=group, msg_id=stored.msg_id,
                      origin_msg_id=stored.origin_msg_id, reconsume_times=stored.reconsume_times,
                      offset=stored.offset)

    def is_dlq(self, topic: str) -> bool:
        return topic.startswith(DLQ_PREFIX)

    def is_retry(self, topic: str) -> bool:
        return is_retry_topic(topic)
