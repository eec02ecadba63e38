"""The gRPC PushConsumer (rocketmq-client-java 5.2.0, client_type GRPC_PUSH) on real RocketMQ 5.5.0
through its proxy: the built-in scenario pop-grpc-push, recorded with `record --client
build/grpc-client/rocketspec-grpc-client --release 5.5.0` (tests/fixtures/real/pop/
pop-grpc-push-5.5.0.jsonl.gz; `make test-real` records it again, tests/test_real_pop.py).

What the run shows, and the reference follows (reference/client/grpc_push_consumer.py): a FIFO
client retries a failed message itself under the one handle, 1 s and then 5 s later (the group's
customized retry policy), and after its third failure forwards it to the DLQ, which the proxy
acks; the message's own reconsume times stay 0. A concurrent client's failed message comes back
through revive, and the proxy dead-letters the copy whose reconsume times reach max attempts.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import load_scenario
from rocketspec.rocketmq import grpc_push as facts
from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_events, check_trace

TRACE = Path(__file__).parent / "fixtures" / "real" / "pop" / "pop-grpc-push-5.5.0.jsonl.gz"
PROFILE = "rocketmq-5.5.1"


def _events():
    with gzip.open(TRACE, "rt") as fh:
        return [json.loads(line) for line in fh]


def _fifo_calls(evs):
    """handle -> [(ts, reconsume times the listener saw)] of the FIFO group's calls."""
    calls: dict = {}
    for e in evs:
        if e["kind"] == "pop_consume_started" and e["group"] == "GID_gf":
            calls.setdefault(e["handles"][0], []).append((e["ts"], e["reconsume_list"][0]))
    return calls


def test_the_real_grpc_push_run_holds():
    """A FIFO message the client dead-letters after three calls under one handle carries
    reconsume times 0: counted by its calls it is at its limit. The spec that counted only
    reconsume times reported INV-POP-DLQ-1 on it (a false alarm)."""
    res = check_trace(str(TRACE), PROFILE)
    assert res.ok, [f.message for f in res.findings.errors]
    assert res.ended == "quiescent"
    evs = _events()
    assert {c["config"]["client_type"] for c in evs if c["kind"] == "client_started"} == {"GRPC_PUSH"}
    fifo_dlq = [e for e in evs if e["kind"] == "pop_dead_lettered" and e["group"] == "GID_gf"]
    assert fifo_dlq and all(e["reconsume_times"] == 0 and e["max_attempts"] == 3 for e in fifo_dlq)
    by_place = {tuple(h.split()[6:8]): c for h, c in _fifo_calls(evs).items()}
    for d in fifo_dlq:
        assert [r for _, r in by_place[tuple(d["handle"].split()[6:8])]] == [0, 1, 2]


def test_a_fifo_message_is_retried_in_the_client_after_the_retry_policys_delays():
    """The real client's gaps between calls on one handle are the policy's 1 s and 5 s (plus the
    call and the scheduler's few ms), as the reference's next_attempt_delay_ms gives them."""
    retried = [c for c in _fifo_calls(_events()).values() if len(c) > 1]
    assert retried
    for c in retried:
        assert [r for _, r in c] == list(range(len(c)))
        for i in range(1, len(c)):
            gap = c[i][0] - c[i - 1][0]
            assert facts.next_attempt_delay_ms(i) <= gap < facts.next_attempt_delay_ms(i) + 200, c


def test_the_reference_runs_the_scenario_the_same_way():
    """The reference's run of pop-grpc-push holds, retries a FIFO message under its handle after
    the same delays, and dead-letters it with its own reconsume times after max attempts."""
    for seed in (1, 2):
        evs = run_to_list(load_scenario("pop-grpc-push"), seed, PROFILE)
        assert check_events(enumerate(evs, 1), get_profile(PROFILE)).ok
        for c in (c for c in _fifo_calls(evs).values() if len(c) > 1):
            for i in range(1, len(c)):
                assert facts.next_attempt_delay_ms(i) <= c[i][0] - c[i - 1][0] < facts.next_attempt_delay_ms(i) + 100
        dlq = [e for e in evs if e["kind"] == "pop_dead_lettered" and e["group"] == "GID_gf"]
        assert all(e["reconsume_times"] == 0 for e in dlq)
