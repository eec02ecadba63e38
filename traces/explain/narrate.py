"""One plain sentence per trace event, for people who have not read the spec.

`describe(ev)` says what the event means in RocketMQ's terms (who did what to which queue);
`explain` uses it for the narrated story, the hover text of the timeline and the catalogue.
Each kind's sentence is in its registry entry (traces/kinds.py: Kind.sentence). It only reads
the event's own fields: what the event *means for the rules* is the spec's job (spec/actions/),
not this module's.
"""
from __future__ import annotations

from ..kinds import KINDS, offs, qname, secs

__all__ = ["describe", "offs", "qname", "secs"]

_D = {name: k.sentence for name, k in KINDS.items()}


def describe(ev: dict) -> str:
    """One sentence for one event (any kind; unknown kinds list their fields)."""
    f = _D.get(ev.get("kind"))
    if f is not None:
        try:
            return f(ev)
        except (TypeError, KeyError, ValueError):
            pass
    rest = {k: v for k, v in ev.items() if k not in ("seq", "ts", "kind")}
    return f"{ev.get('kind')}: " + ", ".join(f"{k}={v}" for k, v in rest.items())
