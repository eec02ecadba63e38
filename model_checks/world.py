"""The reference's world as the explorer's state: a scope's deployment built on the reference
(`reference.runner.Run`), copied, compared and advanced one task at a time.

- `scenario(scope)`: the scope as a reference scenario: `brokers` brokers, a topic `T` of `queues`
  queues holding `messages` messages (stored at time 0, round-robin), one group `G` of
  `consumers` clients started at time 0, a listener that may fail (`failures`).
- `World`: the run (simulator, broker, clients, ProcessQueues, offset stores: the whole
  reference) plus the spec's state of the trace so far and the budgets left. Every task on
  the simulator's heap is data (a bound method and its arguments, `reference.sim.Periodic`
  for periodic services), so a world pickles: `snapshot` gives its bytes (a node of the
  search), `load` a fresh copy to advance.
- `BudgetChooser`: the script chooser of one step with the scope's budgets: a choice that
  costs a fault (a fault striking, a lost one-way call, a failed send-back or offset query) or a
  listener failure is offered only while the budget lasts.
- Faults are armed on the simulator as data (`Run.inject`), one per kind and target: the
  chooser's `fault_strike` decides before which task one strikes.
"""
from __future__ import annotations

import copy
import hashlib
import pickle
import sys
from functools import partial

from rocketspec.reference.choice import ScriptChooser
from rocketspec.reference.footprint import CLOCK, footprint, independent, task_footprint
from rocketspec.reference.runner import Run
from rocketspec.reference.sim import live_task, run_at
from rocketspec.reference.scenario import validate
from rocketspec.spec import initial_state

GROUP = "G"
TOPIC = "T"
BROKER = "broker-a"     # the first broker: the one an operator's reset and a lost route touch
# how long a queue lost from the route stays out: past one rebalance (20 s), so clients see it go
ROUTE_LOST_MS = 25_000
# faults that exist for a broadcasting consumer (no broker offsets, no send-back)
BROADCAST_FAULTS = {"crash", "pause", "route_lost", "shutdown", "broker_restart"}
# choice points whose non-default answers cost a fault / a listener failure
FAULT_POINTS = {"fault_strike", "oneway_loss", "send_back_fails", "send_back_throws", "offset_query_fails",
                "revive_read_fails", "pop_read_late", "pop_response_lost"}
FAILURE_POINTS = {"listener_status"}


