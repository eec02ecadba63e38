"""Field checks for scenario input: each says what it expects, so a mistake in a scenario
file is reported with its field path instead of failing deep inside a run."""
from __future__ import annotations


class FieldError(ValueError):
    """A bad value: `path` is the field (relative to its table), the message what was expected."""

    def __init__(self, path: str, message: str):
        self.path = path
        super().__init__(message)


# No integer in a scenario may exceed what the trace can carry (a signed 64-bit integer), and
# no time or duration may exceed the longest run a scenario may ask for.
INT64_MAX = 2**63 - 1
MAX_RUN_MS = 7 * 24 * 3600 * 1000


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _short(v) -> str:
    from rocketspec.config_files import short

    return short(v)


def integer(lo=None, hi=INT64_MAX):
    def check(path, v):
        if not _is_int(v) or (lo is not None and v < lo) or (hi is not None and v > hi):
            bounds = f" in [{lo}, {hi}]" if lo is not None and hi is not None else (
                f" >= {lo}" if lo is not None else (f" <= {hi}" if hi is not None else ""))
            raise FieldError(path, f"expected an integer{bounds}, got {_short(v)}")
    return check


def number(lo=None, hi=None, exclusive_lo=False):
    def check(path, v):
        ok = isinstance(v, (int, float)) and not isinstance(v, bool)
        if ok and lo is not None:
            ok = v > lo if exclusive_lo else v >= lo
        if ok and hi is not None:
            ok = v <= hi
        if not ok:
            rel = ">" if exclusive_lo else ">="
            lo_s = f" {rel} {lo}" if lo is not None else ""
            hi_s = f" and <= {hi}" if hi is not None else ""
            raise FieldError(path, f"expected a number{lo_s}{hi_s}, got {_short(v)}")
    return check


def one_of(*values):
    def check(path, v):
        if v not in values:
            raise FieldError(path, f"expected one of {list(values)}, got {_short(v)}")
    return check


def boolean(path, v):
    if not isinstance(v, bool):
        raise FieldError(path, f"expected true or false, got {_short(v)}")


def string(path, v):
    if not isinstance(v, str):
        raise FieldError(path, f"expected a string, got {_short(v)}")


def optional(check):
    def wrapped(path, v):
        if v is not None:
            check(path, v)
    return wrapped


def list_of(check, min_len=0):
    def wrapped(path, v):
        if not isinstance(v, list) or len(v) < min_len:
            raise FieldError(path, f"expected a list{f' of at least {min_len}' if min_len else ''}, got {_short(v)}")
        for i, x in enumerate(v):
            check(f"{path}[{i}]", x)
    return wrapped


def duration_range(path, v):
    """A duration: a number of milliseconds, or [lo, hi] with 0 <= lo <= hi (at most MAX_RUN_MS)."""
    if _is_int(v) and 0 <= v <= MAX_RUN_MS:
        return
    if (isinstance(v, list) and len(v) == 2 and all(_is_int(x) and 0 <= x <= MAX_RUN_MS for x in v)
            and v[0] <= v[1]):
        return
    raise FieldError(path, f"expected milliseconds or [lo, hi] with 0 <= lo <= hi <= {MAX_RUN_MS} (7 days), "
                           f"got {_short(v)}")


def queue_triple(path, v):
    if not (isinstance(v, list) and len(v) == 3 and isinstance(v[0], str) and isinstance(v[1], str)
            and _is_int(v[2]) and v[2] >= 0):
        raise FieldError(path, f"expected [topic, brokerName, queueId], got {_short(v)}")


def check_table(table: dict, rules: dict, path: str = "", allow_extra=()) -> None:
    """Check every known key of `table` with its rule; unknown keys are errors."""
    if not isinstance(table, dict):
        raise FieldError(path, f"expected a table, got {_short(table)}")
    unknown = set(table) - set(rules) - set(allow_extra)
    if unknown:
        raise FieldError(path, f"unknown keys {sorted(unknown)}; known: {sorted(rules)}")
    for key, rule in rules.items():
        if key in table:
            rule(f"{path}.{key}" if path else key, table[key])
