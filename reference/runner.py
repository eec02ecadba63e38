"""Run a scenario on the reference broker and client and emit its trace.

`run(scenario, seed, profile, sink)` builds brokers, topics, producers and the step
timeline on one simulator, runs the scenario's duration, then keeps running until the
system is quiescent (everything consumed or dead-lettered, offsets committed) or the drain limit passes, and
ends the trace with `trace_ended` (reason quiescent, horizon when nothing waits on the clock at the
drain limit, else duration).
"""
from __future__ import annotations

import dataclasses

from rocketspec.rocketmq.filter import java_string_hash, tags_code

from rocketspec.rocketmq.profiles import BROKER_TIMING_KEYS, CLIENT_TIMING_KEYS, get_profile
from rocketspec.traces.schema import SCHEMA_VERSION

from .broker.broker import Broker, BrokerUnavailable
from .broker.retention import expire_oldest
from .footprint import CLOCK, footprint
from .client.grpc_push_consumer import GrpcPushConsumer
from .client.pop_consumer import BROKER_SUSPEND_MAX_TIME_MS, PopConsumer
from .client.push_consumer import PushConsumer
from .message import Message
from .scenario import CRASH_MODES
from .network import Network
from .sim import Simulator

QUIESCENCE_CHECK_MS = 1000
# A listener call this recent at the horizon: the run is still working. A SimpleConsumer takes one
# receive at a time, in turn over the brokers, and a receive on an empty broker waits out its poll
# time (15 s) before the next turn: one such wait between two calls is a consumer at work, not a
# settled run (a run cut there was judged settled, and its revived copies owed: INV-POP-LIVE-1).
ACTIVE_MS = BROKER_SUSPEND_MAX_TIME_MS + 5_000


class Producer:
    """Sends `count` messages at `rate_per_s`, rotating over the topic's queues, or choosing
    the queue by sharding key (hash mod queue count) as an orderly producer's selector does."""

    def __init__(self, run: "Run", spec: dict):
        self.run = run
        self.spec = spec
        self.topic = spec["topic"]
        self.remaining = spec.get("count", 100)
        self.interval = max(1, int(round(1000 / float(spec.get("rate_per_s", 100)))))
        self.next_queue = 0
        self.sent = 0
        self.tags_choices = spec.get("tags") or None
        self.n_keys = spec.get("sharding_keys")
        self.props_spec = spec.get("props") or None
        self.body_size = spec.get("body_size", 128)
        self._codes: dict = {}   # tag -> tags code (Java hashCode), computed once per tag

    def start(self) -> None:
        self.run.sim.schedule(self.spec.get("start_ms", 0), self.tick)

    def tick(self) -> None:
        if self.remaining <= 0:
            return
        self.send_one()
        self.remaining -= 1
        if self.remaining > 0:
            self.run.sim.schedule(self.interval, self.tick)

    def send_one(self, tags=None, keys=None, props=None) -> None:
        run, sim = self.run, self.run.sim
        queues = run.net.route(self.topic)
        if not queues:
            return  # no route: the send fails
        brokers = run.net.brokers
        if tags is None and self.tags_choices:
            tags = sim.chooser.pick("producer_tags", self.tags_choices)
            tags = tags if tags else None   # "" in a list of tags means untagged
        n_keys = self.n_keys
        if keys is None and n_keys:
            keys = f"order-{sim.chooser.pick_index('producer_key', n_keys)}"
        if keys is not None and n_keys:
            mq = queues[abs(java_string_hash(keys)) % len(queues)]
            if not brokers[mq[1]].up:
                return  # an orderly send to a down broker fails; the producer moves on
        else:
            # Rotate over the queues, skipping brokers that are down (the producer's retry).
            for _ in range(len(queues)):
                mq = queues[self.next_queue % len(queues)]
                self.next_queue += 1
                if brokers[mq[1]].up:
                    break
            else:
                return  # every broker of the topic is down: the send fails
        if props is None and self.props_spec:
            props = {k: str(sim.chooser.pick("producer_props", v)) if isinstance(v, list) else str(v) for k, v in self.props_spec.items()}
        self.sent += 1
        code = self._codes.get(tags)
        if code is None:
            code = self._codes[tags] = tags_code(tags)
        msg = Message(topic=self.topic, queue=mq[2], tags=tags, tags_code=code, keys=keys,
                      props=props or {}, body_size=self.body_size)
        try:
            run.net.broker(mq[1]).put_message(msg, source="producer")
        except BrokerUnavailable:
            pass