def scenario(scope) -> dict:
    """The scope's deployment as a validated reference scenario."""
    broadcast = scope.message_model == "BROADCASTING"
    listener = {"duration_ms": list(scope.consume_ms) if len(scope.consume_ms) > 1 else scope.consume_ms[0]}
    if scope.failures:
        listener["fail_rate"] = 0.5     # only declares the failure possible: the chooser decides
    if scope.delay_level:
        listener["delay_level_when_next_consume"] = scope.delay_level
    group = {"name": GROUP, "consume_mode": scope.mode, "message_model": scope.message_model,
             "strategy": scope.strategy, "max_reconsume_times": scope.max_reconsume_times,
             "consume_from_where": scope.consume_from_where, "pull_batch_size": scope.pull_batch,
             "consume_message_batch_max_size": scope.consume_batch,
             "consume_thread_max": scope.threads, "subscriptions": {TOPIC: subscription(scope)}, "listener": listener}
    if "clean_expired" in scope.fault_kinds and not broadcast:
        group["consume_timeout"] = 1
    if scope.client_type != "PUSH":
        # POP (5.x): the push consumer in POP mode or the SimpleConsumer, with the scope's invisible time
        group["client_type"], group["pop_invisible_time"] = scope.client_type, scope.pop_invisible_ms
        group["pop_batch_nums"] = scope.pop_batch
        if scope.client_type == "GRPC_PUSH":
            # the proxy's invisible time (auto-renew) and its receive size, from the cache it has room in
            group.pop("pop_invisible_time")
            group["max_cache_message_count"] = scope.pop_batch * scope.brokers
            group["long_polling_timeout_ms"] = scope.long_polling_ms
        if scope.pop_retry_invisible_ms:
            group["retry_invisible_ms"] = scope.pop_retry_invisible_ms
    steps = []
    if scope.messages and scope.produce_every_ms:
        # one message at a time; round-robin over the queues (a producer of its own keeps the turn)
        for i in range(scope.messages):
            steps.append({"at_ms": scope.produce_at_ms + i * scope.produce_every_ms, "action": "produce",
                          "topic": TOPIC, "count": 1,
                          "turn": scope.produce_queues[i] if scope.produce_queues else i})
    elif scope.messages:
        produce = {"at_ms": scope.produce_at_ms, "action": "produce", "topic": TOPIC, "count": scope.messages}
        if scope.tags:
            produce["tags"] = list(scope.tags)
        if scope.props:
            # message i has the properties of table i (round-robin; every table names the same ones)
            produce["props"] = {k: [t[k] for t in scope.props] for k in sorted(scope.props[0])}
        steps.append(produce)
    for i in range(scope.consumers):
        steps.append({"at_ms": i * scope.start_gap_ms, "action": "start", "client": client_id(i), "group": GROUP})
        if scope.restart_at_ms:
            # a start of a running client does nothing (reference.runner.Run.do_step)
            steps.append({"at_ms": scope.restart_at_ms, "action": "start", "client": client_id(i), "group": GROUP})
    sc = {"name": f"scope-{scope.name}", "duration_ms": 0, "drain_limit_ms": scope.horizon_ms,
          "brokers": broker_names(scope), "topics": [{"name": TOPIC, "queues": scope.queues}],
          "groups": [group], "steps": steps}
    if scope.subscription_type == "SQL92":
        sc["broker_config"] = {"enable_property_filter": True}
    if scope.pop_kv_service:
        sc.setdefault("broker_config", {})["pop_consumer_kv_service"] = True
    if scope.pop_read_ms:
        # a slow store (cold or tiered reads): a pop that reads message data completes it pop_read_ms later
        for b in broker_names(scope):
            steps.append({"at_ms": 0, "action": "slow_store_reads", "broker": b, "delay_ms": scope.pop_read_ms,
                          **({"queue": scope.pop_read_queue} if scope.pop_read_queue >= 0 else {})})
    return validate(sc, f"scope:{scope.name}")


def subscription(scope):
    """The group's subscription of the topic, as a scenario writes it."""
    if scope.subscription_type == "SQL92":
        return {"type": "SQL92", "expr": scope.subscription}
    return scope.subscription


def client_id(i: int) -> str:
    return f"c{i}"


def broker_names(scope) -> list[str]:
    """broker-a, broker-b, ...: each hosts the topic's `queues` queues (and, once a clustering
    client heartbeats, %RETRY%G), so a send-back whose broker is down can fall back to another."""
    return [f"broker-{chr(ord('a') + i)}" for i in range(scope.brokers)]


def fault_kinds(scope) -> list[str]:
    kinds = list(scope.fault_kinds) if scope.faults else []
    if scope.message_model == "BROADCASTING":
        kinds = [k for k in kinds if k in BROADCAST_FAULTS]
    else:
        kinds = [k for k in kinds if k != "route_lost"]
    return kinds


class World:
    """One state of the search (see the module doc)."""

    __slots__ = ("run", "spec", "faults_left", "failures_left", "ended", "nodefer")

    def __init__(self, run, spec, faults_left, failures_left):
        self.run, self.spec = run, spec
        self.faults_left, self.failures_left = faults_left, failures_left
        self.ended = None         # the trace_ended reason once the run is over
        # the next step is taken every way (BudgetChooser._plan_of): taken the reduced way from
        # here, it ended the run with a fault or a task left for later
        self.nodefer = False

    def __getstate__(self):
        return (self.run, self.spec, self.faults_left, self.failures_left, self.ended, self.nodefer)

    def __setstate__(self, s):
        self.run, self.spec, self.faults_left, self.failures_left, self.ended, self.nodefer = s


