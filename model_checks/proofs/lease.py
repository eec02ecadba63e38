"""z3 model of the orderly-queue lock lease: when can two clients consume one queue at once?

Mechanism (digest sections 3, 4, 6): the broker's `RebalanceLockManager` holds, per queue, the
owning client and ``lastUpdate``; a lock for another client succeeds only once
``now - lastUpdate > T`` (T = broker ``REBALANCE_LOCK_MAX_LIVE_TIME``, 60000 ms). The client
keeps ``lastLockTimestamp`` and starts a listener call (one batch) only if the queue is locked
and not ``now - lastLockTimestamp > L`` (L = client ``REBALANCE_LOCK_MAX_LIVE_TIME``,
30000 ms). It renews with ``lockAll`` every R (``REBALANCE_LOCK_INTERVAL``, 20000 ms). A
listener call that is running is never interrupted.

Question: for which L, T, R, consume durations C, latencies D and pauses can A and B both be
inside a listener call for the same queue at the same time?

Derived answer (proved below for all parameter values, in both directions):
  overlap possible  <=>  L + C + D > T,      i.e. safe  <=>  C <= T - L - D
R and the pause do not appear: renewals only postpone the deadlines, and once A's renewals
stop reaching the broker (pause, lost request) A may still start a call up to L after its
last client stamp, the call may run C more, while B may take over just after T from the
broker's stamp, which can precede the client's by up to D. The same condition holds with
Java's whole-millisecond clock readings (`lease_exact`) and with exact real-valued
readings (`lease_exact_ideal_clock`).

Model assumptions (write any change here first):
1. Time: one global clock, real-valued milliseconds; client and broker timestamps differ
   only by when each side reads the clock (the request latency, item 3). The client only
   compares client readings and the broker only broker readings, so a constant offset
   between the machines' clocks does not matter; clock *rate* drift is not modelled (it
   would scale L against T). Default ``clock="ms"``: each side compares whole-millisecond
   readings ``floor(t)`` (``System.currentTimeMillis()``) and the parameters are whole
   milliseconds; ``clock="ideal"`` compares exact times. (`MsClock` splits a time into its
   reading and the fraction of a millisecond, which z3 decides quickly; ``floor`` over
   symbolic parameters makes it time out.)
2. One orderly queue, two clients. A is the earlier holder, B the one that takes over
   (the general case is symmetric). B's lock succeeds at broker time tB only if A's entry
   expired: ``reading(tB) - reading(b) > T`` where b is A's last refresh (strict, as
   ``isExpired``). B starts a call only after its own successful lock: ``sB >= tB``.
3. A's last successful lock (a lockAll renewal or lock(mq)): sent at x0, stamped by the
   broker at b, reply handled at a, where the client sets ``lastLockTimestamp = a``
   (``System.currentTimeMillis()`` after the reply): ``x0 <= b <= a <= x0 + D``. D >= 0 bounds
   the round trip including reply handling (the RPC times out after 1000 ms). D changes the
   condition: the client's stamp is later than the broker's.
4. A starts a listener call at sA only if ``not (reading(sA) - reading(a) > L)`` and the
   queue is locked; the call ends at eA with ``eA - sA <= C``; B's call lasts at most C.
5. Pause: A is paused during [ps, pe), any length, any time; while paused it sends nothing,
   handles no reply and starts no call. C and D are *wall-clock* bounds: a pause that falls
   inside a listener call or inside a lock round trip counts towards C or D. (The
   ``pause_stretches`` switch drops that: C and D then bound only A's running time, and
   the demonstrations show that a pause there breaks safety for every configuration.)
6. Renewals: A's next attempt after x0 is sent at ``x1 <= x0 + R``, or at ``pe`` if x0 + R
   falls in the pause (the scheduled executor runs an overdue task on resume); attempts
   are at most R apart while A runs and none is sent during the pause. x1 may precede a:
   lockAll (scheduler thread) and lock(mq) (consume thread) can be in flight together.
   ``renewals="lossy"`` (the default, and what RocketMQ allows): an attempt may be lost or
   time out; lockAll then logs and leaves ``locked`` and ``lastLockTimestamp`` untouched.
   ``renewals="reliable"``: every attempt reaches the broker within D; it must arrive after
   tB (otherwise it refreshes A's entry and B cannot take over) while B's entry is live,
   fails there, and lockAll marks A's queue unlocked when the reply is handled at f1, so
   ``sA <= f1``. Only the first attempt after x0 needs variables: later ones are sent later
   and can be given latencies that make them arrive after tB too.
7. Overlap: ``max(sA, sB) < min(eA, eB)``.
8. Not modelled: rebalance dropping A's process queue (it only stops A sooner; a running
   call continues either way), unlockAll at shutdown, 5.x ``lockInStrictMode`` quorum
   locks, and broker restarts (the lock table is in memory, so a restart lets B in at once:
   a separate hazard no lease setting prevents).

Liveness (a separate question): while renewals succeed, A's client stamps are at most
R + D apart, so A's own lease lapses between renewals iff ``R + D > L``. A then starts no
call until it re-locks (``tryLockLaterAndReconsume`` calls lock(mq) after 10 ms, or the next
lockAll): consumption stalls. That costs latency, not safety (the safety proof allows any
renewal timing).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction

import z3

from rocketspec.rocketmq.profiles import DEFAULT_PROFILE, get_profile

from .core import PROVED, REFUTED, UNKNOWN, ProofResult, find, prove
from .formulas import z_max, z_min

# RocketMQ's lock and lease lifetimes, as the release profiles state them (one place)
_RELEASE = get_profile(DEFAULT_PROFILE)

__all__ = [
    "LeaseParams", "DEFAULTS", "EVENTS", "RENEWAL_MODES", "CLOCKS", "IdealClock", "MsClock",
    "make_clock", "lease_model", "safe_condition", "reliable_unsafe_condition", "check_config",
    "describe_counterexample", "LEASE_PROOFS",
]

RENEWAL_MODES = ("lossy", "reliable")
CLOCKS = ("ms", "ideal")


@dataclass(frozen=True)
class LeaseParams:
    """Whole milliseconds. Defaults: RocketMQ's L, T, R (both branches); C = 1000 and D = 0
    are examples (no RocketMQ constant bounds a listener call; the lock RPC times out after
    1000 ms)."""

    client_lease: int = _RELEASE.client_lock_max_live_ms   # L: client REBALANCE_LOCK_MAX_LIVE_TIME
    broker_lock: int = _RELEASE.broker_lock_max_live_ms    # T: broker REBALANCE_LOCK_MAX_LIVE_TIME
    renew_period: int = _RELEASE.client_lock_interval_ms   # R: REBALANCE_LOCK_INTERVAL (lockAll)
    consume_max: int = 1000     # C: longest listener call (wall clock)
    latency: int = 0            # D: longest lock round trip (send to reply handled)

    def __post_init__(self):
        for name, value in self.as_dict().items():
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"{name} must be a whole number of milliseconds, not {value!r}")
            if value < 0:
                raise ValueError(f"{name} must be >= 0, not {value}")
        if self.renew_period <= 0 or self.consume_max <= 0:
            raise ValueError("renew_period and consume_max must be > 0")

    def as_dict(self) -> dict:
        return {"client_lease": self.client_lease, "broker_lock": self.broker_lock,
                "renew_period": self.renew_period, "consume_max": self.consume_max,
                "latency": self.latency}


DEFAULTS = LeaseParams()

# name in the model dict -> what it is (also the order of the printed timeline)
EVENTS: dict[str, str] = {
    "a_lock_sent": "A sends its last lock request that reaches the broker in time",
    "a_lock_at_broker": "broker stamps A's lock (lastUpdate)",
    "a_lock_at_client": "A handles the reply: lastLockTimestamp",
    "pause_start": "A pauses",
    "pause_end": "A resumes",
    "a_next_renewal_sent": "A's next lock attempt (lockAll, or lock(mq) from a consume thread)",
    "a_next_renewal_at_broker": "it reaches the broker (after B's lock, so it fails)",
    "a_next_renewal_reply_at_client": "A handles the failure: queue marked unlocked",
    "a_call_start": "A starts a listener call (lease check passes)",
    "b_lock_at_broker": "broker grants the lock to B (A's entry expired)",
    "b_call_start": "B starts a listener call",
    "a_call_end": "A's listener call returns",
    "b_call_end": "B's listener call returns",
}


class IdealClock:
    """Times are reals and every reading is exact."""

    kind = "ideal"

    def __init__(self):
        self._vars: list = []

    def time(self, name: str):
        t = z3.Real(name)
        self._vars.append(t)
        return t

    def vars(self) -> list:
        return list(self._vars)

    def domain(self) -> list:
        return []

    def value(self, t):
        return t

    def le(self, x, y):
        return x <= y

    def lt(self, x, y):
        return x < y

    def within(self, x, y, k):
        """y - x <= k in real time."""
        return y - x <= k

    def plus(self, x, k):
        return x + k

    def reading_gap_le(self, x, y, k):
        """The reading at y minus the reading at x is <= k."""
        return y - x <= k

    def reading_gap_gt(self, x, y, k):
        return y - x > k

    def whole(self, t):
        return z3.IsInt(t)

    def at_zero(self, t):
        return t == 0


class MsTime:
    """A time on the millisecond clock: ``ms + frac`` with ``0 <= frac < 1``; Java reads
    ``ms`` (``System.currentTimeMillis()``)."""

    def __init__(self, name: str):
        self.ms = z3.Int(name + ".ms")
        self.frac = z3.Real(name + ".frac")


class MsClock:
    """Real times, whole-millisecond readings. A time is split into its reading (Int) and
    the fraction of a millisecond (Real), and every constraint is written on the two parts
    with integer parameters: z3 decides that quickly, while ``floor`` (``ToInt``) over
    symbolic parameters makes it time out."""

    kind = "ms"

    def __init__(self):
        self._times: list[MsTime] = []

    def time(self, name: str) -> MsTime:
        t = MsTime(name)
        self._times.append(t)
        return t

    def vars(self) -> list:
        return [v for t in self._times for v in (t.ms, t.frac)]

    def domain(self) -> list:
        return [c for t in self._times for c in (t.frac >= 0, t.frac < 1)]

    def value(self, t: MsTime):
        return z3.ToReal(t.ms) + t.frac

    def le(self, x, y):
        return z3.Or(x.ms < y.ms, z3.And(x.ms == y.ms, x.frac <= y.frac))

    def lt(self, x, y):
        return z3.Or(x.ms < y.ms, z3.And(x.ms == y.ms, x.frac < y.frac))

    def within(self, x, y, k):
        """y - x <= k in real time, for a whole number of milliseconds k."""
        gap = y.ms - x.ms
        return z3.Or(gap < k, z3.And(gap == k, y.frac <= x.frac))

    def plus(self, x, k):
        t = MsTime.__new__(MsTime)
        t.ms, t.frac = x.ms + k, x.frac
        return t

    def reading_gap_le(self, x, y, k):
        return y.ms - x.ms <= k

    def reading_gap_gt(self, x, y, k):
        return y.ms - x.ms > k

    def whole(self, t):
        return t.frac == 0

    def at_zero(self, t):
        return t.ms == 0


def make_clock(kind: str):
    if kind not in CLOCKS:
        raise ValueError(f"clock must be one of {CLOCKS}, not {kind!r}")
    return MsClock() if kind == "ms" else IdealClock()


class _Vars:
    """One run's events (names are fixed, so a model reads the same in every query)."""

    def __init__(self, clock):
        mk = clock.time
        self.clock = clock
        self.x0, self.b, self.a = mk("a_lock_sent"), mk("a_lock_at_broker"), mk("a_lock_at_client")
        self.ps, self.pe = mk("pause_start"), mk("pause_end")
        self.x1 = mk("a_next_renewal_sent")
        self.lost1 = z3.Bool("a_next_renewal_lost")
        self.p1, self.f1 = mk("a_next_renewal_at_broker"), mk("a_next_renewal_reply_at_client")
        self.sA, self.eA = mk("a_call_start"), mk("a_call_end")
        self.tB, self.sB, self.eB = mk("b_lock_at_broker"), mk("b_call_start"), mk("b_call_end")

    def named(self) -> dict:
        return {"a_lock_sent": self.x0, "a_lock_at_broker": self.b, "a_lock_at_client": self.a,
                "pause_start": self.ps, "pause_end": self.pe, "a_next_renewal_sent": self.x1,
                "a_next_renewal_at_broker": self.p1, "a_next_renewal_reply_at_client": self.f1,
                "a_call_start": self.sA, "a_call_end": self.eA, "b_lock_at_broker": self.tB,
                "b_call_start": self.sB, "b_call_end": self.eB}

    def times(self) -> list:
        return list(self.named().values())

    def bound(self) -> list:
        """Every z3 constant of the run (for an existential over runs)."""
        return [*self.clock.vars(), self.lost1]


