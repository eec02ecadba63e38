"""Shared plumbing of the JSON Lines commands (`allocate`, `filter`): decoding one input
line with a precise error, describing a value's JSON type, and the answer loop that flushes
each answer and stops quietly when the reader goes away."""
from __future__ import annotations

import sys
from typing import Any, Callable

import orjson


class LineError(Exception):
    """An input line that is not a JSON value; the message says what was wrong."""


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def decode(raw: bytes) -> Any:
    """The JSON value on one line, or LineError saying why there is none."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LineError(f"not valid UTF-8 (byte {exc.start + 1}); expected a JSON object") from None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise LineError(f"not valid JSON ({exc.msg}, column {exc.colno}); expected a JSON object") from None


def dumps(answer: dict) -> bytes:
    try:
        return orjson.dumps(answer)
    except TypeError:
        # Only a lone surrogate in an echoed string can do this: spell it \\uXXXX.
        return orjson.dumps(_ascii_safe(answer))


def _ascii_safe(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_ascii_safe(k): _ascii_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ascii_safe(v) for v in value]
    return value


def serve(input_file, answer_line: Callable[[bytes, int], dict | None]) -> None:
    """Answer every non-blank line in order, flushing each answer. A reader that goes away or a
    full disk under standard output ends the command through the CLI's error path
    (rocketspec/stdio.py)."""
    out = sys.stdout.buffer
    for lineno, raw in enumerate(input_file, start=1):
        answer = answer_line(raw, lineno)
        if answer is not None:
            out.write(dumps(answer) + b"\n")
            out.flush()
