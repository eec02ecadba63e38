"""The spec's parts on their own: lifecycles, allocation rules, catalogue, profiles, API, SPEC.md."""
import orjson
import pytest

import rocketspec.spec as S
from rocketspec.spec import allocation_rules as A
from rocketspec.spec import invariants as I
from rocketspec.spec import lifecycles as L
from rocketspec.rocketmq.profiles import PROFILES

from pathlib import Path

TRACES = Path(__file__).parent / "traces"


# ------------------------------------------------------------------ lifecycles

def test_transition_tables_come_from_the_statemachines():
    assert L.PQ_TABLE[("created", "pull_issued")] == {"active"}
    assert ("removed", "pull_issued") not in L.PQ_TABLE
    assert ("active", "pq_removed") not in L.PQ_TABLE           # dropped first
    assert L.LOCK_TABLE[("held", "lock_released")] == {"unlocked"}
    assert L.LOCK_TABLE[("expired", "lock_acquired")] == {"held"}
    assert L.MSG_TABLE[("consuming", "message_sent_back")] == {"sent_back", "dead_lettered"}
    assert L.MSG_TABLE[("delayed", "schedule_delivered")] == {"redelivered"}
    assert not any(src == "dead_lettered" for src, _ in L.MSG_TABLE)
    assert L.initial_state(L.ProcessQueueLifecycle) == "created"
    assert L.can(L.QueueLockLifecycle, "unlocked", "lock_acquired", "held")
    assert not L.can(L.QueueLockLifecycle, "unlocked", "lock_expired")


def test_every_lifecycle_event_is_a_trace_kind():
    from rocketspec.traces.schema import kinds

    for cls in L.LIFECYCLES.values():
        for (_, ev) in L.transition_table(cls):
            assert ev in kinds(), ev


def test_mermaid_needs_no_graphviz():
    text = L.mermaid(L.MessageLifecycle)
    assert text.startswith("stateDiagram-v2")
    assert "sent_back --> delayed" in text


# ------------------------------------------------------------------ allocation (digest section 1 vectors)

def mqs(n, topic="topic_test", broker="brokerName"):
    return [(topic, broker, i) for i in range(n)]


def test_averagely_vectors():
    q, cids = mqs(10), ["c0", "c1", "c2", "c3"]
    assert [len(A.averagely(q, cids, c)) for c in cids] == [3, 3, 2, 2]
    assert [x[2] for x in A.averagely(q, cids, "c2")] == [6, 7]
    assert [[x[2] for x in A.averagely(mqs(8), ["a", "b", "c"], c)] for c in "abc"] == [[0, 1, 2], [3, 4, 5], [6, 7]]
    assert A.averagely(q, cids, "zz") == []


def test_by_circle_vectors():
    q, cids = mqs(10), ["c0", "c1", "c2", "c3"]
    assert [[x[2] for x in A.averagely_by_circle(q, cids, c)] for c in cids] == [[0, 4, 8], [1, 5, 9], [2, 6], [3, 7]]


def test_consistent_hash_vectors():
    assert A._md5_32("CID-0-0") == 1900518137
    cids = ["CID-0", "CID-1"]
    owner = {x[2]: c for c in cids for x in A.consistent_hash(mqs(6), cids, c)}
    assert [owner[i] for i in range(6)] == ["CID-1", "CID-0", "CID-1", "CID-0", "CID-0", "CID-0"]
    cids = [f"CID-{i}" for i in range(4)]
    owner = {x[2]: c for c in cids for x in A.consistent_hash(mqs(10), cids, c)}
    assert [int(owner[i][-1]) for i in range(10)] == [2, 0, 3, 2, 2, 2, 3, 3, 2, 3]


def test_java_sort_order():
    assert A.is_sorted_view([("T", "b", 2), ("T", "b", 10)], ["a", "b"])
    assert not A.is_sorted_view([("T", "b", 10), ("T", "b", 2)], ["a", "b"])
    assert not A.is_sorted_view([], ["b", "a"])


# ------------------------------------------------------------------ catalogue and profiles