def build(scope, profile, sink) -> World:
    """The world at time 0, after setup (trace_started, topics, the steps scheduled), with the
    scope's faults armed and its choice points declared."""
    kinds = fault_kinds(scope)
    run = Run(copy.deepcopy(scenario(scope)), 0, profile, sink, BudgetChooser())
    w = World(run, initial_state(run.profile), scope.faults if kinds else 0, scope.failures)
    run.sim.chooser.world = w
    faults = run.net.faults
    clients = [client_id(i) for i in range(scope.consumers)]
    if "persist_lost" in kinds:
        faults.oneway_loss = 0.5
    if "send_back_failed" in kinds:
        faults.send_back_failure = 0.5
    if "send_back_threw" in kinds:
        faults.send_back_throw = 0.5
    if "query_failure" in kinds:
        faults.offset_query_failure_rate = 0.5
    for c in clients:
        if "crash" in kinds:
            for mode in scope.crash_modes:
                run.sim.arm(f"crash {c} {mode}", partial(run.inject, "crash", c, mode))
        if "pause" in kinds:
            for ms in scope.pause_ms:
                run.sim.arm(f"pause {c} {ms}", partial(run.inject, "pause", c, ms))
        if "clean_expired" in kinds:
            run.sim.arm(f"clean_expired {c}", partial(run.inject, "clean_expired", c))
        if "shutdown" in kinds:
            run.sim.arm(f"shutdown {c}", partial(run.inject, "shutdown", c))
    if "broker_restart" in kinds:
        for b in broker_names(scope):
            run.sim.arm(f"broker_restart {b}", partial(run.inject, "broker_restart", b, scope.broker_downtime_ms))
    if "commit_log_expired" in kinds:
        # retention deletes the commit log's oldest message's data before the consume queue's min
        # offset is corrected (reference.broker.retention; #7724's way in)
        for b in broker_names(scope):
            run.sim.arm(f"commit_log_expired {b}", partial(run.inject, "commit_log_expired", b))
    # an operator's offset moves (Run.inject): a queue's committed offset written on the broker
    # past its end (updateConsumeOffset), and mqadmin resetOffsetByTime to the beginning (an
    # offset each queue has; the group's online clients take it, or the broker when none is).
    # An operator may make each again (two resets that overlap are #2449), so they are armed
    # again once they strike, as often as the fault budget allows
    if "reset_by_time" in kinds:
        _arm_operator(run, f"reset_by_time {TOPIC}", "reset_by_time", TOPIC, (0, GROUP))
    for q in range(scope.queues):
        if "reset" in kinds:
            _arm_operator(run, f"reset q{q}", "reset", str(q), (TOPIC, GROUP))
        if "route_lost" in kinds:
            run.sim.arm(f"route_lost q{q}", partial(run.inject, "route_lost", str(q), (TOPIC, BROKER, ROUTE_LOST_MS)))
    run.setup()
    if "revive_read_failed" in kinds:
        # POP: a revive read of a checkpoint's message may fail (PopReviveService, #10985)
        for b in run.net.brokers.values():
            if b.revive is not None:
                b.revive.read_failure_rate = 0.5
    if "pop_response_lost" in kinds:
        # POP: a gRPC client's receive answer may be lost between the proxy and the client (#10827)
        run.net.faults.pop_response_loss = 0.5
    if "pop_read_late" in kinds:
        # POP: a pop may read the queues after its pop time (PopMessageProcessor; #7914's way in)
        for b in run.net.brokers.values():
            if b.pop is not None:
                b.pop.late_read_rate = 0.5
    return w


def _arm_operator(run, name, kind, target, arg) -> None:
    run.sim.arm(name, partial(_operator_move, run, name, kind, target, arg))


@footprint(lambda run, name, kind, target, arg: task_footprint(run.inject, (kind, target, arg)))
def _operator_move(run, name, kind, target, arg) -> None:
    """An operator's move strikes (Run.inject) and stays possible (armed again)."""
    run.inject(kind, target, arg)
    _arm_operator(run, name, kind, target, arg)


class Branch(Exception):
    """A step asked a choice while its chooser probed for one (BudgetChooser.probe)."""


