"""The allocation rules as z3 terms, written once and shared by every proof.

Digest section 1 (`AllocateMessageQueueAveragely`, `AllocateMessageQueueAveragelyByCircle`),
with ``n = |mqAll|``, ``N = |cidAll|`` and ``i = cidAll.indexOf(currentCID)``:

Averagely ("AVG")::

    mod         = n % N
    averageSize = (n <= N) ? 1 : ((mod > 0 && i < mod) ? n / N + 1 : n / N)
    startIndex  = (mod > 0 && i < mod) ? i * averageSize : i * averageSize + mod
    range       = min(averageSize, n - startIndex)
    result      = mqAll[startIndex .. startIndex + range)      (empty when range <= 0)

AveragelyByCircle ("AVG_BY_CIRCLE"): the Java loop ``for (q = i; q < n; q++) if (q % N == i)
add(mqAll[q])``, i.e. consumer ``i`` takes the queues ``q`` with ``i <= q < n`` and
``q % N == i``.

Integer division: z3's ``/`` and ``%`` on Int are Euclidean; for a non-negative dividend and a
positive divisor (always the case here: ``n >= 1``, ``N >= 1``, ``0 <= i < N``) they equal
Java's truncating ``/`` and ``%``. Every proof states those bounds as hypotheses.

The functions take z3 Int terms (symbolic or `IntVal`) and return z3 terms; the tests
evaluate them on concrete values and compare with a plain-Python transcription and with
`rocketspec.reference.allocation`, so the encoding cannot drift from the rule.

`AVG_VARIANTS` holds deliberately wrong rules (mutants) that the proofs must refute.
"""
from __future__ import annotations

from dataclasses import dataclass

import z3

__all__ = [
    "AvgBlock", "avg_block", "avg_owner", "AVG_VARIANTS",
    "circle_member", "circle_count", "z_max", "z_min",
]


def z_min(x, y):
    return z3.If(x <= y, x, y)


def z_max(x, y):
    return z3.If(x >= y, x, y)


@dataclass(frozen=True)
class AvgBlock:
    """Consumer `i`'s Averagely block: the queues ``start <= q < start + range``."""

    mod: z3.ArithRef
    average_size: z3.ArithRef
    start: z3.ArithRef
    range: z3.ArithRef

    @property
    def size(self) -> z3.ArithRef:
        """How many queues the block holds: ``max(range, 0)``."""
        return z_max(self.range, 0)

    @property
    def end(self) -> z3.ArithRef:
        """One past the last queue of a non-empty block."""
        return self.start + self.range

    def contains(self, q) -> z3.BoolRef:
        return z3.And(self.start <= q, q < self.start + self.range)

    def nonempty(self) -> z3.BoolRef:
        return self.range > 0


# Mutants: each changes one detail of the rule; the proofs must catch every one of them.
AVG_VARIANTS: dict[str, str] = {
    "rocketmq": "the rule as RocketMQ writes it",
    "start_always_plus_mod": "mutant: startIndex = i*averageSize + mod for every consumer (drops the branch)",
    "no_longer_blocks": "mutant: averageSize = n/N for every consumer when n > N (no +1 for the first n%N)",
}


def avg_block(n, N, i, variant: str = "rocketmq") -> AvgBlock:
    """Averagely's block for consumer index `i` of `N`, over `n` queues (z3 Int terms)."""
    if variant not in AVG_VARIANTS:
        raise ValueError(f"unknown Averagely variant {variant!r}; known: {', '.join(AVG_VARIANTS)}")
    mod = n % N
    longer = z3.And(mod > 0, i < mod)
    if variant == "no_longer_blocks":
        average_size = z3.If(n <= N, 1, n / N)
    else:
        average_size = z3.If(n <= N, 1, z3.If(longer, n / N + 1, n / N))
    if variant == "start_always_plus_mod":
        start = i * average_size + mod
    else:
        start = z3.If(longer, i * average_size, i * average_size + mod)
    rng = z_min(average_size, n - start)
    return AvgBlock(mod=mod, average_size=average_size, start=start, range=rng)


def avg_owner(n, N, q):
    """The consumer index whose Averagely block holds queue `q` (a closed form, used as the
    existential witness in the cover proof; the proof checks it, it is not trusted):
    with ``n <= N`` queue ``q`` is consumer ``q``'s only queue; otherwise the first
    ``r = n % N`` blocks have ``Q + 1 = n/N + 1`` queues and the rest ``Q``."""
    Q, r = n / N, n % N
    return z3.If(n <= N, q, z3.If(q < r * (Q + 1), q / (Q + 1), (q - r) / Q))


def circle_member(n, N, i, q) -> z3.BoolRef:
    """AveragelyByCircle: consumer `i` takes queue `q` (the Java loop's condition)."""
    return z3.And(i <= q, q < n, q % N == i)


def circle_count(n, N, i):
    """The claimed size of consumer `i`'s AveragelyByCircle block: the number of
    ``k >= 0`` with ``i + k*N < n``, i.e. ``ceil((n - i) / N)`` for ``i < n``, else 0.
    The proofs show the block is exactly ``{i + k*N : 0 <= k < circle_count}``."""
    return z3.If(i < n, (n - i + N - 1) / N, 0)
