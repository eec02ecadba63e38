"""The z3 proofs (`rocketspec.model_checks.proofs`) and `rocketspec prove`.

- Every proof gives its expected verdict (the whole set takes about two seconds, so it is
  part of the normal run; no timing is asserted here, per docs/CONTRIBUTING.md).
- The z3 encoding of the allocation rules agrees with a plain-Python transcription of the
  digest's formulas, with `rocketspec.reference.allocation`, and with the digest's vectors
  (so the proofs are about the rule RocketMQ runs, not a drifted copy).
- Wrong rules are refuted, and their models are real counterexamples.
- Lease counterexamples are real overlaps: each model is replayed in plain Python against
  the timing rules (broker lock table, client lease check, durations).
"""
from __future__ import annotations

import json
from fractions import Fraction
from math import floor

import pytest
import z3
from click.testing import CliRunner

from rocketspec.model_checks.proofs import PROVED, REFUTED, proof_names, run_proofs, select
from rocketspec.model_checks.proofs.allocation import avg_balanced, avg_cover, avg_unique
from rocketspec.model_checks.proofs.formulas import avg_block, circle_count, circle_member
from rocketspec.model_checks.proofs.lease import (
    LeaseParams, check_config, describe_counterexample, lease_ignoring_latency,
    lease_pause_in_lock_reply, lease_pause_inside_call, lease_slow_renewal,
    lease_unsafe_config, reliable_unsafe_condition,
)


# ---- the proofs themselves ------------------------------------------------------------------

def test_every_proof_gives_its_expected_verdict():
    results = run_proofs()
    assert [r.name for r in results] == proof_names()
    bad = [(r.name, r.status, r.expected, r.notes) for r in results if not r.holds]
    assert not bad
    proved = {r.name for r in results if r.status == PROVED}
    assert {"avg_in_range", "avg_cover", "avg_unique", "avg_contiguous", "avg_balanced",
            "avg_surplus_empty", "circle_cover", "circle_unique", "circle_count",
            "circle_balanced", "lease_safe", "lease_exact", "lease_exact_ideal_clock",
            "lease_reliable_exact", "lease_no_stall_exact"} <= proved
    for r in results:
        assert r.statement and "for all" in r.statement.lower() or r.expected == REFUTED
        if r.status == REFUTED:
            assert r.model


def test_select_by_prefix_and_unknown_name():
    assert select(["avg_unique"]) == ["avg_unique"]
    assert all(n.startswith("circle") for n in select(["circle"]))
    with pytest.raises(ValueError):
        select(["no_such_proof"])


# ---- the encoding against plain Python, the reference, and the digest ------------------------

