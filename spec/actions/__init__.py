"""The spec's actions: one per trace event kind, named after the RocketMQ mechanism it models.

Each action is a function ``act(st, ev, out)``:

- the **guard** part (first) checks that the step is allowed in state ``st``; every failed check
  is reported with ``out.report(inv_id, message, key)`` naming the invariant it protects (see
  ``spec.invariants``);
- the **effect** part then updates ``st`` in place.

An action keeps going after a failed check (a recorded trace is what happened; the replay
follows it to report every violation, not just the first). ``spec.step``/``spec.guard``/
``spec.apply`` (in ``spec/__init__.py``) wrap these functions for the model checker, which wants
a non-mutating guard and a successor state.

The state-predicate invariants (``spec.invariants`` form "state") are evaluated on the key an
action touched, inside the action, right after its effect.

One module per mechanism, each action opening with the RocketMQ code it stands for and who
acts: ``directory`` (the run, brokers, clients, rebalance, ProcessQueues, the end-of-run check),
``pull`` (store and pull), ``consume``, ``offsets``, ``retry`` (retry and DLQ), ``locks`` and
``pop`` (RocketMQ 5's POP consumption);
``common`` holds the helpers they share. Helpers are imported by name, so a handler calls them
as globals of its own module (the replay's hot path).
"""
from __future__ import annotations

from ...traces.kinds import KINDS, MECHANISMS  # noqa: F401 (MECHANISMS: re-exported)

from . import consume, directory, locks, offsets, pop, pull, retry
from .directory import HORIZON, JUDGED_ENDS, QUIESCENT, check_quiescent  # noqa: F401 (re-exported)
from .locks import lock_noop  # noqa: F401 (re-exported)

_MODULES = (directory, pull, consume, offsets, retry, locks, pop)


def _handlers() -> dict:
    """Each kind's action: the function of the kind's name defined in one of the modules (its
    other facts, the mechanism it models and the keys it touches, are in traces.kinds)."""
    found = {}
    for m in _MODULES:
        for name, f in vars(m).items():
            if name in KINDS and getattr(f, "__module__", None) == m.__name__:
                found[name] = f
    missing = [k for k in KINDS if k not in found]
    if missing:
        raise ImportError(f"no action for the kinds {missing} in spec.actions")
    return {k: found[k] for k in KINDS}


HANDLERS = _handlers()
