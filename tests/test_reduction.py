"""The explorer's reduction of task orders (reference/footprint.py, BudgetChooser.task_order):
tasks due together that the footprints call independent run in one order. The claim under it is
that both orders reach the same state, the spec's included, with the same findings, whatever the
choices inside the tasks. It is checked here by running both orders at every point where a
search of the reference used the reduction."""
from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketspec.model_checks import world as W
from rocketspec.model_checks.refexplore import RefExplorer
from rocketspec.model_checks.scopes import load_scope
from rocketspec.reference.choice import enumerate_scripts
from rocketspec.reference.footprint import Footprint, covers, independent, independent_tasks, task_footprint
from rocketspec.reference.sim import Periodic
from rocketspec.spec import step

names = st.sampled_from(["offsets", "offsets_disk", "consumers", "held"])
parts = st.sampled_from(["b", "G", "T", 0, 1])
resources = st.builds(lambda n, rest: (n, *rest), names, st.lists(parts, max_size=3))
footprints = st.tuples(st.frozensets(resources, max_size=3), st.frozensets(resources, max_size=3))


@given(footprints, footprints)
def test_independence_is_symmetric(a, b):
    assert independent(a, b) == independent(b, a)


@given(footprints, footprints)
def test_independence_is_no_resource_of_one_written_and_covered_by_the_other(a, b):
    # `independent` finds meeting resources by lookups in prefix closures; the definition, pair
    # by pair (`covers`: one resource is a prefix of the other)
    meet = lambda xs, ys: any(covers(x, y) for x in xs for y in ys)  # noqa: E731
    (ra, wa), (rb, wb) = a, b
    assert independent(a, b) == (not (meet(wa, wb) or meet(wa, rb) or meet(ra, wb)))
    assert independent(Footprint(*a), Footprint(*b)) == independent(a, b)


@given(resources, st.lists(parts, max_size=2), resources)
def test_a_resource_covers_its_parts(r, more, other):
    part = r + tuple(more)
    # writing a whole table conflicts with reading one entry of it, and the other way round
    assert not independent((frozenset(), frozenset([r])), (frozenset([part]), frozenset()))
    assert not independent((frozenset([r]), frozenset()), (frozenset(), frozenset([part])))
    # two readers never conflict
    assert independent((frozenset([r]), frozenset()), (frozenset([part, other]), frozenset()))


def test_an_undeclared_task_conflicts_with_everything():
    def plain():
        pass
    assert task_footprint(plain, ()) is None
    assert independent_tasks([(0, 0, plain, (), None, 0, None)] * 2) == []


class _Forced(W.BudgetChooser):
    """Runs the tasks named by `keys` (one per step), in that order, with no reduction; every
    other choice comes from the script."""

    def __init__(self, script, keys):
        super().__init__(script)
        self.keys = list(keys)

    def task_order(self, batch):
        want = self.keys.pop(0)
        return next(i for i, it in enumerate(batch) if _key(it) == want)

    def strike(self, point, armed, batch=()):
        if self.keys and self.keys[0][0] == "fault":
            return list(armed).index(self.keys.pop(0)[1]) + 1
        if len(batch) == 1:                # the task runs with no task_order asked
            assert _key(batch[0]) == self.keys.pop(0)
        return 0


def _key(item):
    return W._task_key(item)[:-1]          # without the tie-break counter


def _outcomes(ex, snap, keys):
    """Every (digest, error invariants) reachable by running the tasks `keys` one after the
    other from `snap`, over every choice made inside them."""
    out = set()

    def run(ch):
        evs = []
        w = W.load(snap, evs.append, ch)
        errs = []
        sim = w.run.sim
        for k in keys:
            assert sim.step(ex.horizon) == ("fault" if k[0] == "fault" else "task")
        # the clock where the next step starts: a fault struck after a task strikes at the time of
        # the task it comes before, so the two orders meet there
        nxt = sim.next_live_due()
        if nxt is not None:
            sim.now = max(sim.now, nxt)
        for ev in evs:
            errs += [f.inv for f in step(w.spec, ev) if f.severity == "error"]
        return W.digest(W.snapshot(w)), frozenset(errs)

    for _script, _trail, res in enumerate_scripts(run, chooser=lambda s: _Forced(s, keys)):
        out.add(res)
    return out


def _name(item):
    """The qualified name of what a heap item runs (a periodic service's own method)."""
    fn = item[2]
    if isinstance(getattr(fn, "__self__", None), Periodic):
        fn = fn.__self__.fn
    return getattr(fn, "__qualname__", repr(fn))


