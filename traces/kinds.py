"""One registry of the facts about each trace event kind.

For every kind: the RocketMQ mechanism its action models (`spec.actions.<kind>` is the action,
named after the kind, and its header names both), who acts (broker, client, operator, recorder
or network), and how its events are routed when a trace is replayed in partitions (the state
keys it reads or writes). The tables the spec and the Spark replay used to keep separately are
derived from here.

Routes (the keys of `spec.state` an action reads or writes, beyond the directory):

- ``directory``: clients, brokers, topics, registrations, allocations; also the actions that walk
  every queue of a broker or client (a restart, a crash). Replayed in every partition.
- ``queue``: one (group, topic, broker, queue) and its stored queue (topic, broker, queue), which
  pulls, consumption and offsets read (messages, max offset, retention).
- ``stored``: one stored queue; a %RETRY%/%DLQ% copy also touches its group's retry chains.
- ``chain``: one group's retry chains; a send-back request also reads the queue it came from.
- ``none``: no state (the action only records that it happened).
"""
from __future__ import annotations

from dataclasses import dataclass

RETRY_PREFIX, DLQ_PREFIX = "%RETRY%", "%DLQ%"


@dataclass(frozen=True)
class Kind:
    name: str
    mechanism: str      # the RocketMQ code the kind's action stands for
    route: str
    actor: str          # who acts: broker, client, operator, recorder, network, or "broker or client"


def _k(name, mechanism, route, actor):
    return Kind(name, mechanism, route, actor)


KINDS: dict[str, Kind] = {k.name: k for k in (
    _k("trace_started", "trace header", "directory", "recorder"),
    _k("trace_ended", "end of run (quiescence check)", "directory", "recorder"),
    _k("broker_started", "BrokerController.start", "directory", "broker"),
    _k("broker_restarted", "broker restart (in-memory tables lost)", "directory", "broker"),
    _k("topic_created", "TopicConfigManager", "directory", "operator"),
    _k("consumer_registered", "ConsumerManager.registerConsumer (heartbeat)", "directory", "broker"),
    _k("consumer_unregistered", "ConsumerManager.unregisterConsumer / channel expiry", "directory", "broker"),
    _k("message_stored", "CommitLog append + ConsumeQueue dispatch", "stored", "broker"),
    _k("messages_deleted", "commit-log retention (DefaultMessageStore clean expired files)", "stored", "broker"),
    _k("message_scheduled", "delay level -> SCHEDULE_TOPIC_XXXX", "chain", "broker"),
    _k("schedule_delivered", "ScheduleMessageService.messageTimeUp", "chain", "broker"),
    _k("client_started", "DefaultMQPushConsumer.start", "directory", "client"),
    _k("client_stopped", "DefaultMQPushConsumer.shutdown", "directory", "client"),
    _k("client_crashed", "process death", "directory", "client"),
    _k("client_paused", "stop-the-world pause", "directory", "client"),
    _k("client_resumed", "pause ends", "directory", "client"),
    _k("allocation_computed", "RebalanceImpl.rebalanceByTopic + AllocateMessageQueueStrategy", "directory",
       "client"),
    _k("pq_created", "updateProcessQueueTableInRebalance (add) + computePullFromWhere", "queue", "client"),
    _k("pq_dropped", "ProcessQueue.setDropped(true)", "queue", "client"),
    _k("pq_removed", "removeUnnecessaryMessageQueue", "queue", "client"),
    _k("pull_issued", "DefaultMQPushConsumerImpl.pullMessage", "queue", "client"),
    _k("pull_held", "PullRequestHoldService (long polling)", "none", "broker"),
    _k("pull_answered", "DefaultMessageStore.getMessage + PullAPIWrapper.processPullResult + "
       "ProcessQueue.putMessage", "queue", "broker"),
    _k("pull_failed", "PullCallback.onException (broker error response or failed call)", "queue", "client"),
    _k("queue_snapshot", "the queue's min/max offset when observation began (or after a gap)", "stored",
       "recorder"),
    _k("pull_flow_controlled", "pullMessage flow control", "queue", "client"),
    _k("consume_started", "ConsumeRequest.run (listener called)", "queue", "client"),
    _k("consume_finished", "listener returns", "queue", "client"),
    _k("consume_resubmitted", "submitConsumeRequestLater after failed send-back", "queue", "client"),
    _k("consume_suspended", "ConsumeMessageOrderlyService suspend/retry later", "queue", "client"),
    _k("messages_taken", "ProcessQueue.takeMessages", "queue", "client"),
    _k("pq_committed", "ProcessQueue.commit", "queue", "client"),
    _k("pq_rolled_back", "ProcessQueue.rollback / makeMessageToConsumeAgain", "queue", "client"),
    _k("pq_messages_removed", "ProcessQueue.removeMessage", "queue", "client"),
    _k("offset_updated", "OffsetStore.updateOffset / updateAndFreeze", "queue", "client"),
    _k("offset_read", "OffsetStore.readOffset", "queue", "client"),
    _k("offset_removed", "OffsetStore.removeOffset", "queue", "client"),
    _k("offset_persisted", "OffsetStore.persist (one-way)", "queue", "client"),
    _k("offset_committed", "ConsumerOffsetManager.commitOffset", "queue", "broker"),
    _k("offset_flushed", "offset table flush", "queue", "broker or client"),
    _k("offset_erased", "LocalFileOffsetStore.persistAll rewrite (pre-#7740); broker: commitOffset get-then-put race",
       "queue", "broker or client"),
    _k("offset_loaded", "offset table load", "queue", "broker or client"),
    _k("send_back_requested", "DefaultMQPushConsumerImpl.sendMessageBack", "chain", "client"),
    _k("send_back_failed", "send-back and fallback failed", "chain", "client"),
    _k("message_sent_back", "consumerSendMsgBack / handleRetryAndDLQ", "chain", "broker"),
    _k("message_dead_lettered", "%DLQ% store", "chain", "broker"),
    # (the lock request sets the client's last request time, read by every queue's lock_acquired)
    _k("lock_requested", "RebalanceImpl.lock / lockAll", "directory", "client"),
    _k("lock_acquired", "RebalanceLockManager.tryLock", "queue", "broker"),
    _k("lock_rejected", "RebalanceLockManager.tryLock (held by another)", "queue", "broker"),
    _k("lock_released", "RebalanceLockManager.unlockBatch", "queue", "broker"),
    _k("lock_release_ignored", "unlockBatch by a non-owner", "queue", "broker"),
    _k("lock_expired", "LockEntry.isExpired", "queue", "broker"),
    _k("pq_lock_changed", "ProcessQueue.setLocked / lastLockTimestamp", "queue", "client"),
    _k("lease_expired", "ProcessQueue.isLockExpired", "queue", "client"),
    _k("oneway_lost", "network loss of a one-way call", "none", "network"),
)}

