"""Exploration scopes: the bounds of one exhaustive search.

A scope is a TOML file (see docs/model-checking.md); the named scopes live in
``model_checks/scopes/<name>.toml``. Unknown keys and wrong types are bad input
(`ScopeError`, exit code 2 on the command line).
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path

SCOPE_DIR = Path(__file__).with_name("scopes")

FAULT_KINDS = ("crash", "pause", "persist_lost", "query_failure", "reset", "clean_expired", "send_back_failed",
               "route_lost")


class ScopeError(ValueError):
    pass


@dataclass(frozen=True)
class Scope:
    name: str = "custom"
    consumers: int = 1                  # clients of the one group
    queues: int = 2                     # queues of the one topic (one broker)
    messages: int = 2                   # stored before the run, round-robin over the queues
    mode: str = "CONCURRENTLY"          # CONCURRENTLY | ORDERLY (clustering)
    message_model: str = "CLUSTERING"   # CLUSTERING | BROADCASTING (concurrent consumers only)
    strategy: str = "AVG"
    max_reconsume_times: int = 1        # client config maxReconsumeTimes
    failures: int = 1                   # listener failures (RECONSUME_LATER / SUSPEND) in a run
    faults: int = 0                     # faults in a run
    fault_kinds: tuple = FAULT_KINDS
    pause_ms: tuple = (31000,)          # client pause durations
    threads: int = 1                    # concurrent batches in flight per ProcessQueue
    pull_batch: int = 32                # messages per pull answer
    symmetry: bool = True
    sleep_sets: bool = True             # skip moves that commute with the path (model_checks/independence.py)
    oneway_delay: bool = False          # one-way persists may arrive late (reordered); else at once
    adversary: bool = False             # also propose wrong values; the guards must reject them
    persistent_sets: bool = False       # partial-order reduction of states (model_checks/persistent.py)
    max_states: int = 5_000_000         # safety cap on distinct states
    max_depth: int = 10_000

    @property
    def retry(self) -> bool:
        return self.failures > 0 or "clean_expired" in self.fault_kinds and self.faults > 0

    def to_dict(self) -> dict:
        return {f.name: (list(getattr(self, f.name)) if isinstance(getattr(self, f.name), tuple)
                         else getattr(self, f.name)) for f in fields(self)}


_TYPES = {f.name: f.type for f in fields(Scope)}


def _validate(d: dict, origin: str) -> Scope:
    kw = {}
    for k, v in d.items():
        if k not in _TYPES:
            raise ScopeError(f"{origin}: unknown scope key {k!r} (known: {', '.join(sorted(_TYPES))})")
        t = _TYPES[k]
        if t in ("int", int):
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ScopeError(f"{origin}: {k} must be a non-negative integer, got {v!r}")
        elif t in ("bool", bool):
            if not isinstance(v, bool):
                raise ScopeError(f"{origin}: {k} must be true or false, got {v!r}")
        elif t in ("str", str):
            if not isinstance(v, str):
                raise ScopeError(f"{origin}: {k} must be a string, got {v!r}")
        elif t in ("tuple", tuple):
            if not isinstance(v, list):
                raise ScopeError(f"{origin}: {k} must be a list, got {v!r}")
            v = tuple(v)
        kw[k] = v
    s = Scope(**kw)
    if s.mode not in ("CONCURRENTLY", "ORDERLY"):
        raise ScopeError(f"{origin}: mode must be CONCURRENTLY or ORDERLY, got {s.mode!r}")
    if s.message_model not in ("CLUSTERING", "BROADCASTING"):
        raise ScopeError(f"{origin}: message_model must be CLUSTERING or BROADCASTING, got {s.message_model!r}")
    if s.message_model == "BROADCASTING" and s.mode != "CONCURRENTLY":
        raise ScopeError(f"{origin}: BROADCASTING is explored with mode CONCURRENTLY only")
    if s.strategy not in ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"):
        raise ScopeError(f"{origin}: strategy must be AVG, AVG_BY_CIRCLE or CONSISTENT_HASH")
    bad = [k for k in s.fault_kinds if k not in FAULT_KINDS]
    if bad:
        raise ScopeError(f"{origin}: unknown fault kinds {bad} (known: {', '.join(FAULT_KINDS)})")
    if not 1 <= s.consumers <= 4 or not 1 <= s.queues <= 6 or s.messages > 12:
        raise ScopeError(f"{origin}: consumers 1..4, queues 1..6, messages 0..12")
    if s.threads < 1 or s.pull_batch < 1 or s.max_depth < 1:
        raise ScopeError(f"{origin}: threads, pull_batch and max_depth must be >= 1")
    if s.persistent_sets and (s.adversary or s.message_model != "CLUSTERING"):
        raise ScopeError(f"{origin}: persistent_sets needs a clustering group and no adversary moves")
    if s.persistent_sets and s.max_depth != Scope.max_depth:
        raise ScopeError(f"{origin}: persistent_sets and max_depth exclude each other (the reduced graph's "
                         "depths are not the lengths of all runs)")
    if any(not isinstance(p, int) or p <= 0 for p in s.pause_ms):
        raise ScopeError(f"{origin}: pause_ms must list positive integers")
    return s


def named_scopes() -> list[str]:
    return sorted(p.stem for p in SCOPE_DIR.glob("*.toml"))


def load_scope(name_or_path: str, **overrides) -> Scope:
    """A named scope (`tiny`, `small`, `medium`, ...) or a TOML file path."""
    p = Path(name_or_path)
    if not (p.suffix == ".toml" or p.exists()):
        p = SCOPE_DIR / f"{name_or_path}.toml"
        if not p.exists():
            raise ScopeError(f"unknown scope {name_or_path!r}; named scopes: {', '.join(named_scopes())}, "
                             "or give a .toml file")
    try:
        data = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise ScopeError(f"{p}: no such scope file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ScopeError(f"{p}: not valid TOML: {exc}") from None
    data.setdefault("name", p.stem)
    data.update(overrides)
    return _validate(data, str(p))


def scope_from_dict(d: dict) -> Scope:
    return _validate(dict(d), "<dict>")


__all__ = ["Scope", "ScopeError", "load_scope", "scope_from_dict", "named_scopes", "FAULT_KINDS", "field"]
