"""The one source of nondeterminism of the reference: every decision it leaves open.

The reference never draws randomness itself. Wherever real RocketMQ leaves an outcome to the
environment (thread scheduling, the network, the application's listener, the broker's pick of a
retry queue), the reference asks the simulator's `Chooser` at a named *choice point* (`POINTS`)
and gives it the point's finite domain. Drivers decide:

- `SeededChooser`: one `random.Random(seed)`, what `rocketspec simulate` runs. Tasks due in the
  same millisecond run in scheduling order; everything else is drawn exactly as the reference
  drew before the chooser existed, so a seed's trace is byte-identical.
- `ScriptChooser`: a list of indices, one per choice with more than one option; past its end
  every choice takes its default. Hypothesis's state machine hands it the lists it generates
  (so the falsifying example it prints is runnable code), and an exhaustive driver enumerates
  scripts (`enumerate_scripts`).
- `DataChooser`: draws each choice from a Hypothesis `data()` object, for users' own `@given`
  tests.

Every choice reduces to an index into a finite, ordered domain whose index 0 is the default
(scheduling order, no loss, the most likely listener outcome, the shortest consume call, no
fault): Hypothesis shrinks towards it, and an exhaustive search starts from it.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Sequence


@dataclass(frozen=True)
class ChoicePoint:
    name: str
    doc: str


POINTS = {p.name: p for p in (
    ChoicePoint("task_order", "which of the runnable tasks due in the same millisecond runs first "
                              "(RocketMQ runs them on different threads; any order is possible)"),
    ChoicePoint("fault_strike", "whether an armed crash or pause strikes before the next task"),
    ChoicePoint("oneway_loss", "whether a one-way call (offset persist, unlock, notification) is lost"),
    ChoicePoint("listener_status", "the status the application's listener returns for a batch"),
    ChoicePoint("consume_duration", "how long a listener call takes, in ms"),
    ChoicePoint("retry_queue", "which queue of %RETRY%group the broker puts a sent-back message in"),
    ChoicePoint("send_back_fails", "whether a send-back finds no broker (consumerSendMessageBack and the "
                                   "producer fallback both fail)"),
    ChoicePoint("offset_query_fails", "whether a client's offset query to the broker times out"),
    ChoicePoint("route_broker", "which broker of the topic findConsumerIdList asks"),
    ChoicePoint("producer_tags", "the tag a scenario producer gives a message"),
    ChoicePoint("producer_key", "the sharding key a scenario producer gives a message"),
    ChoicePoint("producer_props", "the value a scenario producer gives a message property"),
    ChoicePoint("pop_retry_first", "whether a concurrent pop reads the POP retry topic before the topic "
                                   "(PopMessageProcessor: randomQ < popFromRetryProbability)"),
    ChoicePoint("pop_start_queue", "which queue a pop of every queue (queue -1) starts at (randomQ % queues)"),
)}


class Chooser:
    """The interface the reference calls. Subclasses implement `index`; the seeded driver
    overrides the typed methods to draw exactly as a `random.Random` would."""

    #: True when tasks due in the same millisecond always run in scheduling order: the
    #: simulator then takes its fast path and never asks `order`.
    fifo = False

    def index(self, point: str, n: int) -> int:
        """An index in range(n), n >= 2; 0 is the point's default."""
        raise NotImplementedError

    def _idx(self, point: str, n: int) -> int:
        return 0 if n <= 1 else self.index(point, n)

    # -- typed choices: each declares its domain and puts the default first
    def pick_index(self, point: str, n: int) -> int:
        """Uniform over range(n) (n >= 1); default 0."""
        return self._idx(point, n)

    def pick(self, point: str, options: Sequence):
        return options[self.pick_index(point, len(options))]

    def integer(self, point: str, lo: int, hi: int) -> int:
        """An integer in [lo, hi]; default lo."""
        return lo if lo >= hi else lo + self._idx(point, hi - lo + 1)

    def chance(self, point: str, p: float) -> bool:
        """True with probability p; domain (False, True) when 0 < p < 1; default False."""
        if p <= 0:
            return False
        if p >= 1:
            return True
        return self._idx(point, 2) == 1

    def weighted(self, point: str, options: Sequence, weights: Sequence[float]):
        """options[i] with probability weights[i]; the last option takes the rest (1 - sum).
        Domain: the options of positive weight; the default is the most likely one."""
        rest = 1.0 - sum(weights)
        dom = [(w, i) for i, w in enumerate(list(weights) + [rest]) if w > 0]
        if not dom:
            return options[-1]
        best = max(dom, key=lambda wi: (wi[0], wi[1]))
        ordered = [best] + [wi for wi in dom if wi is not best]
        return options[ordered[self._idx(point, len(ordered))][1]]

    def order(self, point: str, n: int) -> int:
        """Which of n runnable tasks (in scheduling order) runs first; default 0."""
        return self._idx(point, n)

    def task_order(self, batch: Sequence) -> int:
        """Which of the runnable tasks due together (simulator heap items, in scheduling order)
        runs first. A search that knows which tasks commute overrides it (model_checks/world.py)."""
        return self.order("task_order", len(batch))

    def strike(self, point: str, armed: Sequence[str], batch: Sequence = ()) -> int:
        """0: no fault now; i >= 1: the armed fault armed[i - 1] strikes before the next task,
        which is one of `batch` (the runnable tasks due now, as for task_order). A search that
        knows which faults commute with that task overrides it (model_checks/world.py)."""
        return self._idx(point, len(armed) + 1)