def _symbolic_params(clock: str = "ms"):
    """L, T, R, C, D as z3 constants: whole milliseconds (Ints) for the Java clock, reals
    for the ideal one."""
    mk = z3.Ints if clock == "ms" else z3.Reals
    return mk("L T R C D")


def _param_domain(L, T, R, C, D):
    return [L >= 0, T >= 0, R > 0, C > 0, D >= 0]


def safe_condition(L, T, R, C, D):
    """The derived exact safety condition (works on numbers and on z3 terms)."""
    return L + C + D <= T


def reliable_unsafe_condition(L, T, R, C, D):
    """With reliable renewals (never lost), an overlap is possible iff one of (A's next
    renewal attempt is due R after its last successful one, x0):
    - ``T < R + D and T < min(L, R) + D + C``: renewals are too slow for the broker lock,
      no pause needed; A's call starts before the failed renewal's reply unlocks it;
    - ``T < min(R, L + D) + C``: A starts a call before the next renewal is due and a pause
      inside that call blocks the renewal until B has taken over (C is wall clock);
    - ``T < min(D, R) + L + min(D, C)``: a pause covering the due renewal ends just before
      A's lease check; the overdue renewal is still on the wire when B takes over;
    - ``R < D and T < D + min(D, L + C)``: the round trip is longer than the period.
    Found by case analysis; `lease_reliable_exact` proves it exact."""
    return z3.Or(z3.And(T < R + D, T < z_min(L, R) + D + C),
                 T < z_min(R, L + D) + C,
                 T < z_min(D, R) + L + z_min(D, C),
                 z3.And(R < D, T < D + z_min(D, L + C)))


