"""One registry of the facts about each trace event kind.

For every kind: the RocketMQ mechanism its action models (`spec.actions.<kind>` is the action,
named after the kind, and its header names both), who acts (broker, client, operator, recorder
or network), and how its events are routed when a trace is replayed in partitions (the state
keys it reads or writes); and what the tools do with its events: the timeline's lane behaviour,
the minimizer's unit family, renumbering, the history record, the narrated scripts and the plain
sentence. The tables the spec, the Spark replay and the tools used to keep separately are derived
from here; tests/test_kind_registry.py names whatever a kind lacks.

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
from typing import Callable

RETRY_PREFIX, DLQ_PREFIX = "%RETRY%", "%DLQ%"


@dataclass(frozen=True)
class Kind:
    name: str
    mechanism: str      # the RocketMQ code the kind's action stands for
    route: str
    actor: str          # who acts: broker, client, operator, recorder, network, or "broker or client"
    # What the tools do with an event of the kind (each a table the tool derives from here):
    lane: str           # the timeline's behaviour, a method _lane_<lane> of traces.explain.timeline._Builder
    unit: str           # the minimizer's unit family (traces.minimize.units, UNITS below)
    renumber: str       # what dropping a message does to its offsets (traces.minimize.renumber, RENUMBER below)
    history: str | None     # what a user sees of it in a history (traces.history.from_trace, HISTORY below)
    scripts: bool       # shown by the narrated scripts' `advance` by default (conformance.scripts)
    sentence: Callable[[dict], str]     # one plain sentence (traces.explain.narrate.describe)


# unit families (traces.minimize.units): kept by every slice; a pull's own events; a lock request; the
# broker's or client's answer to it; a listener call (taken, started, finished); what the client
# does with a call's result; an offset persist; none of its own (sliced with its group, topic,
# queue, client, ProcessQueue or message)
UNITS = ("directory", "pull", "lock_request", "lock_answer", "call", "call_result", "persist", "sliced")
# renumbering (traces.minimize.renumber): an event of a listener call (dropped with a call that consumed
# nothing); an offset in another queue than the one the event names (the schedule topic's); plain
RENUMBER = ("call", "other_queue", "plain")
# history records (traces.history.from_trace): "disruption:<what a user sees>", or the record the
# kind gives (a reset and a retention only in some events), or None: nothing a user sees
HISTORY = ("produce", "consume", "dead_letter", "retention", "reset", "end")


def qname(ev: dict) -> str:
    """A queue as people write it: topic/broker/queue-id."""
    return f"{ev.get('topic')}/{ev.get('broker')}/{ev.get('queue')}"


def offs(xs) -> str:
    """Offsets, with runs shortened: [3, 4, 5, 9] -> 3-5, 9."""
    xs = list(xs or [])
    if not xs:
        return "none"
    out, start, prev = [], xs[0], xs[0]
    for x in xs[1:] + [None]:
        if x is not None and isinstance(x, int) and isinstance(prev, int) and x == prev + 1:
            prev = x
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = x
    text = ", ".join(out)
    return text if len(text) <= 60 else text[:57] + "..."


def secs(ts: int) -> str:
    return f"{ts / 1000:.3f}s"


def _queues(qs) -> str:
    qs = list(qs or [])
    names = [f"{q[0]}/{q[1]}/{q[2]}" for q in qs[:4] if isinstance(q, (list, tuple)) and len(q) == 3]
    more = f" and {len(qs) - 4} more" if len(qs) > 4 else ""
    return (", ".join(names) + more) if names else "no queue"


def _subs(subs) -> str:
    """The subscriptions a client starts with, but the automatic retry topic's."""
    if not isinstance(subs, dict):
        return ""
    parts = [f"{t} {d.get('expr')!r}" for t, d in subs.items()
             if not str(t).startswith("%RETRY%") and isinstance(d, dict)]
    return f", subscribing {', '.join(parts)}" if parts else ""


def _g(ev, k, default="?"):
    v = ev.get(k)
    return default if v is None else v


def _k(name, mechanism, route, actor, *, lane, unit, renumber, history, scripts, sentence):
    return Kind(name, mechanism, route, actor, lane, unit, renumber, history, scripts, sentence)


