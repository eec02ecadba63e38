"""An orderly commit proven by the pull or persist that carries its offset, when the store is
seen by polling (issue 42: "orderly commits seen late").

ConsumeMessageOrderlyService.processConsumeResult (4.9.8 and 5.x) runs ProcessQueue.commit
(lastKey + 1) and updateOffset(mq, it, false) right after the consume hook's after-call
(consume_finished); DefaultMQPushConsumerImpl.pullMessage reads the store (READ_FROM_MEMORY) for
the pull's commitOffset, RemoteBrokerOffsetStore.persistAll reads it for each persist. So a pull
or persist of lastKey + 1 proves the commit. The recorder sees no commit and polls the store: its
offset_updated may come after that proof, and the spec used to report the broker's commit of the
value as INV-OFFSET-3. An exact observation of the commit or of its updateOffset after the proof
is still a violation."""
from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

import handtraces
import late_samples as ls
from handtraces import REAL, TRACES
from rocketspec.spec.replay import check_trace

FIXTURE = Path(__file__).parent / "fixtures" / "orderly-commit-sampled-late.jsonl"
P = "rocketmq-4.9.8"
# the real orderly recordings (real-attach's group is orderly too)
SOURCES = ("real-orderly-takeover", "real-orderly-pause", "real-orderly-suspend", "real-orderly-dlq", "real-attach")


def _load(name):
    return handtraces.load(REAL / f"{name}.jsonl")


_CACHE: dict = {}


def _source(name):
    if name not in _CACHE:
        evs = _load(name)
        base = {f.inv for f in handtraces.check([dict(e) for e in evs], P).findings.errors}
        _CACHE[name] = (evs, ls.windows(evs), base)
    return _CACHE[name]


def errors(rep):
    return [(f.inv, f.seq, f.message) for f in rep.findings.errors]


def test_the_fixture_is_a_real_recording_with_only_one_sample_moved():
    """real-orderly-takeover up to seq 215; c1's sample of queue 2's store at 6 (seq 131, 11 ms
    after the listener returned) moved after the persist of 6 (seq 194) and the broker's commit of
    it (seq 198), before the ProcessQueue's drop (seq 201); nothing else changed but seq (the
    events between lose one)."""
    real = _load("real-orderly-takeover")[:216]
    (w,) = [w for w in ls.windows(real) if real[w.sample]["seq"] == 131]
    after = next(i for i, e in enumerate(real) if e["seq"] == 198)
    want = ls.move_sample(real, w, after)
    got = handtraces.load(FIXTURE)
    strip = lambda evs: [{k: v for k, v in e.items() if k != "seq"} for e in evs]     # noqa: E731
    assert strip(got) == strip(want)
    assert [e["seq"] for e in got] == list(range(len(got)))
    moved = got[198]
    assert moved["kind"] == "offset_updated" and moved["obs"] == "sampled" and moved["stored"] == 6
    assert got[193]["kind"] == "offset_persisted" and got[193]["offset"] == 6
    assert got[197]["kind"] == "offset_committed" and got[197]["offset"] == 6


def test_a_sample_later_than_the_persist_that_proves_the_commit_holds():
    rep = check_trace(FIXTURE)
    assert rep.ok and not rep.findings.errors, errors(rep)


def _windows():
    return [(name, i) for name in SOURCES for i in range(len(_source(name)[1]))]


@st.composite
def late_positions(draw):
    name, i = draw(st.sampled_from(_windows()))
    w = _source(name)[1][i]
    return name, w, draw(st.integers(w.proof, w.settle - 1))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(late_positions())
def test_a_polled_sample_anywhere_after_its_proof_changes_no_verdict(pos):
    """Every orderly commit of the real recordings whose sample preceded a pull or persist of its
    value, the sample moved to any position between that proof and the next event that settles
    the commit: the verdict is the recording's own (the old spec: INV-OFFSET-3 once the broker
    committed the value before the sample)."""
    name, w, after = pos
    evs, _, base = _source(name)
    rep = handtraces.check(ls.move_sample(evs, w, after), P)
    assert {f.inv for f in rep.findings.errors} == base, errors(rep)[:3]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(late_positions())
