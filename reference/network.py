"""How clients reach brokers in the simulation, and the network faults.

Synchronous calls (lock, offset query, send-back, heartbeat) take no virtual time and raise
BrokerUnavailable when the broker is down. Pulls take `latency_ms` each way. One-way calls
(offset persist, unlock, group-change notification) take `latency_ms` and may be lost with
probability `oneway_loss`; a loss is recorded as an event, so a trace explains itself.
"""
from __future__ import annotations

import functools

from .footprint import footprint
from .sim import Timer
from .broker.broker import Broker, BrokerUnavailable


class Faults:
    def __init__(self):
        self.oneway_loss = 0.0
        self.offset_query_failures: dict[str, int] = {}   # client -> failures still to inject
        self.offset_query_failure_kind: dict[str, str] = {}  # client -> "timeout" | "broker_error"
        self.offset_query_skip: dict[str, int] = {}       # client -> queries that succeed first
        # a send-back (consumerSendMessageBack and the producer fallback) that finds no broker:
        # the probability of the choice point send_back_fails (0: never asked)
        self.send_back_failure = 0.0
        # a consumerSendMessageBack whose answer never comes (a timeout, the broker did not take it)
        # while the broker is up: the client falls back to its producer; the probability of the
        # choice point send_back_throws (0: never asked)
        self.send_back_throw = 0.0
        self.offset_query_failure_rate = 0.0   # choice point offset_query_fails (0: never asked)
        self.lost_routes: set = set()   # (topic, broker, queue) out of the name server's route
        # a pop's answer lost between the proxy and a gRPC client: the probability of the choice
        # point pop_response_lost (0: never asked), and answers still to lose per client (a
        # scenario's lose_pop_responses step)
        self.pop_response_loss = 0.0
        self.pop_responses_to_lose: dict[str, int] = {}

    def take_offset_query_failure(self, client: str, chooser=None) -> str | None:
        """The kind of failure the client's next offset query meets, or None."""
        if self.offset_query_failure_rate and chooser is not None and chooser.chance(
                "offset_query_fails", self.offset_query_failure_rate):
            return "timeout"
        skip = self.offset_query_skip.get(client, 0)
        if skip > 0:
            self.offset_query_skip[client] = skip - 1
            return None
        n = self.offset_query_failures.get(client, 0)
        if n > 0:
            self.offset_query_failures[client] = n - 1
            return self.offset_query_failure_kind.get(client, "timeout")
        return None


# The name server drops a broker that has not registered for this long (BROKER_CHANNEL_EXPIRED_TIME).
NAMESRV_BROKER_EXPIRED_MS = 120000