def lease_model(L, T, R, C, D, *, renewals: str = "lossy", pause_stretches: bool = False,
                clock: str = "ms"):
    """The constraints of one run in which A and B overlap. Returns (constraints, vars).

    `clock`: ``"ms"`` (Java): each side compares whole-millisecond readings of the global
    time and the parameters are whole milliseconds; ``"ideal"``: readings are exact and
    the parameters real. `pause_stretches`: C and D bound only A's running time (the
    pause is added on top); only for concrete parameters."""
    if renewals not in RENEWAL_MODES:
        raise ValueError(f"renewals must be one of {RENEWAL_MODES}, not {renewals!r}")
    k = make_clock(clock)
    v = _Vars(k)

    def running(t):
        return z3.Or(k.lt(t, v.ps), k.le(v.pe, t))

    def wall(s, e, bound):
        if not pause_stretches:
            return k.within(s, e, bound)
        S, E, PS, PE = (k.value(x) for x in (s, e, v.ps, v.pe))
        paused = z_max(0, z_min(E, PE) - z_max(S, PS))
        return E - S <= bound + paused

    due = k.plus(v.x0, R)
    due_in_pause = z3.And(k.le(v.ps, due), k.lt(due, v.pe))
    cs = [
        *k.domain(),
        k.le(v.ps, v.pe),
        # A's last successful lock: sent, stamped by the broker, stamped by the client.
        k.le(v.x0, v.b), k.le(v.b, v.a), wall(v.x0, v.a, D), running(v.x0), running(v.a),
        # The next renewal attempt: at most R later, or on resume if it fell due in the pause.
        k.lt(v.x0, v.x1), running(v.x1),
        z3.If(due_in_pause, k.le(v.x1, v.pe), k.le(v.x1, due)),
        # A's listener call: the client lease check at its start, then at most C.
        k.le(v.a, v.sA), k.reading_gap_le(v.a, v.sA, L), running(v.sA),
        k.lt(v.sA, v.eA), wall(v.sA, v.eA, C), running(v.eA),
        # B: takes over only after A's broker entry expired; consumes after its own lock.
        k.reading_gap_gt(v.b, v.tB, T), k.le(v.tB, v.sB), k.lt(v.sB, v.eB), k.within(v.sB, v.eB, C),
        # Overlap of the two listener calls: max(sA, sB) < min(eA, eB).
        k.lt(v.sA, v.eB), k.lt(v.sB, v.eA),
    ]
    delivered = [k.le(v.x1, v.p1), k.le(v.p1, v.f1), wall(v.x1, v.f1, D), running(v.f1),
                 # it arrives after B's lock, while B's entry is still live, so it fails
                 k.lt(v.tB, v.p1), k.reading_gap_le(v.tB, v.p1, T),
                 # and lockAll marks A's queue unlocked once it handles the failure
                 k.le(v.sA, v.f1)]
    if renewals == "reliable":
        cs += [z3.Not(v.lost1), *delivered]
    else:
        cs.append(z3.Or(v.lost1, z3.And(*delivered)))
    return cs, v