class SeededChooser(Chooser):
    """A seeded random source; draws as the reference drew before the chooser existed."""

    fifo = True

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def index(self, point, n):
        return self.rng.randrange(n)

    def pick_index(self, point, n):
        return self.rng.randrange(n)     # as random.choice: draws even for one option

    def integer(self, point, lo, hi):
        return lo if lo >= hi else self.rng.randint(lo, hi)

    def chance(self, point, p):
        return p > 0 and self.rng.random() < p

    def weighted(self, point, options, weights):
        r = self.rng.random()
        for opt, w in zip(options, weights):
            if r < w:
                return opt
            r -= w
        return options[-1]

    def order(self, point, n):
        return 0


class ScriptChooser(Chooser):
    """Choices from a script of indices, taken modulo each domain's size, defaults once it
    runs out. `trail` records every choice made: (point, domain size, index)."""

    def __init__(self, script: Sequence[int] = ()):
        self.script = list(script)
        self.pos = 0
        self.trail: list[tuple[str, int, int]] = []

    def index(self, point, n):
        if self.pos < len(self.script):
            i = self.script[self.pos] % n
            self.pos += 1
        else:
            i = 0
        self.trail.append((point, n, i))
        return i


class DataChooser(Chooser):
    """Draws every choice from a Hypothesis `data()` object (`st.data()` in `@given`)."""

    def __init__(self, data):
        from hypothesis import strategies as st

        self.data = data
        self._ints = st.integers
        self._cache: dict[int, object] = {}

    def index(self, point, n):
        s = self._cache.get(n)
        if s is None:
            s = self._cache[n] = self._ints(0, n - 1)
        return self.data.draw(s, label=point)


def enumerate_scripts(run: Callable[[ScriptChooser], object], max_runs: int | None = None,
                      chooser: Callable[[list], ScriptChooser] = ScriptChooser):
    """Every run of `run(chooser)` over every combination of choices, depth first, by replay
    (stateless search: no state is stored, each run starts from the beginning). Yields
    (script, trail, result) per run; stops after max_runs runs. `run` must be deterministic
    given its chooser's answers. `chooser` makes the chooser of a script (a ScriptChooser)."""
    script: list[int] = []
    runs = 0
    while True:
        ch = chooser(script)
        result = run(ch)
        runs += 1
        yield [i for _, _, i in ch.trail], ch.trail, result
        if max_runs is not None and runs >= max_runs:
            return
        # backtrack: the deepest choice that has an option left
        trail = ch.trail
        k = len(trail) - 1
        while k >= 0 and trail[k][2] + 1 >= trail[k][1]:
            k -= 1
        if k < 0:
            return
        script = [i for _, _, i in trail[:k]] + [trail[k][2] + 1]