class BudgetChooser(ScriptChooser):
    """A ScriptChooser that offers a costly option only while the world's budget lasts (a choice
    whose only affordable option is the default is no choice: it is not in the trail).

    With `reduce`, a step explores a persistent set (reference/footprint.py, `plan`) instead of
    every order of the tasks due together and every armed fault striking before them: one task
    independent of the others runs first with no choice, and only the armed faults that touch
    it are offered to strike before it. A fault left for later (`deferred`) commutes with the
    task: striking after it reaches the same state, and it is offered again before every task
    it touches. A fault that reads the clock (a pause) is offered before the last task of a
    millisecond (after it, later is another time), and a task it touches is run first: no
    task of the millisecond then runs before it but ones it commutes with.
    A step that ends the run leaves no later, for the faults left and for the tasks run after
    the one run first: the search then goes back to the state before it and takes that step
    every way (World.nodefer, model_checks/refexplore.py), so every end of a run is kept."""

    world = None
    probe = False     # True: a choice with more than one option raises Branch (a chain's end)

    def __init__(self, script=(), reduce: bool = False):
        super().__init__(script)
        self.reduce = reduce
        self.deferred = False     # this step left an armed fault, or a task due now, for later
        self._planned = (None, None, None)
        self._ahead = None        # (batch, pick, offered) planned by a chain's look-ahead (ahead)

    def plan(self, batch):
        """(pick, offered) for the runnable tasks `batch` due now: pick, the index of the task
        that runs first with no choice (None: the order is a choice); offered, the indices (into
        the simulator's `armed`) of the faults that may strike before it (None: all of them).

        {pick} with its offered faults is a persistent set: every other task due now is
        independent of the pick and of every offered fault, and every fault not offered is
        independent of the pick (with a budget of two faults or more, also of the offered ones:
        a fault that strikes first may be followed by another)."""
        if not self.reduce:
            return None, None
        fps = [task_footprint(it[2], it[3]) for it in batch]
        if any(fp is None for fp in fps):
            return None, None
        w = self.world
        armed = w.run.sim.armed if w.faults_left > 0 else ()
        faults = [task_footprint(fire.func, fire.args) for _, fire in armed]
        picks = []
        for i, fp in enumerate(fps):
            others = [o for j, o in enumerate(fps) if j != i]
            if not all(independent(fp, o) for o in others):
                continue
            offered = _touching(faults, [fp], w.faults_left > 1)
            if any(faults[k] is None or not independent(faults[k], o) for k in offered for o in others):
                continue
            if others and w.faults_left == 1:
                # a fault that reads the clock and not the pick's state strikes as well before a
                # later task of this millisecond: at the same time, after a task it commutes with
                offered = [k for k in offered if faults[k] is None or not independent(faults[k], fp)]
            picks.append((i, offered))
        if len(picks) > 1:
            # the same pick whatever order the batch came in (a chain of steps keeps the
            # scheduling order, a loaded snapshot has its heap in canonical order); the content
            # key is made only where there is a pick to make (most batches have one task)
            return min(picks, key=lambda p: (len(p[1]), _task_key(batch[p[0]])[:-1]))
        return picks[0] if picks else (None, None)

    def ahead(self, batch):
        """plan(batch) for the step about to run (a chain looks before it steps): the step's own
        plan reuses it, as the state is the one the look-ahead planned in."""
        pick, offered = self.plan(batch)
        self._ahead = (batch, pick, offered)
        return pick, offered

    def stepped(self) -> None:
        """A step ran: a look-ahead plans only the step right after it (one left over, for a
        step that ran a single task, could not match a later batch anyway: its item has run)."""
        self._ahead = None

    def _plan_of(self, batch):
        if self._planned[0] is not batch:       # Simulator.step asks strike, then task_order
            ahead, self._ahead = self._ahead, None
            if self.world.nodefer:              # the state before a step that ended the run
                self._planned = (batch, None, None)
            elif ahead is not None and _same_items(ahead[0], batch):
                # the batch the look-ahead planned, popped off the heap in another order
                pick = None if ahead[1] is None else batch.index(ahead[0][ahead[1]])
                self._planned = (batch, pick, ahead[2])
            else:
                self._planned = (batch, *self.plan(batch))
        return self._planned[1:]

    def task_order(self, batch):
        i, _ = self._plan_of(batch)
        if i is None:
            return super().task_order(batch)
        self.deferred = True                    # the others run later
        return i

    def strike(self, point, armed, batch=()):
        w = self.world
        if w.faults_left <= 0:
            return 0
        _, offered = self._plan_of(batch) if batch else (None, None)
        if offered is None:
            return super().strike(point, armed)
        if len(offered) < len(armed):
            self.deferred = True
        j = self._idx(point, len(offered) + 1)
        return offered[j - 1] + 1 if j else 0

    def index(self, point, n):
        budget = "faults_left" if point in FAULT_POINTS else "failures_left" if point in FAILURE_POINTS else None
        if budget is None:
            if self.probe:
                raise Branch(point)
            return super().index(point, n)
        left = getattr(self.world, budget)
        if left <= 0:
            return 0
        if self.probe:
            raise Branch(point)
        i = super().index(point, n)
        if i:
            setattr(self.world, budget, left - 1)
        return i