def _show(v: _Vars, L=None, T=None, R=None, C=None, D=None) -> dict:
    d = {}
    for name, term in (("client_lease", L), ("broker_lock", T), ("renew_period", R),
                       ("consume_max", C), ("latency", D)):
        if term is not None and z3.is_expr(term):
            d[name] = term
    for name, t in v.named().items():
        d[name] = v.clock.value(t)
    d["a_next_renewal_lost"] = v.lost1
    return d


def _finish_model(model: dict | None, params: dict | None = None) -> dict | None:
    """Drop the meaningless fields of a lost renewal, add the concrete parameters."""
    if model is None:
        return None
    m = dict(params or {})
    m.update(model)
    if m.get("a_next_renewal_lost"):
        m.pop("a_next_renewal_at_broker", None)
        m.pop("a_next_renewal_reply_at_client", None)
    if "pause_start" in m and "pause_end" in m:
        m["pause_length"] = m["pause_end"] - m["pause_start"]
    if "a_call_start" in m and "b_call_start" in m:
        m["overlap_start"] = max(m["a_call_start"], m["b_call_start"])
        m["overlap_end"] = min(m["a_call_end"], m["b_call_end"])
    return m


# ---- proofs over symbolic parameters ----------------------------------------------------

_CLOCK_TEXT = {
    "ms": "whole-millisecond clock readings as in Java (client expired iff "
          "floor(now) - floor(last) > L, broker expired iff floor(now) - floor(last) > T)",
    "ideal": "exact real-valued clock readings (client expired iff now - last > L, broker "
             "expired iff now - last > T)",
}


