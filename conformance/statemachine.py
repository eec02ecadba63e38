"""The reference driven by Hypothesis: a RuleBasedStateMachine whose rules are the environment.

Rules produce messages, start, stop, crash or pause consumers (now, or armed to strike before a
task the chooser picks), restart the broker, make one-way calls lossy, and advance the clock;
the *_during_call rules first let the clock run until a listener call is open, so that a
handover, a pause, a reset, a broker outage or a lost route cuts across a running call.
Whatever the reference leaves open while the clock runs (task order within a millisecond, lost
one-way calls, listener statuses and durations, retry queues) is decided by the `choices`
script Hypothesis generates for that advance (reference.choice.ScriptChooser), so a failing
run shrinks to few steps and few non-default choices, and the falsifying example Hypothesis
prints is runnable code. After every step the trace so far is judged by the spec
(conformance.monitor.TraceMonitor, the replay of `rocketspec check`); at the end the machine
drains the system and ends the trace, so the quiescence rules are judged too. On a finding the
trace is written to a file whose path the failure names.

`check_reference(profile, ...)` runs the machine and returns a ConformanceResult; the gate and
the mutation benchmark call it, `reference_patch` applying a mutant around each example.
"""
from __future__ import annotations

import copy
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test

from ..reference.choice import ScriptChooser
from ..reference.runner import Run
from ..reference.scenario import validate
from ..rocketmq.profiles import PROFILES, UnknownProfile
from ..rocketmq.retry import lease_margin
from ..spec.assumptions import keeps
from . import strategies as S
from .monitor import SpecViolation, TraceMonitor

# The deployment the machine plays with: two brokers, a topic of two queues on each (four in all;
# with two brokers a failed message's own broker can be down while the other takes the fallback
# producer's retry copy), a concurrent group of three
# clients (three, so AVG allocation has a remainder), an orderly group of two and a broadcasting
# client. Retries are cut to 2 so a message can reach the DLQ within a
# few steps; the listener's rates only declare which statuses are possible (the choices decide).
SCENARIO = validate({
    "name": "statemachine",
    "description": "The environment of conformance.statemachine: rules add every step.",
    "duration_ms": 0,
    "brokers": ["broker-a", "broker-b"],
    "topics": [{"name": "T", "queues": 2}],
    "groups": [
        {"name": "GID_C", "max_reconsume_times": 2, "subscriptions": {"T": "*"},
         "listener": {"duration_ms": [1, 50], "fail_rate": 0.1, "null_rate": 0.02, "exception_rate": 0.02}},
        {"name": "GID_O", "consume_mode": "ORDERLY", "max_reconsume_times": 2,
         "suspend_current_queue_time_millis": 1000, "subscriptions": {"T": "A || B"},
         "listener": {"duration_ms": [1, 50], "fail_rate": 0.1, "null_rate": 0.02, "exception_rate": 0.02}},
        {"name": "GID_B", "message_model": "BROADCASTING", "subscriptions": {"T": "A || Aa"},
         "listener": {"duration_ms": [1, 50], "fail_rate": 0.1, "null_rate": 0.02, "exception_rate": 0.02}},
    ],
}, "builtin:statemachine")
# The same deployment with the broadcasting group orderly (b1 an orderly broadcasting client, whose
# queues need no broker lock: #5465), for check_reference(scenario=...); the default keeps GID_B
# concurrent.
ORDERLY_BROADCAST = validate({**SCENARIO, "groups": [
    {**g, "name": n, **({"consume_mode": "ORDERLY"} if n == "GID_B" else {})}
    for n, g in SCENARIO["groups"].items()]}, "builtin:statemachine-orderly-broadcast")
CLIENTS = {"c1": "GID_C", "c2": "GID_C", "c3": "GID_C", "o1": "GID_O", "o2": "GID_O", "b1": "GID_B"}
# "Aa" and "BB" share a Java hashCode (2112): the broker's tags-code filter lets a BB message through
# to GID_B's "A || Aa", and only the client's exact re-check keeps it from the listener
TAGS = ("A", "B", "C", "Aa", "BB", None)
DRAIN_MS = 300_000          # at the end, how long the system may take to become quiescent
BROKERS = ("broker-a", "broker-b")
ALL_BROKERS = "all"         # restart_broker: every broker at once
MAX_ARMED = 2
AWAIT_CALL_MS = 10_000  # how long a *_during_call move lets the clock run at most for a call to open
RESTART_DURING_CALL_MS = 30_000  # restart_during_call's broker downtime: longer than any listener call
PAST_LEASE = "past_lease"   # a pause length: until the client's leases have expired (_pause_ms)
CI_STEPS = 40               # stateful_step_count of the CI profile
# Caps inside one example, so a reference that runs away (a mutant that pulls the same messages
# forever, or re-reads an offset before every pull) ends its example promptly instead of stalling
# the search: events one step may emit, and one example in all. The unmutated reference stays far
# below them (see MAX_*_EVENTS in docs/conformance.md); an example cut by them is not a finding.
MAX_STEP_EVENTS = 10_000
MAX_EXAMPLE_EVENTS = 25_000
BUDGET_CHECK_EVERY = 512    # events between two looks at the wall-clock budget inside a step


def _logged(fn):
    """Keep each step as the line Hypothesis prints for it, so the falsifying example is known
    even when the budget ends the search before Hypothesis's final replay prints it."""
    import functools

    @functools.wraps(fn)
    def step(self, **kwargs):
        if getattr(self, "_in_step", False):
            # a move another rule makes as part of its own (reset_during_call's reset_offset):
            # that rule's line stands for it, and a line of its own would make it twice when the
            # lines are run again (the falsifying code, _differs's replay)
            return fn(self, **kwargs)
        self.steps.append(f"state.{fn.__name__}({', '.join(f'{k}={v!r}' for k, v in sorted(kwargs.items()))})")
        self._in_step = True
        try:
            return fn(self, **kwargs)
        finally:
            self._in_step = False

    return step


class BudgetExhausted(BaseException):
    """Raised by a new example when the budget ran out before any failure: a BaseException, so
    that Hypothesis lets it through and the search ends at once (check_reference catches it)."""


