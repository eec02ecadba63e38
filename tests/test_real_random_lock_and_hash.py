"""Random real runs on 5.x whose white-box-only violation was judged against the release's source:
seed 16243 (5.3.3), a false alarm of the spec's consistent-hash ring on a client id the broker
listed twice; seed 18125 (5.5.1), a real orderly ProcessQueue created on a lock grant the client's
own earlier unlock took away. Each folder under tests/fixtures/real/random/ holds the run's trace,
its scenario and the RocketMQ log lines that show what happened (logs.txt)."""
from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketspec.spec.allocation_rules import consistent_hash
from rocketspec.spec.replay import check_trace

HERE = Path(__file__).parent / "fixtures" / "real" / "random"
DUP = HERE / "seed-16243-duplicated-cid-consistent-hash"
UNLOCK = HERE / "seed-18125-own-unlock-after-lock"

G1C1, G1C2 = "127.0.0.1@g1c1", "127.0.0.1@g1c2"


def _by_inv(res):
    out: dict[str, list[str]] = {}
    for f in res.findings.errors:
        out.setdefault(f.inv, []).append(f.message)
    return out


def test_consistent_hash_gives_a_twice_listed_id_twice_the_nodes():
    """The view of seed 16243 as the 5.3.3 client logged it (logs.txt: mqAllSize=4, cidAllSize=3
    with two clients; g1c1 got 3 queues, g1c2 queue 1). ConsistentHashRouter.addNode numbers the
    second entry's virtual nodes after the ones already on the ring (getExistingReplicas), so
    g1c1 holds nodes -0..-19, not -0..-9 twice."""
    mqs = [("TopicR", "broker-a", q) for q in range(4)]
    cids = [G1C1, G1C1, G1C2]
    assert consistent_hash(mqs, cids, G1C1) == [mqs[0], mqs[2], mqs[3]]
    assert consistent_hash(mqs, cids, G1C2) == [mqs[1]]


@settings(max_examples=300, deadline=None)
@given(ids=st.lists(st.sampled_from(["a", "b", "c", "127.0.0.1@g1c1"]), min_size=1, max_size=6),
       queues=st.integers(1, 12), nodes=st.integers(0, 12))
def test_consistent_hash_agrees_with_the_reference_reading_on_any_id_list(ids, queues, nodes):
    """The spec's ring and the reference's (reference/allocation.py, read separately from the same
    ConsistentHashRouter) give every listed id the same queues, repeated ids included."""
    from rocketspec.reference.allocation import allocate
    from rocketspec.reference.message_queue import MessageQueue

    cids = sorted(ids)
    mqs = [("TopicR", "broker-a", q) for q in range(queues)]
    for cid in set(cids):
        ref = allocate("CONSISTENT_HASH", cid, [MessageQueue(*m) for m in mqs], cids, virtual_node_cnt=nodes)
        got = [(m.topic, m.broker_name, m.queue_id) for m in ref]
        assert got == consistent_hash(mqs, cids, cid, nodes), (cid, cids, nodes)


def test_seed_16243_a_client_id_listed_twice_is_allocated_as_the_client_did():
    """Seed 16243 (5.3.3). g1c1's channel was closed by the broker's idle handler during its 6.1 s
    SIGSTOP; a heartbeat handled after the close registered the closed channel again, and one on
    the new channel added a second entry, so getConsumerIdList named g1c1 twice (logs.txt). The
    clients allocated from that list; check's ring gave g1c1 10 nodes instead of 20 and reported
    INV-ALLOC-1 x20 on allocations RocketMQ computes exactly so."""
    res = check_trace(str(DUP / "trace.jsonl.gz"), "rocketmq-5.3.3", max_listed=1000)
    assert res.findings.counts.get("INV-ALLOC-1", 0) == 0, _by_inv(res).get("INV-ALLOC-1", [])[:2]
    assert not res.findings.errors, res.findings.counts
    views = [json.loads(line) for line in _lines(DUP / "trace.jsonl.gz")]
    assert any(e["kind"] == "allocation_computed" and e["cids"].count(G1C1) == 2 for e in views)


def _lines(path):
    import gzip
    with gzip.open(path, "rt") as fh:
        yield from fh


def test_seed_18125_an_orderly_queue_created_on_a_grant_its_own_unlock_took_names_the_race():
    """Seed 18125 (5.5.1 broker, 5.5.0 client). An operator reset made every pull of GID_r1 answer
    OFFSET_ILLEGAL; the fix task (DefaultMQPushConsumerImpl) calls removeProcessQueue, which takes
    queue 2's ProcessQueue out of the table and then unlocks it one-way (the client logged the
    unlock at 07:14:40,681), and rebalanceImmediately. The rebalance found queue 2 free, locked it
    (requested 685, granted 'renewed' at 691) and created a new ProcessQueue as locked; the broker
    handled the older unlock at 692 (adminBrokerExecutor runs both on its threads), so queue 2 had
    no broker lock while g1c1 pulled and consumed it, until its lockAll at 81333. Real: INV-OWNER-2
    stays, and its message names that race (the oracle cannot see it: g1c1 is the group's only
    consumer, nothing was lost or doubled)."""
    from rocketspec.conformance.real_random import classify, unseen_invariants

    res = check_trace(str(UNLOCK / "trace.jsonl.gz"), "rocketmq-5.5.1", max_listed=1000)
    errs = _by_inv(res)
    assert set(errs) == {"INV-OWNER-2"} and len(errs["INV-OWNER-2"]) == 1, res.findings.counts
    msg = errs["INV-OWNER-2"][0]
    assert "cause:" in msg, msg
    cause = msg.split("cause:", 1)[1]
    assert "own unlock released the queue at ts 1796627680692" in cause, msg
    assert "granted 127.0.0.1@g1c1 the lock at ts 1796627680691" in cause, msg
    assert "tryRemoveOrderMessageQueue" in cause and "removeProcessQueue" in cause, msg
    # the run's oracle.json: the message traces name no consumer, so H-ORDER-1 is not judged
    status = {"H-DELIVER-1": "holds", "H-RETRY-1": "holds", "H-RETRY-2": "skipped", "H-RETRY-3": "holds",
              "H-ORDER-1": "skipped", "H-ORDER-2": "holds", "H-DUP-1": "skipped"}
    oracle = {"complete": True, "guarantees": [{"id": g, "status": s} for g, s in status.items()]}
    sc = json.loads((UNLOCK / "scenario.json").read_text())
    assert classify({"INV-OWNER-2": 1}, oracle, unseen_invariants(res.to_dict(), sc, oracle)) == \
        ("finding", ["INV-OWNER-2"])