def lease_safe() -> ProofResult:
    L, T, R, C, D = _symbolic_params("ms")
    cs, v = lease_model(L, T, R, C, D)
    r = prove(
        "lease_safe",
        "Lock lease safety: for all L >= 0, T >= 0, R > 0, C > 0, D >= 0 (ms) with "
        "L + C + D <= T, for every pause of A (any start, any length), every renewal timing "
        "(attempts at most R apart while A runs, any of them lost) and every lock round trip "
        "up to D (C and D in wall-clock time: a pause inside a call or a round trip counts), "
        f"A and B are never both inside a listener call for the queue; {_CLOCK_TEXT['ms']}.",
        z3.Not(z3.And(*cs)), [*_param_domain(L, T, R, C, D), safe_condition(L, T, R, C, D)],
        kind="safety", show=_show(v, L, T, R, C, D))
    r.model = _finish_model(r.model)
    return r


def _iff(run, condition) -> list:
    """``run <=> condition`` as two parts: the condition is necessary, and it is sufficient."""
    return [z3.Implies(run, condition), z3.Implies(condition, run)]


def _exact(name: str, clock: str) -> ProofResult:
    """The for-all/exists form, which proves the condition necessary as well as
    sufficient; z3 decides it (quantifier elimination for linear arithmetic)."""
    L, T, R, C, D = _symbolic_params(clock)
    cs, v = lease_model(L, T, R, C, D, clock=clock)
    run = z3.Exists(v.bound(), z3.And(*cs))
    kind = "whole ms" if clock == "ms" else "reals"
    return prove(
        name,
        f"Lock lease, exact condition ({kind}): for all L >= 0, T >= 0, R > 0, C > 0, D >= 0, "
        "there exists a run (a pause, renewal timings, lost renewals, latencies up to D) in "
        "which A and B are both inside a listener call iff L + C + D > T; so the safe "
        "configurations are exactly C <= T - L - D, whatever R and the pause; "
        f"{_CLOCK_TEXT[clock]}.",
        _iff(run, z3.Not(safe_condition(L, T, R, C, D))), _param_domain(L, T, R, C, D),
        kind="safety")


def lease_exact() -> ProofResult:
    return _exact("lease_exact", "ms")


def lease_exact_ideal_clock() -> ProofResult:
    return _exact("lease_exact_ideal_clock", "ideal")


def lease_reliable_exact() -> ProofResult:
    L, T, R, C, D = _symbolic_params("ms")
    cs, v = lease_model(L, T, R, C, D, renewals="reliable")
    run = z3.Exists(v.bound(), z3.And(*cs))
    return prove(
        "lease_reliable_exact",
        "Lock lease with reliable renewals (no attempt is ever lost; only A's pause stops "
        "them), exact condition: for all L >= 0, T >= 0, R > 0, C > 0, D >= 0 (ms), an "
        "overlapping run exists iff (T < R + D and T < min(L, R) + D + C) or "
        "T < min(R, L + D) + C or T < min(D, R) + L + min(D, C) or "
        "(R < D and T < D + min(D, L + C)). With RocketMQ's L, T, R and D <= 1000 that is "
        "C > 40000 = T - R: more permissive than C <= T - L - D, because it trusts the "
        "network.",
        _iff(run, reliable_unsafe_condition(L, T, R, C, D)), _param_domain(L, T, R, C, D),
        kind="safety",
        notes=["A refinement, not the guarantee: the default model lets renewals fail, as "
               "RocketMQ does (lockBatchMQ can time out), and its condition is the one to use."])