class StepCut(BaseException):
    """Raised from the trace sink to end a step at once: a spec error was just emitted
    ("finding"), an event cap was hit ("runaway"), or the wall budget ran out ("budget"). A
    BaseException, so that no `except Exception` of the reference swallows it."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


class ReferenceCrashed(AssertionError):
    """The reference raised instead of emitting a trace: a bug of the reference (or a mutant
    that breaks it), not a spec finding."""


class ReferenceMachine(RuleBasedStateMachine):
    """Use `machine_class(profile)`; this base runs the 4.9.8 profile."""

    profile = "rocketmq-4.9.8"
    scenario = SCENARIO
    trace_path = str(Path(tempfile.gettempdir()) / f"rocketspec-statemachine-{os.getpid()}.jsonl")
    reference_patch = None     # a context manager (or a factory of one) entered around each example
    ignore_crashes = False     # a crash of the reference ends the example quietly instead of failing
    respect_assumptions = True  # keep the environment within the spec's assumptions (below)
    kept_anyway: frozenset = frozenset()    # assumption ids kept even when respect_assumptions is off
    # Offset resets and writes, offset-query failures. (They used to fail INV-ORDER-3: the
    # reference's broker committed a reset itself, so the client's persists during the reset's
    # 10 s wait moved the offset back over it. 4.9.8's Broker2Client.resetOffset only tells the
    # online clients, which set and persist the operator's offset; the spec knows that value.)
    operator_moves = True
    deadline = None            # time.monotonic() after which the search ends (budget)
    shrink_budget_s = 60.0     # how long a found failure may be shrunk
    # Mutation testing outside the assumptions: with `differential`, a spec error fails the
    # example only when the unpatched reference, given the same moves, has none (_differs).
    # Outside the assumptions the unmutated reference loses guarantees too (the spec reports
    # the loss); a mutant is told apart by what the same environment does to the original.
    differential = False
    report: dict = {}          # what the examples of this class did: _new_report()

    def __init__(self):
        super().__init__()
        cls = type(self)
        self.steps = [f"state = {cls.__name__}()"]
        if _out_of_budget(cls):
            raise BudgetExhausted()
        self.done = False
        self._cm = None
        self.chooser = ScriptChooser()
        self.monitor = TraceMonitor(cls.profile)
        self.run = None
        self.example_events = 0
        self.left_at: dict = {}     # group -> when a client of it last shut down or crashed
        self.step_events = 0
        cls.report["examples"] += 1
        self._cm = _enter(cls.reference_patch)
        # a copy: the listener moves change the groups' listeners for this example only
        self.run = Run(copy.deepcopy(cls.scenario), 0, cls.profile, self._sink, self.chooser)
        self._do(self.run.setup)

    # ------------------------------------------------------------------ plumbing
    def _sink(self, ev: dict) -> None:
        """The reference's trace sink: the monitor judges the event; the step ends at once on
        the first spec error (what follows it cannot change the finding) or on a cap."""
        self.monitor.feed(ev)
        self.step_events += 1
        self.example_events += 1
        if self.monitor.first_error is not None:
            raise StepCut("finding")
        if self.step_events > MAX_STEP_EVENTS or self.example_events > MAX_EXAMPLE_EVENTS:
            raise StepCut("runaway")
        if self.example_events % BUDGET_CHECK_EVERY == 0 and _out_of_budget(type(self)):
            raise StepCut("budget")

    def _do(self, fn, *args, choices=()) -> None:
        """Run fn(*args) on the reference with this step's choice script, then judge the trace."""
        if self.done:
            return
        self.chooser.script, self.chooser.pos, self.chooser.trail = list(choices), 0, []
        self.step_events = 0
        try:
            fn(*args)
        except StepCut as cut:
            if cut.why != "finding":
                # not a finding: the example ends here, judged on what it emitted (its findings
                # so far are none); a runaway is counted, a budget cut ends the search next
                cls = type(self)
                self.done = True
                if cut.why == "runaway":
                    cls.report["runaway"] += 1
                    if cls.report["runaway_example"] is None:
                        cls.report["runaway_example"] = (list(self.steps), self.step_events, self.example_events)
                return
        except Exception as exc:       # includes an AssertionError inside the reference
            cls = type(self)
            if cls.ignore_crashes:
                cls.report["crashes"] += 1
                self.done = True
                return
            self.done = True
            path = self.monitor.write(cls.trace_path)
            _failed(cls, {"finding": None, "crash": repr(exc), "trace_path": path, "steps": list(self.steps)})
            raise ReferenceCrashed(f"the reference raised {exc!r} (a bug of the reference, not a spec finding); "
                                   f"trace so far written to {path}") from exc
        self._judge()

    def _judge(self) -> None:
        f = self.monitor.first_error
        if f is None:
            return
        cls = type(self)
        self.done = True
        if cls.differential and not self._differs():
            cls.report["differential_same"] += 1
            return                  # the original fails on these moves too: no kill
        _failed(cls, {"finding": f.inv, "crash": None, "trace_path": cls.trace_path, "steps": list(self.steps)})
        self.monitor.assert_holds(cls.trace_path, context=f"profile {cls.profile}")

    def _consumer(self, client, paused_ok: bool = False):
        """The client if it runs; a paused one only with paused_ok (a frozen process can be
        killed, not paused again or shut down gracefully)."""
        c = self.run.consumers.get(client) if self.run is not None else None
        if c is None or not c.running or not c.proc.alive:
            return None
        if not paused_ok and c.proc.paused_until > self.run.sim.now:
            return None
        return c

    # The spec's guarantees rest on assumptions about the environment (spec/assumptions.py):
    # when one breaks, real RocketMQ loses the guarantee and the spec reports the loss as an
    # error that names the cause. With respect_assumptions the machine plays only within them,
    # so a finding is a fault of the reference; without, such reports are expected findings.
    # Each guard names the assumption it keeps (@keeps, by catalogue id).
    @keeps("A-LEASE-MARGIN")
    def _pause_allowed(self, client, duration_ms) -> bool:
        """A-LEASE-MARGIN: a pause of an orderly client, plus its longest listener call, stays
        shorter than the broker lock lifetime minus the client lease. With no listener call
        running, a longer pause is within the assumption while every broker lock the client may
        hold outlives it: its lease may expire meanwhile (its consume loop must then stop and
        lock again), but no other client can take a queue from it and consume before it thaws."""
        c = self.run.consumers[client]
        if not type(self).respect_assumptions or not c.orderly:
            return True
        longest = _longest_call(c.listener)
        if duration_ms + longest < self._lease_margin():
            return True
        # A longer pause is still within it while every broker lock the client holds outlives
        # the pause and, when a listener call is running, the rest of that call: nobody else can
        # lock a queue before the call has ended, and the consume loop must find its lease
        # expired before the next batch (as in orderly-pause-lease, a 35 s pause during a call).
        p, now = self.run.profile, self.run.sim.now
        if c.consume_service.in_flight:
            if p.orderly_remove_style != "49x":
                # 5.x forces a dropped queue's unlock 20 s after its last lock even while a call
                # runs (#7644): a client thawing past that during a handover loses the queue
                # mid-call, a known loss of 5.x, not a fault of the reference
                return False
            duration_ms += longest
        # the broker's lock entry is a little older than the client's lastLockTimestamp (set when
        # the answer arrived): a round trip of slack
        slack = 2 * self.run.net.latency_ms + 1
        return all(now + duration_ms + slack < pq.last_lock_ts + p.broker_lock_max_live_ms
                   for pq in c.rebalance.pq_table.values())

    def _pause_ms(self, client, duration) -> int:
        """A pause's length: `duration`, or with PAST_LEASE just long enough that every lease of
        the client (an orderly one: 30 s from each queue's last lock) has expired when it thaws
        (the client lease plus one ms for any other client), as in orderly-pause-lease."""
        if duration != PAST_LEASE:
            return duration
        c, p = self.run.consumers[client], self.run.profile
        last = [pq.last_lock_ts for pq in c.rebalance.pq_table.values() if pq.locked] if c.orderly else []
        if not last:
            return p.client_lock_max_live_ms + 1
        return max(1, max(last) + p.client_lock_max_live_ms + 1 - self.run.sim.now)

    def _lease_margin(self) -> int:
        p = self.run.profile
        return lease_margin(p.broker_lock_max_live_ms, p.client_lock_max_live_ms)

    @keeps("A-OFFSET-ENTRY")
    def _leave_allowed(self, client, crash: bool) -> bool:
        """A-OFFSET-ENTRY (and the first persist): a broadcasting client stops only once its offset
        table has an entry for every queue it holds, and crashes only once its offsets file has;
        else its restart reads no offset, a first start that skips what was stored meanwhile
        (INV-LOSS-1). A clustering group's restart is spared by the broker's answer of 0 (#334)
        while offset 0 is in memory, as it always is here."""
        c = self.run.consumers[client]
        if not type(self).respect_assumptions or not c.broadcasting:
            return True
        store = c.offset_store
        have = store.disk if crash else store.table
        return all(mq in have for mq in c.rebalance.pq_table)

    @keeps("A-LAST-FIRST-REBALANCE")
    def _produce_allowed(self) -> bool:
        """A-LAST-FIRST-REBALANCE: a produce comes once every running consumer at LAST has run its
        first rebalance, which its start() only woke, and (broadcasting) holds every queue of T:
        a queue taken later (its broker was down) reads maxOffset then (#9281: what is stored
        after start() returned and before that read is skipped, every release)."""
        if not type(self).respect_assumptions and "A-LAST-FIRST-REBALANCE" not in type(self).kept_anyway:
            return True
        route = set(self.run.net.route("T"))
        return all(c.rebalance._last_run is not None and (not c.broadcasting or route <= set(c.rebalance.pq_table))
                   for c in self.run.consumers.values()
                   if getattr(c, "consume_from_where", None) == "CONSUME_FROM_LAST_OFFSET" and c.running
                   and c.proc.alive and hasattr(c.rebalance, "_last_run"))

    def _produce(self, **st) -> None:
        if not self._produce_allowed():
            self._do(self.run.sim.run_until, self.run.sim.now)   # the rebalances start() woke, due now
            if self.done or not self._produce_allowed():
                return
        self._step(action="produce", **st)

    @keeps("A-OFFSET-ENTRY")
    def _route_loss_allowed(self, broker, queue) -> bool:
        """A-OFFSET-ENTRY again: a broadcasting client that gives a queue up (the route lost it)
        removes its offset from its table, and reads it back from its offsets file when the
        queue returns; a queue lost before the file has its entry starts again as a first start."""
        if not type(self).respect_assumptions:
            return True
        mq = ("T", broker, queue)
        return all(mq in c.offset_store.disk for c in self.run.consumers.values()
                   if c.broadcasting and c.running and c.proc.alive and mq in c.rebalance.pq_table)

    @keeps("A-BROKER-LOCKS")
    def _restart_allowed(self) -> bool:
        """A-BROKER-LOCKS: no broker restart while an orderly client may hold a lease (a restart
        forgets the lock table while the leases stay valid)."""
        if not type(self).respect_assumptions:
            return True
        return not any(c.orderly and c.running and c.proc.alive for c in self.run.consumers.values())

    def _group_runs(self, group) -> bool:
        """An operator writes a group's offsets with its consumers stopped (the procedure for
        restoring offsets): a running consumer's next persist overwrites the write, and on an
        orderly queue that moves the offset back past consumed batches (INV-ORDER-3)."""
        return any(c.group == group and c.running and c.proc.alive for c in self.run.consumers.values())

    def _step(self, **st) -> None:
        self._do(self.run.do_step if self.run else None, st)

    def _differs(self) -> bool:
        """Whether the unpatched reference holds on this example's moves so far (self.steps, the
        falsifying code's lines): they are replayed on a fresh machine of the same environment
        with the patch (the mutant) taken out for the replay. The moves decide on the state they
        meet, so the replay is the same environment, not the same trace."""
        cls = type(self)
        twin_cls = machine_class(cls.profile, scenario=cls.scenario, respect_assumptions=cls.respect_assumptions,
                                 operator_moves=cls.operator_moves, reference_patch=None, ignore_crashes=True,
                                 trace_path=f"{cls.trace_path}.unpatched.jsonl")
        cm, self._cm = self._cm, None
        if cm is not None:
            cm.__exit__(None, None, None)
        try:
            twin = twin_cls()
            try:
                for line in self.steps[1:]:
                    exec(line, {"state": twin})
            except SpecViolation:
                return False
            finally:
                if twin._cm is not None:
                    twin._cm.__exit__(None, None, None)
            # a crash of the original on these moves (a bug of the reference) is no comparison
            return twin.monitor.first_error is None and not twin_cls.report["crashes"]
        finally:
            self._cm = _enter(cls.reference_patch)

    # ------------------------------------------------------------------ the environment's moves
    @initialize(clients=st.lists(st.sampled_from(sorted(CLIENTS)), unique=True, min_size=1),
                count=st.integers(0, 4), orderly_batch=st.sampled_from([1, 2]))
    @_logged
    def begin(self, clients, count, orderly_batch=1):
        """Some consumers, and maybe some messages, to begin with; the orderly group's
        consumeMessageBatchMaxSize (with 2, a batch's commit is lastKey + 1 of two messages)."""
        self.run.scenario["groups"]["GID_O"]["consume_message_batch_max_size"] = orderly_batch
        for client in clients:
            self._step(action="start", client=client, group=CLIENTS[client])
        if count:
            self._produce(topic="T", count=count, tags="A")

    @initialize(concurrent_ms=st.sampled_from([None, 5000, 15000]), failure=st.sampled_from([None, "fail", "EXCEPTION"]),
                orderly_ms=st.sampled_from([None, 5000, 15000, 25000]))
    @_logged
    def application(self, concurrent_ms, failure, orderly_ms):
        """How the application behaves from the start, on messages tagged A (the tag `begin`
        produces; a slow downstream): in GID_C every such call takes `concurrent_ms`, and with
        `failure` the first delivery of each fails after that time (RECONSUME_LATER or a throw),
        as a timed-out downstream call does; in GID_O every such call takes `orderly_ms`, within
        the limits of listener_slow. The listener moves can add more rules later."""
        if self.done:
            return
        if concurrent_ms is not None:
            if failure is not None:
                self._add_listener_rule("GID_C", {"tags": ["A"], "until_reconsume_times": 1, "duration_ms": concurrent_ms,
                                                  "status": "RECONSUME_LATER" if failure == "fail" else failure})
            self._add_listener_rule("GID_C", {"tags": ["A"], "duration_ms": concurrent_ms})
        if orderly_ms is not None and self._orderly_call_allowed(orderly_ms):
            self._add_listener_rule("GID_O", {"tags": ["A"], "duration_ms": orderly_ms})

    @rule(count=st.integers(1, 3), tags=st.sampled_from(TAGS))
    @_logged
    def produce(self, count, tags):
        self._produce(topic="T", count=count, **({} if tags is None else {"tags": tags}))

    @rule(client=st.sampled_from(sorted(CLIENTS)))
    @_logged
    def start(self, client):
        if not self.done and self._consumer(client) is None:
            self._step(action="start", client=client, group=CLIENTS[client])

    @rule(client=st.sampled_from(sorted(CLIENTS)))
    @_logged
    def shutdown(self, client):
        if self._consumer(client) is not None and self._leave_allowed(client, crash=False):
            self._step(action="shutdown", client=client)
            self.left_at[CLIENTS[client]] = self.run.sim.now

    @rule(client=st.sampled_from(sorted(CLIENTS)), mode=S.crash_modes())
    @_logged
    def crash(self, client, mode):
        if self._consumer(client, paused_ok=True) is not None and self._leave_allowed(client, crash=True):
            self._step(action="crash", client=client, mode=mode)
            self.left_at[CLIENTS[client]] = self.run.sim.now

    @rule(client=st.sampled_from(sorted(CLIENTS)), duration_ms=st.one_of(S.pause_durations(), st.just(PAST_LEASE)))
    @_logged
    def pause(self, client, duration_ms):
        if self._consumer(client) is None:
            return
        ms = self._pause_ms(client, duration_ms)
        if self._pause_allowed(client, ms):
            self._step(action="pause", client=client, duration_ms=ms)

    @rule(client=st.sampled_from(sorted(CLIENTS)),
          fault=st.one_of(S.crash_modes().map(lambda m: ("crash", m)),
                          st.one_of(S.pause_durations(), st.just(PAST_LEASE)).map(lambda d: ("pause", d))))
    @_logged
    def arm_fault(self, client, fault):
        """A crash or pause that strikes before a task the choices pick (fault_strike) while the
        clock advances: between any two tasks, not only between steps."""
        if self.done or self._consumer(client) is None or len(self.run.sim.armed) >= MAX_ARMED:
            return
        kind, arg = fault
        if kind == "pause" and not self._pause_allowed(client, self._pause_ms(client, arg)):
            return

        def fire():
            # a pause is judged again when it strikes: a slow listener may have come since (and
            # a pause past the lease is measured from then)
            if self._consumer(client, paused_ok=kind == "crash") is None:
                return
            if kind == "crash":
                if self._leave_allowed(client, crash=True):
                    self.run.do_step({"action": "crash", "client": client, "mode": arg})
                    self.left_at[CLIENTS[client]] = self.run.sim.now
                return
            ms = self._pause_ms(client, arg)
            if self._pause_allowed(client, ms):
                self.run.do_step({"action": "pause", "client": client, "duration_ms": ms})

        self.run.sim.arm(f"{kind} {client} {arg}", fire)

    @rule(group=st.sampled_from(sorted(set(CLIENTS.values()))), tags=st.sampled_from(TAGS[:-1]),
          failure=st.sampled_from(["fail", "NULL", "EXCEPTION"]), until=st.sampled_from([None, 1, 2, 3]),
          duration_ms=st.sampled_from([None, 5000, 15000]))
    @_logged
    def listener_fails(self, group, tags, failure, until, duration_ms=None):
        """The application starts failing on messages tagged `tags` (a poison message), for
        good or until their reconsume count reaches `until`: a listener rule, as a scenario's.
        With `duration_ms` each failing call first takes that long (a downstream call that
        times out), so a broker restart or a rebalance can come while it runs."""
        if self.done:
            return
        g = self.run.scenario["groups"][group]
        orderly = g.get("consume_mode") == "ORDERLY"
        if duration_ms is not None and orderly and not self._orderly_call_allowed(duration_ms):
            return
        status = failure if failure != "fail" else (
            "SUSPEND_CURRENT_QUEUE_A_MOMENT" if orderly else "RECONSUME_LATER")
        r = {"tags": [tags], "status": status, **({} if until is None else {"until_reconsume_times": until}),
             **({} if duration_ms is None else {"duration_ms": duration_ms})}
        self._add_listener_rule(group, r)

    @rule(group=st.sampled_from(sorted(set(CLIENTS.values()))), tags=st.sampled_from(TAGS),
          duration_ms=st.sampled_from([1000, 5000, 15000, 25000, 40000]))
    @_logged
    def listener_slow(self, group, tags, duration_ms):
        """The application takes `duration_ms` on messages tagged `tags`, or on every message
        (tags None: the downstream itself is slow): a long consume call, during which a
        rebalance, a lease expiry or a pause may strike. An orderly group's call stays within
        A-LEASE-MARGIN while the machine respects it (and, under 5.x, within the unlock delay)."""
        if self.done:
            return
        g = self.run.scenario["groups"][group]
        if g.get("consume_mode") == "ORDERLY" and not self._orderly_call_allowed(duration_ms):
            return
        self._add_listener_rule(group, {**({} if tags is None else {"tags": [tags]}), "duration_ms": duration_ms})

    def _add_listener_rule(self, group, r) -> None:
        listener = self.run.scenario["groups"][group].setdefault("listener", {})
        listener["rules"] = [*listener.get("rules", []), r]      # consumers started from now on
        for c in self.run.consumers.values():
            if c.group == group:
                c.listener.rules.append(r)                        # and those running

    @keeps("A-LEASE-MARGIN")
    def _orderly_call_allowed(self, duration_ms) -> bool:
        """An orderly listener call of this length stays under the lease margin (A-LEASE-MARGIN).
        Under 5.x no slow orderly call at all: tryRemoveOrderMessageQueue forces a dropped
        queue's unlock once 20 s have passed since its last lock, even while a call runs (#7644),
        and the lock of a queue dropped mid-call is not renewed meanwhile, so any call that is
        running when that retry comes is consumed by two clients during a handover (a 15 s call
        in the machine on 2026-12-01): a known loss of 5.x that the spec reports
        (orderly-long-call-handover), not a fault of the reference."""
        if not type(self).respect_assumptions:
            return True
        if self.run.profile.orderly_remove_style != "49x":
            return False
        return duration_ms < self._lease_margin()

    # -- moves made while a listener call runs: the moments the consume paths guard. Each first
    # lets the clock run until a call of a running client of the group is open (at most
    # AWAIT_CALL_MS), then makes its move as the move's own rule makes it, within the same
    # assumptions. Separate rules, so that Hypothesis draws each as often as any other move.
    def _await_call(self, group, ready=None, wait_ms: int = AWAIT_CALL_MS):
        """The client of `group` in a listener call once the clock has run until one is, or None.
        With `ready`, until a call is open at a moment ready() holds too (the move takes effect
        then), at most `wait_ms`; the client in a call when the wait ends is returned either way."""
        if self.done or self.run is None:
            return None

        def calling():
            return next((c for _, c in sorted(self.run.consumers.items())
                         if c.group == group and c.running and c.proc.alive and c.consume_service.in_flight), None)

        def found():
            return calling() is not None and (ready is None or ready())

        if not found() and any(c.group == group and c.running and c.proc.alive
                               for c in self.run.consumers.values()):
            self._do(self.run.sim.run_until, self.run.sim.now + wait_ms, found)
        return None if self.done else calling()

    def _reset_taken(self, group) -> bool:
        """Whether the brokers would take an operator's reset of the group's offsets of T now, as
        Run.reset_offset (4.9.8 Broker2Client.resetOffset) decides: every broker is up and has a
        committed offset of the group for each of its queues of T in the route; a queue with none
        fails the command ("the consumer group not exist")."""
        run = self.run
        if not all(b.up for b in run.net.brokers.values()):
            return False
        return all(run.net.brokers[mq[1]].offsets.query(group, "T", mq[2]) >= 0 for mq in run.net.route("T"))

    @staticmethod
    def _busy_queue(c):
        """A queue of T the client is consuming: its ProcessQueue holds the messages in the call."""
        return next((mq for mq, pq in sorted(c.rebalance.pq_table.items())
                     if mq[0] == "T" and (pq.msg_count or pq.consuming_tree)), None)

    @rule(group=st.sampled_from(sorted(set(CLIENTS.values()))))
    @_logged
    def await_call(self, group):
        """Only the wait: the next step comes while the call runs."""
        self._await_call(group)

    @rule(group=st.sampled_from(sorted(set(CLIENTS.values()))))
    @_logged
    def join_during_call(self, group):
        """A stopped member of the group starts mid-call: its rebalance takes queues over."""
        if self._await_call(group) is None:
            return
        idle = [x for x in sorted(CLIENTS) if CLIENTS[x] == group and self._consumer(x, paused_ok=True) is None]
        if idle:
            type(self).start.__wrapped__(self, client=idle[0])

    @rule(group=st.sampled_from(sorted(set(CLIENTS.values()))))
    @_logged
    def pause_during_call(self, group):
        """The calling client freezes until its leases have expired (PAST_LEASE)."""
        c = self._await_call(group)
        if c is not None:
            type(self).pause.__wrapped__(self, client=c.client_id, duration_ms=PAST_LEASE)

    @rule(group=st.sampled_from(sorted(set(CLIENTS.values()))))
    @_logged
    def reset_during_call(self, group):
        """An operator resets the group's offsets to the beginning mid-call. The brokers refuse
        a reset while they lack a committed offset of the group for a queue of T (_reset_taken),
        and a clustering group's first offsets reach them with its clients' first persistAll,
        10 s after they start, while its first calls begin at once: waiting for a call alone,
        most of these resets came before that and did nothing (of 1,000 derandomized 4.9.8
        examples on 2026-12-04, 169 of the 197 resets of GID_O that met a call). So for a
        clustering group the clock runs until a call is open at a moment the brokers take the
        reset, at most the first persist's delay longer than for a call alone. A broadcasting
        group's clients commit nothing to the brokers (only an operator's write gives it broker
        offsets): there the wait is for the call alone, as before."""
        if self.done or self.run is None:
            return
        ready, wait_ms = None, AWAIT_CALL_MS
        if type(self).operator_moves and self.run.scenario["groups"][group].get("message_model") != "BROADCASTING":
            ready = lambda: self._reset_taken(group)    # noqa: E731
            wait_ms += self.run.profile.persist_offset_initial_delay_ms
        if self._await_call(group, ready=ready, wait_ms=wait_ms) is not None:
            type(self).reset_offset.__wrapped__(self, group=group, back_ms=10**9)

    @rule(group=st.sampled_from(sorted(set(CLIENTS.values()))), every_broker=st.booleans())
    @_logged
    def restart_during_call(self, group, every_broker):
        """The broker of a queue the calling client consumes goes down mid-call, for longer than
        any call (a failed call's send-back then fails), or with every_broker the whole cluster
        (the fallback producer's send fails too)."""
        c = self._await_call(group)
        mq = None if c is None else self._busy_queue(c)
        if mq is not None:
            type(self).restart_broker.__wrapped__(self, broker=ALL_BROKERS if every_broker else mq[1],
                                                  downtime_ms=RESTART_DURING_CALL_MS)

    @rule(group=st.sampled_from(sorted(set(CLIENTS.values()))))
    @_logged
    def route_lost_during_call(self, group):
        """The queue in the call leaves the route for 25 s: a rebalance drops its ProcessQueue
        mid-call, and a later one creates it again."""
        c = self._await_call(group)
        mq = None if c is None else self._busy_queue(c)
        if mq is not None:
            type(self).route_lost.__wrapped__(self, broker=mq[1], queue=mq[2], duration_ms=25000)

    # -- an operator's moves (mqadmin) and offset-store faults
    @rule(group=st.sampled_from(sorted(set(CLIENTS.values()))), back_ms=st.sampled_from([0, 1000, 10**9]))
    @_logged
    def reset_offset(self, group, back_ms):
        """mqadmin resetOffsetByTime: the group's offsets of T go back to the first message stored
        at or after now - back_ms (10**9: the beginning)."""
        if self.run is not None and type(self).operator_moves and all(b.up for b in self.run.net.brokers.values()):
            self._step(action="reset_offset", group=group, topic="T",
                       timestamp_ms=max(0, self.run.sim.now - back_ms))

    @rule(group=st.sampled_from(sorted(set(CLIENTS.values()))), broker=st.sampled_from(BROKERS), queue=st.integers(0, 1),
          past_end=st.sampled_from([0, 1, 1000]))
    @_logged
    def set_broker_offset(self, group, queue, past_end, broker="broker-a"):
        """An operator writes the group's committed offset of a queue: its end, or past it (an
        offset restored from another cluster). Within the assumptions, as the procedure for
        restoring offsets says: the group's consumers are shut down first and started again
        after the write (a running consumer's next persist would overwrite it)."""
        if self.run is None or not type(self).operator_moves:
            return
        b = self.run.net.brokers[broker]
        if not b.up:
            return
        stopped = []
        if type(self).respect_assumptions and self._group_runs(group):
            if self.run.scenario["groups"][group].get("message_model") == "BROADCASTING":
                return          # its clients never read the broker's offset: nothing to restore
            stopped = [c for c in sorted(CLIENTS) if CLIENTS[c] == group and self._consumer(c) is not None]
            if len(stopped) != sum(1 for c in self.run.consumers.values()
                                   if c.group == group and c.running and c.proc.alive):
                return          # a paused member cannot be shut down gracefully
            for c in stopped:
                self._step(action="shutdown", client=c)
            if stopped:
                self.left_at[group] = self.run.sim.now
        # and waits until they are down, those it stopped and those that stopped or crashed just
        # before: shutdown's persistAll is one-way, and a stale offset still on the wire (a
        # persist, a pull's commit offset) would land after the write and undo it
        settle = self.left_at.get(group, -1) + 2 * self.run.net.latency_ms + 1
        if type(self).respect_assumptions and self.run.sim.now < settle:
            self._do(self.run.sim.run_until, settle)
            if self.done or not b.up:
                return
        end = b.store.max_offset("T", queue)
        self._step(action="set_broker_offset", broker=broker, group=group, topic="T", queue=queue,
                   offset=end + past_end)
        for c in stopped:
            self._step(action="start", client=c, group=group)

    @rule(client=st.sampled_from(sorted(CLIENTS)), count=st.integers(1, 2),
          kind=st.sampled_from(["timeout", "broker_error"]))
    @_logged
    def offset_queries_fail(self, client, count, kind):
        """The client's next offset queries to the broker fail (a timeout, or an error response).
        4.9.x reads an error response as "no offset" and starts the queue at LAST, skipping
        messages (docs/scenarios.md): real, but a guarantee lost to a broker fault, so only
        timeouts while the machine respects the assumptions."""
        if kind == "broker_error" and type(self).respect_assumptions:
            return
        if self.run is not None and type(self).operator_moves:
            self._step(action="fail_offset_queries", client=client, count=count, kind=kind)

    @rule(broker=st.sampled_from(BROKERS), queue=st.integers(0, 1), duration_ms=st.sampled_from([5000, 25000]))
    @_logged
    def route_lost(self, queue, duration_ms, broker="broker-a"):
        """A queue of T drops out of the name server's route for a while (the broker's
        registration lapsed): the next rebalances drop its ProcessQueues and create them again;
        a broadcasting client's offsets file must keep the queue's offset meanwhile (#4016)."""
        if not self.done and self.run is not None and self._route_loss_allowed(broker, queue):
            self._do(self.run.net.lose_route, "T", broker, queue, duration_ms)

    @rule(broker=st.sampled_from((*BROKERS, ALL_BROKERS)), downtime_ms=S.restart_downtimes())
    @_logged
    def restart_broker(self, downtime_ms, broker="broker-a"):
        """A broker restarts (its memory is lost), or with ALL_BROKERS every broker at once (a
        cluster-wide outage: a failed send-back's fallback to the producer fails too)."""
        if self.run is None or not self._restart_allowed():
            return
        for b in (BROKERS if broker == ALL_BROKERS else (broker,)):
            if not self.done and self.run.net.brokers[b].up:
                self._step(action="restart_broker", broker=b, downtime_ms=downtime_ms)

    @rule(probability=S.oneway_loss_probabilities())
    @_logged
    def oneway_loss(self, probability):
        self._step(action="oneway_loss", probability=probability)

    @rule(ms=S.clock_advances(), choices=S.choice_scripts())
    @_logged
    def advance(self, ms, choices):
        if self.run is not None:
            self._do(self.run.sim.run_until, self.run.sim.now + ms, choices=choices)

    def teardown(self):
        try:
            if not self.done:
                # drain with every choice at its default: quiescence must come, and the spec
                # judges it at trace_ended (INV-LIVE-1)
                self.steps.append("state.teardown()")
                self._do(self.run.drain, self.run.sim.now + DRAIN_MS)
        finally:
            if self._cm is not None:
                cm, self._cm = self._cm, None
                cm.__exit__(None, None, None)