MECHANISMS = {n: k.mechanism for n, k in KINDS.items()}
# the kinds whose action changes no state and judges nothing (route none): a replay may take
# one of their events as its envelope alone (traces.spark_scoped; tests/test_spec_inert.py)
INERT = frozenset(n for n, k in KINDS.items() if k.route == "none")


def _chain_group(ev):
    g = ev.get("group")
    if g is not None:
        return g
    real = ev.get("real_topic") or ""
    for p in (RETRY_PREFIX, DLQ_PREFIX):
        if real.startswith(p):
            return real[len(p):]
    return None


def atoms(ev) -> tuple | None:
    """Where an event must be replayed, for partitioning: None for a directory event (every
    partition), else a tuple of *places*, each a tuple of state keys that must be replayed
    together (the event reads them together). The first place is the event's home; the others
    get the event for their own state only. ("Q", group) alone stands for every queue of the
    group (a send-back's outcome updates the queue the request came from, known only to the
    state); ("T", topic) for the retry chains of every group that consumes the topic. A
    group's retry chains are one key ("C", group). () : no state at all."""
    route = KINDS[ev["kind"]].route
    if route == "queue":
        t, b, q = ev["topic"], ev["broker"], ev["queue"]
        return ((("Q", ev["group"], t, b, q), ("S", t, b, q)),)
    if route == "stored":
        t, b, q = ev["topic"], ev["broker"], ev["queue"]
        s = ((("S", t, b, q),),)
        for p in (RETRY_PREFIX, DLQ_PREFIX):
            if t.startswith(p):
                return s + ((("C", t[len(p):]),),)
        # a consumer send-back is judged by the stored copy's count (message_sent_back): the
        # chains of the groups that consume the topic keep their copy of its stored queue
        return s + ((("T", t),),)
    if route == "chain":
        g = _chain_group(ev)
        chain = () if g is None else ((("C", g),),)
        kind = ev["kind"]
        if kind == "send_back_requested":
            if ev.get("topic") is not None and ev.get("queue") is not None and ev.get("offset") is not None:
                t, b, q = ev["topic"], ev["broker"], ev["queue"]
                return ((("Q", g, t, b, q), ("S", t, b, q)),) + chain
        elif kind in ("send_back_failed", "message_sent_back") and g is not None:
            return chain + ((("Q", g),),)
        return chain
    if route == "none":
        return ()
    return None


# kinds whose findings are about the state of their home place, whatever key names them (a
# send-back request is judged against the ProcessQueue and the stored copy it came from)
HOME_FINDINGS = frozenset({"send_back_requested"})