def _concrete(name: str, statement: str, params: LeaseParams, *, expected: str, kind: str,
              renewals="lossy", pause_stretches=False, extra=None, notes=()) -> ProofResult:
    """Is there an overlapping run for these concrete parameters? Proved = none exists.
    A counterexample is searched with whole-millisecond event times first (A's last lock
    sent at 0); if there is none, at any real times."""
    t0 = time.perf_counter()
    p = params
    cs, v = lease_model(p.client_lease, p.broker_lock, p.renew_period, p.consume_max,
                        p.latency, renewals=renewals, pause_stretches=pause_stretches)
    cs.append(v.clock.at_zero(v.x0))  # invariant under whole-ms shifts: start the story at 0
    if extra:
        cs += extra(v)
    # Prefer the most readable run: whole milliseconds and, for lossy renewals, no lost
    # renewal (so that the pause tells the story). The last query, with no preference,
    # decides safety; the preferred ones only choose which counterexample to show.
    whole = [v.clock.whole(t) for t in v.times()]
    arrive = z3.Not(v.lost1)
    tries = [[*whole, arrive], [arrive], whole, []] if renewals == "lossy" else [whole, []]
    outcomes = []
    for prefer in tries:
        status, found = find([*cs, *prefer], show=_show(v))
        outcomes.append(status)
        if status == "sat":
            break
    if status == "sat" and renewals == "lossy" and outcomes[:2] == ["unsat", "unsat"]:
        notes = [*notes, "No overlapping run exists here if every renewal arrives (A's pause "
                         "alone cannot do it): this one needs a lost renewal."]
    return ProofResult(
        name=name, statement=statement,
        status={"sat": REFUTED, "unsat": PROVED}.get(status, UNKNOWN),
        expected=expected, kind=kind,
        model=_finish_model(found, p.as_dict()) if status == "sat" else None,
        seconds=time.perf_counter() - t0,
        notes=list(notes) + ([f"z3: {found}"] if status == "unknown" else []))


def _fmt(p: LeaseParams) -> str:
    return (f"L={_num(p.client_lease)}, T={_num(p.broker_lock)}, R={_num(p.renew_period)}, "
            f"C={_num(p.consume_max)}, D={_num(p.latency)}")


def _num(x) -> str:
    if isinstance(x, Fraction):
        x = float(x)
    if isinstance(x, float) and x.is_integer():
        x = int(x)
    return str(x)


def lease_ignoring_latency() -> ProofResult:
    p = LeaseParams(consume_max=30000, latency=1000)
    return _concrete(
        "lease_ignoring_latency",
        f"Demonstration (expected refuted): 'C <= T - L suffices' also with a lock round trip: "
        f"with {_fmt(p)} (C = T - L, D = the lock RPC's 1000 ms timeout) no run has A and B "
        "inside a listener call at once.",
        p, expected=REFUTED, kind="demonstration",
        notes=["The client stamps lastLockTimestamp when the reply arrives, up to D after the "
               "broker's stamp, so the margin a call may use is T - L - D, not T - L."])


def lease_unsafe_config() -> ProofResult:
    p = LeaseParams(consume_max=30001)
    return _concrete(
        "lease_unsafe_config",
        f"Demonstration (expected refuted): with {_fmt(p)} (C one ms over T - L - D) no run "
        "has A and B inside a listener call at once.",
        p, expected=REFUTED, kind="demonstration",
        notes=["The model is a concrete run: A's last successful lock, its next renewal lost "
               "or blocked by the pause, B's takeover just after T, and A's call still running."])


def lease_pause_inside_call() -> ProofResult:
    p = LeaseParams()
    return _concrete(
        "lease_pause_inside_call",
        f"Demonstration (expected refuted): with {_fmt(p)} and reliable renewals, if C bounds "
        "only the listener's running time (a GC or SIGSTOP pause inside the call does not "
        "count), no run has A and B inside a listener call at once.",
        p, expected=REFUTED, kind="demonstration", renewals="reliable", pause_stretches=True,
        extra=lambda v: [v.clock.lt(v.sA, v.ps), v.clock.lt(v.pe, v.eA)],
        notes=["A pause inside A's listener call outlasts the broker lock; B takes over; A "
               "resumes inside the call. No setting of L, T, R prevents this (the lock has no "
               "fencing token): the safety condition needs C as wall-clock time."])


def lease_pause_in_lock_reply() -> ProofResult:
    p = LeaseParams(latency=1)
    return _concrete(
        "lease_pause_in_lock_reply",
        f"Demonstration (expected refuted): with {_fmt(p)} and reliable renewals, if D bounds "
        "only network time (a pause between the broker's stamp and the client handling the "
        "reply does not count), no run has A and B inside a listener call at once.",
        p, expected=REFUTED, kind="demonstration", renewals="reliable", pause_stretches=True,
        extra=lambda v: [v.clock.le(v.b, v.ps), v.clock.le(v.pe, v.a)],
        notes=["A is paused after the broker stamped its lock and before it handles the reply; "
               "on resume it sets lastLockTimestamp = now, long after the broker's stamp, and "
               "its lease check passes while the broker has already let B in."])