# ---------------------------------------------------------------------- POP (RocketMQ 5.x)
# The POP environment (check_reference(scenario=POP)): the same two brokers and topic, consumed by
# POP only. GID_P: push consumers in POP mode (p1, p2; a failed call changes the invisible time to
# popDelayLevel, at maxReconsumeTimes it is acked as past its retries); GID_S: SimpleConsumers (s1,
# s2) that ack on success and on a failure change the invisible time to 3 s (or, with
# leave_to_revive, leave it to come back through revive); GID_F: FIFO SimpleConsumers (f1, f2,
# orderly POP). Invisible time 5 s everywhere, so revive runs within a few steps; retries cut to 2.
POP = validate({
    "name": "statemachine-pop",
    "description": "The POP environment of conformance.statemachine (PopMachine): rules add every step.",
    "duration_ms": 0,
    "brokers": ["broker-a", "broker-b"],
    "topics": [{"name": "T", "queues": 2}],
    "groups": [
        {"name": "GID_P", "client_type": "POP_PUSH", "pop_invisible_time": 5000, "max_reconsume_times": 2,
         "subscriptions": {"T": "*"}, "listener": {"duration_ms": [1, 50], "fail_rate": 0.1}},
        {"name": "GID_S", "client_type": "SIMPLE", "pop_invisible_time": 5000, "pop_batch_nums": 2,
         "retry_invisible_ms": 3000, "max_reconsume_times": 2, "subscriptions": {"T": "*"},
         "listener": {"duration_ms": [1, 50], "fail_rate": 0.1}},
        {"name": "GID_F", "client_type": "SIMPLE", "consume_mode": "ORDERLY", "pop_invisible_time": 5000,
         "pop_batch_nums": 2, "max_reconsume_times": 2, "subscriptions": {"T": "*"},
         "listener": {"duration_ms": [1, 50], "fail_rate": 0.1}},
    ],
}, "builtin:statemachine-pop")
POP_CLIENTS = {"p1": "GID_P", "p2": "GID_P", "s1": "GID_S", "s2": "GID_S", "f1": "GID_F", "f2": "GID_F"}
POP_SLOW_MS = 8_000         # a call longer than the invisible time (#8332's first half: redelivered)


