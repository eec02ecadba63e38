"""Component lifecycles as python-statemachine classes, and the transition tables the spec uses.

Four components of RocketMQ have a lifecycle that the spec tracks explicitly:

- the client's **ProcessQueue** for one message queue (created by RebalanceImpl, dropped when the
  queue is reassigned or the client stops, removed from the table afterwards);
- the broker's **queue lock** entry in RebalanceLockManager (held by one client, renewed,
  expired after the broker lock lifetime, released by its owner only, lost on broker restart);
- one stored **message copy** on its way through consumption and the retry chain (stored,
  pulled, consuming, consumed, sent back, delayed in SCHEDULE_TOPIC_XXXX, redelivered as a new
  copy in %RETRY%<group>, or dead-lettered in %DLQ%<group>);
- one message copy a **POP** consumer group is handed (stored, held under a receipt handle,
  acked, revived into the POP retry topic, or dead-lettered).

The classes below are the single definition. Their events are named after the trace event kinds
that drive them, so `transition_table(cls)` compiles each class into a plain dict
`{(state, event_kind): next_state}` that the spec's hot path uses (a dict lookup, no
statemachine object per queue). The diagrams in SPEC.md come from `mermaid(cls)`.
"""
from __future__ import annotations

from functools import lru_cache

from statemachine import State, StateMachine


class ProcessQueueLifecycle(StateMachine):
    """ProcessQueue of one client for one message queue (RebalanceImpl, ProcessQueue.dropped)."""

    created = State("created", initial=True)      # pq_created: in the table, no pull issued yet
    active = State("active")                      # pulls flow, messages are put and consumed
    dropped = State("dropped")                    # dropped=true: no new batch, no offset update
    removed = State("removed", final=True)        # left the processQueueTable

    pull_issued = created.to(active) | active.to.itself()
    pq_dropped = created.to(dropped) | active.to(dropped) | dropped.to.itself()
    client_crashed = created.to(dropped) | active.to(dropped) | dropped.to.itself()
    pq_removed = dropped.to(removed)


class QueueLockLifecycle(StateMachine):
    """Broker lock entry of one (group, queue) in RebalanceLockManager.

    'expired' is the state an entry is in once the broker has observed `now - lastUpdate >
    lifetime`; a takeover from an expired-but-unobserved entry is held -> held with the time
    guard checked by the spec."""

    unlocked = State("unlocked", initial=True)
    held = State("held")
    expired = State("expired")

    lock_acquired = unlocked.to(held) | held.to.itself() | expired.to(held)
    lock_rejected = held.to.itself()
    lock_expired = held.to(expired) | expired.to.itself()
    lock_released = held.to(unlocked) | expired.to(unlocked)
    lock_release_ignored = unlocked.to.itself() | held.to.itself() | expired.to.itself()
    broker_restarted = unlocked.to.itself() | held.to(unlocked) | expired.to(unlocked)


class MessageLifecycle(StateMachine):
    """One stored copy of a message, from the consumer group's point of view.

    A send-back ends the copy ('redelivered' once its successor copy has been stored by the
    schedule service, or 'dead_lettered'); the successor is a new copy that starts at 'stored'
    with the same origin_msg_id and reconsume_times + 1."""

    stored = State("stored", initial=True)
    pulled = State("pulled")
    consuming = State("consuming")
    consumed = State("consumed")
    sent_back = State("sent_back")
    delayed = State("delayed")
    redelivered = State("redelivered", final=True)
    dead_lettered = State("dead_lettered", final=True)

    pull_answered = stored.to(pulled) | pulled.to.itself() | consumed.to(pulled)
    consume_started = pulled.to(consuming) | consuming.to.itself()
    consume_finished = consuming.to(consumed) | consuming.to(pulled)
    message_sent_back = consuming.to(sent_back) | consuming.to(dead_lettered) | sent_back.to(dead_lettered)
    message_scheduled = sent_back.to(delayed)
    schedule_delivered = delayed.to(redelivered)
    message_dead_lettered = consuming.to(dead_lettered) | sent_back.to(dead_lettered)


class PopMessageLifecycle(StateMachine):
    """One stored copy of a message a POP consumer group is handed (RocketMQ 5.x POP; docs/pop.md).

    'held' is the copy under a current receipt handle: a change of invisible time keeps it held
    under a new handle, a revive that failed and re-put its checkpoint too; an orderly queue's
    next attempt that does not hand the copy out again leaves it 'stored'. A revive ends the
    copy ('revived'): its successor is a new copy in the POP retry topic that starts at 'stored'
    with the same origin_msg_id and reconsume_times + 1. A dead-lettered copy keeps its handle
    for the ack that follows the DLQ put; if that ack never takes effect, revive brings it back
    at its deadline. What RocketMQ does by design (ANOM-DUP-1) leaves 'acked' and 'revived':
    after a broker restart that lost the commit past it, an acked copy is handed out again (and
    the checkpoint of its pop before the restart may still revive it, its status kept); a change
    of invisible time with the handle revive retired holds a revived copy again; the holder of
    that earlier pop may still ack its checkpoint, the copy held under the new one. The transitions
    are those of a run that holds; spec/actions/pop.py reports the others with their INV-POP-*
    invariant."""

    stored = State("stored", initial=True)
    held = State("held")
    acked = State("acked")
    revived = State("revived")
    skipped = State("skipped", final=True)
    dead_lettered = State("dead_lettered")

    message_popped = stored.to(held) | held.to.itself() | held.to(stored) | acked.to(held)
    invisible_time_changed = held.to.itself() | revived.to(held)
    message_acked = held.to(acked) | dead_lettered.to.itself() | held.to.itself()
    message_revived = (held.to(revived) | held.to(skipped) | held.to.itself() | dead_lettered.to(revived)
                       | acked.to.itself())
    pop_dead_lettered = held.to(dead_lettered)


LIFECYCLES = {
    "ProcessQueue": ProcessQueueLifecycle,
    "QueueLock": QueueLockLifecycle,
    "Message": MessageLifecycle,
    "PopMessage": PopMessageLifecycle,
}


@lru_cache(maxsize=None)
def transition_table(cls) -> dict[tuple[str, str], frozenset[str]]:
    """{(state_id, event): {target state ids}} compiled from the statemachine class."""
    table: dict[tuple[str, str], set[str]] = {}
    for st in cls.states:
        for tr in st.transitions:
            for ev in str(tr.event).split():
                table.setdefault((st.id, ev), set()).add(tr.target.id)
    return {k: frozenset(v) for k, v in table.items()}


def states_of(cls) -> list[str]:
    return [s.id for s in cls.states]


def initial_state(cls) -> str:
    return next(s.id for s in cls.states if s.initial)


def can(cls, state: str, event: str, target: str | None = None) -> bool:
    """Whether `event` is allowed in `state` (and, if given, may lead to `target`)."""
    targets = transition_table(cls).get((state, event))
    if targets is None:
        return False
    return target is None or target in targets


def mermaid(cls) -> str:
    """Mermaid stateDiagram-v2 text of a lifecycle class (no graphviz needed)."""
    from statemachine.contrib.diagram import MermaidGraphMachine

    return MermaidGraphMachine(cls)().rstrip() + "\n"


# Compiled tables used on the hot path (module constants: one dict lookup per check).
PQ_TABLE = transition_table(ProcessQueueLifecycle)
LOCK_TABLE = transition_table(QueueLockLifecycle)
MSG_TABLE = transition_table(MessageLifecycle)
POP_TABLE = transition_table(PopMessageLifecycle)