def _nth(tags, i):
    """Message i's tags in a produce step: the step's one tag, or its list's i-th round-robin
    ("" in a list: untagged)."""
    if isinstance(tags, list):
        return tags[i % len(tags)] or None
    return tags


def _nth_props(props, i):
    """Message i's properties in a produce step: a property given as a list of values takes
    them round-robin, message by message (a step is deterministic: nothing is drawn)."""
    if not props:
        return props
    return {k: str(v[i % len(v)] if isinstance(v, list) else v) for k, v in props.items()}


# The scenario's `real` table sets RocketMQ's timing knobs (system properties and consumer
# settings) for a run; the reference runs with the ones it models, so that one scenario gives
# a reference trace and a real trace under the same timings. The rest are real-run only.
KNOB_TO_PROFILE = {**CLIENT_TIMING_KEYS, **BROKER_TIMING_KEYS, "heartbeat_broker_interval_ms": "heartbeat_interval_ms"}


def with_timing_knobs(profile, knobs: dict):
    """`profile` with the scenario's timing knobs in place of its defaults."""
    changes = {KNOB_TO_PROFILE[k]: v for k, v in knobs.items() if k in KNOB_TO_PROFILE}
    return dataclasses.replace(profile, **changes) if changes else profile


class Run:
    def __init__(self, scenario: dict, seed: int, profile, sink, chooser=None):
        self.scenario = scenario
        self.profile = with_timing_knobs(get_profile(profile), scenario.get("real", {}))
        _check_pop_release(scenario, self.profile)
        self.sim = Simulator(seed, sink, chooser)
        self.net = Network(self.sim, scenario["latency_ms"])
        self.consumers: dict[str, PushConsumer] = {}
        self.local_disks: dict[str, dict] = {}     # broadcasting offsets.json per client id
        self.producers: list[Producer] = []
        self.steps_done = False
        self.ended = None

    # ------------------------------------------------------------------ build
    def setup(self) -> None:
        sc, sim = self.scenario, self.sim
        sim.emit("trace_started", schema_version=SCHEMA_VERSION, profile=self.profile.name, seed=sim.seed,
                 scenario=sc["name"], config=sc_for_trace(sc))
        for name in sc["brokers"]:
            b = Broker(sim, name, self.profile, sc["broker_config"])
            self.net.add_broker(b)
            b.start()
        for t in sc["topics"]:
            for bname in t["brokers"]:
                self.net.brokers[bname].create_topic(t["name"], t["queues"])
        for spec in sc["producers"]:
            p = Producer(self, spec)
            self.producers.append(p)
            p.start()
        # the steps are done once the last of them has run (counted, not a task of its own: a
        # search would otherwise order that task against every other one due with it)
        self._steps_left = len(sc["steps"])
        self.steps_done = not sc["steps"]
        for st in sc["steps"]:
            sim.schedule(st["at_ms"], self.do_step, st)

    # ------------------------------------------------------------------ steps
    def do_step(self, st: dict) -> None:
        self._steps_left -= 1
        if not self._steps_left:
            self.steps_done = True
        a = st["action"]
        sim = self.sim
        if a == "start":
            cid = st["client"]
            old = self.consumers.get(cid)
            if old is not None and old.running:
                return
            g = self.scenario["groups"][st["group"]]
            if g.get("client_type", "PUSH") != "PUSH":
                cls = GrpcPushConsumer if g.get("client_type") == "GRPC_PUSH" else PopConsumer
                c = cls(sim, self.net, self.profile, cid, st["group"], g,
                                st.get("subscriptions", g["subscriptions"]), g.get("listener"))
                if old is not None:
                    # the restarted client's attempt ids differ from the old one's, whose pops
                    # the broker may still hold (the real client draws a UUID per receive)
                    c.proc.incarnation = old.proc.incarnation
                self.consumers[cid] = c
                c.start()
                return
            c = PushConsumer(sim, self.net, self.profile, cid, st["group"], g, st.get("subscriptions", g["subscriptions"]),
                             g.get("listener"),
                             self.local_disks.setdefault(cid, {}))
            self.consumers[cid] = c
            c.start()
        elif a == "shutdown":
            self.consumers[st["client"]].shutdown()
        elif a == "crash":
            c = self.consumers[st["client"]]
            if c.running:
                c.crash(st.get("mode", CRASH_MODES[0]))
        elif a == "pause":
            self.consumers[st["client"]].pause(st["duration_ms"])
        elif a == "restart_broker":
            self.restart_broker(self.net.brokers[st["broker"]], st.get("downtime_ms", 0))
        elif a == "oneway_loss":
            self.net.faults.oneway_loss = float(st["probability"])
        elif a == "fail_offset_queries":
            self.net.faults.offset_query_failures[st["client"]] = int(st["count"])
            self.net.faults.offset_query_failure_kind[st["client"]] = st.get("kind", "timeout")
            self.net.faults.offset_query_skip[st["client"]] = int(st.get("skip", 0))
        elif a == "fail_revive_reads":
            b = self.net.brokers[st["broker"]]
            if b.revive is not None:
                b.revive.read_failures += int(st["count"])
        elif a == "delay_pop_reads":
            b = self.net.brokers[st["broker"]]
            if b.pop is not None:
                b.pop.late_reads += int(st["count"])
        elif a == "slow_store_reads":
            b = self.net.brokers[st["broker"]]
            if b.pop is not None:
                b.pop.store_read_ms = int(st["delay_ms"])
                b.pop.store_read_queues = None if "queue" not in st else {int(st["queue"])}
        elif a == "lose_pop_responses":
            self.net.faults.pop_responses_to_lose[st["client"]] = int(st["count"])
        elif a == "expire_commit_log":
            expire_oldest(self.net.brokers[st["broker"]], int(st["count"]))
        elif a == "set_broker_offset":
            self.set_broker_offset(st["broker"], st["group"], st["topic"], int(st["queue"]), int(st["offset"]))
        elif a == "reset_offset":
            self.reset_offset(st["group"], st["topic"], int(st["timestamp_ms"]))
        elif a == "delete_messages":
            b = self.net.brokers[st["broker"]]
            low = b.store.delete_before(st["topic"], st["queue"], st["before"])
            sim.emit("messages_deleted", topic=st["topic"], broker=b.name, queue=st["queue"], min_offset=low)
        elif a == "produce":
            p = Producer(self, {"topic": st["topic"], "count": st["count"], "rate_per_s": 1000})
            p.next_queue = int(st.get("turn", 0))
            for i in range(st["count"]):
                p.send_one(tags=_nth(st.get("tags"), i), keys=st.get("keys"), props=_nth_props(st.get("props"), i))

    def restart_broker(self, b, downtime_ms: int) -> None:
        """The broker stops (what it has not flushed is lost) and starts again downtime_ms later."""
        b.stop_for_restart()
        self.net.broker_stopped(b.name)
        self.sim.schedule(downtime_ms, b.restart)

    def reset_offset(self, group: str, topic: str, timestamp: int) -> None:
        """An operator resets the group's offsets of topic to a time (mqadmin resetOffsetByTime,
        force by default), broker by broker as 4.9.8's Broker2Client.resetOffset does it:
        - a queue of the topic for which the group has no committed offset fails the call ("the
          consumer group not exist"), and the failure ends the command;
        - otherwise each queue's target is the offset of the first message stored at or after
          the time. With consumers of the group registered, the broker commits nothing: it tells
          each of them (RESET_CONSUMER_CLIENT_OFFSET, one-way), and each client sets its offsets
          and persists them as it removes its ProcessQueues (MQClientInstance.resetOffset);
        - with none registered (CONSUMER_NOT_ONLINE), mqadmin falls back to the old way
          (resetOffsetByTimestampOld) and writes the broker's offsets itself.
        A target is always an offset the queue has (getOffsetInQueueByTime lies in [min, max]).
        A broadcasting group has no broker offsets, so its reset always fails."""
        by_broker: dict = {}
        for mq in self.net.route(topic):
            by_broker.setdefault(mq[1], []).append(mq)
        for name in sorted(by_broker):
            b = self.net.brokers[name]
            if not b.up:
                return          # the call fails: the command ends with an exception
            mqs = by_broker[name]
            if any(b.offsets.query(group, topic, mq[2]) < 0 for mq in mqs):
                return          # SYSTEM_ERROR "THe consumer group <g> not exist"
            table = {mq: b.search_offset(topic, mq[2], timestamp) for mq in mqs}
            online = [cid for cid in sorted(b.consumers.get(group, {})) if cid in self.consumers]
            if not online:
                for mq, offset in sorted(table.items()):
                    b.offsets.commit(group, topic, mq[2], offset, source="reset")
                continue
            for cid in online:
                c = self.consumers[cid]
                if c.running and c.proc.alive:
                    self.sim.schedule(self.net.latency_ms, c.reset_offset, topic, table, owner=c.proc)

    def set_broker_offset(self, broker: str, group: str, topic: str, queue: int, offset: int) -> None:
        """An operator writes one queue's committed offset on the broker (DefaultMQAdminExt
        .updateConsumeOffset: UPDATE_CONSUMER_OFFSET, which ConsumerManageProcessor commits
        unchecked), e.g. a group's offsets restored from another cluster. The broker stores it
        as any commit (overwrite); the group's clients read it when they next create the queue's
        ProcessQueue, and a client holding the queue overwrites it at its next persist."""
        self.net.brokers[broker].offsets.commit(group, topic, queue, offset, source="reset")

    # ------------------------------------------------------------------ faults that strike
    @footprint(lambda self, kind, target, arg=None: self._inject_footprint(kind, target, arg))
    def inject(self, kind: str, target: str, arg=None) -> None:
        """A fault armed on the simulator (Simulator.arm) strikes before a task the chooser
        picks: the explorer's faults (model_checks/world.py), as data: (kind, target, arg).
        crash / pause a client (arg: crash mode / pause length), clean_expired (the client's
        listener calls are slower than consumeTimeout: cleanExpiredMsg sends back what they
        hold), an operator's offset moves on a group: reset (the committed offset of queue
        `target`, arg (topic, group), written on the broker one past the queue's end:
        set_broker_offset, e.g. an offset restored from a cluster whose queue was longer) and
        reset_by_time (mqadmin resetOffsetByTime of topic `target`, arg (timestamp, group):
        reset_offset), route_lost (queue `target` of topic `arg` leaves the route for a
        while), shutdown (a client's graceful shutdown) and broker_restart (broker `target`
        stops and starts again arg ms later), commit_log_expired (broker `target`'s commit log loses
        its oldest message's data, its consume queue corrected 10 s later: reference.broker.retention)."""
        if kind in ("crash", "pause", "clean_expired", "shutdown"):
            c = self.consumers.get(target)
            if c is None or not c.running or not c.proc.alive:
                return
            if kind == "crash":
                c.crash(arg or CRASH_MODES[0])
            elif kind == "shutdown":
                if c.proc.paused_until <= self.sim.now:     # a frozen process runs no shutdown hook
                    c.shutdown()
            elif kind == "pause":
                if c.proc.paused_until <= self.sim.now:
                    c.pause(arg)
            elif not c.orderly and not getattr(c, "pop", False) and not c.proc.paused_until > self.sim.now:
                c.consume_service.clean_expired_messages(timeout=0)
        elif kind == "reset_by_time":
            timestamp, group = arg
            self.reset_offset(group, target, timestamp)
        elif kind == "reset":
            topic, group = arg
            name = self.scenario["brokers"][0]
            b = self.net.brokers[name]
            if b.up:
                q = int(target)
                self.set_broker_offset(name, group, topic, q, b.store.max_offset(topic, q) + 1)
        elif kind == "route_lost":
            topic, broker, duration = arg
            self.net.lose_route(topic, broker, int(target), duration)
        elif kind == "broker_restart":
            b = self.net.brokers[target]
            if b.up:
                self.restart_broker(b, arg)
        elif kind == "commit_log_expired":
            expire_oldest(self.net.brokers[target], 1)
        else:
            raise ValueError(f"unknown fault kind {kind!r}")

    def _inject_footprint(self, kind, target, arg):
        """What a fault touches (reference/footprint.py): a crash or pause the client's own
        state (its tasks stop or wait) and, for a crash, its liveness as the broker's channel scan
        and notifications read it, and as the spec reads it when a request of the client reaches
        the broker after its crash; a lost route the route. A fault whose effect depends on when
        it strikes (a pause lasts from then on) reads the clock (CLOCK). An operator's write of one queue's
        committed offset (reset) reads the queue's end and writes the offset on the broker; the
        spec judges it together with what each client of the group does with that queue (a batch
        of the queue ending before it and after it are told apart), so it writes every client's
        part for the queue. A reset by time, a shutdown, a broker restart and a fault that sends back
        make no promise."""
        if kind == "crash":
            # a crash the broker sees at once (kill) has it close the channel a latency later
            return ({CLOCK} if arg == "kill" else set()), {("client", target), ("clients",), ("alive", target)}
        if kind == "pause":
            return {CLOCK}, {("client", target), ("paused", target)}       # it lasts from when it strikes
        if kind == "route_lost":
            return {CLOCK}, {("route",)}
        if kind == "reset":
            topic, group = arg
            broker, q = self.scenario["brokers"][0], int(target)
            mq = (topic, broker, q)
            return ({("up", broker), ("store", broker, topic, q)},
                    {("offsets", broker, group, topic, q)}
                    | {("client", cid, mq) for cid, c in self.consumers.items() if c.group == group})
        return None

    # ------------------------------------------------------------------ quiescence
    def waiting(self, without: str | None = None) -> bool:
        """Something still waits on the clock: a producer or a scenario step not done, a broker
        down or holding delayed messages, a queue out of the route (it comes back, and its
        messages are owed), a live client paused. With `without`, as if that client had crashed."""
        if not self.steps_done or any(p.remaining > 0 for p in self.producers):
            return True
        for b in self.net.brokers.values():
            if not b.up or b.schedule.pending() or (b.pop is not None and b.pop.pending()):
                return True
        if self.net.faults.lost_routes:
            return True
        return any(c.running and c.proc.alive and c.client_id != without and c.proc.paused_until > self.sim.now
                   for c in self.consumers.values())

    def quiescent(self, without: str | None = None) -> bool:
        """Nothing left to do: nothing waits on the clock (`waiting`), and every group with a
        live consumer has consumed every queue of every subscribed topic. With `without`, as if
        that client had just crashed (the explorer: would a crash end the run)."""
        if self.waiting(without):
            return False
        live = [c for c in self.consumers.values() if c.running and c.proc.alive and c.client_id != without]
        groups: dict[str, list[PushConsumer]] = {}
        for c in live:
            groups.setdefault(c.group, []).append(c)
        for group, members in groups.items():
            if getattr(members[0], "pop", False):
                if not self._pop_settled(group, members):
                    return False
                continue
            for topic in members[0].subscriptions:
                for mq in self.net.route(topic):
                    maxo = self.net.brokers[mq[1]].store.max_offset(mq[0], mq[2])
                    holders = members if members[0].broadcasting else [
                        c for c in members if mq in c.rebalance.pq_table]
                    if not holders and maxo > 0:
                        return False
                    for c in holders:
                        pq = c.rebalance.pq_table.get(mq)
                        if pq is None or pq.dropped or pq.msg_count or pq.consuming_tree:
                            return False
                        if maxo > 0 and c.offset_store.read_memory(mq) != maxo:
                            return False
                    # Real runs end when the offsets are persisted too (docs/recorder.md: the
                    # broker's committed offset of every queue of the group at its max offset), so
                    # the reference's final committed offsets are comparable with a real run's.
                    b = self.net.brokers[mq[1]]
                    if (not members[0].broadcasting and holders and maxo > 0
                            and b.offsets.query(group, mq[0], mq[2]) != maxo):
                        return False
            if not all(c.consume_service.idle() for c in members):
                return False
        # Every group that has messages waiting needs a live consumer to be called drained.
        for group in self.scenario["groups"]:
            if group not in groups and self._group_has_backlog(group):
                return False
        return True

    def _pop_settled(self, group: str, members) -> bool:
        """A POP group is done when every queue of its topics (and their POP retry topics) has
        been popped to its end, nothing is out under a handle, and its clients are idle."""
        from rocketspec.rocketmq.pop import pop_retry_topic

        if not all(c.idle() for c in members):
            return False
        for b in self.net.brokers.values():
            if b.pop is not None and not b.pop.group_settled(group):
                return False
            for topic in members[0].subscriptions:
                for t in (topic, pop_retry_topic(group, topic)):
                    for q in range(b.topics.get(t, 0)):
                        maxo = b.store.max_offset(t, q)
                        if maxo > 0 and b.offsets.query(group, t, q) < maxo:
                            return False
        return True

    def _group_has_backlog(self, group: str) -> bool:
        g = self.scenario["groups"][group]
        for topic in g["subscriptions"]:
            for mq in self.net.route(topic):
                b = self.net.brokers[mq[1]]
                if b.store.max_offset(mq[0], mq[2]) > max(0, b.offsets.query(group, mq[0], mq[2])):
                    return True
        return False

    def execute(self) -> str:
        sc, sim = self.scenario, self.sim
        self.setup()
        sim.run_until(sc["duration_ms"])
        return self.drain(sc["duration_ms"] + sc["drain_limit_ms"])

    def drain(self, limit: int) -> str:
        """Run until the system is quiescent or the clock reaches `limit` (the horizon); end the
        trace with the reason and return it: "quiescent"; at the horizon "horizon" when nothing
        waits on the clock (`waiting`: no producer, step, broker down, delayed message, lost route
        or pause pending), so a run that still owes messages then never settled and the spec's end
        rule judges it (as the explorer ends its runs); else "duration", cut short and not judged."""
        sim = self.sim
        while sim.now < limit:
            if self.quiescent():
                sim.emit("trace_ended", reason="quiescent")
                return "quiescent"
            nxt = sim.next_due()
            if nxt is None:
                sim.run_until(limit)     # nothing will ever run again: the horizon now
                break
            sim.run_until(min(limit, max(nxt, sim.now + QUIESCENCE_CHECK_MS)))
        # a listener call in the last ACTIVE_MS: consumers still work on what they hold (an orderly
        # message suspended and retried, maxReconsumeTimes -1, is handed out again and again), the
        # run is cut short, not settled
        active = sim.last_call is not None and sim.now - sim.last_call <= ACTIVE_MS
        reason = "duration" if self.waiting() or active else "horizon"
        sim.emit("trace_ended", reason=reason)
        return reason


