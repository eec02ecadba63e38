"""Trace mutants: one-event changes of a clean reference trace, each the trace a client or
broker with one specific mistake would write. The counterexample catalogue (traces/reports/catalogue.py)
uses them for invariants no known bug or failing scenario breaks; `rocketspec minimize` then
shrinks each to its few events.

A mutant names the invariant it should break; whether it does is decided by the spec alone
(the catalogue keeps a mutant only when `check` rejects it with that invariant).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class TraceMutant:
    invariant: str
    scenario: str
    profile: str
    mistake: str                      # the implementation mistake, in words
    mutate: Callable                  # events -> mutated events (a copy), a list of such, or None


def _first(events, pred):
    return next((i for i, e in enumerate(events) if pred(e)), None)


def _renumber(evs):
    for i, e in enumerate(evs):
        e["seq"] = i
    return evs


def _edit(pred, change):
    def f(events):
        evs = copy.deepcopy(events)
        i = _first(evs, pred)
        if i is None:
            return None
        change(evs[i])
        return evs
    return f


def _delete(pred):
    def f(events):
        evs = copy.deepcopy(events)
        i = _first(evs, pred)
        if i is None:
            return None
        del evs[i]
        return _renumber(evs)
    return f


def _alloc_overlap(events):
    """The second client of a view is given the first client's queues too."""
    evs = copy.deepcopy(events)
    firsts = {}
    for e in evs:
        if e["kind"] == "allocation_computed" and not e["topic"].startswith("%") and e.get("allocated"):
            k = (e["group"], e["topic"], e["view"])
            if k in firsts and firsts[k]["client"] != e["client"]:
                e["allocated"] = sorted(e["allocated"] + firsts[k]["allocated"])
                return evs
            firsts.setdefault(k, e)
    return None


def _alloc_extra(events):
    """A client keeps a queue the strategy gave another client."""
    evs = copy.deepcopy(events)
    for e in evs:
        if e["kind"] == "allocation_computed" and len(e.get("cids") or []) >= 2 and e.get("allocated") \
                and len(e["allocated"]) < len(e["mqs"]):
            extra = next(q for q in e["mqs"] if q not in e["allocated"])
            e["allocated"] = e["allocated"] + [extra]
            return evs
    return None


def _pq_not_allocated(events):
    """A ProcessQueue is created for a queue the client's allocation does not contain."""
    evs = copy.deepcopy(events)
    for i, e in enumerate(evs):
        if e["kind"] == "allocation_computed" and e.get("allocated") and len(e.get("cids") or []) >= 2 \
                and len(e["allocated"]) < len(e["mqs"]):
            other = next(q for q in e["mqs"] if q not in e["allocated"])
            j = _first(evs[i + 1:], lambda x: x["kind"] == "pq_created" and x["client"] == e["client"]
                       and x["topic"] == e["topic"])
            if j is None:
                continue
            pq = copy.deepcopy(evs[i + 1 + j])
            pq["queue"] = other[2]
            evs.insert(i + 2 + j, pq)
            return _renumber(evs)
    return None


def _orderly_wrong_batch(events):
    """An orderly batch that is not the messages takeMessages just moved (the next ones instead)."""
    evs = copy.deepcopy(events)
    for i, e in enumerate(evs):
        if e["kind"] == "consume_started" and i > 0 and evs[i - 1]["kind"] == "messages_taken" \
                and e.get("offsets"):
            e["offsets"] = [o + 1 for o in e["offsets"]]
            return evs
    return None


def _offset_back(events):
    """A concurrent client's offset store is seen (polled by a recorder) going back while its
    ProcessQueue lives."""
    evs = copy.deepcopy(events)
    seen = {}
    for e in evs:
        if e["kind"] == "offset_updated" and e.get("increase_only"):
            k = (e["client"], e["group"], e["topic"], e["broker"], e["queue"])
            if k in seen and seen[k] >= 2:
                e["offset"] = e["stored"] = seen[k] - 2
                e["obs"] = "sampled"
                return evs
            seen[k] = e["stored"]
    return None


def _filter_wrong_tag(events):
    """The broker hands over a message whose tag the subscription does not take."""
    evs = copy.deepcopy(events)
    for e in evs:
        if e["kind"] == "pull_answered" and e.get("offsets"):
            o = e["offsets"][0]
            st = next(x for x in evs if x["kind"] == "message_stored" and x["topic"] == e["topic"]
                      and x["broker"] == e["broker"] and x["queue"] == e["queue"] and x["offset"] == o)
            st["tags"] = "TagZ"
            st["tags_code"] = _java_hash("TagZ")
            return evs
    return None


def _java_hash(s: str) -> int:
    h = 0
    for ch in s:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _retry_wrong_level(events):
    """The broker schedules a retry copy one delay level too late."""
    return _edit(lambda e: e["kind"] == "message_sent_back" and e.get("outcome") == "retry"
                 and e.get("delay_level") is not None,
                 lambda e: e.__setitem__("delay_level", e["delay_level"] + 1))(events)


def _broadcast_send_back(events):
    """A broadcasting client persists its offset to the broker (it must keep it locally)."""
    evs = copy.deepcopy(events)
    for i, e in enumerate(evs):
        if e["kind"] == "offset_updated" and e.get("stored", -1) > 0:
            c = {"seq": 0, "ts": e["ts"], "kind": "offset_committed", "broker": e["broker"], "group": e["group"],
                 "topic": e["topic"], "queue": e["queue"], "offset": e["stored"], "client": e["client"],
                 "source": "persist"}
            evs.insert(i + 1, c)
            return _renumber(evs)
    return None