class Network:
    def __init__(self, sim, latency_ms: int = 1):
        self.sim = sim
        self.latency_ms = latency_ms
        self.brokers: dict[str, Broker] = {}
        self.clients: dict[str, object] = {}
        self.faults = Faults()
        self.proxy_handles = None   # the gRPC proxy's receipt handles (reference.client.proxy_handles), once used
        self._routes: dict[str, tuple[list, int]] = {}   # topic -> (route, valid until)
        # one-way offset updates on their way, per (client, broker) channel: a later request of the
        # same client on that channel reaches the broker after them (see deliver_persists)
        self._persists: dict[tuple[str, str], list] = {}
        self._unlocks: dict[tuple[str, str], list] = {}     # one-way unlocks on their way, alike (deliver_unlocks)
        # broker -> (client, pull id) -> (client, on_error, time sent): pulls not answered yet
        self._pulls: dict[str, dict] = {}

    def add_broker(self, broker: Broker) -> None:
        self.brokers[broker.name] = broker
        broker.notify_group = self._notify_group
        broker.on_idle_close = self._channel_closed_by_broker
        broker.on_reconnect = self._reconnected
        broker.on_topology_change = self._routes.clear

    def broker(self, name: str) -> Broker:
        b = self.brokers.get(name)
        if b is None or not b.up:
            raise BrokerUnavailable(f"broker {name} is unavailable")
        return b

    def request(self, consumer, name: str) -> Broker:
        """The broker, for a synchronous request of the client whose broker call does not name
        the client: the request is a read on the client's channel (broker.channels)."""
        b = self.broker(name)
        b.channels.io(consumer.client_id)
        return b

    # ---------------------------------------------------------------- routes
    def route(self, topic: str) -> list[tuple[str, str, int]]:
        """The name server's view: every queue of the topic on every broker that has it,
        except brokers down for longer than the name server's expiry."""
        now = self.sim.now
        cached = self._routes.get(topic)
        if cached is not None and now < cached[1]:
            return cached[0]
        out, valid_until = [], 1 << 62
        for name in sorted(self.brokers):
            b = self.brokers[name]
            n = b.topics.get(topic)
            if not n:
                continue
            if not b.up:
                expiry = b.down_since + NAMESRV_BROKER_EXPIRED_MS
                if now > expiry:
                    continue
                valid_until = min(valid_until, expiry + 1)
            out.extend((topic, name, q) for q in range(n) if (topic, name, q) not in self.faults.lost_routes)
        self._routes[topic] = (out, valid_until)
        return out

    def lose_route(self, topic: str, broker: str, queue: int, duration_ms: int) -> None:
        """A queue drops out of the name server's route (its broker's registration of the topic
        lapsed) and comes back duration_ms later: clients see it at their next rebalance."""
        self.faults.lost_routes.add((topic, broker, queue))
        self._routes.clear()
        self.sim.schedule(duration_ms, self.restore_route, topic, broker, queue)

    def restore_route(self, topic: str, broker: str, queue: int) -> None:
        self.faults.lost_routes.discard((topic, broker, queue))
        self._routes.clear()

    def find_consumer_ids(self, topic: str, group: str, consumer):
        """Asks one random broker that hosts the topic, as findConsumerIdList does."""
        hosts = [n for n in sorted(self.brokers) if topic in self.brokers[n].topics]
        if not hosts:
            return None
        return self.request(consumer, self.sim.chooser.pick("route_broker", hosts)).find_consumer_ids(group)

    def lose_pop_response(self, consumer, mq, pop_id: int, found: bool) -> bool:
        """Whether the answer of a gRPC client's receive is lost on its way from the proxy (the
        event says so); the client learns nothing until its deadline. The choice point is asked
        only of an answer that holds messages (a lost empty answer leaves nothing held)."""
        n = self.faults.pop_responses_to_lose.get(consumer.client_id, 0)
        if n > 0:
            self.faults.pop_responses_to_lose[consumer.client_id] = n - 1
        elif not found or not self.sim.chooser.chance("pop_response_lost", self.faults.pop_response_loss):
            return False
        self.sim.emit("pop_response_lost", client=consumer.client_id, group=consumer.group, topic=mq[0],
                      broker=mq[1], pop_id=pop_id)
        return True

    # ---------------------------------------------------------------- one-way calls
    def _lost(self, call: str, **where) -> bool:
        if self.sim.chooser.chance("oneway_loss", self.faults.oneway_loss):
            self.sim.emit("oneway_lost", call=call, **where)
            return True
        return False

    def oneway_update_offset(self, consumer, mq, offset: int, reason: str) -> None:
        topic, broker_name, queue = mq
        lost = self.sim.chooser.chance("oneway_loss", self.faults.oneway_loss)
        self.sim.emit("offset_persisted", client=consumer.client_id, group=consumer.group, topic=topic,
                      broker=broker_name, queue=queue, offset=offset, lost=lost, reason=reason)
        b = self.brokers.get(broker_name)
        if lost or b is None or not b.up:
            return
        item = (Timer(), (consumer.group, topic, queue, offset, consumer.client_id), b.proc.incarnation)
        self._persists.setdefault((consumer.client_id, broker_name), []).append(item)
        self.sim.schedule(self.latency_ms, self._persist_arrives, broker_name, item, owner=b.proc, timer=item[0])

    # item[1]: (group, topic, queue, offset, client); removing it from the channel's list
    # commutes with removing another
    @footprint(lambda self, broker_name, item: (
        {("up", broker_name), ("alive", item[1][4])},
        {("persist", item[1][4], broker_name, item[1][0], item[1][1], item[1][2]),
         ("offsets", broker_name, item[1][0], item[1][1], item[1][2])}))
    def _persist_arrives(self, broker_name: str, item) -> None:
        _off_the_wire(self._persists, item[1][4], broker_name, item)
        self.brokers[broker_name].update_consumer_offset(*item[1])

    def broker_stopped(self, broker_name: str) -> None:
        """The broker's process died: each client's connection to it closes, and 4.9.8's
        NettyRemotingClient fails the requests still waiting on that channel at once (failFast on
        close): a pull on its way or held by the broker ends in PullCallback.onException, and the
        client pulls again after pullTimeDelayMillsWhenException."""
        for key, (consumer, on_error, _sent) in sorted(self._pulls.pop(broker_name, {}).items()):
            self.sim.schedule(self.latency_ms, on_error, owner=consumer.proc)

    def _channel_closed_by_broker(self, broker: Broker, client_id: str) -> None:
        """The broker closed the client's channel (its idle close, or its channel expiry). The
        client learns it only by reading the close (a frozen client, when it thaws): the close
        arrives as an end of stream, which 4.9.8's NettyRemotingClient handles without failFast,
        so a pull still waiting fails when scanResponseTable finds it past its timeout
        (CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND plus the scan's second)."""
        inflight = self._pulls.get(broker.name, {})
        for key in sorted(k for k in inflight if k[0] == client_id):
            consumer, on_error, sent = inflight.pop(key)
            p = consumer.profile
            due = sent + p.pull_suspend_timeout_ms + p.response_timeout_grace_ms
            self.sim.schedule(max(self.latency_ms, due - self.sim.now), on_error, owner=consumer.proc)

    def deliver_persists(self, consumer, broker_name: str) -> None:
        """The client's one-way offset updates to the broker still on their way arrive now: a
        request the client sends next on the same channel (queryConsumerOffset) is read after them
        (one connection, in order; the broker's ConsumerManageProcessor takes both from one
        executor queue). Another client's persist may still overtake it."""
        self._arrive_now(self._persists, consumer, broker_name, "update_consumer_offset")

    def _arrive_now(self, on_way: dict, consumer, broker_name: str, method: str) -> None:
        """The one-way calls of `on_way` from the client to the broker reach it now, in the order
        sent, each applied by the broker's `method`; their own arrival tasks are cancelled."""
        pending = on_way.pop((consumer.client_id, broker_name), None)
        b = self.brokers.get(broker_name)
        for timer, args, incarnation in pending or ():
            timer.cancel()
            # (a broker that restarted since lost what was on its way)
            if b is not None and b.up and b.proc.incarnation == incarnation:
                getattr(b, method)(*args)

    def oneway_unlock(self, consumer, broker_name: str, mqs: list) -> None:
        b = self.brokers.get(broker_name)
        if b is None or not b.up or self._lost("unlock", client=consumer.client_id, broker=broker_name,
                                                  group=consumer.group):
            return
        item = (Timer(), (consumer.group, mqs, consumer.client_id), b.proc.incarnation)
        self._unlocks.setdefault((consumer.client_id, broker_name), []).append(item)
        self.sim.schedule(self.latency_ms, self._unlock_arrives, broker_name, item, owner=b.proc, timer=item[0])

    def _unlock_arrives(self, broker_name: str, item) -> None:
        _off_the_wire(self._unlocks, item[1][2], broker_name, item)
        self.brokers[broker_name].unlock_batch(*item[1])

    def deliver_unlocks(self, consumer, broker_name: str) -> None:
        """The client's one-way unlocks to the broker still on their way arrive now: its lock
        request, sent next on the same channel, is read after them (one connection, in order), so
        the reference never lets an unlock sent before a lock release what that lock takes. Real
        brokers can: LOCK_BATCH_MQ and UNLOCK_BATCH_MQ go to adminBrokerExecutor, 16 threads
        (BrokerController 5.5.1 line 1301), and random real run 18125 had the older unlock handled
        1 ms after the lock (the spec names that race under INV-OWNER-2); not modelled here."""
        self._arrive_now(self._unlocks, consumer, broker_name, "unlock_batch")

    def _reconnected(self, broker: Broker, client_id: str) -> None:
        """The client opened a new channel to a broker that had closed its old one. From 5.1.4
        its channel listener (onChannelActive) sends that broker a heartbeat at once and then
        rebalances; 4.9.x waits for its next scheduled heartbeat (profile heartbeat_on_reconnect)."""
        c = self.clients.get(client_id)
        if c is not None and c.proc.alive and c.profile.heartbeat_on_reconnect:
            self.sim.schedule(self.latency_ms, c.heartbeat_on_connect, broker.name, owner=c.proc)

    def _notify_group(self, broker: Broker, group: str) -> None:
        """NOTIFY_CONSUMER_IDS_CHANGED to every member of the group (one-way)."""
        for client_id in sorted(broker.consumers.get(group, {})):
            broker.channels.io(client_id)   # written on the member's channel, frozen or not
            c = self.clients.get(client_id)
            if c is None or not c.proc.alive:
                continue
            if self._lost("notify_consumer_ids_changed", client=client_id, broker=broker.name, group=group):
                continue
            self.sim.schedule(self.latency_ms, c.rebalance.rebalance_immediately, owner=c.proc)

    # ---------------------------------------------------------------- async pull
    def pull_async(self, consumer, broker_name: str, req, on_error) -> None:
        b = self.brokers.get(broker_name)
        if b is None or not b.up:
            self.sim.schedule(self.latency_ms, on_error, owner=consumer.proc)
            return
        # until answered, the pull fails with its channel (broker_stopped)
        inflight = self._pulls.setdefault(broker_name, {})
        key = (consumer.client_id, req.pull_id)
        inflight[key] = (consumer, on_error, self.sim.now)
        # a partial, not a closure: the explorer pickles the world (tasks are data)
        req.respond = functools.partial(self._pull_answered, broker_name, key, req.respond)

        self.sim.schedule(self.latency_ms, self._pull_arrives, b, req, owner=b.proc)

    def _pull_answered(self, broker_name: str, key, respond, result, status) -> None:
        self._pulls.get(broker_name, {}).pop(key, None)
        self.brokers[broker_name].channels.io(key[0])   # the answer is a write on the client's channel
        respond(result, status)

    # the commit a pull carries, the queue read, and a hold or an answer (on its way back later)
    @staticmethod
    @footprint(lambda b, req: ({("up", b.name), ("store", b.name, req.topic, req.queue), ("alive", req.client),
                                ("subscriptions", b.name, req.group)},
                               {("offsets", b.name, req.group, req.topic, req.queue),
                                ("held", b.name, req.topic, req.queue), ("pull", b.name, req.client, req.pull_id)}))
    def _pull_arrives(b, req) -> None:
        if b.up:
            b.pull(req)


def _off_the_wire(on_way: dict, client: str, broker_name: str, item) -> None:
    """A one-way call has reached the broker: it is no longer on its way on that channel."""
    pending = on_way.get((client, broker_name))
    if pending is not None and item in pending:
        pending.remove(item)