def _same_items(a, b) -> bool:
    """The same heap items (by identity: the heap holds them meanwhile), in any order."""
    return len(a) == len(b) and {id(x) for x in a} == {id(x) for x in b}


def crashes_that_end(w: World) -> list[int]:
    """The armed crashes (indices into the simulator's `armed`) after which the run would be
    quiescent: its only live clients with work left are the one that crashes."""
    run = w.run
    out = []
    for k, (_name, fire) in enumerate(run.sim.armed):
        if getattr(fire, "func", None) == run.inject and fire.args[0] == "crash":
            c = run.consumers.get(fire.args[1])
            if c is not None and c.running and c.proc.alive and run.quiescent(without=fire.args[1]):
                out.append(k)
    return out


def _touching(faults, fps, closed: bool) -> list[int]:
    """The indices of the faults (footprints, None: undeclared) that touch one of the footprints
    `fps` or read the clock (striking later is striking at another time); with `closed`, also
    those that touch a fault taken, and so on."""
    taken = {k for k, f in enumerate(faults)
             if f is None or CLOCK in f[0] or any(not independent(f, fp) for fp in fps)}
    if closed:
        if any(faults[k] is None for k in taken):
            return list(range(len(faults)))     # an undeclared fault touches every fault
        grew = True
        while grew:
            grew = False
            for k, f in enumerate(faults):
                if k not in taken and any(not independent(f, faults[t]) for t in taken):
                    taken.add(k)
                    grew = True
    return sorted(taken)


def detach(w: World):
    """Take out what is not state (the sink, the chooser) and the counters that only number
    events and tasks; put the heap in a canonical order (the order numbers of tasks due at the
    same time only break ties, and the explorer chooses every tie's order). Returns what
    `attach` needs."""
    sim = w.run.sim
    for c in w.run.consumers.values():
        if not c.proc.alive:
            c.forget()           # a dead client's memory is read by nothing
    # a task that can never run is no state: a cancelled timer's, or one of a process that
    # died since it was scheduled (Simulator._runnable drops them unseen; a dead process never
    # lives again: a restart is a new Process, and incarnations only grow)
    # a paused owner's task runs when the owner thaws (Simulator._runnable moves it there when
    # it comes due): moved now, so a state does not depend on whether it came due yet
    heap = sorted((_thawed(it) for it in sim._heap if live_task(it)), key=_due)
    i, n = 0, len(heap)
    while i < n:                 # only tasks due at the same time need the content key
        j = i + 1
        while j < n and heap[j][0] == heap[i][0]:
            j += 1
        if j - i > 1:
            heap[i:j] = sorted(heap[i:j], key=_task_key)
        i = j
    sim._heap = [(it[0], i) + it[2:] for i, it in enumerate(heap)]
    sim._order = len(heap)
    sim.armed.sort(key=_armed_key)   # an operator's move armed again goes last: order by name
    w.run.net._routes.clear()        # caches: route() recomputes the same answer, and the
    for b in w.run.net.brokers.values():   # broker compiles the same filter again (its key
        b._matchers.clear()                # holds ids, which a copy changes)
    saved = (sim._sink, sim.chooser)
    sim._sink = None
    sim.chooser = None
    normalize(w)
    sim.seq = 0
    sim.tasks_run = 0
    return saved


# Immutable values pickle never shares (it memoizes no int, bool, float or None) and those it
# does share by identity (str, bytes, tuple, frozenset): normalize makes equal ones one object.
_PLAIN = frozenset((int, bool, float, type(None)))
_IMMUTABLE = _PLAIN | {str, bytes, tuple, frozenset}
# (a Profile is walked: its strings, e.g. its name, are values the spec state holds too)
_SKIP = {"function", "builtin_function_or_method", "type"}

