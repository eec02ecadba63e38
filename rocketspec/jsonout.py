"""JSON for the command line's reports, for every value a trace may hold.

orjson writes integers only within 64 bits, but a report may carry a trace's offset of 2^64-1
plus one (a next offset, a distance): JSON itself has no bound, so such a report is written by
the standard library instead, with the same keys and values.
"""
from __future__ import annotations

import json

import orjson


def dumps(obj, *, indent: bool = False, non_str_keys: bool = False) -> str:
    option = (orjson.OPT_INDENT_2 if indent else 0) | (orjson.OPT_NON_STR_KEYS if non_str_keys else 0)
    try:
        return orjson.dumps(obj, option=option, default=str).decode()
    except TypeError as exc:
        if "64-bit" not in str(exc):
            raise
    return json.dumps(_plain(obj), indent=2 if indent else None, separators=None if indent else (",", ":"),
                      ensure_ascii=False, default=str)


def _plain(v):
    """Keys as orjson writes them (non-string keys as strings)."""
    if isinstance(v, dict):
        return {k if isinstance(k, str) else str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v