def avg_plain(n: int, N: int, i: int) -> tuple[int, int]:
    """Digest section 1, transcribed with Java's int arithmetic (operands non-negative)."""
    mod = n % N
    average_size = 1 if n <= N else (n // N + 1 if (mod > 0 and i < mod) else n // N)
    start = i * average_size if (mod > 0 and i < mod) else i * average_size + mod
    return start, min(average_size, n - start)


def avg_plain_block(n, N, i) -> list[int]:
    start, rng = avg_plain(n, N, i)
    return [start + k for k in range(rng)]


def _eval(term, **values) -> int:
    subs = [(z3.Int(k), z3.IntVal(v)) for k, v in values.items()]
    return z3.simplify(z3.substitute(term, *subs)).as_long()


SIZES = [(n, N) for n in range(1, 31) for N in range(1, 11)]


def test_avg_encoding_matches_plain_python():
    n, N, i = z3.Ints("n N i")
    block = avg_block(n, N, i)
    for nn, NN in SIZES:
        for ii in range(NN):
            expect = avg_plain(nn, NN, ii)
            got = (_eval(block.start, n=nn, N=NN, i=ii), _eval(block.range, n=nn, N=NN, i=ii))
            assert got == expect, (nn, NN, ii)


def test_circle_encoding_matches_plain_python():
    n, N, i, q = z3.Ints("n N i q")
    member, count = circle_member(n, N, i, q), circle_count(n, N, i)
    for nn, NN in SIZES[::5]:
        for ii in range(NN):
            plain = [x for x in range(ii, nn) if x % NN == ii]   # the Java loop
            encoded = [x for x in range(nn) if z3.is_true(z3.simplify(z3.substitute(
                member, (n, z3.IntVal(nn)), (N, z3.IntVal(NN)), (i, z3.IntVal(ii)), (q, z3.IntVal(x)))))]
            assert encoded == plain, (nn, NN, ii)
            assert _eval(count, n=nn, N=NN, i=ii) == len(plain)


def test_encoding_matches_reference_allocation():
    allocation = pytest.importorskip("rocketspec.reference.allocation")
    from rocketspec.reference.message_queue import MessageQueue

    n, N, i, q = z3.Ints("n N i q")
    block = avg_block(n, N, i)
    for nn, NN in SIZES[::2]:
        mqs = [MessageQueue("TopicTest", "broker-a", x) for x in range(nn)]
        cids = [f"CID-{k:02d}" for k in range(NN)]          # already in String order
        for ii, cid in enumerate(cids):
            start, rng = _eval(block.start, n=nn, N=NN, i=ii), _eval(block.range, n=nn, N=NN, i=ii)
            avg = [mq.queue_id for mq in allocation.allocate("AVG", cid, mqs, cids)]
            assert avg == list(range(start, start + max(rng, 0))), (nn, NN, ii)
            circle = [mq.queue_id for mq in allocation.allocate("AVG_BY_CIRCLE", cid, mqs, cids)]
            assert len(circle) == _eval(circle_count(n, N, i), n=nn, N=NN, i=ii)
            assert circle == [x for x in range(nn) if x % NN == ii]


@pytest.mark.parametrize("n,N,blocks", [
    (10, 4, [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]),   # AllocateMessageQueueAveragelyTest
    (8, 3, [[0, 1, 2], [3, 4, 5], [6, 7]]),
])
def test_digest_vectors_avg(n, N, blocks):
    nz, Nz, iz = z3.Ints("n N i")
    block = avg_block(nz, Nz, iz)
    for i, expect in enumerate(blocks):
        start, rng = _eval(block.start, n=n, N=N, i=i), _eval(block.range, n=n, N=N, i=i)
        assert list(range(start, start + rng)) == expect


def test_digest_vector_circle():
    n, N, i, q = z3.Ints("n N i q")
    expect = [[0, 4, 8], [1, 5, 9], [2, 6], [3, 7]]
    for ii, block in enumerate(expect):
        got = [x for x in range(10) if z3.is_true(z3.simplify(z3.substitute(
            circle_member(n, N, i, q), (n, z3.IntVal(10)), (N, z3.IntVal(4)), (i, z3.IntVal(ii)),
            (q, z3.IntVal(x)))))]
        assert got == block


# ---- wrong rules are refuted with real counterexamples ----------------------------------------

def avg_mutant_plain(n, N, i, variant) -> list[int]:
    mod = n % N
    longer = mod > 0 and i < mod
    if variant == "no_longer_blocks":
        size = 1 if n <= N else n // N
    else:
        size = 1 if n <= N else (n // N + 1 if longer else n // N)
    start = i * size + mod if variant == "start_always_plus_mod" else (i * size if longer else i * size + mod)
    return [start + k for k in range(min(size, n - start))]


def test_mutant_overlapping_blocks_is_refuted_with_a_real_overlap():
    r = avg_unique("start_always_plus_mod", name="mutant", expected=REFUTED)
    assert r.status == REFUTED
    m = r.model
    assert m["i"] != m["j"]
    assert m["q"] in avg_mutant_plain(m["n"], m["N"], m["i"], "start_always_plus_mod")
    assert m["q"] in avg_mutant_plain(m["n"], m["N"], m["j"], "start_always_plus_mod")
    # ... and the same numbers are no overlap under the real rule.
    assert not (m["q"] in avg_plain_block(m["n"], m["N"], m["i"])
                and m["q"] in avg_plain_block(m["n"], m["N"], m["j"]))
    # The mutant also breaks balance; the real rule is still proved on these proofs.
    assert avg_balanced("start_always_plus_mod").status == REFUTED
    assert avg_unique().status == PROVED


def test_mutant_uncovered_queue_is_refuted_with_a_real_gap():
    r = avg_cover("no_longer_blocks")
    assert r.status == REFUTED
    m = r.model
    assert 0 <= m["q"] < m["n"]
    assert all(m["q"] not in avg_mutant_plain(m["n"], m["N"], i, "no_longer_blocks")
               for i in range(m["N"]))
    assert any(m["q"] in avg_plain_block(m["n"], m["N"], i) for i in range(m["N"]))


# ---- lease counterexamples are real overlaps ---------------------------------------------------

class Broker:
    """RebalanceLockManager for one queue, on whole-ms readings."""

    def __init__(self, T):
        self.T, self.owner, self.last = T, None, None

    def expired(self, now) -> bool:
        return floor(now) - floor(self.last) > self.T

    def try_lock(self, cid, now) -> bool:
        if self.owner is None or self.owner == cid or self.expired(now):
            self.owner, self.last = cid, now
            return True
        return False


def paused_within(s, e, ps, pe):
    return max(Fraction(0), min(e, pe) - max(s, ps))


def replay_lease_run(m: dict, *, stretch: bool = False) -> tuple[Fraction, Fraction]:
    """Check a lease model against the timing rules, independently of the z3 encoding, and
    return the overlap interval. Times are exact (ints or Fractions)."""
    F = Fraction
    L, T, R, C, D = (m[k] for k in ("client_lease", "broker_lock", "renew_period", "consume_max", "latency"))
    x0, b, a = F(m["a_lock_sent"]), F(m["a_lock_at_broker"]), F(m["a_lock_at_client"])
    ps, pe = F(m["pause_start"]), F(m["pause_end"])
    x1, lost = F(m["a_next_renewal_sent"]), m["a_next_renewal_lost"]
    sA, eA = F(m["a_call_start"]), F(m["a_call_end"])
    tB, sB, eB = F(m["b_lock_at_broker"]), F(m["b_call_start"]), F(m["b_call_end"])

    def running(t):
        return not (ps <= t < pe)

    def took(s, e):      # wall-clock time that counts against C or D
        return e - s - (paused_within(s, e, ps, pe) if stretch else 0)

    assert ps <= pe
    # A's last lock: sent, stamped at the broker, reply handled within D.
    assert x0 <= b <= a and took(x0, a) <= D and running(x0) and running(a)
    # Next attempt: at most R later while running; an overdue one fires on resume.
    due = x0 + R
    assert x0 < x1 and running(x1) and x1 <= (pe if ps <= due < pe else due)
    broker = Broker(T)
    assert broker.try_lock("A", b)
    events = [(tB, 0, "B"), *([] if lost else [(F(m["a_next_renewal_at_broker"]), 1, "A")])]
    granted = {}
    for t, _, cid in sorted(events):
        granted[cid] = broker.try_lock(cid, t)
    assert granted["B"], "B's lock must succeed only because A's entry expired"
    assert floor(tB) - floor(b) > T
    locked_until = None
    if not lost:
        p1, f1 = F(m["a_next_renewal_at_broker"]), F(m["a_next_renewal_reply_at_client"])
        assert x1 <= p1 <= f1 and took(x1, f1) <= D and running(f1)
        assert granted["A"] is False            # it arrives after B's lock: it fails
        locked_until = f1                       # lockAll marks the queue unlocked here
    # A's call: the lease check passes at its start (strict expiry), at most C long.
    assert a <= sA and running(sA) and floor(sA) - floor(a) <= L
    assert locked_until is None or sA <= locked_until
    assert sA < eA and took(sA, eA) <= C and running(eA)
    # B consumes after its own lock, at most C.
    assert tB <= sB < eB and eB - sB <= C
    lo, hi = max(sA, sB), min(eA, eB)
    assert lo < hi, "the two listener calls must overlap"
    assert (F(m["overlap_start"]), F(m["overlap_end"])) == (lo, hi)
    return lo, hi


@pytest.mark.parametrize("proof,stretch", [
    (lease_unsafe_config, False),
    (lease_ignoring_latency, False),
    (lease_pause_inside_call, True),
    (lease_pause_in_lock_reply, True),
])
def test_lease_counterexamples_are_real_overlaps(proof, stretch):
    r = proof()
    assert r.status == REFUTED and r.expected == REFUTED
    lo, hi = replay_lease_run(r.model, stretch=stretch)
    p = r.model
    if not stretch:   # an overlap means the derived condition fails for these numbers
        assert p["client_lease"] + p["consume_max"] + p["latency"] > p["broker_lock"]
    assert any(line.startswith("overlap:") for line in describe_counterexample(r.model))


@pytest.mark.parametrize("params", [
    LeaseParams(consume_max=30001),
    LeaseParams(consume_max=45000),
    LeaseParams(consume_max=500, latency=1000, client_lease=59000),
    LeaseParams(client_lease=10000, broker_lock=15000, renew_period=4000, consume_max=4000, latency=1001),
])
def test_unsafe_configuration_counterexample_replays(params):
    safety, _ = check_config(params)
    assert safety.status == REFUTED
    replay_lease_run(safety.model)


@pytest.mark.parametrize("L,T,R,D", [(30000, 60000, 20000, 0), (30000, 60000, 20000, 1000),
                                     (1000, 1500, 400, 7), (5, 5, 1, 0)])
def test_configuration_boundary_is_exactly_T_minus_L_minus_D(L, T, R, D):
    edge = T - L - D
    if edge >= 1:
        safe, _ = check_config(LeaseParams(L, T, R, edge, D))
        assert safe.status == PROVED
    unsafe, _ = check_config(LeaseParams(L, T, R, max(edge, 0) + 1, D))
    assert unsafe.status == REFUTED
    replay_lease_run(unsafe.model)


@pytest.mark.parametrize("C", [1000, 40000, 40001])
def test_reliable_renewals_config_agrees_with_its_exact_condition(C):
    p = LeaseParams(consume_max=C)
    safety, _ = check_config(p, renewals="reliable")
    unsafe = z3.is_true(z3.simplify(reliable_unsafe_condition(
        *(z3.IntVal(x) for x in (p.client_lease, p.broker_lock, p.renew_period, C, p.latency)))))
    assert (safety.status == REFUTED) == unsafe == (C > 40000)
    if unsafe:
        replay_lease_run(safety.model)
        assert safety.model["a_next_renewal_lost"] is False


def test_slow_renewal_stall_is_real():
    r = lease_slow_renewal()
    m = {k: Fraction(v) for k, v in r.model.items()}
    L, R, D = m["client_lease"], m["renew_period"], m["latency"]
    assert R >= L
    assert m["renewal_sent"] <= m["renewal_at_client"] <= m["renewal_sent"] + D
    assert m["next_renewal_sent"] <= max(m["renewal_sent"] + R, m["renewal_at_client"])
    assert m["renewal_at_client"] <= m["check_time"] < m["next_renewal_at_client"]
    assert floor(m["check_time"]) - floor(m["renewal_at_client"]) > L


def test_default_renewal_has_no_stall_but_slow_one_warns():
    _, live = check_config(LeaseParams())
    assert live.status == PROVED
    _, live = check_config(LeaseParams(renew_period=30001))
    assert live.status == REFUTED and live.kind == "liveness"


# ---- the command --------------------------------------------------------------------------------

def _run(*args):
    from rocketspec.cli import main
    return CliRunner().invoke(main, ["prove", *args])


def test_cli_runs_a_selection_and_prints_statements():
    res = _run("--only", "avg", "--only", "lease_unsafe_config")
    assert res.exit_code == 0, res.output
    assert "PROVED   avg_balanced" in res.output
    assert "REFUTED  lease_unsafe_config" in res.output and "overlap:" in res.output


def test_cli_json():
    res = _run("--only", "circle", "--only", "lease_exact", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["ok"] is True
    assert {r["name"] for r in data["results"]} == set(select(["circle", "lease_exact"]))
    assert all(r["status"] == "proved" for r in data["results"])


def test_cli_configuration_mode():
    res = _run("--consume-max", "35000")
    assert res.exit_code == 1, res.output
    assert "UNSAFE" in res.output and "overlap:" in res.output
    res = _run("--latency", "1000")
    assert res.exit_code == 0, res.output
    assert "C=29000" in res.output and "SAFE" in res.output
    res = _run("--renew-period", "40000", "--consume-max", "1000", "--json")
    data = json.loads(res.output)
    assert res.exit_code == 0 and data["safe"] is True
    assert [r["status"] for r in data["results"]] == ["proved", "refuted"]   # liveness warning only


def test_cli_usage_errors():
    assert _run("--only", "nope").exit_code == 2
    assert _run("--client-lease", "-5").exit_code == 2
    assert _run("--profile", "no-such-profile").exit_code == 2
    assert _run("--only", "avg", "--consume-max", "10").exit_code == 2