# How normalize walks each type: computed once per type (the walk is the explorer's hottest
# loop, so the per-object work is a dict lookup, not a walk of the class's MRO).
_DICT, _SET, _SEQ, _MAPPING, _NONE, _METHOD, _PARTIAL, _OBJ = range(8)
_PLANS: dict = {}
# The names pickle writes as strings of its own: attribute and slot names (keys of the state
# dicts it makes), method, class and module names: name -> the (interned) object pickle
# writes. A value is never that object: a value equal to a name is a copy, so whether pickle
# writes the two once or twice does not depend on whether the value was made by code (the
# interned literal) or loaded from a snapshot (a copy). Names are learnt as types and
# attributes are met; normalize walks again when it met new ones.
_NAMES: dict = {}


def _plan(t):
    """(How normalize walks objects of type t, their slots); t is not atomic (skipped before)."""
    if t is dict:
        p = (_DICT, ())
    elif t is set:
        p = (_SET, ())
    elif t is list or t is tuple or t.__name__ == "deque":
        p = (_SEQ, ())
    elif issubclass(t, dict):              # a SortedDict: ordered already
        p = (_MAPPING, ())
    elif t.__name__ in _SKIP or t is frozenset:
        p = (_NONE, ())
    elif t.__name__ == "method":
        p = (_METHOD, ())
    elif t.__name__ == "partial":
        p = (_PARTIAL, ())
    else:
        slots = tuple(k for klass in t.__mro__ for k in getattr(klass, "__slots__", ()) if k != "__dict__")
        p = (_OBJ, slots)
        for name in slots:
            _NAMES.setdefault(name, name)
    for name in (t.__qualname__, t.__module__):
        _NAMES.setdefault(name, name)
    _PLANS[t] = p
    return p


