"""The explorer's reductions keep every reachable state: with sleep sets (moves that commute with
the path are not applied again) the same canonical states are reached, at the same breadth-first
depth, with the same violations, and fewer successors are generated."""
from __future__ import annotations

from dataclasses import replace

import pytest

from rocketspec.model_checks.explorer import Explorer
from rocketspec.model_checks.independence import ALL, footprint, independent
from rocketspec.model_checks.scopes import load_scope


def _explore(scope, profile, sleep):
    ex = Explorer(replace(scope, sleep_sets=sleep), profile)
    res = ex.run()
    assert res.complete
    return res, {fp: ex._depths[i] for fp, i in ex._seen.items()}


CASES = [("tiny", "rocketmq-5.3.3", {}), ("tiny", "rocketmq-4.9.8", {}),
         ("tiny", "rocketmq-5.3.3", {"consumers": 2, "faults": 0}),
         pytest.param("bugs", "bug-5481-rocketmq-5.0.0", {"faults": 1}, marks=pytest.mark.slow),  # ~2.5 min
         ("bugs-orderly", "rocketmq-4.9.8", {"failures": 0, "faults": 1}),
         ("bugs-orderly", "bug-6163-rocketmq-5.0.0", {"consumers": 1, "faults": 0}),
         ("small-orderly", "rocketmq-5.3.3", {"consumers": 1, "faults": 0, "failures": 0})]


def _id(c):
    c = c.values if hasattr(c, "values") else c
    return f"{c[0]}-{c[1]}-{'-'.join(f'{k}{v}' for k, v in c[2].items())}"


@pytest.mark.parametrize("name,profile,over", CASES, ids=[_id(c) for c in CASES])
def test_sleep_sets_keep_every_state_and_its_depth(name, profile, over):
    scope = load_scope(name, **over)
    full, full_states = _explore(scope, profile, False)
    red, red_states = _explore(scope, profile, True)
    assert red_states == full_states          # same states, each at the same shortest depth
    assert sorted(v.invariant for v in red.violations) == sorted(v.invariant for v in full.violations)
    assert red.quiescent == full.quiescent
    assert red.generated <= full.generated


def test_sleep_sets_save_work_with_two_consumers():
    scope = load_scope("tiny", consumers=2, faults=0)
    full, _ = _explore(scope, "rocketmq-5.3.3", False)
    red, _ = _explore(scope, "rocketmq-5.3.3", True)
    assert red.generated < 0.8 * full.generated, (red.generated, full.generated)


class _M:
    def __init__(self, events, tick=0, cost=None, aux=None):
        self.events, self.tick, self.cost, self.aux = events, tick, cost or {}, aux


def _q(kind, client, q, **kw):
    return dict(kind=kind, client=client, group="G", topic="T", broker="b", queue=q, **kw)


def test_footprints():
    pull0 = _M([_q("pull_issued", "c0", 0, offset=0, pull_id=1)])
    pull1 = _M([_q("pull_issued", "c0", 1, offset=0, pull_id=1)])
    other = _M([_q("pull_answered", "c1", 0, pull_id=1, offset=0)])
    assert independent(footprint(pull0), footprint(pull1))      # one client, two queues
    assert not independent(footprint(pull0), footprint(other))  # one queue, two clients
    assert footprint(_M([], tick=1000)) is ALL
    assert footprint(_M([dict(kind="client_crashed", client="c0", group="G")])) is ALL
    assert footprint(_M([dict(kind="some_future_kind", client="c0")])) is ALL
    fail0 = _M([_q("consume_finished", "c0", 0)], cost={"failures": 1})
    fail1 = _M([_q("consume_finished", "c0", 1)], cost={"failures": 1})
    assert not independent(footprint(fail0), footprint(fail1))  # they share the failure budget
    reb = _M([dict(kind="allocation_computed", client="c0", group="G", topic="T", view="v:c0",
                   allocated=[["T", "b", 1]])])
    assert not independent(footprint(reb), footprint(pull1))    # the rebalance reads c0's queue 1