MUTANTS = [
    TraceMutant("INV-OWNER-1", "real-basic", "rocketmq-4.9.8",
                "two clients of one view both take the same queues (an allocation that is not a partition)",
                _alloc_overlap),
    TraceMutant("INV-ALLOC-1", "real-basic", "rocketmq-4.9.8",
                "a client keeps a queue the strategy gave another client", _alloc_extra),
    TraceMutant("INV-ALLOC-2", "real-basic", "rocketmq-4.9.8",
                "a ProcessQueue is created for a queue the rebalance did not allocate", _pq_not_allocated),
    TraceMutant("INV-OWNER-2", "real-orderly-suspend", "rocketmq-4.9.8",
                "an orderly client consumes a queue without first locking it on the broker",
                _delete(lambda e: e["kind"] == "lock_acquired")),
    TraceMutant("INV-ORDER-2", "real-orderly-suspend", "rocketmq-4.9.8",
                "an orderly batch is not the messages takeMessages just moved", _orderly_wrong_batch),
    TraceMutant("INV-PQ-1", "real-basic", "rocketmq-4.9.8",
                "a client pulls a queue it never created a ProcessQueue for",
                _delete(lambda e: e["kind"] == "pq_created")),
    TraceMutant("INV-OFFSET-2", "real-basic", "rocketmq-4.9.8",
                "a concurrent client's stored offset goes back, as a recorder polling the client sees it",
                _offset_back),
    TraceMutant("INV-FILTER-1", "real-tags", "rocketmq-4.9.8",
                "the broker hands over a message whose tag the subscription does not take", _filter_wrong_tag),
    TraceMutant("INV-RETRY-2", "real-retry-dlq", "rocketmq-4.9.8",
                "the broker schedules a retry copy one delay level too late", _retry_wrong_level),
    TraceMutant("INV-BCAST-1", "real-broadcast", "rocketmq-4.9.8",
                "a broadcasting consumer's offset is committed on the broker (it must stay local)",
                _broadcast_send_back),
    TraceMutant("INV-CLIENT-1", "real-basic", "rocketmq-4.9.8",
                "a client acts although its start was never seen (a client that is not running)",
                _delete(lambda e: e["kind"] == "client_started")),
]


def _new_owner_finds_no_offset(events):
    """The new owner of a queue reads no committed offset although the previous owner had
    persisted one (the broker lost it), and starts at the end of the queue (LAST). One mutant per
    handover of a queue (a list): the spec says at which one messages were still unconsumed."""
    out, n = [], 0
    while True:
        m = _no_offset_at(events, n)
        if m is None:
            return out
        out.append(m)
        n += 1


def _no_offset_at(events, nth):
    evs = copy.deepcopy(events)
    owners = {}
    seen = 0
    for i, e in enumerate(evs):
        if e["kind"] != "pq_created" or e["topic"].startswith("%"):
            continue
        q = (e["group"], e["topic"], e["broker"], e["queue"])
        prev = owners.setdefault(q, e["client"])
        if prev == e["client"]:
            continue
        owners[q] = e["client"]
        seen += 1
        if seen <= nth:
            continue
        top = sum(1 for x in evs[:i] if x["kind"] == "message_stored" and x["topic"] == q[1]
                  and x["broker"] == q[2] and x["queue"] == q[3])
        same = lambda x: (x.get("group"), x.get("topic"), x.get("broker"), x.get("queue")) == q
        keep = [x for x in evs[:i] if not (x["kind"] in ("offset_committed", "offset_flushed") and same(x))]
        for j in range(len(keep) - 1, -1, -1):
            x = keep[j]
            if x["kind"] == "offset_read" and same(x) and x["client"] == e["client"]:
                x["offset"] = -1
                # the store update the read made (nothing to update now that nothing was read)
                if j > 0 and keep[j - 1]["kind"] == "offset_updated" and same(keep[j - 1]) \
                        and keep[j - 1]["client"] == e["client"]:
                    del keep[j - 1]
                break
        e["offset"] = top
        e["from_where"] = "CONSUME_FROM_LAST_OFFSET"
        return _renumber(keep + evs[i:])
    return None


MUTANTS.append(TraceMutant(
    "INV-LOSS-1", "real-expiry", "rocketmq-4.9.8",
    "the broker forgets a group's committed offset, so the queue's next owner starts at its end and skips "
    "what the previous owner had not consumed", _new_owner_finds_no_offset))


def _subscriptions_differ(events):
    """One consumer of a two-consumer group subscribes a tag the others do not, and drops in its
    own re-check a message the group's other subscription takes."""
    evs = copy.deepcopy(events)
    starts = [e for e in evs if e["kind"] == "client_started"]
    if len(starts) < 2:
        return None
    c2 = starts[1]
    topic = next((t for t in c2["subscriptions"] if not t.startswith("%")), None)
    if topic is None:
        return None
    c2["subscriptions"][topic] = {"type": "TAG", "expr": "TagNone"}
    for e in evs:
        if e["kind"] == "pull_answered" and e["client"] == c2["client"] and e["topic"] == topic and e.get("offsets"):
            e["client_filtered"] = sorted((e.get("client_filtered") or []) + e["offsets"])
            e["offsets"], e["msg_ids"] = [], []
            return evs
    return None


MUTANTS.append(TraceMutant(
    "INV-SUB-1", "real-basic", "rocketmq-4.9.8",
    "two consumers of one group subscribe the topic differently ('*' and 'TagNone'): the broker filters with "
    "one subscription, the second consumer drops in its own tag re-check what the group wanted",
    _subscriptions_differ))