# ---- liveness ------------------------------------------------------------------------------

def _stall_model(L, R, D, clock: str = "ms"):
    """Two successive successful lockAll renewals and a lease check between them that fails."""
    k = make_clock(clock)
    xk, ak = k.time("renewal_sent"), k.time("renewal_at_client")
    xn, an = k.time("next_renewal_sent"), k.time("next_renewal_at_client")
    t = k.time("check_time")
    cs = [*k.domain(),
          k.le(xk, ak), k.within(xk, ak, D),
          k.le(ak, xn), z3.Or(k.le(xn, k.plus(xk, R)), k.le(xn, ak)),  # fixed rate; a late run starts at once
          k.le(xn, an), k.within(xn, an, D),
          k.le(ak, t), k.lt(t, an),
          k.reading_gap_gt(ak, t, L)]                                 # A's lease check fails
    show = {"renewal_sent": xk, "renewal_at_client": ak, "next_renewal_sent": xn,
            "next_renewal_at_client": an, "check_time": t}
    return cs, show, k


def lease_no_stall_exact() -> ProofResult:
    L, T, R, C, D = _symbolic_params("ms")
    cs, show, k = _stall_model(L, R, D)
    run = z3.Exists(k.vars(), z3.And(*cs))
    return prove(
        "lease_no_stall_exact",
        "Liveness, exact condition: for all L >= 0, R > 0, D >= 0 (ms), with every lockAll "
        "renewal succeeding (sent at most R apart, round trip at most D), there is a moment "
        "between two renewals when A's own lease has lapsed (floor(now) - "
        "floor(lastLockTimestamp) > L, so A starts no call) iff R + D > L.",
        _iff(run, R + D > L), [L >= 0, R > 0, D >= 0], kind="liveness")


def _stall_check(name: str, statement: str, L, R, D, expected: str, notes=()) -> ProofResult:
    cs, show, k = _stall_model(L, R, D)
    t0 = time.perf_counter()
    cs.append(k.at_zero(show["renewal_sent"]))
    show = {name: k.value(t) for name, t in show.items()}
    status, model = find([*cs, *(k.whole(t) for t in _stall_times(k))], show=show)
    if status != "sat":
        status, model = find(cs, show=show)
    return ProofResult(
        name=name, statement=statement,
        status={"sat": REFUTED, "unsat": PROVED}.get(status, UNKNOWN), expected=expected,
        kind="liveness",
        model={"client_lease": L, "renew_period": R, "latency": D, **model} if status == "sat" else None,
        seconds=time.perf_counter() - t0,
        notes=list(notes) + ([f"z3: {model}"] if status == "unknown" else []))


def _stall_times(k) -> list:
    return list(k._times) if isinstance(k, MsClock) else k.vars()


_STALL_NOTE = ("A liveness issue, not a safety one: A's lease check fails and consumption "
               "stalls until tryLockLaterAndReconsume re-locks (10 ms, a lock round trip, "
               "10 ms) or the next lockAll; the safety proofs already allow any renewal timing.")


def lease_slow_renewal() -> ProofResult:
    L, R, D = 30000, 40000, 0
    return _stall_check(
        "lease_slow_renewal",
        f"Demonstration (expected refuted, liveness): with L={L}, R={R} (R >= L), D={D} and "
        "every renewal succeeding, A's lease never lapses between renewals.",
        L, R, D, REFUTED, notes=[_STALL_NOTE])


# ---- configuration check -------------------------------------------------------------------

def check_config(p: LeaseParams, renewals: str = "lossy") -> list[ProofResult]:
    """Is this configuration safe? Safety (with a counterexample when not) and liveness."""
    safe = _concrete(
        "config_safety",
        f"Safety for {_fmt(p)} ({renewals} renewals): for every pause and every renewal "
        "timing, A and B are never both inside a listener call for the queue.",
        p, expected=PROVED, kind="safety", renewals=renewals)
    # The z3 verdict must agree with the proved closed form; if not, the model is broken.
    args = (p.client_lease, p.broker_lock, p.renew_period, p.consume_max, p.latency)
    if renewals == "lossy":
        formula_safe = safe_condition(*args)
        safe.notes.append(f"derived condition L + C + D <= T: {_num(p.client_lease)} + "
                          f"{_num(p.consume_max)} + {_num(p.latency)} <= {_num(p.broker_lock)} is "
                          f"{formula_safe}; largest safe C here is "
                          f"{_num(p.broker_lock - p.client_lease - p.latency)}")
    else:
        formula_safe = z3.is_false(z3.simplify(reliable_unsafe_condition(
            *(z3.RealVal(Fraction(x).limit_denominator()) for x in args))))
    if safe.status != UNKNOWN and (safe.status == PROVED) != bool(formula_safe):
        safe.status = UNKNOWN
        safe.notes.append("INTERNAL: z3's verdict disagrees with the derived condition")
    live = _stall_check(
        "config_liveness",
        f"Liveness for L={_num(p.client_lease)}, R={_num(p.renew_period)}, D={_num(p.latency)}: "
        "while renewals succeed, A's lease never lapses between them (R + D <= L).",
        p.client_lease, p.renew_period, p.latency, PROVED)
    if live.status == REFUTED:
        live.notes.append("A warning, not a safety violation: " + _STALL_NOTE)
    if p.renew_period + p.latency > p.broker_lock:
        live.notes.append("R + D > T: the broker lock of a live client lapses between renewals, "
                          "so another client may take the queue over (churn, not a safety issue "
                          "when the safety condition holds).")
    return [safe, live]