class PopMachine(ReferenceMachine):
    """The machine in the POP environment: the moves of the base that do not touch a push
    consumer's ProcessQueues or offsets (produce, advance, restart_broker, oneway_loss), and its
    own: POP clients start, stop, crash and pause; listener failures (acked later, changed, or
    left to revive) and calls past the invisible time; the broker's revive reads fail
    (fail_revive_reads, #10985). The spec judges pops, acks, changes, checkpoints and revives
    after every step, and INV-POP-LIVE-1 at the drained end."""

    # the base's moves that need a push consumer (offsets, leases, ProcessQueues): not moves here
    begin = application = start = shutdown = crash = pause = arm_fault = None
    listener_fails = listener_slow = await_call = join_during_call = pause_during_call = None
    reset_during_call = restart_during_call = route_lost_during_call = None
    reset_offset = set_broker_offset = offset_queries_fail = route_lost = None

    def _restart_allowed(self) -> bool:
        """A-BROKER-LOCKS is the push consumer's: a POP client, FIFO too, holds no lease."""
        return True

    @initialize(clients=st.lists(st.sampled_from(sorted(POP_CLIENTS)), unique=True, min_size=1),
                count=st.integers(0, 4), leave_to_revive=st.booleans())
    @_logged
    def pop_begin(self, clients, count, leave_to_revive=False):
        """Some POP consumers, and maybe some messages (tag A); with leave_to_revive GID_S's
        clients leave a failed message to come back when its invisible time ends."""
        if leave_to_revive:
            self.run.scenario["groups"]["GID_S"]["retry_invisible_ms"] = None
        for client in clients:
            self._step(action="start", client=client, group=POP_CLIENTS[client])
        if count:
            self._produce(topic="T", count=count, tags="A")

    @rule(client=st.sampled_from(sorted(POP_CLIENTS)))
    @_logged
    def pop_start(self, client):
        if not self.done and self._consumer(client) is None:
            self._step(action="start", client=client, group=POP_CLIENTS[client])

    @rule(client=st.sampled_from(sorted(POP_CLIENTS)))
    @_logged
    def pop_shutdown(self, client):
        if self._consumer(client) is not None:
            self._step(action="shutdown", client=client)

    @rule(client=st.sampled_from(sorted(POP_CLIENTS)), mode=S.crash_modes())
    @_logged
    def pop_crash(self, client, mode):
        if self._consumer(client, paused_ok=True) is not None:
            self._step(action="crash", client=client, mode=mode)

    @rule(client=st.sampled_from(sorted(POP_CLIENTS)), duration_ms=st.sampled_from([1000, POP_SLOW_MS, 30_000]))
    @_logged
    def pop_pause(self, client, duration_ms):
        if self._consumer(client) is not None:
            self._step(action="pause", client=client, duration_ms=duration_ms)

    @rule(group=st.sampled_from(sorted(set(POP_CLIENTS.values()))), tags=st.sampled_from(TAGS[:-1]),
          until=st.integers(1, 3))
    @_logged
    def pop_listener_fails(self, group, tags, until):
        """Calls on messages tagged `tags` fail until the message's reconsume times reach `until`."""
        if not self.done:
            orderly = self.run.scenario["groups"][group].get("consume_mode") == "ORDERLY"
            status = "SUSPEND_CURRENT_QUEUE_A_MOMENT" if orderly else "RECONSUME_LATER"
            self._add_listener_rule(group, {"tags": [tags], "until_reconsume_times": until, "status": status})

    @rule(group=st.sampled_from(sorted(set(POP_CLIENTS.values()))), tags=st.sampled_from(TAGS[:-1]))
    @_logged
    def pop_listener_slow(self, group, tags):
        """The first call on messages tagged `tags` outlives the invisible time."""
        if not self.done:
            self._add_listener_rule(group, {"tags": [tags], "until_reconsume_times": 1, "duration_ms": POP_SLOW_MS})

    @rule(broker=st.sampled_from(BROKERS), count=st.integers(1, 2))
    @_logged
    def fail_revive_reads(self, broker, count):
        """The broker's next revive reads of a checkpoint's message fail (#10985)."""
        if not self.done:
            self._step(action="fail_revive_reads", broker=broker, count=count)


