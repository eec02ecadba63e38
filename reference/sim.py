"""The deterministic discrete-event simulator under the reference broker and client.

A virtual millisecond clock, one heap of scheduled tasks, one chooser (reference.choice: every
decision left open, from a seeded random source by default) and one event sink. No threads, no
sleeps: a run is a pure function of (scenario, chooser's answers, profile), byte for byte. Tasks belong to an owner (a client or broker process); a paused owner's tasks
wait until it resumes, a dead owner's tasks never run. That is how a GC pause or a crash
looks from the outside.
"""
from __future__ import annotations

import heapq
from typing import Callable

from .choice import Chooser, SeededChooser


class Process:
    """Something whose scheduled work can be paused or killed: a client or a broker."""

    __slots__ = ("name", "alive", "paused_until", "incarnation")

    def __init__(self, name: str):
        self.name = name
        self.alive = True
        self.paused_until = 0   # tasks due before this wait until it
        self.incarnation = 0    # bumped on crash/restart: older tasks are stale

    def kill(self) -> None:
        self.alive = False
        self.incarnation += 1


class Timer:
    """A handle on a scheduled task, so a periodic service can be cancelled."""

    __slots__ = ("cancelled",)

    def __init__(self):
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Periodic(Timer):
    """A periodic task as data (its period, the bound method it runs, its owner), not a
    closure: the simulator's heap, and so a snapshot of the whole world, stays plain data that
    can be copied and compared (the explorer, model_checks/refexplore.py, relies on it)."""

    __slots__ = ("sim", "period", "fn", "owner")

    def __init__(self, sim, period: int, fn: Callable, owner):
        super().__init__()
        self.sim, self.period, self.fn, self.owner = sim, period, fn, owner

    def tick(self) -> None:
        self.fn()
        if not self.cancelled:
            self.sim.schedule(self.period, self.tick, owner=self.owner, timer=self)


