"""Forgetting a deployment whose events are over (the partitioned replay at scale).

A replay partition learns (traces.scopes) when the last event of a *scope* has been replayed: a
set of names (traces.kinds.names) that no later event mentions. Every state key is made of names
of one scope, and every action reads only keys made of its event's names (or found through
them), so no later action reads that scope's state again, with one exception: the end-of-trace
rule (spec.actions.check_quiescent) reads every key. `take` moves the scope's entries out of
the state; `Deferred` judges the end-of-trace rule on them at once (the state is final: nothing
changes it any more) and keeps only the findings, which it hands on at trace_ended when the run
ends quiescent. So the state of a partition holds the scopes still live, not every scope seen.
"""
from __future__ import annotations

from .actions import JUDGED_ENDS, check_quiescent
from .replay import Findings
from .state import SpecState


def _split(names) -> tuple:
    g, t, b, c = set(), set(), set(), set()
    by = {"g": g, "t": t, "b": b, "c": c}
    for k, v in names:
        by[k].add(v)
    return g, t, b, c


def _move(src: dict, dst: dict, gone) -> None:
    for k in [k for k in src if gone(k)]:
        dst[k] = src.pop(k)


def take(st: SpecState, names) -> SpecState:
    """A new state holding every entry of `st` keyed by one of `names`, removed from `st`. (One
    name of a key suffices: all the names of a key are of one scope.)"""
    g, t, b, c = _split(names)
    sub = SpecState(st.profile)
    sub.ended = st.ended
    _move(st.queues, sub.queues, lambda k: k[0] in g or k[1] in t or k[2] in b)
    _move(st.stored, sub.stored, lambda k: k[0] in t or k[1] in b)
    _move(st.chains, sub.chains, lambda k: k[0] in g)
    _move(st.views, sub.views, lambda k: k[0] in g or k[1] in t)
    gone = {x for x in st.sampled_stores if x[0][0] in g or x[1] in c}
    st.sampled_stores -= gone
    sub.sampled_stores = gone
    d, sd = st.dir, sub.dir
    _move(d.brokers, sd.brokers, lambda k: k in b)
    _move(d.broker_limits, sd.broker_limits, lambda k: k in b)
    _move(d.topics, sd.topics, lambda k: k[0] in t or k[1] in b)
    _move(d.clients, sd.clients, lambda k: k in c)
    _move(d.groups, sd.groups, lambda k: k in g)
    _move(d.registered, sd.registered, lambda k: k[0] in b or k[1] in g)
    _move(d.alloc, sd.alloc, lambda k: k[0] in c or k[1] in t)
    _move(d.queue_keys, sd.queue_keys, lambda k: k[0] in g or k[1] in t)
    return sub


def live_sizes(st: SpecState) -> dict:
    """How many keys of each family the state holds (the partition result's `live_keys`)."""
    return {"queues": len(st.queues), "stored_queues": len(st.stored), "chains": len(st.chains),
            "views": len(st.views), "clients": len(st.dir.clients),
            "messages_kept": sum(len(s.msgs) for s in st.stored.values())}


class Deferred(Findings):
    """The end-of-trace rule's findings on the state of ended scopes, kept until trace_ended.
    Only what a report can show is kept: the state snapshot of a finding that can still be
    listed (the first `max_listed` errors, the first `warn_examples` warnings of an invariant),
    the invariant, message and key of the others (they are counted, and aggregated by key)."""

    def __init__(self, max_listed: int = 50, warn_examples: int = 3):
        super().__init__(None, max_listed=max_listed, warn_examples=warn_examples)
        self.held: list = []            # (method, inv, message, key, snapshot or None)
        self.added: dict = {}           # the rule's own counts (SpecState.counts: duplicates)
        self._listable = {"error": max_listed}

    def judge(self, sub: SpecState) -> None:
        """check_quiescent on an ended scope's final state (`take`'s), as trace_ended would."""
        self.st = sub
        check_quiescent(sub, self)
        for k, v in sub.counts.items():
            self.added[k] = self.added.get(k, 0) + v
        self.st = None

    def _hold(self, method, inv, message, key) -> None:
        from . import invariants as _inv

        sev = _inv.severity(inv)
        slot = "error" if sev == "error" else inv
        left = self._listable.get(slot, self.warn_examples)
        self._listable[slot] = left - 1
        self.held.append((method, inv, message, key, self._snapshot(key) if left > 0 else None))

    def report(self, inv, message, key=None, state=None):
        self._hold("report", inv, message, key)

    def example(self, inv, message, key=None, state=None):
        self._hold("example", inv, message, key)

    def hand_on(self, st: SpecState, out) -> None:
        """At trace_ended (`out.ev` is it): the held findings, if the run's end is judged
        (quiescent, or a settled horizon)."""
        if st.ended in JUDGED_ENDS:
            for method, inv, message, key, snap in self.held:
                getattr(out, method)(inv, message, key, state=snap)
            for k, v in self.added.items():
                st.counts[k] = st.counts.get(k, 0) + v
        self.held, self.added = [], {}
