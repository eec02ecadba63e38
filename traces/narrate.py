"""One plain sentence per trace event, for people who have not read the spec.

`describe(ev)` says what the event means in RocketMQ's terms (who did what to which queue);
`explain` uses it for the narrated story, the hover text of the timeline and the catalogue.
It only reads the event's own fields: what the event *means for the rules* is the spec's job
(spec/actions.py), not this module's.
"""
from __future__ import annotations


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


_D = {
    "trace_started": lambda e: f"the trace starts (profile {_g(e, 'profile')}"
                               + (f", scenario {e['scenario']}" if e.get("scenario") else "") + ")",
    "trace_ended": lambda e: f"the trace ends ({_g(e, 'reason')}"
                             + ("" if e.get("reason") != "quiescent" else ": nothing was left to do") + ")",
    "broker_started": lambda e: f"broker {_g(e, 'broker')} starts",
    "broker_restarted": lambda e: f"broker {_g(e, 'broker')} restarts: its lock table and unflushed offsets are lost",
    "topic_created": lambda e: f"topic {_g(e, 'topic')} has {_g(e, 'queue_count')} queues on {_g(e, 'broker')}",
    "consumer_registered": lambda e: f"{_g(e, 'broker')} lists {_g(e, 'client')} in group {_g(e, 'group')}",
    "consumer_unregistered": lambda e: f"{_g(e, 'broker')} removes {_g(e, 'client')} from group {_g(e, 'group')} "
                                       f"({_g(e, 'reason')})",
    "message_stored": lambda e: f"message {_g(e, 'msg_id')} is stored in {qname(e)} at offset {_g(e, 'offset')}"
                                + (f", tag {e['tags']}" if e.get("tags") else "")
                                + (f" ({e['source']}" + (f", reconsumed {e['reconsume_times']} times"
                                                          if e.get("reconsume_times") else "") + ")"
                                   if e.get("source") and e.get("source") != "producer" else ""),
    "messages_deleted": lambda e: f"retention deletes every message of {qname(e)} below offset {_g(e, 'min_offset')}",
    "queue_snapshot": lambda e: f"{qname(e)} already holds offsets {_g(e, 'min_offset')}-{_g(e, 'max_offset')} "
                                f"(not observed)",
    "message_scheduled": lambda e: f"retry copy {_g(e, 'msg_id')} waits in the schedule (delay level "
                                   f"{_g(e, 'delay_level')}) until {secs(e['deliver_ts']) if isinstance(e.get('deliver_ts'), int) else '?'}",
    "schedule_delivered": lambda e: f"the schedule delivers {_g(e, 'msg_id')} to {e.get('real_topic') or 'its topic'}",
    "client_started": lambda e: f"client {_g(e, 'client')} starts in group {_g(e, 'group')} "
                                f"({str(_g(e, 'consume_mode')).lower()}, {str(_g(e, 'message_model')).lower()})"
                                + _subs(e.get("subscriptions")),
    "client_stopped": lambda e: f"{_g(e, 'client')} shuts down (persists its offsets, releases its locks)",
    "client_crashed": lambda e: f"{_g(e, 'client')} crashes: nothing persisted, nothing unlocked",
    "client_paused": lambda e: f"{_g(e, 'client')} freezes for {_g(e, 'duration')} ms (a GC pause or SIGSTOP): "
                               f"none of its tasks run",
    "client_resumed": lambda e: f"{_g(e, 'client')} runs again",
    "allocation_computed": lambda e: f"{_g(e, 'client')} rebalances {_g(e, 'topic')} among {len(e.get('cids') or [])} "
                                     f"client(s) and gets {_queues(e.get('allocated'))}",
    "pq_created": lambda e: f"{_g(e, 'client')} takes {qname(e)} (ProcessQueue created, first pull at offset "
                            f"{_g(e, 'offset')})",
    "pq_dropped": lambda e: f"{_g(e, 'client')} drops {qname(e)} ({_g(e, 'reason')})",
    "pq_removed": lambda e: f"{_g(e, 'client')} forgets {qname(e)} (ProcessQueue removed)",
    "pull_issued": lambda e: f"{_g(e, 'client')} pulls {qname(e)} from offset {_g(e, 'offset')} (pull "
                             f"#{_g(e, 'pull_id')})" + (f", carrying its offset {e['commit_offset']} to commit"
                                                        if isinstance(e.get("commit_offset"), int)
                                                        and e["commit_offset"] >= 0 else ""),
    "pull_held": lambda e: f"{_g(e, 'broker')} holds pull #{_g(e, 'pull_id')} (nothing new yet: long polling)",
    "pull_answered": lambda e: f"pull #{_g(e, 'pull_id')} answered {_g(e, 'status')}"
                               + (f": offsets {offs(e.get('offsets'))}" if e.get("offsets") else "")
                               + (f"; the broker filtered out {offs(e.get('broker_filtered'))}"
                                  if e.get("broker_filtered") else "")
                               + (f"; the client's own tag re-check dropped {offs(e.get('client_filtered'))}"
                                  if e.get("client_filtered") else "")
                               + f", next pull at {_g(e, 'next_offset')}",
    "pull_failed": lambda e: f"pull #{_g(e, 'pull_id')} of {_g(e, 'client')} fails ({_g(e, 'reason')}"
                             + (f", code {e['response_code']}" if e.get("response_code") is not None else "") + ")",
    "pull_flow_controlled": lambda e: f"{_g(e, 'client')} postpones pulling {qname(e)} by {_g(e, 'delay')} ms "
                                      f"({_g(e, 'reason')})",
    "consume_started": lambda e: f"{_g(e, 'client')}'s listener starts on offsets {offs(e.get('offsets'))} of "
                                 f"{qname(e)} (call #{_g(e, 'consume_id')})",
    "consume_finished": lambda e: f"{_g(e, 'client')}'s listener call #{_g(e, 'consume_id')} returns {_g(e, 'status')}"
                                  + (" but the queue was dropped meanwhile: the result is ignored"
                                     if e.get("dropped") else ""),
    "consume_resubmitted": lambda e: f"{_g(e, 'client')} will consume offsets {offs(e.get('offsets'))} again in "
                                     f"{_g(e, 'delay')} ms (their send-back failed)",
    "consume_suspended": lambda e: f"{_g(e, 'client')} suspends {qname(e)} for {_g(e, 'delay')} ms ({_g(e, 'reason')})",
    "messages_taken": lambda e: f"{_g(e, 'client')} takes offsets {offs(e.get('offsets'))} of {qname(e)} to consume "
                                f"in order",
    "pq_committed": lambda e: f"{_g(e, 'client')} commits offsets {offs(e.get('offsets'))}: its offset of "
                              f"{qname(e)} becomes {_g(e, 'offset')}",
    "pq_rolled_back": lambda e: f"{_g(e, 'client')} puts offsets {offs(e.get('offsets'))} back to consume again",
    "pq_messages_removed": lambda e: f"{_g(e, 'client')} is done with offsets {offs(e.get('offsets'))}: the lowest "
                                     f"unconsumed is {_g(e, 'offset')}",
    "offset_updated": lambda e: f"{_g(e, 'client')}'s offset of {qname(e)} is now {_g(e, 'stored')}"
                                + (f" (asked {e['offset']})" if e.get("offset") != e.get("stored") else ""),
    "offset_read": lambda e: f"{_g(e, 'client')} reads its offset of {qname(e)} from {_g(e, 'source')}: "
                             + {-1: "none", -2: "an error"}.get(e.get("offset"), str(_g(e, "offset"))),
    "offset_removed": lambda e: f"{_g(e, 'client')} forgets its offset of {qname(e)}",
    "offset_persisted": lambda e: f"{_g(e, 'client')} sends its offset {_g(e, 'offset')} of {qname(e)} to the broker"
                                  + (" - lost in the network" if e.get("lost") else ""),
    "offset_committed": lambda e: f"{_g(e, 'broker')} records group {_g(e, 'group')}'s offset of {qname(e)} = "
                                  f"{_g(e, 'offset')}" + (f" (was {e['previous']})" if e.get("previous") is not None
                                                          else "")
                                  + (f", {e['source']}" if e.get("source") else "")
                                  + (f" from {e['client']}" if e.get("client") else ""),
    "offset_flushed": lambda e: f"the {_g(e, 'store')} store writes offset {_g(e, 'offset')} of {qname(e)} to disk",
    "offset_erased": lambda e: f"the {_g(e, 'store')} store's file no longer holds {qname(e)}",
    "offset_loaded": lambda e: f"the {_g(e, 'store')} store reloads offset {_g(e, 'offset')} of {qname(e)}",
    "send_back_requested": lambda e: f"{_g(e, 'client')} sends message {_g(e, 'msg_id')} back for a retry "
                                     f"(consumed {_g(e, 'reconsume_times')} times before, delay level "
                                     f"{_g(e, 'delay_level')})",
    "send_back_failed": lambda e: f"{_g(e, 'client')} could not send {_g(e, 'msg_id')} back: it keeps it",
    "message_sent_back": lambda e: f"{_g(e, 'broker')} accepts the send-back of {_g(e, 'msg_id')}: "
                                   + {"retry": "a retry copy goes through the schedule",
                                      "dlq": "it goes to the dead-letter queue",
                                      "discarded": "discarded (no retry queue)"}.get(e.get("outcome"), str(e.get("outcome"))),
    "message_dead_lettered": lambda e: f"{_g(e, 'msg_id')} lands in %DLQ%{_g(e, 'group')} after "
                                       f"{_g(e, 'reconsume_times')} reconsumptions",
    "lock_requested": lambda e: f"{_g(e, 'client')} asks {_g(e, 'broker')} to lock {_queues(e.get('queues'))}",
    "lock_acquired": lambda e: f"{_g(e, 'broker')}'s lock of {qname(e)} now names {_g(e, 'client')} "
                               f"({_g(e, 'reason')}"
                               + (f", after {e['previous_holder']}" if e.get("previous_holder") else "")
                               + (f"; valid until {secs(e['expires_at'])}" if isinstance(e.get("expires_at"), int)
                                  else "") + ")",
    "lock_rejected": lambda e: f"{_g(e, 'broker')} refuses {_g(e, 'client')} the lock of {qname(e)}: "
                               f"{_g(e, 'holder')} holds it",
    "lock_released": lambda e: f"{_g(e, 'client')} releases its lock of {qname(e)}",
    "lock_release_ignored": lambda e: f"{_g(e, 'broker')} ignores {_g(e, 'client')}'s unlock of {qname(e)}"
                                      + (f" ({e['holder']} holds it)" if e.get("holder") else ""),
    "lock_expired": lambda e: f"{_g(e, 'broker')} finds {_g(e, 'holder')}'s lock of {qname(e)} expired",
    "pq_lock_changed": lambda e: (f"{_g(e, 'client')} holds the lock of {qname(e)} (its lease counts from "
                                  f"{secs(e['last_lock_ts']) if isinstance(e.get('last_lock_ts'), int) else '?'})")
                                 if e.get("locked") else f"{_g(e, 'client')} no longer holds the lock of {qname(e)}",
    "lease_expired": lambda e: f"{_g(e, 'client')} finds its lease of {qname(e)} expired: it stops consuming it",
    "oneway_lost": lambda e: f"a one-way {_g(e, 'call')} call"
                             + (f" of {e['client']}" if e.get("client") else "") + " is lost in the network",
}


def describe(ev: dict) -> str:
    """One sentence for one event (any kind; unknown kinds list their fields)."""
    f = _D.get(ev.get("kind"))
    if f is not None:
        try:
            return f(ev)
        except (TypeError, KeyError, ValueError):
            pass
    rest = {k: v for k, v in ev.items() if k not in ("seq", "ts", "kind")}
    return f"{ev.get('kind')}: " + ", ".join(f"{k}={v}" for k, v in rest.items())