class Simulator:
    def __init__(self, seed: int, sink: Callable[[dict], None], chooser: Chooser | None = None):
        self.now = 0
        self.seed = seed
        self.chooser = chooser if chooser is not None else SeededChooser(seed)
        self.armed: list[tuple[str, Callable[[], None]]] = []   # faults waiting to strike
        self._heap: list = []
        self._order = 0        # tie-break: tasks due at the same time run in scheduling order
        self.seq = 0
        self._sink = sink
        self.tasks_run = 0
        self.last_call = None  # when the last listener call began, or a proxy's DLQ forward (consume services)

    # ------------------------------------------------------------------ events
    def emit(self, kind: str, **fields) -> dict:
        """Emit one trace event; optional fields given as None are left out."""
        ev = {"seq": self.seq, "ts": self.now, "kind": kind}
        for k, v in fields.items():
            if v is not None:
                ev[k] = v
        self.seq += 1
        self._sink(ev)
        return ev


    # ------------------------------------------------------------------ tasks
    def schedule(self, delay: int, fn: Callable, *args, owner: Process | None = None,
                 timer: Timer | None = None) -> Timer | None:
        """Run fn(*args) after delay ms (delay >= 0) on behalf of owner. Pass a Timer to be
        able to cancel the task (most tasks are never cancelled and need none)."""
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        inc = owner.incarnation if owner is not None else 0
        self._order += 1
        heapq.heappush(self._heap, (self.now + delay, self._order, fn, args, owner, inc, timer))
        return timer

    def every(self, initial: int, period: int, fn: Callable, owner: Process | None = None) -> Timer:
        """fn() at initial, then every period ms (fixed rate, as scheduleAtFixedRate)."""
        timer = Periodic(self, period, fn, owner)
        self.schedule(initial, timer.tick, owner=owner, timer=timer)
        return timer

    def next_due(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def run_until(self, t_end: int, stop: Callable[[], bool] | None = None) -> None:
        """Run every task due at or before t_end (or until stop() is true between tasks)."""
        if not self.chooser.fifo or self.armed:
            return self._run_choosing(t_end, stop)
        heap = self._heap
        pop, push = heapq.heappop, heapq.heappush
        while heap and heap[0][0] <= t_end:
            due, order, fn, args, owner, inc, timer = pop(heap)
            if timer is not None and timer.cancelled:
                continue
            if owner is not None:
                if not owner.alive or owner.incarnation != inc:
                    continue
                if owner.paused_until > due:
                    # A frozen process: the task runs when it thaws, after those already due.
                    self._order += 1
                    push(heap, (owner.paused_until, self._order, fn, args, owner, inc, timer))
                    continue
            self.now = due
            self.tasks_run += 1
            fn(*args)
            if stop is not None and stop():
                return
        if t_end > self.now:
            self.now = t_end

    def _runnable(self, item) -> bool:
        """Drop a cancelled or stale task; move a paused owner's task to its thaw time."""
        if not live_task(item):
            return False
        due, order, fn, args, owner, inc, timer = item
        if owner is not None and owner.paused_until > due:
            self._order += 1
            heapq.heappush(self._heap, (owner.paused_until, self._order, fn, args, owner, inc, timer))
            return False
        return True

    def _run_choosing(self, t_end: int, stop) -> None:
        """run_until, asking the chooser which of the runnable tasks due in the same millisecond
        runs first (task_order) and whether an armed fault strikes before it (fault_strike)."""
        while self.step(t_end) is not None:
            if stop is not None and stop():
                return
        if t_end > self.now:
            self.now = t_end

    def step(self, t_end: int | None = None):
        """One boundary of the run: the chooser picks whether an armed fault strikes before the
        next task (fault_strike), else which runnable task due first runs (task_order); then
        that fault or task runs. Returns "task", "fault", or None when nothing is due by t_end.
        The candidates are gathered afresh before every task: the one before may have
        cancelled, killed, paused or added some. The explorer (model_checks/refexplore.py) takes
        the run one step at a time from copies of the world."""
        heap = self._heap
        pop, push = heapq.heappop, heapq.heappush
        ch = self.chooser
        while heap and (t_end is None or heap[0][0] <= t_end):
            due = heap[0][0]
            batch = []
            while heap and heap[0][0] == due:
                item = pop(heap)
                if self._runnable(item):
                    batch.append(item)
            if not batch:
                continue
            self.now = due
            # a fault strikes before whichever task would run next: asked first, so a fault is
            # one choice, not one per order of the tasks it comes before
            if self.armed and self._strike(batch):
                return "fault"
            i = ch.task_order(batch) if len(batch) > 1 else 0
            item = batch.pop(i)
            for other in batch:
                push(heap, other)
            self.tasks_run += 1
            item[2](*item[3])
            return "task"
        return None

    def _strike(self, batch, among=None) -> bool:
        """Ask the chooser whether an armed fault strikes now, before one of `batch` (the tasks
        due now, taken off the heap); if one does, the batch goes back (the fault may kill an
        owner: reconsidered) and the fault strikes. `among`: the armed faults offered (indices;
        None: all)."""
        offered = range(len(self.armed)) if among is None else among
        j = self.chooser.strike("fault_strike", [self.armed[k][0] for k in offered], batch)
        if not j:
            return False
        _, fire = self.armed.pop(offered[j - 1])
        for item in batch:
            heapq.heappush(self._heap, item)
        fire()
        return True

    def strike_now(self, among=None) -> bool:
        """Whether an armed fault (of `among`, indices; None: any) strikes now, with no task
        after it in this millisecond (a search lets one strike when a run would end, or when it
        would end the run: model_checks/refexplore.py)."""
        return bool(self.armed) and (among is None or bool(among)) and self._strike((), among)

    def next_batch(self, t_end: int | None = None):
        """The runnable tasks `step` would choose among next (heap items, in heap order), without
        running anything; None when a paused owner's task is among them (step moves it first)
        or nothing is due by t_end."""
        live = [it for it in self._heap if live_task(it)]
        if not live:
            return None
        due = min(it[0] for it in live)
        if t_end is not None and due > t_end:
            return None
        batch = sorted((it for it in live if it[0] == due), key=lambda it: it[1])
        if any(it[4] is not None and it[4].paused_until > due for it in batch):
            return None
        return batch

    def next_live_due(self) -> int | None:
        """When the next task that can run is due (None: no such task); a paused owner's task
        runs when the owner thaws."""
        return min((run_at(it) for it in self._heap if live_task(it)), default=None)

    def arm(self, name: str, fire: Callable[[], None]) -> None:
        """A fault (a crash, a pause) that strikes before a task the chooser picks (fault_strike)."""
        self.armed.append((name, fire))


def run_at(item) -> int:
    """When a task runs: when it is due, or when its paused owner thaws (Simulator._runnable)."""
    owner = item[4]
    return item[0] if owner is None or owner.paused_until <= item[0] else owner.paused_until


def live_task(item) -> bool:
    """Not a cancelled timer's task, nor a dead or restarted owner's (Simulator._runnable)."""
    timer, owner = item[6], item[4]
    if timer is not None and timer.cancelled:
        return False
    return owner is None or (owner.alive and owner.incarnation == item[5])