class PopFifoMachine(PopMachine):
    """PopMachine in POP_FIFO: its moves, but for failed revive reads."""

    fail_revive_reads = None


# The late-read POP environment (check_reference(scenario=POP_LATE), PopLateMachine): the POP
# deployment, where a pop may read its queues after its pop time (PopMessageProcessor takes the
# pop time when the request starts; the explorer's fault pop_read_late), and a move that sends
# while a pop is between the two, so the pop hands the message out under a pop time earlier than
# its store time (#7914's way in). Kept out of the POP environment (a new rule would change its
# examples); the failed revive reads of #10985, which every release has, are not played here.
POP_LATE = validate({**POP, "name": "statemachine-pop-late",
                     "description": "The late-read POP environment of conformance.statemachine (PopLateMachine)",
                     "groups": [{**g, "name": n} for n, g in POP["groups"].items()]},
                    "builtin:statemachine-pop-late")
POP_LATE_WAIT_MS = 20_000   # how long produce_during_pop_read waits for a pop to be between its time and read


class PopLateMachine(PopMachine):
    """The machine in the late-read POP environment: PopMachine's moves but fail_revive_reads, a
    late-read rate set once at the start (pop_reads_late), and produce_during_pop_read."""

    fail_revive_reads = None

    @initialize(rate=st.sampled_from([0.5, 1.0]))
    @_logged
    def pop_reads_late(self, rate):
        """Each pop reads its queues 10 ms after its pop time with this probability (0.5: the
        choices decide, choice point pop_read_late; 1.0: every pop)."""
        if not self.done and self.run is not None:
            for b in self.run.net.brokers.values():
                if b.pop is not None:
                    b.pop.late_read_rate = rate

    def _pop_reading(self) -> bool:
        return any(b.pop is not None and b.pop.reading for b in self.run.net.brokers.values())

    @rule(count=st.integers(1, 2))
    @_logged
    def produce_during_pop_read(self, count):
        """The clock runs until a pop has taken its pop time and not read yet (up to 20 s), and 1 ms
        on; then `count` messages tagged A are sent: stored after that pop time, before its read."""
        if self.done or self.run is None:
            return
        sim = self.run.sim
        self._do(sim.run_until, sim.now + POP_LATE_WAIT_MS, self._pop_reading)
        if self.done or not self._pop_reading():
            return
        self._do(sim.run_until, sim.now + 1)
        if not self.done:
            self._produce(topic="T", count=count, tags="A")