def test_the_same_reordering_of_an_exact_update_is_a_violation(pos):
    """The same move, the offset_updated marked exact: the store took the value after a pull or
    persist had carried it, past a batch still being committed (INV-OFFSET-3)."""
    name, w, after = pos
    evs, _, _ = _source(name)
    rep = handtraces.check(ls.move_sample(evs, w, after, obs=None), P)
    offs3 = [m for inv, _, m in errors(rep) if inv == "INV-OFFSET-3"]
    assert offs3, errors(rep)[:3]


def test_an_exact_commit_after_its_proof_is_a_violation():
    """The fixture with the commit itself reported exactly (pq_committed) after the persist and
    the broker's commit of its value."""
    evs = handtraces.load(FIXTURE)
    late = evs[198]
    commit = {"seq": 0, "ts": late["ts"], "kind": "pq_committed", "client": late["client"],
              "group": late["group"], "topic": late["topic"], "broker": late["broker"], "queue": 2,
              "offset": 6, "offsets": [5]}
    rep = handtraces.check(evs[:199] + [commit] + evs[199:], P)
    msgs = [m for inv, _, m in errors(rep) if inv == "INV-OFFSET-3"]
    assert msgs and "persist" in msgs[0] and "before ProcessQueue.commit" in msgs[0], errors(rep)


def test_a_persist_past_the_commit_proves_nothing():
    """A persist of 7 while the due commit gives 6: not that commit's value."""
    evs = handtraces.load(FIXTURE)
    for i in (193, 197):        # the persist and its commit by the broker
        evs[i] = dict(evs[i], offset=7)
    rep = handtraces.check(evs, P)
    assert "INV-OFFSET-3" in {f.inv for f in rep.findings.errors}, errors(rep)


# --------------------------------------------------------------------- an exact emitter's trace
Q = dict(client="c1", group="G", topic="T", broker="broker-a", queue=0)


def _exact_prefix():
    """valid_orderly.jsonl (exact: pq_committed and offset_updated reported as they happen) up
    to c1's listener returning SUCCESS for offset 0 (seq 18)."""
    return handtraces.load(TRACES / "valid_orderly.jsonl")[:19]


def _commit_then_update():
    return [{"seq": 0, "ts": 5, "kind": "pq_committed", **Q, "offset": 1, "offsets": [0]},
            {"seq": 0, "ts": 5, "kind": "offset_updated", **Q, "offset": 1, "increase_only": False,
             "stored": 1, "store": "remote"}]


def test_an_exact_trace_holds_in_its_own_order():
    persist = [{"seq": 0, "ts": 5, "kind": "offset_persisted", **Q, "offset": 1, "lost": False},
               {"seq": 0, "ts": 5, "kind": "offset_committed", "broker": "broker-a", "group": "G", "topic": "T",
                "queue": 0, "offset": 1, "client": "c1", "source": "persist"}]
    rep = handtraces.check(_exact_prefix() + _commit_then_update() + persist, P)
    assert rep.ok, errors(rep)


def test_an_exact_persist_before_the_commit_is_a_violation():
    persist = [{"seq": 0, "ts": 5, "kind": "offset_persisted", **Q, "offset": 1, "lost": False},
               {"seq": 0, "ts": 5, "kind": "offset_committed", "broker": "broker-a", "group": "G", "topic": "T",
                "queue": 0, "offset": 1, "client": "c1", "source": "persist"}]
    rep = handtraces.check(_exact_prefix() + persist + _commit_then_update(), P)
    assert "INV-OFFSET-3" in {f.inv for f in rep.findings.errors}, errors(rep)


def test_an_exact_pull_carrying_the_offset_before_the_commit_is_a_violation():
    pull = [{"seq": 0, "ts": 5, "kind": "pull_issued", **Q, "offset": 2, "pull_id": 2, "max_nums": 32,
             "commit_offset": 1},
            {"seq": 0, "ts": 5, "kind": "offset_committed", "broker": "broker-a", "group": "G", "topic": "T",
             "queue": 0, "offset": 1, "client": "c1", "source": "pull"}]
    rep = handtraces.check(_exact_prefix() + pull + _commit_then_update(), P)
    assert "INV-OFFSET-3" in {f.inv for f in rep.findings.errors}, errors(rep)