def _check_pop_release(scenario: dict, profile) -> None:
    """POP exists from RocketMQ 5.0 (profile switch `pop`): a scenario whose group consumes by POP
    cannot run under a release without it."""
    from rocketspec.errors import UserError

    if getattr(profile, "pop", False):
        return
    for name, g in sorted(scenario["groups"].items()):
        kind = g.get("client_type", "PUSH")
        if kind != "PUSH":
            raise UserError(f"group {name!r} has client_type {kind}: POP consumption exists only in RocketMQ 5.x "
                            f"profiles, not in {profile.name} (use e.g. --profile rocketmq-5.5.1)",
                            file=f"scenario {scenario['name']}", field=f"groups.{name}.client_type")


def sc_for_trace(sc: dict) -> dict:
    return {k: sc[k] for k in ("name", "duration_ms", "brokers", "topics") if k in sc} | {
        "groups": sorted(sc["groups"])}


def run(scenario: dict, seed: int, profile, sink, chooser=None) -> str:
    """Run a validated scenario; events go to sink(event). Returns the trace_ended reason.
    `chooser` (reference.choice) decides what the run leaves open; by default the seed's."""
    return Run(scenario, seed, profile, sink, chooser).execute()


def run_to_list(scenario: dict, seed: int, profile) -> list[dict]:
    out: list[dict] = []
    run(scenario, seed, profile, out.append)
    return out