KINDS: dict[str, Kind] = {k.name: k for k in (
    _k("trace_started", "trace header", "directory", "recorder",
       lane="none", unit="directory", renumber="plain", history=None, scripts=False,
       sentence=lambda e: f"the trace starts (profile {_g(e, 'profile')}"
                          + (f", scenario {e['scenario']}" if e.get("scenario") else "") + ")"),
    _k("trace_ended", "end of run (quiescence check)", "directory", "recorder",
       lane="none", unit="directory", renumber="plain", history="end", scripts=False,
       sentence=lambda e: f"the trace ends ({_g(e, 'reason')}"
                          + ("" if e.get("reason") != "quiescent" else ": nothing was left to do") + ")"),
    _k("broker_started", "BrokerController.start", "directory", "broker",
       lane="none", unit="directory", renumber="plain", history=None, scripts=False,
       sentence=lambda e: f"broker {_g(e, 'broker')} starts"),
    _k("broker_restarted", "broker restart (in-memory tables lost)", "directory", "broker",
       lane="restart", unit="directory", renumber="plain", history="disruption:broker restarted", scripts=True,
       sentence=lambda e: f"broker {_g(e, 'broker')} restarts: its lock table and unflushed offsets are lost"),
    _k("topic_created", "TopicConfigManager", "directory", "operator",
       lane="none", unit="directory", renumber="plain", history=None, scripts=False,
       sentence=lambda e: f"topic {_g(e, 'topic')} has {_g(e, 'queue_count')} queues on {_g(e, 'broker')}"),
    _k("consumer_registered", "ConsumerManager.registerConsumer (heartbeat)", "directory", "broker",
       lane="none", unit="directory", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'broker')} lists {_g(e, 'client')} in group {_g(e, 'group')}"),
    _k("consumer_unregistered", "ConsumerManager.unregisterConsumer / channel expiry", "directory", "broker",
       lane="none", unit="directory", renumber="plain", history="disruption:unregistered", scripts=True,
       sentence=lambda e: f"{_g(e, 'broker')} removes {_g(e, 'client')} from group {_g(e, 'group')} "
                          f"({_g(e, 'reason')})"),
    _k("message_stored", "CommitLog append + ConsumeQueue dispatch", "stored", "broker",
       lane="stored", unit="sliced", renumber="plain", history="produce", scripts=True,
       sentence=lambda e: f"message {_g(e, 'msg_id')} is stored in {qname(e)} at offset {_g(e, 'offset')}"
                          + (f", tag {e['tags']}" if e.get("tags") else "")
                          + (f" ({e['source']}" + (f", reconsumed {e['reconsume_times']} times"
                                                    if e.get("reconsume_times") else "") + ")"
                             if e.get("source") and e.get("source") != "producer" else "")),
    _k("messages_deleted", "commit-log retention (DefaultMessageStore clean expired files)", "stored", "broker",
       lane="retention", unit="sliced", renumber="plain", history="retention", scripts=True,
       sentence=lambda e: f"retention deletes every message of {qname(e)} below offset {_g(e, 'min_offset')}"),
    _k("message_scheduled", "delay level -> SCHEDULE_TOPIC_XXXX", "chain", "broker",
       lane="schedule", unit="sliced", renumber="other_queue", history=None, scripts=True,
       sentence=lambda e: f"retry copy {_g(e, 'msg_id')} waits in the schedule (delay level "
                          f"{_g(e, 'delay_level')}) until {secs(e['deliver_ts']) if isinstance(e.get('deliver_ts'), int) else '?'}"),
    _k("schedule_delivered", "ScheduleMessageService.messageTimeUp", "chain", "broker",
       lane="schedule", unit="sliced", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"the schedule delivers {_g(e, 'msg_id')} to {e.get('real_topic') or 'its topic'}"),
    _k("client_started", "DefaultMQPushConsumer.start", "directory", "client",
       lane="start", unit="directory", renumber="plain", history="disruption:joined", scripts=False,
       sentence=lambda e: f"client {_g(e, 'client')} starts in group {_g(e, 'group')} "
                          f"({str(_g(e, 'consume_mode')).lower()}, {str(_g(e, 'message_model')).lower()})"
                          + _subs(e.get("subscriptions"))),
    # v4: start() returned; the first rebalance it wakes may come after (#9281: a first start's LAST offset)
    _k("client_start_returned", "DefaultMQPushConsumer.start returns", "directory", "client",
       lane="none", unit="directory", renumber="plain", history=None, scripts=False,
       sentence=lambda e: f"{_g(e, 'client')}'s start() returns"),
    _k("client_stopped", "DefaultMQPushConsumer.shutdown", "directory", "client",
       lane="stop", unit="directory", renumber="plain", history="disruption:left", scripts=True,
       sentence=lambda e: f"{_g(e, 'client')} shuts down (persists its offsets, releases its locks)"),
    _k("client_crashed", "process death", "directory", "client",
       lane="crash", unit="directory", renumber="plain", history="disruption:crashed", scripts=True,
       sentence=lambda e: f"{_g(e, 'client')} crashes: nothing persisted, nothing unlocked"),
    _k("client_paused", "stop-the-world pause", "directory", "client",
       lane="pause", unit="directory", renumber="plain", history="disruption:paused", scripts=True,
       sentence=lambda e: f"{_g(e, 'client')} freezes for {_g(e, 'duration')} ms (a GC pause or SIGSTOP): "
                          f"none of its tasks run"),
    _k("client_resumed", "pause ends", "directory", "client",
       lane="resume", unit="directory", renumber="plain", history="disruption:resumed", scripts=True,
       sentence=lambda e: f"{_g(e, 'client')} runs again"),
    _k("allocation_computed", "RebalanceImpl.rebalanceByTopic + AllocateMessageQueueStrategy", "directory", "client",
       lane="none", unit="sliced", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'client')} rebalances {_g(e, 'topic')} among {len(e.get('cids') or [])} "
                          f"client(s) and gets {_queues(e.get('allocated'))}"),
    _k("pq_created", "updateProcessQueueTableInRebalance (add) + computePullFromWhere", "queue", "client",
       lane="pq_open", unit="sliced", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'client')} takes {qname(e)} (ProcessQueue created, first pull at offset "
                          f"{_g(e, 'offset')})"),
    _k("pq_dropped", "ProcessQueue.setDropped(true)", "queue", "client",
       lane="pq_close", unit="sliced", renumber="plain", history="reset", scripts=True,
       sentence=lambda e: f"{_g(e, 'client')} drops {qname(e)} ({_g(e, 'reason')})"),
    _k("pq_removed", "removeUnnecessaryMessageQueue", "queue", "client",
       lane="pq_close", unit="sliced", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'client')} forgets {qname(e)} (ProcessQueue removed)"),
    _k("pull_issued", "DefaultMQPushConsumerImpl.pullMessage", "queue", "client",
       lane="pull_open", unit="pull", renumber="plain", history=None, scripts=False,
       sentence=lambda e: f"{_g(e, 'client')} pulls {qname(e)} from offset {_g(e, 'offset')} (pull "
                          f"#{_g(e, 'pull_id')})" + (f", carrying its offset {e['commit_offset']} to commit"
                                                     if isinstance(e.get("commit_offset"), int)
                                                     and e["commit_offset"] >= 0 else "")),
    _k("pull_held", "PullRequestHoldService (long polling)", "none", "broker",
       lane="none", unit="pull", renumber="plain", history=None, scripts=False,
       sentence=lambda e: f"{_g(e, 'broker')} holds pull #{_g(e, 'pull_id')} (nothing new yet: long polling)"),
    _k("pull_answered", "DefaultMessageStore.getMessage + PullAPIWrapper.processPullResult + "
       "ProcessQueue.putMessage", "queue", "broker",
       lane="pull_close", unit="pull", renumber="plain", history=None, scripts=False,
       sentence=lambda e: f"pull #{_g(e, 'pull_id')} answered {_g(e, 'status')}"
                          + (f": offsets {offs(e.get('offsets'))}" if e.get("offsets") else "")
                          + (f"; the broker filtered out {offs(e.get('broker_filtered'))}"
                             if e.get("broker_filtered") else "")
                          + (f"; the client's own tag re-check dropped {offs(e.get('client_filtered'))}"
                             if e.get("client_filtered") else "")
                          + f", next pull at {_g(e, 'next_offset')}"),
    _k("pull_failed", "PullCallback.onException (broker error response or failed call)", "queue", "client",
       lane="pull_failed", unit="pull", renumber="plain", history=None, scripts=False,
       sentence=lambda e: f"pull #{_g(e, 'pull_id')} of {_g(e, 'client')} fails ({_g(e, 'reason')}"
                          + (f", code {e['response_code']}" if e.get("response_code") is not None else "") + ")"),
    _k("queue_snapshot", "the queue's min/max offset when observation began (or after a gap)", "stored", "recorder",
       lane="retention", unit="sliced", renumber="plain", history="retention", scripts=False,
       sentence=lambda e: f"{qname(e)} already holds offsets {_g(e, 'min_offset')}-{_g(e, 'max_offset')} "
                          f"(not observed)"),
    _k("pull_flow_controlled", "pullMessage flow control", "queue", "client",
       lane="suspend", unit="sliced", renumber="plain", history=None, scripts=False,
       sentence=lambda e: f"{_g(e, 'client')} postpones pulling {qname(e)} by {_g(e, 'delay')} ms "
                          f"({_g(e, 'reason')})"),
    _k("consume_started", "ConsumeRequest.run (listener called)", "queue", "client",
       lane="call_open", unit="call", renumber="call", history="consume", scripts=True,
       sentence=lambda e: f"{_g(e, 'client')}'s listener starts on offsets {offs(e.get('offsets'))} of "
                          f"{qname(e)} (call #{_g(e, 'consume_id')})"),
    _k("consume_finished", "listener returns", "queue", "client",
       lane="call_close", unit="call", renumber="call", history="consume", scripts=True,
       sentence=lambda e: f"{_g(e, 'client')}'s listener call #{_g(e, 'consume_id')} returns {_g(e, 'status')}"
                          + (" but the queue was dropped meanwhile: the result is ignored"
                             if e.get("dropped") else "")),
    _k("consume_resubmitted", "submitConsumeRequestLater after failed send-back", "queue", "client",
       lane="suspend", unit="call_result", renumber="call", history=None, scripts=False,
       sentence=lambda e: f"{_g(e, 'client')} will consume offsets {offs(e.get('offsets'))} again in "
                          f"{_g(e, 'delay')} ms (their send-back failed)"),
    _k("consume_suspended", "ConsumeMessageOrderlyService suspend/retry later", "queue", "client",
       lane="suspend", unit="call_result", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'client')} suspends {qname(e)} for {_g(e, 'delay')} ms ({_g(e, 'reason')})"),
    _k("messages_taken", "ProcessQueue.takeMessages", "queue", "client",
       lane="none", unit="call", renumber="call", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'client')} takes offsets {offs(e.get('offsets'))} of {qname(e)} to consume "
                          f"in order"),
    _k("pq_committed", "ProcessQueue.commit", "queue", "client",
       lane="offset", unit="call_result", renumber="call", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'client')} commits offsets {offs(e.get('offsets'))}: its offset of "
                          f"{qname(e)} becomes {_g(e, 'offset')}"),
    _k("pq_rolled_back", "ProcessQueue.rollback / makeMessageToConsumeAgain", "queue", "client",
       lane="suspend", unit="call_result", renumber="call", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'client')} puts offsets {offs(e.get('offsets'))} back to consume again"),
    _k("pq_messages_removed", "ProcessQueue.removeMessage", "queue", "client",
       lane="none", unit="call_result", renumber="call", history=None, scripts=False,
       sentence=lambda e: f"{_g(e, 'client')} is done with offsets {offs(e.get('offsets'))}: the lowest "
                          f"unconsumed is {_g(e, 'offset')}"),
    _k("offset_updated", "OffsetStore.updateOffset / updateAndFreeze", "queue", "client",
       lane="offset", unit="call_result", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'client')}'s offset of {qname(e)} is now {_g(e, 'stored')}"
                          + (f" (asked {e['offset']})" if e.get("offset") != e.get("stored") else "")),
    _k("offset_read", "OffsetStore.readOffset", "queue", "client",
       lane="none", unit="sliced", renumber="plain", history=None, scripts=False,
       sentence=lambda e: f"{_g(e, 'client')} reads its offset of {qname(e)} from {_g(e, 'source')}: "
                          + {-1: "none", -2: "an error"}.get(e.get("offset"), str(_g(e, "offset")))),
    _k("offset_removed", "OffsetStore.removeOffset", "queue", "client",
       lane="none", unit="sliced", renumber="plain", history=None, scripts=False,
       sentence=lambda e: f"{_g(e, 'client')} forgets its offset of {qname(e)}"),
    _k("offset_persisted", "OffsetStore.persist (one-way)", "queue", "client",
       lane="persist", unit="persist", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'client')} sends its offset {_g(e, 'offset')} of {qname(e)} to the broker"
                          + (" - lost in the network" if e.get("lost") else "")),
    _k("offset_committed", "ConsumerOffsetManager.commitOffset", "queue", "broker",
       lane="commit", unit="sliced", renumber="plain", history="reset", scripts=True,
       sentence=lambda e: f"{_g(e, 'broker')} records group {_g(e, 'group')}'s offset of {qname(e)} = "
                          f"{_g(e, 'offset')}" + (f" (was {e['previous']})" if e.get("previous") is not None
                                                  else "")
                          + (f", {e['source']}" if e.get("source") else "")
                          + (f" from {e['client']}" if e.get("client") else "")),
    _k("offset_flushed", "offset table flush", "queue", "broker or client",
       lane="flushed", unit="sliced", renumber="plain", history=None, scripts=False,
       sentence=lambda e: f"the {_g(e, 'store')} store writes offset {_g(e, 'offset')} of {qname(e)} to disk"),
    _k("offset_erased", "LocalFileOffsetStore.persistAll rewrite (pre-#7740); broker: commitOffset get-then-put race",
       "queue", "broker or client",
       lane="none", unit="sliced", renumber="plain", history=None, scripts=False,
       sentence=lambda e: f"the {_g(e, 'store')} store's file no longer holds {qname(e)}"),
    _k("offset_loaded", "offset table load", "queue", "broker or client",
       lane="none", unit="sliced", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"the {_g(e, 'store')} store reloads offset {_g(e, 'offset')} of {qname(e)}"),
    _k("send_back_requested", "DefaultMQPushConsumerImpl.sendMessageBack", "chain", "client",
       lane="retry_request", unit="call_result", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'client')} sends message {_g(e, 'msg_id')} back for a retry "
                          f"(consumed {_g(e, 'reconsume_times')} times before, delay level "
                          f"{_g(e, 'delay_level')})"),
    _k("send_back_failed", "send-back and fallback failed", "chain", "client",
       lane="retry_outcome", unit="call_result", renumber="plain", history=None, scripts=False,
       sentence=lambda e: f"{_g(e, 'client')} could not send {_g(e, 'msg_id')} back: it keeps it"),
    _k("message_sent_back", "consumerSendMsgBack / handleRetryAndDLQ", "chain", "broker",
       lane="retry_outcome", unit="sliced", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'broker')} accepts the send-back of {_g(e, 'msg_id')}: "
                          + {"retry": "a retry copy goes through the schedule",
                             "dlq": "it goes to the dead-letter queue",
                             "discarded": "discarded (no retry queue)"}.get(e.get("outcome"), str(e.get("outcome")))),
    _k("message_dead_lettered", "%DLQ% store", "chain", "broker",
       lane="retry_outcome", unit="sliced", renumber="plain", history="dead_letter", scripts=True,
       sentence=lambda e: f"{_g(e, 'msg_id')} lands in %DLQ%{_g(e, 'group')} after "
                          f"{_g(e, 'reconsume_times')} reconsumptions"),
    # (the lock request sets the client's last request time, read by every queue's lock_acquired)
    _k("lock_requested", "RebalanceImpl.lock / lockAll", "directory", "client",
       lane="none", unit="lock_request", renumber="plain", history=None, scripts=False,
       sentence=lambda e: f"{_g(e, 'client')} asks {_g(e, 'broker')} to lock {_queues(e.get('queues'))}"),
    _k("lock_acquired", "RebalanceLockManager.tryLock", "queue", "broker",
       lane="lock_grant", unit="lock_answer", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'broker')}'s lock of {qname(e)} now names {_g(e, 'client')} "
                          f"({_g(e, 'reason')}"
                          + (f", after {e['previous_holder']}" if e.get("previous_holder") else "")
                          + (f"; valid until {secs(e['expires_at'])}" if isinstance(e.get("expires_at"), int)
                             else "") + ")"),
    _k("lock_rejected", "RebalanceLockManager.tryLock (held by another)", "queue", "broker",
       lane="lock_refused", unit="lock_answer", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'broker')} refuses {_g(e, 'client')} the lock of {qname(e)}: "
                          f"{_g(e, 'holder')} holds it"),
    _k("lock_released", "RebalanceLockManager.unlockBatch", "queue", "broker",
       lane="lock_end", unit="sliced", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'client')} releases its lock of {qname(e)}"),
    _k("lock_release_ignored", "unlockBatch by a non-owner", "queue", "broker",
       lane="lock_refused", unit="sliced", renumber="plain", history=None, scripts=False,
       sentence=lambda e: f"{_g(e, 'broker')} ignores {_g(e, 'client')}'s unlock of {qname(e)}"
                          + (f" ({e['holder']} holds it)" if e.get("holder") else "")),
    _k("lock_expired", "LockEntry.isExpired", "queue", "broker",
       lane="lock_end", unit="sliced", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'broker')} finds {_g(e, 'holder')}'s lock of {qname(e)} expired"),
    _k("pq_lock_changed", "ProcessQueue.setLocked / lastLockTimestamp", "queue", "client",
       lane="lease", unit="lock_answer", renumber="plain", history=None, scripts=False,
       sentence=lambda e: (f"{_g(e, 'client')} holds the lock of {qname(e)} (its lease counts from "
                           f"{secs(e['last_lock_ts']) if isinstance(e.get('last_lock_ts'), int) else '?'})")
                          if e.get("locked") else f"{_g(e, 'client')} no longer holds the lock of {qname(e)}"),
    _k("lease_expired", "ProcessQueue.isLockExpired", "queue", "client",
       lane="lease_end", unit="sliced", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'client')} finds its lease of {qname(e)} expired: it stops consuming it"),
    # POP (schema v3): one message copy is (group, stored topic, broker, queue, offset); docs/pop.md
    _k("assignment_answered", "QueryAssignmentProcessor.queryAssignment (allocate4Pop)", "directory", "broker",
       lane="none", unit="directory", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'broker')} tells {_g(e, 'client')} to {str(_g(e, 'mode')).lower()} "
                          f"{_queues(e.get('allocated'))} of {_g(e, 'topic')}"),
    _k("pop_requested", "DefaultMQPushConsumerImpl.popMessage / SimpleConsumer.receive (POP_MESSAGE)", "group", "client",
       lane="none", unit="sliced", renumber="plain", history=None, scripts=False,
       sentence=lambda e: f"{_g(e, 'client')} pops up to {_g(e, 'max_nums')} messages of "
                          + (f"{e.get('topic')}/{e.get('broker')} (any queue)" if e.get("queue") == -1 else qname(e))
                          + f" hidden for {_g(e, 'invisible_time')} ms (pop #{_g(e, 'pop_id')}"
                          + (f", orderly attempt {e['attempt_id']}" if e.get("attempt_id") else
                             ", orderly" if e.get("order") else "") + ")"),
    _k("message_popped", "PopMessageProcessor.popMsgFromQueue", "queue", "broker",
       lane="none", unit="sliced", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'broker')} hands {_g(e, 'msg_id')} ({qname(e)} offset {_g(e, 'offset')}) to "
                          f"{_g(e, 'client')}, hidden until "
                          + (secs(e["pop_time"] + e["invisible_time"]) if isinstance(e.get("pop_time"), int)
                             and isinstance(e.get("invisible_time"), int) else "?")
                          + (f" (reconsumed {e['reconsume_times']} times)" if e.get("reconsume_times") else "")),
    _k("pop_answered", "PopMessageProcessor.processRequest (answer)", "group", "broker",
       lane="none", unit="sliced", renumber="plain", history=None, scripts=False,
       sentence=lambda e: f"pop #{_g(e, 'pop_id')} of {_g(e, 'client')} answered {_g(e, 'status')}"
                          + (f" with {e['count']} messages" if e.get("count") is not None else "")
                          + (f" ({e['reason']})" if e.get("reason") else "")),
    _k("pop_response_lost", "network loss of a receive's answer between the proxy and a gRPC client", "none",
       "network",
       lane="none", unit="sliced", renumber="plain", history="disruption:receive answer lost", scripts=True,
       sentence=lambda e: f"the answer of pop #{_g(e, 'pop_id')} is lost on its way to {_g(e, 'client')}: its "
                          f"receive fails at its deadline"),
    _k("pop_checkpoint_written", "PopMessageProcessor.appendCheckPoint / PopBufferMergeService / PopConsumerService",
       "queue", "broker",
       lane="none", unit="sliced", renumber="plain", history=None, scripts=False,
       sentence=lambda e: f"{_g(e, 'broker')} records a checkpoint of {qname(e)} offsets {offs(e.get('offsets'))}: "
                          f"revive at "
                          + (secs(e["pop_time"] + e["invisible_time"]) if isinstance(e.get("pop_time"), int)
                             and isinstance(e.get("invisible_time"), int) else "?")
                          + " unless acked"),
    _k("message_acked", "AckMessageProcessor (ackOrderly for orderly POP)", "queue", "broker",
       lane="none", unit="sliced", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'client')} acks {qname(e)} offset {_g(e, 'offset')} (handle of pop time "
                          f"{_g(e, 'pop_time')}): " + {"acked": "done", "stale": "the handle is stale, nothing changes",
                                                       "rejected": "refused"}.get(e.get("result"), str(e.get("result")))),
    _k("invisible_time_changed", "ChangeInvisibleTimeProcessor", "queue", "broker",
       lane="none", unit="sliced", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'client')} hides {qname(e)} offset {_g(e, 'offset')} for "
                          f"{_g(e, 'invisible_time')} ms more: "
                          + {"changed": "a new handle replaces the old one", "stale": "the handle is stale, nothing changes",
                             "rejected": "refused"}.get(e.get("result"), str(e.get("result")))),
    _k("message_revived", "PopReviveService.reviveRetry / PopConsumerService.revive", "queue", "broker",
       lane="none", unit="sliced", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'broker')} revives {_g(e, 'msg_id')} ({qname(e)} offset {_g(e, 'offset')}), "
                          f"un-acked past its deadline: "
                          + {"retry": f"a copy goes to {e.get('target_topic')}"
                                      + (f" (reconsumed {e['reconsume_times']} times)" if e.get("reconsume_times") is not None else ""),
                             "reput": "the read failed, its checkpoint is put back for later",
                             "skipped": "nothing to revive",
                             "dropped": "given up: the message is lost"}.get(e.get("outcome"), str(e.get("outcome")))),
    # (the proxy is the server side: its events are the broker side's)
    _k("pop_dead_lettered", "proxy PopMessageResultFilterImpl (TO_DLQ) + forwardMessageToDeadLetterQueue", "queue",
       "broker",
       lane="none", unit="sliced", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'msg_id')} goes to %DLQ%{_g(e, 'group')} after {_g(e, 'reconsume_times')} "
                          f"reconsumptions (limit {_g(e, 'max_attempts')})"),
    _k("pop_consume_started", "ConsumeMessagePopConcurrentlyService.ConsumeRequest.run (listener called)", "group", "client",
       lane="none", unit="sliced", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'client')}'s listener starts on {len(e.get('msg_ids') or [])} popped message(s) "
                          f"(call #{_g(e, 'consume_id')})"),
    _k("pop_consume_finished", "POP listener returns", "none", "client",
       lane="none", unit="sliced", renumber="plain", history=None, scripts=True,
       sentence=lambda e: f"{_g(e, 'client')}'s listener call #{_g(e, 'consume_id')} returns {_g(e, 'status')}"
                          + (" after its handles expired: nothing is acked" if e.get("timed_out") else "")),
    _k("oneway_lost", "network loss of a one-way call", "none", "network",
       lane="none", unit="directory", renumber="plain", history="disruption:one-way call lost", scripts=True,
       sentence=lambda e: f"a one-way {_g(e, 'call')} call"
                          + (f" of {e['client']}" if e.get("client") else "") + " is lost in the network"),
)}

MECHANISMS = {n: k.mechanism for n, k in KINDS.items()}
# the kinds whose action changes no state and judges nothing (route none): a replay may take
# one of their events as its envelope alone (traces.spark.spark_scoped; tests/test_spec_inert.py)
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
        home = (("Q", ev["group"], t, b, q), ("S", t, b, q))
        # a POP revive reads the revived copy's state (its origin, status, count) and stores its
        # copy in the POP retry topic's queue, where the copy is popped, acked, changed and
        # dead-lettered: one place, so a group's topic and its POP retry topic are replayed together
        tt, tq = ev.get("target_topic"), ev.get("target_queue")
        if ev["kind"] == "message_revived" and tt is not None and tq is not None:
            return (home + (("Q", ev["group"], tt, b, tq), ("S", tt, b, tq)),)
        return (home,)
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
    if route == "group":
        # what a group's listener calls received (INV-POP-LOSS-1): every partition with a queue
        # of the group, since the ack it is judged at may be of any of them
        return ((("Q", ev["group"]),),)
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
    what `names` reads of an event of that kind (traces.spark.spark_scoped reads the same columns)."""
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