def _declared() -> set:
    """Every function of the reference with a declared footprint."""
    import importlib
    import pkgutil

    import rocketspec.reference as ref

    out = set()
    for mod in pkgutil.walk_packages(ref.__path__, ref.__name__ + "."):
        m = importlib.import_module(mod.name)
        for obj in vars(m).values():
            if isinstance(obj, type) and obj.__module__ == m.__name__:
                for attr in vars(obj).values():
                    f = attr.__func__ if isinstance(attr, staticmethod) else attr
                    if hasattr(f, "__footprint__"):
                        out.add(f.__qualname__)
    return out


def _reduced_points(scope, profile, max_states=None):
    """(snapshot, batch keys, batch names, index run first, offered faults, deferred faults) at
    every node whose step used the reduction: ran a task first with no choice, or left an armed
    fault to strike later."""
    ex = RefExplorer(scope, profile, max_states=max_states, chain=False, split=False)   # a node per step
    points = []
    base = W.BudgetChooser._plan_of
    current = {}

    def recording(self, batch):
        fresh = self._planned[0] is not batch
        pick, offered = base(self, batch)
        if fresh and (pick is not None or offered is not None):
            armed = [name for name, _ in self.world.run.sim.armed] if self.world.faults_left > 0 else []
            offered = range(len(armed)) if offered is None else offered
            points.append((current["snap"], [_key(it) for it in batch], [_name(it) for it in batch],
                           0 if pick is None else pick, [armed[k] for k in offered],
                           [a for k, a in enumerate(armed) if k not in offered]))
        return pick, offered

    expand = ex.expand

    def expanding(snap):
        current["snap"] = snap
        return expand(snap)

    ex.expand = expanding
    W.BudgetChooser._plan_of = recording
    try:
        r = ex.run()
    finally:
        W.BudgetChooser._plan_of = base
    return ex, r, points


# scopes whose searches meet every declared task in a reduced batch
COMMUTING = [
    (load_scope("tiny", failures=0, fault_kinds=["crash"]), "rocketmq-4.9.8", None),
    (load_scope("tiny"), "rocketmq-5.3.3", 1500),
    (load_scope("tiny", fault_kinds=["persist_lost", "reset"]), "rocketmq-4.9.8", 1500),
    (load_scope("tiny", consumers=2, faults=0, failures=0), "rocketmq-4.9.8", 1500),
    (load_scope("tiny", consumers=2, failures=0, fault_kinds=["crash", "pause", "reset"]), "rocketmq-4.9.8", 1200),
]


# each pair of kinds (two tasks' methods, or a task's and a fault's kind) is checked at this many
# points of each scope: the first ones the search met
CHECKS_PER_KIND = 6


def test_tasks_run_in_one_order_commute():
    # at every step a search reduced, the task run first commutes with each other task due with
    # it and with each fault left to strike later, and each fault offered before it commutes
    # with the other tasks; every declared task is met at such a step
    met = set()
    deferred_kinds = set()
    for scope, profile, cap in COMMUTING:
        ex, r, points = _reduced_points(scope, profile, cap)
        assert points, f"{scope.name}: the reduction never applied"
        seen = set()
        kinds = Counter()       # checks per pair of kinds (task names, fault kinds) in this scope
        for snap, keys, names, i, offered, deferred in points:
            if len(keys) == 1 and not deferred:
                continue
            met.update(names)
            pairs = [(keys[i], keys[j], names[i], names[j]) for j in range(len(keys)) if j != i]
            pairs += [(keys[i], ("fault", f), names[i], f) for f in deferred]
            pairs += [(("fault", f), keys[j], f, names[j]) for f in offered for j in range(len(keys)) if j != i]
            for a, b, name_a, what in pairs:
                kind = (name_a.split()[0], what.split()[0])
                if (snap, a, b) in seen or kinds[kind] >= CHECKS_PER_KIND:
                    continue
                kinds[kind] += 1
                seen.add((snap, a, b))
                first = _outcomes(ex, snap, [a, b])
                other = _outcomes(ex, snap, [b, a])
                assert first == other, f"{a} and {what} do not commute"
                for k in (a, b):
                    if k[0] == "fault":
                        met.add(k[1].split()[0])     # a fault kind checked
            deferred_kinds.update(f.split()[0] for f in deferred)
    declared = _declared() - {"Run.inject"}       # the faults: checked by kind below
    assert declared and declared <= met, f"never checked: {sorted(declared - met)}"
    assert {"crash", "reset"} <= met, "no fault checked against a task run first"
    assert {"crash", "reset"} <= deferred_kinds, "no fault left to strike later"


def test_the_reduction_keeps_the_outcome_of_a_search():
    # the same scope with and without it: the same verdict, far fewer states
    scope = load_scope("tiny", faults=0)
    full = RefExplorer(scope, "rocketmq-4.9.8", reduce=False, chain=False).run()
    reduced = RefExplorer(scope, "rocketmq-4.9.8", chain=False).run()
    assert full.complete and reduced.complete
    assert [v.invariant for v in full.violations] == [v.invariant for v in reduced.violations] == []
    assert reduced.quiescent > 0
    assert reduced.distinct < full.distinct * 0.9 and reduced.generated < full.generated * 0.8


