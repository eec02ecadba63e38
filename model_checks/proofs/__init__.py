"""z3 proofs: allocation properties for all sizes, and the lock-lease timing condition.

``rocketspec prove`` runs them. Each proof returns a `ProofResult` (name, statement,
status ``proved`` | ``refuted`` | ``unknown``, the expected status, and z3's model when
refuted). Demonstrations (a mutant allocation rule, unsafe lease configurations) are
expected to be refuted: their counterexample is the point.

- `formulas`: the Averagely / AveragelyByCircle rules as z3 terms (one encoding).
- `allocation`: partition, contiguity, balance, surplus consumers.
- `lease`: the lease model, its exact safety condition ``L + C + D <= T``, liveness
  (``R + D <= L``), and `check_config` for one concrete configuration.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from .core import PROVED, REFUTED, UNKNOWN, ProofResult

__all__ = ["PROVED", "REFUTED", "UNKNOWN", "ProofResult", "proofs", "proof_names",
           "select", "run_proofs", "UnknownProof"]


class UnknownProof(ValueError):
    pass


def proofs() -> dict[str, Callable[[], ProofResult]]:
    """Every proof by name, in the order they are reported."""
    from .allocation import ALLOCATION_PROOFS
    from .lease import LEASE_PROOFS
    return {**ALLOCATION_PROOFS, **LEASE_PROOFS}


def proof_names() -> list[str]:
    return list(proofs())


def select(only: Iterable[str] | None = None) -> list[str]:
    """The proof names matching `only`: each entry is a proof name or a prefix
    (``avg``, ``circle``, ``lease``). Raises `UnknownProof` for an entry matching nothing."""
    names = proof_names()
    if not only:
        return names
    chosen: list[str] = []
    for want in only:
        hits = [n for n in names if n == want] or [n for n in names if n.startswith(want)]
        if not hits:
            raise UnknownProof(f"no proof named or starting with {want!r}; known: {', '.join(names)}")
        chosen += [h for h in hits if h not in chosen]
    return chosen


def run_proofs(only: Iterable[str] | None = None) -> list[ProofResult]:
    table = proofs()
    return [table[name]() for name in select(only)]
