"""The explorer of the reference with several worker processes (`RefExplorer(workers=N)`,
`explore --engine reference --workers N`): a level's nodes are expanded in parallel and merged
in the level's order, so the search is the same search: the same states, the same node ids,
the same violations with the same shortest traces, whatever the number of workers."""
from __future__ import annotations

from rocketspec.model_checks.refexplore import RefExplorer
from rocketspec.model_checks.scopes import BUG_SCOPES, load_scope


def _same(a, b):
    assert (a.distinct, a.generated, a.depth, a.quiescent, a.complete, a.stopped) == \
           (b.distinct, b.generated, b.depth, b.quiescent, b.complete, b.stopped)
    assert [(v.invariant, v.depth, v.events) for v in a.violations] == \
           [(v.invariant, v.depth, v.events) for v in b.violations]


def test_two_workers_search_exactly_what_one_does():
    scope = load_scope("tiny", fault_kinds=["reset"])
    one = RefExplorer(scope, "rocketmq-4.9.8").run()
    two = RefExplorer(scope, "rocketmq-4.9.8", workers=2).run()
    assert one.complete and one.distinct > 200
    _same(one, two)
    assert two.cpu_seconds > 0            # the workers' CPU is counted, not only the parent's


def test_two_workers_find_the_same_shortest_violation():
    name, over = BUG_SCOPES["#2724"]
    scope = load_scope(name, **over)
    one = RefExplorer(scope, "bug-2724-rocketmq-4.9.1", stop_at_first=True).run()
    two = RefExplorer(scope, "bug-2724-rocketmq-4.9.1", stop_at_first=True, workers=2).run()
    assert one.violations and one.stopped is two.stopped
    _same(one, two)