def _stored(ex):
    """The digests of every state the search `ex` stores, and its result."""
    digests = set()
    expand = ex.expand

    def expanding(snap):
        out = expand(snap)
        digests.update(fp for *_, fp, _s, _n in out if fp is not None)
        return out

    ex.expand = expanding
    return digests, ex.run()


@pytest.mark.parametrize("scope", [load_scope("tiny", failures=0, fault_kinds=["crash"]),
                                   load_scope("tiny", faults=0)])
def test_a_chain_of_steps_without_choice_skips_states_not_runs(scope):
    # a node per choice, not per step: every state the chained search stores is one the
    # step-by-step search reaches, with the same violations, far fewer nodes
    steps, by_step = _stored(RefExplorer(scope, "rocketmq-4.9.8", chain=False))
    chained, by_chain = _stored(RefExplorer(scope, "rocketmq-4.9.8"))
    assert by_step.complete and by_chain.complete
    assert chained <= steps
    assert len(chained) < len(steps) / 2
    assert [v.invariant for v in by_step.violations] == [v.invariant for v in by_chain.violations]


def _ends(scope, **kw):
    """The spec states (digests) every run of the search ends in, with the findings at the end,
    and the search's result."""
    import pickle

    ends = set()
    chain = RefExplorer._chain

    def recording(self, snap, ch, evs):
        w, finding, found = chain(self, snap, ch, evs)
        if w.ended is not None:
            W.normalize(w.spec)
            ends.add((W.digest(pickle.dumps(w.spec, protocol=pickle.HIGHEST_PROTOCOL)),
                      None if finding is None else finding[1].inv))
        return w, finding, found

    RefExplorer._chain = recording
    try:
        r = RefExplorer(scope, "rocketmq-4.9.8", **kw).run()
    finally:
        RefExplorer._chain = chain
    return ends, r


FAULTY = load_scope("tiny", failures=0, messages=1, fault_kinds=["crash", "reset", "query_failure"])
# a pause of 11 s that strikes at 10 s thaws after the 20 s rebalance: its ends depend on which
# of the tasks due at 10 s ran before it. A pause reads the clock: it is left for later only past
# a task of its millisecond that it commutes with, and a task of its client never runs last
# while another task of the millisecond could run after it (a pause then strikes between them)
PAUSING = load_scope("tiny", failures=0, messages=1, queues=1, fault_kinds=["pause"], pause_ms=[11000])


@pytest.mark.parametrize("scope", [FAULTY, PAUSING], ids=["crash-reset-query", "pause"])
def test_faults_left_for_later_keep_every_end_of_a_run(scope):
    # a persistent set keeps every terminal state: the runs of the search that leaves commuting
    # faults for later end in exactly the spec states of the search that offers every fault
    # before every task, and the first has fewer nodes
    full, by_full = _ends(scope, reduce=False, split=False)
    reduced, by_reduced = _ends(scope, split=False)
    assert by_full.complete and by_reduced.complete
    assert reduced == full and len(full) > 10
    assert by_reduced.distinct < by_full.distinct


# With a listener failure, a crash that strikes between the client's offset persist and the
# broker's offset flush of the same millisecond ends the run there (the only client is gone:
# quiescent), its persists still on their way. The reduction runs the flush first and leaves the
# crash for later; after the persist the run is not quiescent (a persist on its way), so the
# crash was next offered only before the persists' arrival, a millisecond later: 2 ends of 71
# were lost, until a crash that would end the run is offered at the millisecond's end too.
@pytest.mark.slow
def test_a_crash_left_for_later_keeps_every_end_of_a_run():
    scope = load_scope("tiny", fault_kinds=["crash"])
    full, _ = _ends(scope, reduce=False, split=False)
    reduced, _ = _ends(scope, split=False)
    assert reduced == full


def test_one_fault_among_kinds_is_one_search_per_kind():
    # a run has at most one fault, so the scope's runs are the union of each kind's: the same
    # ends of runs, the same verdict, a result per kind
    scope = load_scope("tiny", failures=0, queues=1, fault_kinds=["crash", "reset", "query_failure"])
    whole, by_whole = _ends(scope, split=False)
    split, by_split = _ends(scope)
    assert by_whole.complete and by_split.complete
    assert split == whole
    assert sorted(by_split.kinds) == ["crash", "query_failure", "reset"]
    assert all(r.complete for r in by_split.kinds.values())
    assert by_split.distinct == sum(r.distinct for r in by_split.kinds.values())
