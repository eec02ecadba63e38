"""The proxy's FIFO count (a finding of the random gRPC runs; docs/notes/real-pop.md): every 5.x
proxy in local mode gives an orderly message the order info's count under the queue's key, the
minimum over the pop's offsets, so a message popped again beside fresh offsets passes its max
attempts. The real run is tests/fixtures/real/pop/pop-fifo-attempts-5.5.0.jsonl.gz
(test_real_pop_fixtures); here: the two readings of the broker's per-offset count agree, and the
state machine finds the finding in its environment, with the fixed proxy clean."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from rocketspec.conformance.statemachine import POP, POP_FIFO, check_reference, environment_for
from rocketspec.reference.broker.order_info import ConsumerOrderInfoManager
from rocketspec.rocketmq.pop import proxy_fifo_reconsume_times
from rocketspec.spec.pop_state import OrderInfo

# an orderly queue's pops: each the offsets it hands out (ascending, from some start) and its
# attempt id (None, or one of a few, so that the same id comes back)
_pops = st.lists(st.tuples(st.integers(0, 6), st.integers(1, 4), st.sampled_from([None, "a", "b"])),
                 min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(_pops)
def test_the_spec_counts_each_offsets_attempts_as_the_reference_broker_does(pops):
    """The spec's count (pop_state.OrderInfo.add, from the pops it sees) and the reference
    broker's (order_info.ConsumerOrderInfoManager.update) are two readings of
    mergeOffsetConsumedCount: for any sequence of pops of one queue they agree offset by offset."""
    broker = ConsumerOrderInfoManager()
    spec = None
    for t, (start, n, attempt) in enumerate(pops):
        offsets = list(range(start, start + n))
        want = broker.update(attempt, "T", "G", 0, t, 5000, offsets)
        if spec is not None:
            spec.last = None
        spec = OrderInfo(t, attempt, spec)
        got = {o: spec.add(o, attempt) for o in offsets}
        assert got == want, (pops[: t + 1], got, want)


@given(st.lists(st.integers(0, 5), min_size=1, max_size=6), st.integers(0, 3))
def test_the_proxy_reads_no_more_than_any_offset_of_the_pop_has(counts, stored):
    """The proxy's reading is the pop's smallest count (the message's own when that is 0): never
    more than the count of the offset it is given to, and below it whenever a fresher offset
    shares the pop."""
    r = proxy_fifo_reconsume_times(counts, stored)
    m = min(counts)
    assert r == (m if m > 0 else stored)
    if m > 0:
        assert all(r <= c for c in counts)


def test_the_fifo_limit_is_lifted_where_the_proxy_reads_the_queue_count_except_in_its_own_environment():
    assert environment_for("rocketmq-5.5.1", POP)["groups"]["GID_F"]["max_reconsume_times"] == -1
    assert environment_for("fix-proxy-fifo-count-rocketmq-5.5.1", POP)["groups"]["GID_F"]["max_reconsume_times"] == 2
    assert environment_for("rocketmq-5.5.1", POP_FIFO)["groups"]["GID_F"]["max_reconsume_times"] == 1


def test_the_state_machine_finds_it_and_the_fixed_proxy_is_clean(tmp_path):
    res = check_reference("rocketmq-5.5.1", max_examples=300, scenario=POP_FIFO, shrink_budget_s=5,
                          trace_path=str(tmp_path / "f.jsonl"))
    assert not res.ok and res.crash is None and res.finding == "INV-POP-DLQ-1", res.summary()
    fixed = check_reference("fix-proxy-fifo-count-rocketmq-5.5.1", max_examples=100, scenario=POP_FIFO)
    assert fixed.ok and fixed.crashes_ignored == 0 and fixed.runaway == 0, fixed.summary()


# one FIFO SimpleConsumer, three messages, two per pop, two listener failures: when the second
# message fails twice, its second receive holds the fresh third offset (the proxy says 0) and its
# third says 1 while the broker counts 2
SCOPE = ("tiny-pop", {"consumers": 1, "messages": 3, "failures": 2, "faults": 0, "mode": "ORDERLY",
                      "pop_batch": 2, "horizon_ms": 90_000})


def test_explore_finds_it_in_its_scope_and_the_fixed_proxy_is_clean():
    from rocketspec.model_checks.refexplore import RefExplorer
    from rocketspec.model_checks.scopes import load_scope

    name, over = SCOPE
    r = RefExplorer(load_scope(name, **over), "rocketmq-5.5.1", stop_at_first=True).run()
    assert [v.invariant for v in r.violations] == ["INV-POP-DLQ-1"], r.violations
    assert "minimum over the attempt's offsets" in r.violations[0].message
    r2 = RefExplorer(load_scope(name, **over), "fix-proxy-fifo-count-rocketmq-5.5.1").run()
    assert r2.complete and r2.violations == [] and r2.quiescent > 0, r2.violations
