"""What a scheduled task of the reference reads and writes: its footprint.

In RocketMQ, work due at the same moment runs on different threads (the broker's flush
services, its channel scan, its pull-hold service, the remoting threads that apply a one-way
offset update), so the simulator lets a chooser pick the order of tasks due in the same
millisecond (`task_order`). When two such tasks touch nothing in common that either writes,
both orders reach the same state, and an exhaustive search needs only one of them: the
explorer's chooser (`model_checks/world.py`) runs a task first without branching when it is
independent of every other task due with it (a persistent set of one task).

A footprint is declared on the method a task runs, beside its code (`@footprint`), as a
function of the task's receiver and arguments that returns (reads, writes) (or None where it
makes no promise, e.g. for an orderly client): sets of
resources, each a tuple naming a piece of state from the coarse to the fine, e.g.
("offsets", broker) for a broker's whole offset table and ("offsets", broker, group, topic,
queue) for one entry of it. A resource covers every resource it is a prefix of. A task with
no footprint conflicts with every task.

A declared task promises two more things, which make one task a persistent set:
- it schedules nothing at delay 0 (whatever it sends goes through the network, whose latency
  the explorer requires to be at least 1 ms), so the tasks of a millisecond are the ones due
  at its start;
- its footprint holds for every answer the chooser may give inside it (a lost one-way call,
  the retry queue picked).

What a task emits goes to the spec; that the spec's state after the events of two independent
tasks does not depend on their order is tested (tests/test_reduction.py), not declared.
"""
from __future__ import annotations

from typing import Callable

from .sim import Periodic


class Footprint(tuple):
    """A task's (reads, writes), each a frozenset of resources. A step's plan compares every
    footprint of a batch with every other, so each keeps the prefixes of its resources, made
    once (`_closure`), and two footprints meet by set lookups instead of by pairs of resources."""

    def __new__(cls, reads, writes):
        return super().__new__(cls, (frozenset(reads), frozenset(writes)))

    def closures(self) -> tuple[frozenset, frozenset]:
        c = self.__dict__.get("_closures")
        if c is None:
            c = self._closures = (_closure_of(self[0]), _closure_of(self[1]))
        return c


# Read by what depends on the time it runs at beyond its own millisecond: a pause lasts from when
# it strikes. No task writes it; a search never moves such a fault across a later task (a fault
# strikes at the time of the task it comes before).
CLOCK = ("clock",)


def footprint(fn: Callable[..., tuple]):
    """Declare the footprint of the decorated method: fn(self, *args) -> (reads, writes) (a
    static method's: fn(*args)). Put it under @staticmethod."""
    def mark(method):
        method.__footprint__ = fn
        return method
    return mark


def task_footprint(fn, args) -> Footprint | None:
    """The footprint of a task that runs fn(*args), or None when it is not declared."""
    target = getattr(fn, "__self__", None)
    if isinstance(target, Periodic):    # a periodic service's tick: the service it runs
        fn = target.fn
        target = getattr(fn, "__self__", None)
    func = getattr(fn, "__func__", None)
    if func is None:                    # a plain function (a static method)
        declare = getattr(fn, "__footprint__", None)
        fp = None if declare is None else declare(*args)
    else:
        declare = getattr(func, "__footprint__", None)
        fp = None if declare is None or target is None else declare(target, *args)
    # fp None: not declared, or not for these arguments
    if fp is None:
        return None
    reads, writes = fp
    return Footprint(reads, writes)


def covers(a: tuple, b: tuple) -> bool:
    """One resource is part of the other (either is a prefix of the other): the definition that
    `independent` computes by lookups."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def _closure(resources) -> frozenset:
    """Every prefix of every resource (the resources included)."""
    return frozenset(r[:k] for r in resources for k in range(1, len(r) + 1))


# A search plans every step afresh, so the same few footprints come back again and again as new
# objects: their closures are kept by value (bounded: cleared when full).
_CLOSURES: dict = {}


def _closure_of(resources: frozenset) -> frozenset:
    c = _CLOSURES.get(resources)
    if c is None:
        if len(_CLOSURES) >= 50_000:
            _CLOSURES.clear()
        c = _CLOSURES[resources] = _closure(resources)
    return c


def _meet(xs, ys, ys_closure) -> bool:
    """Some x covers some y: x is a prefix of a y (x in the closure of ys), or a y is a strict
    prefix of x."""
    for x in xs:
        if x in ys_closure:
            return True
        for k in range(1, len(x)):
            if x[:k] in ys:
                return True
    return False


def _closures(fp) -> tuple[frozenset, frozenset]:
    return fp.closures() if isinstance(fp, Footprint) else (_closure(fp[0]), _closure(fp[1]))


def independent(a, b) -> bool:
    """Neither writes what the other reads or writes (a resource meets every resource it is a
    prefix of, or that is a prefix of it: `covers`)."""
    (ra, wa), (rb, wb) = a, b
    if not wa and not wb:
        return True
    crb, cwb = _closures(b)
    return not (_meet(wa, wb, cwb) or _meet(wa, rb, crb) or _meet(ra, wb, cwb))


def independent_tasks(batch) -> list[int]:
    """The indices of the tasks of `batch` (simulator heap items, all due now) each independent
    of every other one. Empty unless every task of the batch is declared: an undeclared one may
    write anything, or schedule a task for this same millisecond."""
    fps = []
    for item in batch:
        fp = task_footprint(item[2], item[3])
        if fp is None:
            return []
        fps.append(fp)
    return [i for i, fp in enumerate(fps)
            if all(j == i or independent(fp, other) for j, other in enumerate(fps))]