def normalize(root) -> None:
    """Put the world in a canonical form, in place, so that worlds reached by different
    interleavings that hold the same content pickle to the same bytes:

    - every dict in key order and every set in value order. Iteration order is then the keys'
      order, as with RocketMQ's hash maps (ConcurrentHashMap iterates in hash order, not in
      insertion order); lists, deques and tuples keep their order, which means something;
    - equal immutable values made one object (strings, bytes, tuples, frozensets), and a string
      value never the object of an equal name pickle writes (see _NAMES). Pickle writes a value
      it has met before, by identity, as a back-reference, so two worlds equal in value would
      otherwise pickle differently when they differ in which equal strings are one object (a
      dict key made by this step against the same key loaded from a snapshot): about a quarter
      of `small`'s states at depth 7 were such copies of another. After a load the values are
      canonical already (pickle keeps the sharing), so only what a step made is replaced.
    """
    seen = set()
    mark = seen.add
    stack = [root]
    push = stack.append
    pop = stack.pop
    plans = _PLANS
    plain = _PLAIN
    immutable = _IMMUTABLE
    names = len(_NAMES)
    strs: dict = {}             # str -> its canonical object
    sget = strs.get
    nget = _NAMES.get
    values: dict = {}           # tuple, frozenset or bytes -> the canonical one of its value
    vget = values.get

    def cstr(v):
        """The canonical object of a string not met before in this walk."""
        if nget(v) is v:                # a name's own object, held as a value: use a copy
            v = (v + " ")[:-1]
        strs[v] = v
        return v

    def value(v):
        """The canonical object of v if it is a string, tuple, frozenset or bytes, else v
        itself (the slow paths' form of what the hot loops below write out inline)."""
        tv = type(v)
        if tv is str:
            c = sget(v)
            return cstr(v) if c is None else c
        if tv is tuple or tv is frozenset or tv is bytes:
            return canon(v, tv)
        return v

    rebuilt: dict = {}          # id of a tuple holding something unhashable -> (it, its canonical form)

    def unhashable(v, tv):
        """A tuple that holds something unhashable (an object equal by value): its strings and
        tuples made canonical, its objects walked; one rebuilt tuple however often it is met,
        so sharing is kept."""
        r = rebuilt.get(id(v))
        if r is not None:
            return r[1]
        elems = []
        changed = False
        for e in v:
            ce = value(e)
            changed = changed or ce is not e
            if type(e) not in immutable and id(e) not in seen:
                push(e)
            elems.append(ce)
        nv = tv(elems) if changed else v
        rebuilt[id(v)] = (v, nv)        # v held: its id is not reused during the walk
        return nv

    def canon(v, tv):
        """The canonical object of an immutable value v of type tv: tuple, frozenset, bytes."""
        try:
            c = vget(v)
        except TypeError:               # holds something unhashable: no value to look up
            return unhashable(v, tv)
        if c is not None:
            if c is v or _same_shape(c, v):
                return c
            c = None                    # equal but not alike (1 and True, objects equal by
                                        # __eq__): kept apart, walked below
        elems = []
        changed = False
        for e in v:
            te = type(e)
            if te is str:
                ce = sget(e)
                if ce is None:
                    ce = cstr(e)
            elif te in plain:
                ce = e
            elif te is tuple or te is frozenset or te is bytes:
                ce = canon(e, te)
            else:                       # a mutable object the tuple holds: by identity
                ce = e
                if id(e) not in seen:
                    push(e)
            if ce is not e:
                changed = True
            elems.append(ce)
        if changed:
            v = tv(elems)
        if c is None and vget(v) is None:
            values[v] = v
        return v

    while stack:
        x = pop()
        t = type(x)
        if t in plain:
            continue
        i = id(x)
        if i in seen:
            continue
        mark(i)
        kind, slots = plans.get(t) or _plan(t)
        if kind == _OBJ:
            d = getattr(x, "__dict__", None)
            if d is not None:
                for k, v in d.items():
                    if k not in _NAMES:     # an attribute name: pickle writes it as a state dict key
                        _NAMES[k] = k
                    tv = type(v)
                    if tv is str:
                        cv = sget(v)
                        if cv is None:
                            cv = cstr(v)
                    elif tv in plain:
                        continue
                    elif tv is tuple or tv is frozenset or tv is bytes:
                        cv = canon(v, tv)
                    else:
                        push(v)
                        continue
                    if cv is not v:
                        d[k] = cv
            for k in slots:
                v = getattr(x, k, None)
                tv = type(v)
                if tv is str:
                    cv = sget(v)
                    if cv is None:
                        cv = cstr(v)
                elif tv in plain:
                    continue
                elif tv is tuple or tv is frozenset or tv is bytes:
                    cv = canon(v, tv)
                else:
                    push(v)
                    continue
                if cv is not v:
                    setattr(x, k, cv)
        elif kind == _DICT:
            rebuild = False
            if len(x) > 1:
                keys = list(x)
                try:
                    rebuild = sorted(keys) != keys
                except TypeError:
                    rebuild = sorted(keys, key=repr) != keys
            for k, v in x.items():      # at a fixed point (a loaded world) nothing is replaced
                tk = type(k)
                if tk is str:
                    ck = sget(k)
                    if ck is None:
                        ck = cstr(k)
                    if ck is not k:
                        rebuild = True
                elif tk in plain:
                    pass
                elif tk is tuple or tk is frozenset or tk is bytes:
                    if canon(k, tk) is not k:
                        rebuild = True
                else:
                    push(k)
                tv = type(v)
                if tv is str:
                    cv = sget(v)
                    if cv is None:
                        cv = cstr(v)
                    if cv is not v:
                        rebuild = True
                elif tv in plain:
                    pass
                elif tv is tuple or tv is frozenset or tv is bytes:
                    if canon(v, tv) is not v:
                        rebuild = True
                else:
                    push(v)
            if rebuild:                 # (the loop above pushed the mutable keys and values)
                items = [(value(k), value(v)) for k, v in x.items()]
                try:
                    items.sort(key=_first)
                except TypeError:
                    items.sort(key=_first_repr)
                x.clear()
                x.update(items)
        elif kind == _SEQ:
            if t is tuple:              # the root, or a tuple walked as an object: not replaced
                canon(x, t)
                continue
            for n, v in enumerate(x):
                tv = type(v)
                if tv is str:
                    cv = sget(v)
                    if cv is None:
                        cv = cstr(v)
                elif tv in plain:
                    continue
                elif tv is tuple or tv is frozenset or tv is bytes:
                    cv = canon(v, tv)
                else:
                    push(v)
                    continue
                if cv is not v:
                    x[n] = cv
        elif kind == _SET:
            if x:
                elems = []
                for v in x:
                    cv = value(v)
                    if type(v) not in immutable:
                        push(v)
                    elems.append(cv)
                try:
                    elems.sort()
                except TypeError:
                    elems.sort(key=repr)
                x.clear()
                x.update(elems)
        elif kind == _MAPPING:             # a SortedDict: ordered already
            items = list(x.items())
            rebuild = False
            for n, (k, v) in enumerate(items):
                ck, cv = value(k), value(v)
                if type(v) not in immutable:
                    push(v)
                if ck is not k or cv is not v:
                    items[n] = (ck, cv)
                    rebuild = True
            if rebuild:
                x.clear()
                x.update(items)
            d = getattr(x, "__dict__", None)
            if d:
                push(d)
        elif kind == _METHOD:
            push(x.__self__)
            name = x.__func__.__name__
            if name not in _NAMES:      # pickle writes a bound method as getattr(obj, name)
                _NAMES[name] = name
        elif kind == _PARTIAL:
            push(x.func)
            args = x.args
            if args:
                cargs = canon(args, tuple)
                if cargs is not args:
                    x.__setstate__((x.func, cargs, x.keywords or None, getattr(x, "__dict__", None) or None))
    if len(_NAMES) != names:
        # names met for the first time (a type or an attribute never seen before) came after
        # values equal to them: walk again, now that they are known
        normalize(root)