def test_catalogue_ids_are_unique_and_complete():
    ids = [inv.id for inv in I.CATALOGUE]
    assert len(ids) == len(set(ids))
    for inv in I.CATALOGUE:
        assert inv.severity in ("error", "warning")
        assert inv.form in ("state", "step", "end")
        assert inv.statement and inv.title
        assert inv.allowed_anomaly == (inv.severity == "warning")
    for needed in ("INV-OWNER-1", "INV-OWNER-2", "INV-LOCK-1", "INV-OFFSET-1", "INV-OFFSET-2", "INV-OFFSET-3",
                   "INV-ORDER-1", "INV-RETRY-1", "INV-RETRY-2", "INV-DLQ-1", "INV-LIVE-1", "INV-FILTER-1",
                   "INV-BCAST-1", "INV-DROP-1", "ANOM-DUP-1", "ANOM-OFFSET-BACK"):
        assert needed in I.BY_ID
    assert set(I.STATE_PREDICATES) <= set(I.BY_ID)


def test_every_action_reports_only_catalogued_ids():
    import re

    src = "".join(p.read_text() for p in sorted((Path(S.__file__).parent / "actions").glob("*.py")))
    used = set(re.findall(r'"((?:INV|ANOM)-[A-Z0-9-]+)"', src))
    assert used <= set(I.BY_ID), used - set(I.BY_ID)


def test_known_bug_profiles_name_catalogued_invariants():
    bugs = {p.known_bug: p for p in PROFILES.values() if p.known_bug}
    for issue in ("#6163", "#4215", "#1825", "#4016", "#5481", "#2449", "#2708"):
        assert issue in bugs, issue
    for p in bugs.values():
        assert p.expected_violation in I.BY_ID
        assert I.BY_ID[p.expected_violation].severity == "error"


# ------------------------------------------------------------------ API for the model checker

def events(name):
    return [orjson.loads(line) for line in (TRACES / name).read_bytes().splitlines() if line.strip()]


def test_step_guard_apply_check_state():
    evs = events("valid_concurrent.jsonl")
    st = S.initial_state("rocketmq-5.3.3")
    for ev in evs:
        assert S.guard(st, ev) is None, ev
        nxt = S.apply(st, ev)
        assert S.freeze(nxt) != S.freeze(st) or ev["kind"] in ("pull_held", "offset_committed", "trace_ended",
                                                             "trace_started", "offset_persisted")
        errs = [f for f in S.step(st, ev) if f.severity == "error"]
        assert not errs
        assert S.freeze(st) == S.freeze(nxt)
        assert S.check_state(st) == []
    assert S.check_end(st) == []
    hash(S.freeze(st))


def test_guard_does_not_mutate_and_apply_raises_disabled():
    evs = events("wrong_two_lock_holders.jsonl")
    st = S.initial_state()
    for ev in evs[:-2]:
        S.step(st, ev)
    bad = evs[-2]
    before = S.freeze(st)
    reason = S.guard(st, bad)
    assert reason is not None and reason.inv == "INV-LOCK-1"
    assert S.freeze(st) == before
    with pytest.raises(S.Disabled):
        S.apply(st, bad)


def test_state_predicate_catches_offset_past_pending():
    evs = events("valid_concurrent.jsonl")
    st = S.initial_state()
    for ev in evs[:14]:        # both messages pulled, offset 0 and 1 in the tree
        S.step(st, ev)
    qs = st.queues[("G", "T", "broker-a", 0)]
    qs.stores["c1"] = [2, False]
    assert [x[0] for x in S.check_state(st)] == ["INV-OFFSET-3"]


# ------------------------------------------------------------------ SPEC.md

def test_spec_md_generated_sections_are_up_to_date():
    from rocketspec.spec import docgen

    text = docgen.SPEC_MD.read_text()
    assert docgen.render(text) == text, "run: python -m rocketspec.spec.docgen"
    for name in docgen.GENERATORS:
        assert f"<!-- BEGIN GENERATED: {name} -->" in text