# The retention POP environment (check_reference(scenario=POP_RETENTION), PopRetentionMachine): the
# POP deployment, where retention may delete the commit log's oldest messages' data before the
# consume queues' min offsets are corrected, 10 s later (reference.broker.retention; the explorer's
# fault commit_log_expired): a revive's read at such an offset returns a later message (#7724's way
# in). Kept out of the POP environment (a new rule would change its examples); the failed revive
# reads of #10985, which every release has, are not played here.
POP_RETENTION = validate({**POP, "name": "statemachine-pop-retention",
                          "description": "The retention POP environment of conformance.statemachine "
                                         "(PopRetentionMachine)",
                          "groups": [{**g, "name": n} for n, g in POP["groups"].items()]},
                         "builtin:statemachine-pop-retention")
RETENTION_CLIENTS = sorted(c for c, g in POP_CLIENTS.items() if g != "GID_F")
POP_RETENTION_WAIT_MS = 20_000   # how long expire_while_held waits for a checkpoint not fully acked


class PopRetentionMachine(PopMachine):
    """The machine in the retention POP environment: PopMachine's moves but fail_revive_reads, for
    GID_P's and GID_S's clients only, and expire_commit_log. No FIFO client: an orderly pop that
    passes over an entry whose data is gone reads to the spec as a skip of the attempt's un-acked
    offset (INV-POP-ORDER-1), as no event tells of commit-log data lost before the consume queue's
    correction."""

    fail_revive_reads = None

    @initialize(clients=st.lists(st.sampled_from(RETENTION_CLIENTS), unique=True, min_size=1),
                count=st.integers(0, 4), leave_to_revive=st.booleans())
    @_logged
    def pop_begin(self, clients, count, leave_to_revive=False):
        PopMachine.pop_begin.__wrapped__(self, clients=clients, count=count, leave_to_revive=leave_to_revive)

    @rule(client=st.sampled_from(RETENTION_CLIENTS))
    @_logged
    def pop_start(self, client):
        PopMachine.pop_start.__wrapped__(self, client=client)

    @rule(client=st.sampled_from(RETENTION_CLIENTS))
    @_logged
    def pop_shutdown(self, client):
        PopMachine.pop_shutdown.__wrapped__(self, client=client)

    @rule(client=st.sampled_from(RETENTION_CLIENTS), mode=S.crash_modes())
    @_logged
    def pop_crash(self, client, mode):
        PopMachine.pop_crash.__wrapped__(self, client=client, mode=mode)

    @rule(client=st.sampled_from(RETENTION_CLIENTS), duration_ms=st.sampled_from([1000, POP_SLOW_MS, 30_000]))
    @_logged
    def pop_pause(self, client, duration_ms):
        PopMachine.pop_pause.__wrapped__(self, client=client, duration_ms=duration_ms)

    @rule(broker=st.sampled_from(BROKERS), count=st.integers(1, 2))
    @_logged
    def expire_commit_log(self, broker, count):
        """The broker's commit log loses the data of its `count` oldest messages still held; the
        consume queues are corrected 10 s later."""
        if not self.done:
            self._step(action="expire_commit_log", broker=broker, count=count)

    def _holding_broker(self):
        """A broker with a checkpoint not fully acked (its revive is still to come)."""
        for name, b in sorted(self.run.net.brokers.items()):
            if b.pop is not None and any(len(ck.acked) < len(ck.offsets) for ck in b.pop.checkpoints.values()):
                return name
        return None

    @rule(count=st.integers(1, 2))
    @_logged
    def expire_while_held(self, count):
        """The clock runs until a broker holds a checkpoint not fully acked (up to 20 s); then its
        commit log loses the data of its `count` oldest messages still held."""
        if self.done or self.run is None:
            return
        sim = self.run.sim
        self._do(sim.run_until, sim.now + POP_RETENTION_WAIT_MS, lambda: self._holding_broker() is not None)
        broker = None if self.done else self._holding_broker()
        if broker is not None:
            self._step(action="expire_commit_log", broker=broker, count=count)


# The RocksDB POP environment (check_reference(scenario=POP_KV), PopKvMachine): the POP deployment
# with the broker's KV path on (broker_config pop_consumer_kv_service: PopConsumerService keeps a
# record per popped message keyed by its deadline), and a move that makes a GID_S call fail after
# just long enough for its change of invisible time to reach the broker at the handle's deadline,
# so the new record's key is the old one's (#10276's way in). Kept out of the POP environment (a
# new rule would change its examples). Not played here: the revive-log path's failed reads
# (fail_revive_reads) and broker restarts (the reference keeps the KV path's pull offsets across
# one; their flush is not modelled).
POP_KV = validate({**POP, "name": "statemachine-pop-kv",
                   "description": "The RocksDB POP environment of conformance.statemachine (PopKvMachine)",
                   "broker_config": {"pop_consumer_kv_service": True},
                   "groups": [{**g, "name": n} for n, g in POP["groups"].items()]},
                  "builtin:statemachine-pop-kv")
# The FIFO-limit POP environment (check_reference(scenario=POP_FIFO), PopFifoMachine): the POP
# deployment with GID_F's max attempts kept (maxReconsumeTimes 1) under every profile. environment_for
# lifts them elsewhere, where the profile's proxy reads a FIFO message's count under the queue's key.
# Without failed revive reads (#10985's way in, which every release has too).
POP_FIFO = validate({**POP, "name": "statemachine-pop-fifo",
                     "description": "The FIFO-limit POP environment of conformance.statemachine (PopMachine)",
                     "groups": [{**g, "name": n, **({"max_reconsume_times": 1} if n == "GID_F" else {})}
                                for n, g in POP["groups"].items()]},
                    "builtin:statemachine-pop-fifo")
# a GID_S call this long ends 1 ms after its pop answer's latency and its change arrives 1 ms after
# it: pop time + 1998 + 2 + the 3 s of retry_invisible_ms = the 5 s handle's deadline
POP_KV_SAME_DEADLINE_MS = 5000 - 3000 - 2


class PopKvMachine(PopMachine):
    """The machine in the RocksDB POP environment: PopMachine's moves but fail_revive_reads and
    restart_broker, and pop_change_keeps_deadline."""

    fail_revive_reads = restart_broker = None

    @rule(tags=st.sampled_from(TAGS[:-1]))
    @_logged
    def pop_change_keeps_deadline(self, tags):
        """GID_S's first call on messages tagged `tags` fails after 1998 ms: a call that starts as
        its pop answer arrives changes the invisible time (3 s) at its handle's deadline."""
        if not self.done:
            self._add_listener_rule("GID_S", {"tags": [tags], "until_reconsume_times": 1,
                                              "status": "RECONSUME_LATER", "duration_ms": POP_KV_SAME_DEADLINE_MS})


# The gRPC PushConsumer environment (check_reference(scenario=POP_GRPC), PopGrpcMachine): one broker
# on the RocksDB POP path, a topic of two queues, consumed by gRPC PushConsumers through the proxy:
# GID_G FIFO (g1, g2), GID_H concurrent (h1, h2), each receiving one message at a time with a 5 s
# long poll (the proxy's minimum). Its moves: PopMachine's for these clients, a slow store (a pop
# that reads message data holds its group@topic lock for seconds, set once at the start) and lost
# receive answers (#10827's way in). Kept out of the POP environment (a new rule would change its
# examples); no failed revive reads (the KV path revives from its own records) nor broker restarts
# (the proxy in local mode would die with the broker, its handles with it; not played).
POP_GRPC = validate({
    "name": "statemachine-pop-grpc",
    "description": "The gRPC PushConsumer environment of conformance.statemachine (PopGrpcMachine)",
    "duration_ms": 0,
    "brokers": ["broker-a"],
    "broker_config": {"pop_consumer_kv_service": True},
    "topics": [{"name": "T", "queues": 2}],
    "groups": [
        {"name": "GID_G", "client_type": "GRPC_PUSH", "consume_mode": "ORDERLY", "max_cache_message_count": 1,
         "long_polling_timeout_ms": 5000, "max_reconsume_times": 2, "subscriptions": {"T": "*"},
         "listener": {"duration_ms": [1, 50], "fail_rate": 0.1}},
        {"name": "GID_H", "client_type": "GRPC_PUSH", "max_cache_message_count": 1,
         "long_polling_timeout_ms": 5000, "max_reconsume_times": 2, "subscriptions": {"T": "*"},
         "listener": {"duration_ms": [1, 50], "fail_rate": 0.1}},
    ],
}, "builtin:statemachine-pop-grpc")
GRPC_CLIENTS = {"g1": "GID_G", "g2": "GID_G", "h1": "GID_H", "h2": "GID_H"}
GRPC_COLD_READ_MS = 6_000   # cold_read_over_a_retry: longer than a 5 s poll, shorter than a 8 s deadline