_ALIKE = frozenset((str, bytes, int, float, bool, type(None)))


def _same_shape(a, b) -> bool:
    """Equal immutable values a and b are alike: the same types throughout (1 == True == 1.0)
    and the same objects where they hold mutable ones, so one may stand for the other."""
    if type(a) is frozenset:
        return all(type(e) in _ALIKE for e in a) and all(type(e) in _ALIKE for e in b) and \
            {(type(e), e) for e in a} == {(type(e), e) for e in b}
    for x, y in zip(a, b):
        tx = type(x)
        if tx is not type(y):
            return False
        if x is y or tx in _ALIKE:
            continue
        if (tx is tuple or tx is frozenset) and _same_shape(x, y):
            continue
        return False
    return True


def _first(item):
    return item[0]


def _first_repr(item):
    return repr(item[0])


def _armed_key(item):
    return item[0]


def _shallow(x, depth=0):
    """A cheap, history-free description of a task argument (for ordering tasks due at the same
    time: what they are, not when they were scheduled)."""
    t = type(x)
    if t in (int, str, bool, float) or x is None:
        return x
    if t in (tuple, list):
        return tuple(_shallow(v, depth + 1) for v in x) if depth < 4 else len(x)
    for attr in ("client_id", "name"):
        v = getattr(x, attr, None)
        if type(v) is str:
            return (t.__name__, v)
    slots = getattr(t, "__slots__", None)
    if slots and depth < 3:
        return (t.__name__,) + tuple(_shallow(getattr(x, k, None), depth + 1) for k in slots)
    return t.__name__


def _due(item):
    return item[0]


def _thawed(item):
    due = run_at(item)
    return item if due == item[0] else (due,) + item[1:]


def _task_key(item):
    due, order, fn, args, owner, inc, timer = item
    f = getattr(fn, "func", None)        # a functools.partial
    if f is not None:
        args = tuple(fn.args) + tuple(args)
        fn = f
    target = getattr(fn, "__self__", None)
    name = getattr(fn, "__qualname__", type(fn).__name__)
    return (due, name, _shallow(target), owner.name if owner is not None else "", inc,
            repr(_shallow(args)), order)


def snapshot(w: World) -> bytes:
    saved = detach(w)
    try:
        return pickle.dumps(w, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        w.run.sim._sink, w.run.sim.chooser = saved


def load(snap: bytes, sink, chooser: BudgetChooser) -> World:
    w = pickle.loads(snap)
    w.run.sim._sink = sink
    w.run.sim.chooser = chooser
    chooser.world = w
    return w


def digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=12).digest()