def _t(x) -> str:
    """A time for the timeline: whole ms as is, otherwise three decimals."""
    x = Fraction(x)
    return str(int(x)) if x.denominator == 1 else f"{float(x):.3f}"


def _describe_stall(m: dict) -> list[str]:
    gap = int(Fraction(m["check_time"]) // 1) - int(Fraction(m["renewal_at_client"]) // 1)
    rows = [
        (m["renewal_sent"], 0, "A sends a lockAll renewal"),
        (m["renewal_at_client"], 1, "A handles the reply: lastLockTimestamp"),
        (m["next_renewal_sent"], 2, "A sends the next renewal"),
        (m["check_time"], 3, f"A's lease check fails (reading now - lastLockTimestamp = {gap} "
                             f"> L={m.get('client_lease')}): no listener call"),
        (m["next_renewal_at_client"], 4, "A handles the next reply: lease valid again"),
    ]
    return [f"t={_t(t):>12}  {what}" for t, _, what in sorted(rows, key=lambda r: (Fraction(r[0]), r[1]))]


def describe_counterexample(model: dict) -> list[str]:
    """A lease counterexample as a timeline, one line per event (times in ms; the lease
    checks show the whole-ms readings that Java compares)."""
    if "check_time" in model:
        return _describe_stall(model)
    if "a_call_start" not in model:
        return [f"{k} = {_t(v) if not isinstance(v, bool) else v}" for k, v in model.items()]
    m = model
    lost = m.get("a_next_renewal_lost")
    no_pause = m.get("pause_length", 0) == 0
    rows = []
    for key, what in EVENTS.items():
        if key not in m:
            continue
        if lost and key in ("a_next_renewal_at_broker", "a_next_renewal_reply_at_client"):
            continue
        if no_pause and key in ("pause_start", "pause_end"):
            continue
        rows.append((Fraction(m[key]), list(EVENTS).index(key), key, what))
    rows.sort()
    L, T = m.get("client_lease"), m.get("broker_lock")
    lines = []
    for t, _, key, what in rows:
        extra = ""
        if key == "a_next_renewal_sent" and lost:
            extra = ": lost (as are later attempts until B's lock)"
        if key == "a_call_start":
            gap = int(t // 1) - int(Fraction(m["a_lock_at_client"]) // 1)
            extra = f" (reading now - lastLockTimestamp = {gap}" + (f" <= L={L})" if L is not None else ")")
        if key == "b_lock_at_broker":
            gap = int(t // 1) - int(Fraction(m["a_lock_at_broker"]) // 1)
            extra = f" (reading now - lastUpdate = {gap}" + (f" > T={T})" if T is not None else ")")
        lines.append(f"t={_t(t):>12}  {what}{extra}")
    if no_pause:
        lines.append("(no pause needed: the renewal is lost)" if lost else "(no pause)")
    lines.append(f"overlap: A and B both inside a listener call during "
                 f"[{_t(m['overlap_start'])}, {_t(m['overlap_end'])})")
    return lines


LEASE_PROOFS = {
    "lease_safe": lease_safe,
    "lease_exact": lease_exact,
    "lease_exact_ideal_clock": lease_exact_ideal_clock,
    "lease_ignoring_latency": lease_ignoring_latency,
    "lease_unsafe_config": lease_unsafe_config,
    "lease_reliable_exact": lease_reliable_exact,
    "lease_pause_inside_call": lease_pause_inside_call,
    "lease_pause_in_lock_reply": lease_pause_in_lock_reply,
    "lease_no_stall_exact": lease_no_stall_exact,
    "lease_slow_renewal": lease_slow_renewal,
}
