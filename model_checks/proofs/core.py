"""Proof results and the few z3 helpers every proof uses.

A proof is a z3 query. `prove(claim, hypotheses)` asks z3 whether ``hypotheses and not
claim`` is satisfiable: ``unsat`` means the claim holds for every value of every free
variable (proved), ``sat`` comes with a model, a concrete counterexample (refuted), and
anything else (timeout, incompleteness of non-linear integer arithmetic) is ``unknown``.
`find(constraints)` is the dual for demonstrations: ``sat`` gives a witness run.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import z3

__all__ = ["PROVED", "REFUTED", "UNKNOWN", "ProofResult", "prove", "find", "model_dict",
           "z3_value", "DEFAULT_TIMEOUT_MS"]

PROVED, REFUTED, UNKNOWN = "proved", "refuted", "unknown"

DEFAULT_TIMEOUT_MS = 30_000


@dataclass
class ProofResult:
    """One proof's outcome.

    - `statement`: the claim as a sentence, with its quantifiers.
    - `status`: ``proved`` | ``refuted`` | ``unknown``.
    - `expected`: what a correct model gives; demonstrations (mutants, unsafe
      configurations) are expected to be ``refuted``, and then their `model` is the point.
    - `model`: for ``refuted``, z3's counterexample as ``{name: value}`` (ints where the
      value is whole, exact `Fraction`s otherwise, bools; floats in `to_json`).
    - `kind`: ``safety`` | ``liveness`` | ``allocation`` | ``demonstration``.
    """

    name: str
    statement: str
    status: str
    expected: str = PROVED
    kind: str = "allocation"
    model: dict[str, Any] | None = None
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def holds(self) -> bool:
        """The outcome is the expected one (a demonstration holds when it is refuted)."""
        return self.status == self.expected

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "statement": self.statement, "status": self.status,
            "expected": self.expected, "holds": self.holds, "kind": self.kind,
            "model": _jsonable(self.model), "seconds": round(self.seconds, 4), "notes": list(self.notes),
        }


def _jsonable(model):
    if model is None:
        return None
    return {k: float(v) if isinstance(v, Fraction) else v for k, v in model.items()}


def z3_value(v) -> Any:
    """A z3 model value as a Python value: int, bool, or float (exact Fraction if asked)."""
    if z3.is_true(v):
        return True
    if z3.is_false(v):
        return False
    if z3.is_int_value(v):
        return v.as_long()
    if z3.is_rational_value(v):
        f = Fraction(v.numerator_as_long(), v.denominator_as_long())
        return int(f) if f.denominator == 1 else f
    if z3.is_algebraic_value(v):
        return float(v.approx(20).as_fraction())
    return str(v)


def model_dict(model: z3.ModelRef, names: dict[str, z3.ExprRef] | None = None,
               exact: bool = True) -> dict[str, Any]:
    """The model's values. With `names`, those terms evaluated (completing missing ones);
    otherwise every declared constant (z3's internal helpers such as ``div0`` are left out).
    Non-whole rationals stay exact `Fraction`s unless `exact` is false (then floats);
    `ProofResult.to_json` turns them into floats."""
    out: dict[str, Any] = {}
    if names is not None:
        items = [(k, model.eval(t, model_completion=True)) for k, t in names.items()]
    else:
        items = sorted(((d.name(), model[d]) for d in model.decls() if d.arity() == 0),
                       key=lambda kv: kv[0])
    for k, v in items:
        val = z3_value(v)
        if isinstance(val, Fraction) and not exact:
            val = float(val)
        out[k] = val
    return out


def _solver(timeout_ms: int, tactic: str | None = None) -> z3.Solver:
    """z3's default solver, or one built from a tactic (``qfnia`` is much faster than the
    default on the quantifier-free non-linear integer queries of the allocation proofs)."""
    s = z3.Tactic(tactic).solver() if tactic else z3.Solver()
    s.set("timeout", timeout_ms)
    return s


def prove(name: str, statement: str, claim, hypotheses=(), *, expected: str = PROVED,
          kind: str = "allocation", show: dict[str, z3.ExprRef] | None = None,
          timeout_ms: int = DEFAULT_TIMEOUT_MS, tactic: str | None = None,
          cases=(True,), notes=()) -> ProofResult:
    """Prove ``hypotheses => claim`` for all values of the free variables.

    `claim` may be a list: its parts are proved one by one (a conjunction split). `cases`
    splits the query too: each part is proved under each case separately (the cases must
    cover every possibility; ``n <= N`` / ``n > N`` for the allocation proofs). Small
    queries keep z3's non-linear arithmetic fast and its run time stable."""
    t0 = time.perf_counter()
    status, model, notes = PROVED, None, list(notes)
    parts = list(claim) if isinstance(claim, (list, tuple)) else [claim]
    if len(cases) > 1:
        s = _solver(timeout_ms, tactic)
        s.add(z3.Not(z3.Or(*cases)))
        if s.check() != z3.unsat:
            raise ValueError(f"{name}: the proof's cases do not cover every possibility")
    for part in parts:
        for case in cases:
            s = _solver(timeout_ms, tactic)
            s.add(*hypotheses, case, z3.Not(part))
            r = s.check()
            if r == z3.sat:
                status, model = REFUTED, model_dict(s.model(), show)
                break
            if r != z3.unsat:
                status = UNKNOWN
                where = f"case {case}" if len(cases) > 1 else "query"
                notes.append(f"z3 ({where}): {s.reason_unknown()}")
        if status == REFUTED:
            break
    return ProofResult(name=name, statement=statement, status=status, expected=expected,
                       kind=kind, model=model, seconds=time.perf_counter() - t0, notes=notes)


def find(constraints, *, show: dict[str, z3.ExprRef] | None = None,
         timeout_ms: int = DEFAULT_TIMEOUT_MS, exact: bool = True, tactic: str | None = None):
    """Solve `constraints`: ``("sat", model dict)``, ``("unsat", None)`` or ``("unknown", reason)``."""
    s = _solver(timeout_ms, tactic)
    s.add(*constraints)
    r = s.check()
    if r == z3.sat:
        return "sat", model_dict(s.model(), show, exact=exact)
    if r == z3.unsat:
        return "unsat", None
    return "unknown", s.reason_unknown()
