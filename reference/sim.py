"""The deterministic discrete-event simulator under the reference broker and client.

A virtual millisecond clock, one heap of scheduled tasks, one seeded random source and one
event sink. No threads, no sleeps: a run is a pure function of (scenario, seed, profile),
byte for byte. Tasks belong to an owner (a client or broker process); a paused owner's tasks
wait until it resumes, a dead owner's tasks never run. That is how a GC pause or a crash
looks from the outside.
"""
from __future__ import annotations

import heapq
import random
from typing import Callable


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


class Simulator:
    def __init__(self, seed: int, sink: Callable[[dict], None]):
        self.now = 0
        self.seed = seed
        self.rng = random.Random(seed)
        self._heap: list = []
        self._order = 0        # tie-break: tasks due at the same time run in scheduling order
        self.seq = 0
        self._sink = sink
        self.tasks_run = 0

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
        timer = Timer()

        def tick():
            fn()
            if not timer.cancelled:
                self.schedule(period, tick, owner=owner, timer=timer)

        self.schedule(initial, tick, owner=owner, timer=timer)
        return timer

    def next_due(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def run_until(self, t_end: int, stop: Callable[[], bool] | None = None) -> None:
        """Run every task due at or before t_end (or until stop() is true between tasks)."""
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

    # ------------------------------------------------------------------ randomness
    def chance(self, p: float) -> bool:
        return p > 0 and self.rng.random() < p

    def uniform_int(self, lo: int, hi: int) -> int:
        return lo if lo >= hi else self.rng.randint(lo, hi)