def key_atom(key) -> tuple | None:
    """The partitioning key of a finding's key (spec.replay.Finding.key): a queue, a stored
    queue, a retry chain (its group's chains); None for a view or no key (the directory's)."""
    if key is None:
        return None
    if len(key) == 4:
        return ("Q",) + tuple(key)
    if len(key) == 2:
        return ("C", key[0])
    if len(key) == 3 and isinstance(key[2], int):
        return ("S",) + tuple(key)
    return None


# An event's names (`names`): the fields that name a group ("g"), a topic ("t"), a broker ("b")
# or a client ("c"). Every state key an action reads or writes is made of names its event or an
# earlier event naming one of them gave (a queue's pq of a client: pq_created names both), so
# names that events mention together are one deployment for the replay's lifetimes
# (traces.scopes). message_scheduled's topic is the schedule's own (SCHEDULE_TOPIC_XXXX, shared
# by every group): no state is keyed by it.
NAME_LETTERS = {"group": "g", "broker": "b", "client": "c", "holder": "c", "previous_holder": "c",
                "topic": "t", "real_topic": "t", "retry_topic": "t"}
NESTED_NAME_FIELDS = ("subscriptions", "mqs", "allocated", "queues", "cids")     # (directory kinds only)
_PLAIN = ("group", "topic", "broker", "client")
_BY_KIND: dict = {}


def _fields_of(kind: str) -> tuple:
    """(the name fields, the nested fields holding names) of a kind's schema, computed once."""
    from .schema import kinds

    kd = kinds()[kind]
    fs = (*kd["required"], *kd["optional"])
    flat = tuple((f, NAME_LETTERS[f]) for f in fs if f in NAME_LETTERS
                 and not (f == "topic" and kind == "message_scheduled"))
    nested = tuple(f for f in fs if f in NESTED_NAME_FIELDS)
    v = _BY_KIND[kind] = (flat, nested, not nested and all(f in _PLAIN for f, _ in flat))
    return v


def name_fields(kind: str) -> tuple:
    """(the flat name fields of a kind, each with its letter; the nested fields holding names):
    what `names` reads of an event of that kind (traces.spark_scoped reads the same columns)."""
    flat, nested, _ = _BY_KIND.get(kind) or _fields_of(kind)
    return flat, nested


def value_names(letter: str, value) -> list:
    """The names one flat field's value gives (a retry or DLQ topic names its group too)."""
    out: list = []
    if letter == "t":
        _add_topic(value, out)
    elif type(value) is str:
        out.append((letter, value))
    return out


def _add_topic(t, out) -> None:
    if type(t) is not str:
        return
    out.append(("t", t))
    if t[:1] == "%":
        for p in (RETRY_PREFIX, DLQ_PREFIX):
            if t.startswith(p):
                out.append(("g", t[len(p):]))


def names(ev) -> tuple:
    """The names (kind letter, name) an event mentions, sorted: () for the trace's own events."""
    kind = ev["kind"]
    flat, nested, _ = _BY_KIND.get(kind) or _fields_of(kind)
    out: list = []
    for f, k in flat:
        v = ev.get(f)
        if type(v) is str:
            if k == "t":
                _add_topic(v, out)
            else:
                out.append((k, v))
    for f in nested:
        out.extend(nested_names(f, ev.get(f)))
    return tuple(sorted(set(out)))


def nested_names(field: str, v) -> list:
    """The names one nested field's value gives (subscriptions: topics; cids: clients; a list of
    queues: their topics and brokers)."""
    out: list = []
    if field == "subscriptions":
        for t in (v if isinstance(v, dict) else ()):
            _add_topic(t, out)
    elif field == "cids":
        out.extend(("c", c) for c in (v if isinstance(v, list) else ()) if type(c) is str)
    else:
        for mq in (v if isinstance(v, list) else ()):
            if isinstance(mq, list) and len(mq) >= 2:
                _add_topic(mq[0], out)
                if type(mq[1]) is str:
                    out.append(("b", mq[1]))
    return out



def names_packer(pack, size: int = 1 << 16):
    """`pack(names(ev))`, remembered per (kind, group, topic, broker, client) for the kinds that
    name nothing else (most events: reading a trace computes each distinct one once)."""
    cache: dict = {}

    def packed(ev):
        kind = ev["kind"]
        if not (_BY_KIND.get(kind) or _fields_of(kind))[2]:
            return pack(names(ev))
        key = (kind, ev.get("group"), ev.get("topic"), ev.get("broker"), ev.get("client"))
        v = cache.get(key)
        if v is None:
            if len(cache) >= size:
                cache.clear()
            v = cache[key] = pack(names(ev))
        return v

    return packed