class PopGrpcMachine(PopMachine):
    """The machine in the gRPC PushConsumer environment: PopMachine's moves for its clients but
    fail_revive_reads and restart_broker, a store read time set once at the start
    (slow_store_reads) and lose_pop_responses."""

    fail_revive_reads = restart_broker = None

    @initialize(clients=st.lists(st.sampled_from(sorted(GRPC_CLIENTS)), unique=True, min_size=1),
                count=st.integers(0, 4), read_ms=st.sampled_from([0, 3000, 4500]))
    @_logged
    def pop_begin(self, clients, count, read_ms=0):
        """Some gRPC PushConsumers, maybe some messages (tag A), and the store's read time: a pop
        that reads message data completes it read_ms later (0: at once)."""
        if read_ms:
            self._step(action="slow_store_reads", broker="broker-a", delay_ms=read_ms)
        for client in clients:
            self._step(action="start", client=client, group=GRPC_CLIENTS[client])
        if count:
            self._produce(topic="T", count=count, tags="A")

    @rule(client=st.sampled_from(sorted(GRPC_CLIENTS)))
    @_logged
    def pop_start(self, client):
        if not self.done and self._consumer(client) is None:
            self._step(action="start", client=client, group=GRPC_CLIENTS[client])

    @rule(client=st.sampled_from(sorted(GRPC_CLIENTS)))
    @_logged
    def pop_shutdown(self, client):
        PopMachine.pop_shutdown.__wrapped__(self, client=client)

    @rule(client=st.sampled_from(sorted(GRPC_CLIENTS)), mode=S.crash_modes())
    @_logged
    def pop_crash(self, client, mode):
        PopMachine.pop_crash.__wrapped__(self, client=client, mode=mode)

    @rule(client=st.sampled_from(sorted(GRPC_CLIENTS)), duration_ms=st.sampled_from([1000, POP_SLOW_MS, 30_000]))
    @_logged
    def pop_pause(self, client, duration_ms):
        PopMachine.pop_pause.__wrapped__(self, client=client, duration_ms=duration_ms)

    @rule(group=st.sampled_from(sorted(set(GRPC_CLIENTS.values()))), tags=st.sampled_from(TAGS[:-1]),
          until=st.integers(1, 3))
    @_logged
    def pop_listener_fails(self, group, tags, until):
        PopMachine.pop_listener_fails.__wrapped__(self, group=group, tags=tags, until=until)

    @rule(group=st.sampled_from(sorted(set(GRPC_CLIENTS.values()))), tags=st.sampled_from(TAGS[:-1]))
    @_logged
    def pop_listener_slow(self, group, tags):
        PopMachine.pop_listener_slow.__wrapped__(self, group=group, tags=tags)

    @rule(client=st.sampled_from(sorted(GRPC_CLIENTS)), count=st.integers(1, 2))
    @_logged
    def lose_pop_responses(self, client, count):
        """The client's next `count` receive answers are lost between the proxy and the client."""
        if self._consumer(client) is not None:
            self._step(action="lose_pop_responses", client=client, count=count)

    @rule(client=st.sampled_from(sorted(GRPC_CLIENTS)))
    @_logged
    def cold_read_over_a_retry(self, client):
        """Queue 1's data turns cold (a pop reading it completes 6 s later) and `client`'s next
        receive answer is lost; the clock runs until its receive fails at the deadline (up to
        30 s), then 900 ms on, and a message is sent to queue 1: a read of it that starts now runs
        through the retry's arrival, 100 ms later, and the end of its 5 s poll (#10827's way in)."""
        if self.done or self._consumer(client) is None:
            return
        c = self._consumer(client)
        before = c.deadline_exceeded_at
        self._step(action="slow_store_reads", broker="broker-a", delay_ms=GRPC_COLD_READ_MS, queue=1)
        self._step(action="lose_pop_responses", client=client, count=1)
        sim = self.run.sim
        self._do(sim.run_until, sim.now + 30_000, lambda: c.deadline_exceeded_at != before)
        if self.done or c.deadline_exceeded_at == before:
            return
        self._do(sim.run_until, sim.now + 900)
        if not self.done:
            self._produce(topic="T", count=1, tags="A", turn=1)


# ---------------------------------------------------------------------- the send-back's fallback
# The send-back environment (check_reference(scenario=SEND_BACK), SendBackMachine): the default
# deployment, with two moves of its own kept out of the default machine (a new rule would change
# the default's examples): a concurrent group's listener asks for a delay level on a failure
# (ConsumeConcurrentlyContext.setDelayLevelWhenNextConsume), and consumerSendMessageBack may throw
# while the broker is up, so the client's producer sends the retry copy (#3731's path).
SEND_BACK = validate({**SCENARIO, "name": "statemachine-send-back",
                      "description": "The send-back environment of conformance.statemachine (SendBackMachine)",
                      "groups": [{**g, "name": n} for n, g in SCENARIO["groups"].items()]},
                     "builtin:statemachine-send-back")


class SendBackMachine(ReferenceMachine):
    """The machine in the send-back environment: every move of the base, and two of its own made
    once at the start of each example (so every example may have them, whatever its length):
    listener_delay_level and send_back_throws."""

    @initialize(level=st.sampled_from([0, 1, 2, 5]))
    @_logged
    def listener_delay_level(self, level):
        """GID_C's listener sets delayLevelWhenNextConsume to `level` on every failed call (0:
        it leaves it to the broker's 3 + reconsumeTimes; the concurrent group: an orderly
        listener suspends instead, a broadcasting consumer sends nothing back)."""
        if self.done or not level:
            return
        self.run.scenario["groups"]["GID_C"].setdefault("listener", {})["delay_level_when_next_consume"] = level
        for c in self.run.consumers.values():
            if c.group == "GID_C":
                c.listener.delay_level_when_next_consume = level

    @initialize(probability=st.sampled_from([0.0, 0.5, 1.0]))
    @_logged
    def send_back_throws(self, probability):
        """A consumerSendMessageBack may throw with its broker up (a timeout: the
        broker did not take it), and the client's producer sends the copy to %RETRY% (the fault
        kind send_back_threw of explore): with 0.5 the choices decide which send-back throws
        (choice point send_back_throws), with 1.0 every one does."""
        if not self.done and self.run is not None and probability:
            self.run.net.faults.send_back_throw = probability


def _longest_call(listener) -> int:
    """The longest listener call a client may make: its range, or a rule's."""
    longest = max(listener.duration)
    for r in listener.rules:
        d = r.get("duration_ms")
        if d is not None:
            longest = max(longest, d if isinstance(d, int) else max(d))
    return longest


def _new_report() -> dict:
    return {"examples": 0, "crashes": 0, "runaway": 0, "runaway_example": None, "failure": None,
            "shrink_until": None, "first_failure": None, "differential_same": 0}


def _failed(cls, failure: dict) -> None:
    rep = cls.report
    rep["failure"] = failure
    if rep["shrink_until"] is None:
        rep["shrink_until"] = time.monotonic() + cls.shrink_budget_s
        rep["first_failure"] = (rep["examples"], time.monotonic(), time.process_time())


def _out_of_budget(cls) -> bool:
    """Whether the search must end now: the budget ran out before a failure was found, or the
    shrink budget after it. Hypothesis's final replay of the failure always runs."""
    from hypothesis.control import current_build_context

    try:
        if current_build_context().is_final:
            return False
    except Exception:       # outside a Hypothesis run (the printed falsifying code run by hand)
        return False
    rep, now = cls.report, time.monotonic()
    if rep["failure"] is None:
        return cls.deadline is not None and now > cls.deadline
    return rep["shrink_until"] is not None and now > rep["shrink_until"]


def _budget_ended(exc: BaseException) -> bool:
    """Whether `exc` is the budget's end: BudgetExhausted, or what Hypothesis raised while
    unwinding from it (it may report the cut-short example as inconsistent data generation)."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, BudgetExhausted):
            return True
        exc, seen = exc.__context__, seen + 1
    return False


def _enter(patch):
    """Enter `reference_patch`: a context manager, or a zero-argument factory of one."""
    if patch is None:
        return None
    cm = patch if hasattr(patch, "__enter__") else patch()
    cm.__enter__()
    return cm


ReferenceMachine.report = _new_report()


def resolve_profile(name: str) -> str:
    """A profile name, or a release's short form ("4.9.8" -> "rocketmq-4.9.8")."""
    if name in PROFILES:
        return name
    if f"rocketmq-{name}" in PROFILES:
        return f"rocketmq-{name}"
    raise UnknownProfile(f"unknown profile {name!r}; known: {', '.join(sorted(PROFILES))}")


_CLASSES: dict[str, type] = {}


def scenario_for(profile: str) -> dict:
    """The machine's environment under `profile`. Where the release's orderly send-back to the
    DLQ goes through the producer and keeps its delay level (producer_dlq_keeps_delay: 4.9.x,
    the copy waits in the schedule topic), every orderly dead letter is a loss the release has
    (INV-DLQ-1, H-RETRY-3), not a fault of the reference: there GID_O has no retry limit
    (maxReconsumeTimes -1, Integer.MAX_VALUE for an orderly consumer) and never reaches the DLQ,
    as the machine keeps 5.x's orderly calls within the unlock delay (#7644)."""
    return environment_for(profile, SCENARIO)


def environment_for(profile: str, scenario: dict) -> dict:
    """`scenario` under `profile`, as scenario_for says; and an orderly broadcasting group never
    reaches the DLQ either: every release's checkReconsumeTimes sends its message there whatever
    the message model (INV-BCAST-1, a loss the releases have). Nor does a FIFO SimpleConsumer
    group, where the profile's proxy reads the queue's count: every release's proxy passes a FIFO
    message beyond its max attempts (INV-POP-DLQ-1, proxy_fifo_count_per_offset), except in
    POP_FIFO, the environment that searches for it."""
    p = PROFILES[resolve_profile(profile)]
    proxy_fifo = not p.proxy_fifo_count_per_offset and scenario.get("name") != POP_FIFO["name"]
    limitless = [n for n, g in scenario["groups"].items() if g.get("consume_mode") == "ORDERLY"
                 and (p.producer_dlq_keeps_delay or g.get("message_model") == "BROADCASTING"
                      or (proxy_fifo and g.get("client_type") == "SIMPLE"))]
    if not limitless:
        return scenario
    sc = copy.deepcopy(scenario)
    for n in limitless:
        sc["groups"][n]["max_reconsume_times"] = -1
    return sc


def machine_class(profile: str = "rocketmq-4.9.8", **attrs) -> type:
    """The state machine under `profile` (class attributes in `attrs` override the defaults:
    scenario, trace_path, reference_patch, ignore_crashes, deadline). Without attrs the class is
    cached per profile, so the falsifying code Hypothesis prints runs as it is."""
    profile = resolve_profile(profile)
    if not attrs and profile in _CLASSES:
        return _CLASSES[profile]
    ns = {"profile": profile, "scenario": scenario_for(profile), "report": _new_report(),
          "__module__": __name__, "__qualname__": "ReferenceMachine", **attrs}
    # the POP and send-back environments have their own moves (PopMachine, SendBackMachine)
    base = {POP["name"]: PopMachine, POP_FIFO["name"]: PopFifoMachine, SEND_BACK["name"]: SendBackMachine,
            POP_LATE["name"]: PopLateMachine, POP_KV["name"]: PopKvMachine}.get(ns["scenario"].get("name"), ReferenceMachine)
    base = {POP_RETENTION["name"]: PopRetentionMachine, POP_GRPC["name"]: PopGrpcMachine}.get(
        ns["scenario"].get("name"), base)
    cls = type("ReferenceMachine", (base,), ns)
    if not attrs:
        _CLASSES[profile] = cls
    return cls


@dataclass
class ConformanceResult:
    ok: bool
    finding: str | None = None          # invariant id of the (shrunk) finding; "SCHEMA" for a schema error
    falsifying_code: str | None = None  # the shrunk example as runnable Python
    trace_path: str | None = None       # its trace (rocketspec check rejects it)
    examples_run: int = 0
    profile: str = ""
    crash: str | None = None            # the reference raised (not a spec finding)
    crashes_ignored: int = 0
    runaway: int = 0                    # examples ended by an event cap (MAX_STEP_EVENTS, MAX_EXAMPLE_EVENTS): not findings
    differential_same: int = 0          # differential: failures the unpatched reference had too (not counted)
    runaway_steps: list | None = field(default=None, repr=False)  # the first of them, as the steps it took
    budget_exhausted: bool = False
    seconds: float = 0.0
    examples_to_failure: int | None = None   # examples run when the first failure was found
    seconds_to_failure: float | None = None  # and the time it took (before shrinking)
    cpu_seconds_to_failure: float | None = None  # and the CPU time of this process it took
    message: str = field(default="", repr=False)

    def summary(self) -> str:
        head = (f"{self.profile}: {'holds' if self.ok else 'FAILS'} after {self.examples_run} examples "
                f"in {self.seconds:.1f}s" + (" (budget ran out)" if self.budget_exhausted else "")
                + (f"; {self.runaway} examples ran away (cut at an event cap, not a finding)" if self.runaway else ""))
        if self.ok:
            return head
        return "\n".join(x for x in (head, self.message, "falsifying example:", self.falsifying_code or "(none)",
                                     f"trace: {self.trace_path}") if x)


def check_reference(profile: str, *, max_examples: int, derandomize: bool = True, seed: int | None = None,
                    budget_s: float | None = None, reference_patch=None, stateful_step_count: int = CI_STEPS,
                    ignore_crashes: bool | None = None, trace_path: str | None = None,
                    shrink_budget_s: float = 60.0, operator_moves: bool = True, respect_assumptions: bool = True,
                    differential: bool = False, scenario: dict | None = None, keep: tuple = ()) -> ConformanceResult:
    """Run the state machine against the reference under `profile`. `reference_patch`: a context
    manager (or a factory of one) entered around each example, e.g. a mutant; crashes of a
    patched reference are ignored unless `ignore_crashes=False`. `budget_s` stops generating new
    examples after that many seconds (a found failure is still shrunk). `seed` makes the run
    reproducible without derandomizing by the test's name. `respect_assumptions=False` lets the
    environment break the spec's assumptions; with `differential` (for a patched reference) an
    example fails only where the unpatched reference holds on the same moves. `scenario`: the
    machine's environment instead of the profile's (e.g. ORDERLY_BROADCAST). `keep`: assumption
    ids kept even with `respect_assumptions=False` (a search for one bug past a shallower one)."""
    from hypothesis import seed as hseed
    from hypothesis.reporting import with_reporter

    name = resolve_profile(profile)
    t0, c0 = time.monotonic(), time.process_time()
    if ignore_crashes is None:
        ignore_crashes = reference_patch is not None
    attrs = {"reference_patch": reference_patch, "ignore_crashes": ignore_crashes, "shrink_budget_s": shrink_budget_s,
             "operator_moves": operator_moves, "respect_assumptions": respect_assumptions, "differential": differential,
             "kept_anyway": frozenset(keep),
             "deadline": None if budget_s is None else t0 + budget_s}
    if trace_path is not None:
        attrs["trace_path"] = trace_path
    if scenario is not None:
        attrs["scenario"] = environment_for(name, scenario)
    cls = machine_class(name, **attrs)
    env = cls.scenario.get("name")
    if seed is not None:
        cls = hseed(seed)(cls)
    s = settings(max_examples=max_examples, derandomize=derandomize and seed is None, database=None, deadline=None,
                 stateful_step_count=stateful_step_count, report_multiple_bugs=False, print_blob=False,
                 suppress_health_check=list(HealthCheck))
    lines: list[str] = []
    res = ConformanceResult(ok=True, profile=name)
    try:
        with with_reporter(lambda s: lines.append(str(s))):
            run_state_machine_as_test(cls, settings=s)
    except (SpecViolation, ReferenceCrashed) as exc:
        fail = cls.report["failure"] or {}
        res.ok = False
        res.finding = fail.get("finding")
        res.crash = fail.get("crash")
        res.trace_path = fail.get("trace_path")
        res.message = str(exc)
        res.falsifying_code = _falsifying_code(name, list(getattr(exc, "__notes__", [])) + lines,
                                               respect_assumptions, env) or \
            _falsifying_code(name, fail.get("steps", []), respect_assumptions, env)
    except BaseException as exc:        # noqa: BLE001 - only the budget's end is handled here
        if not _budget_ended(exc):
            raise
        # the search ended on the budget; a failure found before is reported as shrunk so far
        # (the last failing example: Hypothesis only tries examples simpler than its best)
        fail = cls.report["failure"]
        if fail is not None:
            res.ok = False
            res.finding, res.crash, res.trace_path = fail["finding"], fail["crash"], fail["trace_path"]
            res.message = "the shrink budget ran out: shrunk as far as it got"
            res.falsifying_code = _falsifying_code(name, fail["steps"], respect_assumptions, env)
    res.examples_run = cls.report["examples"]
    if cls.report["first_failure"] is not None:
        res.examples_to_failure = cls.report["first_failure"][0]
        res.seconds_to_failure = cls.report["first_failure"][1] - t0
        res.cpu_seconds_to_failure = cls.report["first_failure"][2] - c0
    res.crashes_ignored = cls.report["crashes"]
    res.runaway = cls.report["runaway"]
    res.differential_same = cls.report["differential_same"]
    if cls.report["runaway_example"] is not None:
        res.runaway_steps = cls.report["runaway_example"][0]
    res.budget_exhausted = budget_s is not None and time.monotonic() > t0 + budget_s and res.ok
    res.seconds = time.monotonic() - t0
    return res


# the environments of this module a falsifying example names, so that it runs as printed
_NAMED_ENVIRONMENTS = {POP["name"]: "POP", SEND_BACK["name"]: "SEND_BACK", POP_LATE["name"]: "POP_LATE",
                       POP_KV["name"]: "POP_KV"}

_NAMED_ENVIRONMENTS[POP_RETENTION["name"]] = "POP_RETENTION"
_NAMED_ENVIRONMENTS[POP_FIFO["name"]] = "POP_FIFO"
_NAMED_ENVIRONMENTS[POP_GRPC["name"]] = "POP_GRPC"


def _falsifying_code(profile: str, lines: list[str], respect_assumptions: bool = True,
                     environment: str | None = None) -> str:
    """Hypothesis's printout of the final (shrunk) run, from `state = ...`, made runnable;
    `environment`: the name of the machine's environment, kept when it is one of this module's
    own (_NAMED_ENVIRONMENTS)."""
    lines = [ln for chunk in lines for ln in str(chunk).splitlines()]
    start = next((i for i, ln in enumerate(lines) if ln.startswith("state = ")), None)
    if start is None:
        return ""
    body = []
    for ln in lines[start:]:
        body.append(ln)
        if ln.strip() == "state.teardown()":
            break
    else:
        body.append("state.teardown()")
    env = _NAMED_ENVIRONMENTS.get(environment)
    return "\n".join([
        "from rocketspec.conformance.statemachine import machine_class" + (f", {env}" if env else ""),
        f"ReferenceMachine = machine_class({profile!r}" + (f", scenario={env}" if env else "")
        + f"{'' if respect_assumptions else ', respect_assumptions=False'})",
        *body])
