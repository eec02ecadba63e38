"""Reading a user's configuration file (a scenario, a scope): its bytes, its text and its
TOML or JSON, each problem a UserError naming the file, the line and what was expected.

Bounds keep a hostile file from costing more than a message: a size cap (these files are a
few kilobytes) and a nesting cap (Python's parsers recurse, and so does printing a value).
"""
from __future__ import annotations

import os

from rocketspec.errors import UserError

MAX_BYTES = 4 << 20
MAX_NESTING = 32


def read_text(path, what: str) -> str:
    """The UTF-8 text of the file at `path` (`what`: e.g. "scenario file (.toml or .json)")."""
    p = str(path)
    if os.path.isdir(p):
        raise UserError(f"is a directory; expected a {what}", file=p)
    try:
        with open(p, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise UserError(f"no such file; expected a {what}", file=p) from None
    except OSError as exc:
        raise UserError(f"cannot read: {exc.strerror}; expected a {what}", file=p) from None
    if len(data) > MAX_BYTES:
        # located where it passes the limit: the line of byte MAX_BYTES
        raise UserError(f"larger than {MAX_BYTES >> 20} MiB (byte {MAX_BYTES} is past the limit); a {what} is a "
                        "few kilobytes of text", file=p, line=data.count(b"\n", 0, MAX_BYTES) + 1)
    nul = data.find(b"\x00")
    if nul >= 0:
        raise UserError(f"binary data (a NUL byte); expected a {what} in UTF-8 text", file=p,
                        line=data.count(b"\n", 0, nul) + 1)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise UserError(f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at column {col}); expected a {what} "
                        "in UTF-8 text", file=p, line=line) from None
    return text.removeprefix("\ufeff")


def _duplicate_at(text: str):
    """(key, line, column) of the first key that repeats a key of its own object in this JSON text
    (which json.loads already parsed), or (None, None). One pass over the text: strings are
    skipped as JSON reads them, and each open object keeps the keys seen so far."""
    import json

    dec = json.JSONDecoder()
    stack: list = []          # per open container: a set of keys (object) or None (array)
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            key, end = dec.raw_decode(text, i)
            j = end
            while j < n and text[j] in " \t\r\n":
                j += 1
            if stack and stack[-1] is not None and j < n and text[j] == ":":
                if key in stack[-1]:
                    line = text.count("\n", 0, i) + 1
                    return key, line, i - (text.rfind("\n", 0, i) + 1) + 1
                stack[-1].add(key)
            i = end
            continue
        if ch == "{":
            stack.append(set())
        elif ch == "[":
            stack.append(None)
        elif ch in "}]" and stack:
            stack.pop()
        i += 1
    return None, None, None


def parse(text: str, fmt: str, source: str, *, what: str | None = None) -> dict:
    """Parse TOML (`fmt` "toml") or JSON ("json") text into a table; errors name the line.
    `what` (e.g. "scenario"): a table with no key is refused as an empty `what` file, since
    running on defaults nobody wrote would pass on nothing."""
    import json
    import re
    import tomllib

    try:
        if fmt == "toml":
            value = tomllib.loads(text)
        else:
            value = json.loads(text, object_pairs_hook=_unique_keys)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        msg = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", str(exc))
        line = int(m.group(1)) if m else (text.rstrip("\n").count("\n") + 1 if "end of document" in str(exc) else None)
        where = f" (column {m.group(2)})" if m else (" (at the end of the file)" if line else "")
        raise UserError(f"not valid TOML: {msg}{where}", file=source, line=line) from None
    except json.JSONDecodeError as exc:
        raise UserError(f"not valid JSON: {exc.msg} (column {exc.colno})", file=source, line=exc.lineno) from None
    except _DuplicateKey as dup:
        key, line, col = _duplicate_at(text)
        raise UserError(f"not valid JSON: duplicate key {short(dup.args[0] if key is None else key)} in one object"
                        + (f" (column {col})" if col else ""), file=source, line=line) from None
    except RecursionError:
        raise UserError(f"nested too deeply; expected at most {MAX_NESTING} levels", file=source,
                        line=_deep_line(text)) from None
    except ValueError as exc:
        if not _is_digit_limit(exc):
            raise
        raise UserError(f"an integer of more than {_digit_limit()} digits; no field takes a number this long",
                        file=source,
                        line=_long_number_line(text)) from None
    if not isinstance(value, dict):
        raise UserError(f"expected a table (a JSON object), got {type(value).__name__}", file=source)
    if what is not None and not value:
        raise UserError(f"no settings (the file is empty or holds only comments); expected a {what}", file=source)
    try:
        deep = _depth(value) > MAX_NESTING
    except _BadString as bad:
        raise UserError(f"the string {short(bad.args[0])} holds a lone surrogate (a \\uD800-\\uDFFF escape without "
                        "its pair): not valid Unicode", file=source, field=_path_text(bad.args[1])) from None
    if deep:
        raise UserError(f"nested too deeply; expected at most {MAX_NESTING} levels", file=source,
                        line=_deep_line(text))
    return value


def _digit_limit() -> int:
    import sys

    return sys.get_int_max_str_digits() or 4300


def _is_digit_limit(exc: ValueError) -> bool:
    """Python refuses to convert an integer of more digits than its limit (CVE-2020-10735)."""
    return "integer string conversion" in str(exc)


def _long_number_line(text: str) -> int | None:
    import re

    m = re.search(r"\d[\d_]{%d,}" % _digit_limit(), text)
    return text.count("\n", 0, m.start()) + 1 if m else None


def _depth(value) -> int:
    """Nesting depth of a parsed value, without recursion; raises _BadString(s, where) on a
    string that is not valid Unicode (JSON's \\ud800 escapes: Python accepts lone surrogates,
    UTF-8 does not); `where` is the field as a chain (parent chain, key or index)."""
    best, stack = 0, [(value, 1, None)]
    while stack:
        v, d, at = stack.pop()
        if isinstance(v, str):
            _unicode(v, at)
        elif isinstance(v, (dict, list)):
            best = max(best, d)
            if best > MAX_NESTING:
                return best
            if isinstance(v, dict):
                for k, x in v.items():
                    _unicode(k, (at, k))
                    stack.append((x, d + 1, (at, k)))
            else:
                stack.extend((x, d + 1, (at, i)) for i, x in enumerate(v))
    return best


def _path_text(at) -> str | None:
    """A field path (`groups[0].name`) from _depth's chain."""
    keys = []
    while at is not None:
        at, k = at
        keys.append(k)
    out = ""
    for k in reversed(keys):
        out += f"[{k}]" if isinstance(k, int) else ("." if out else "") + path_key(k)
    return out or None


def _deep_line(text: str) -> int | None:
    """The line where brackets first nest deeper than MAX_NESTING (for the message only: quoted
    strings are skipped the simple way, which is enough to point at the place)."""
    depth, line, quote, escaped = 0, 1, None, False
    for ch in text:
        if ch == "\n":
            line += 1
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\" and quote == '"':
                escaped = True
            elif ch == quote or ch == "\n":
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
            if depth > MAX_NESTING:
                return line
        elif ch in "]}":
            depth -= 1
    return None


class _BadString(Exception):
    pass


def _unicode(s: str, at=None) -> None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _BadString(s, at) from exc


class _DuplicateKey(Exception):
    pass


def _unique_keys(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise _DuplicateKey(k)
        d[k] = v
    return d


def short(value, limit: int = 60) -> str:
    """repr(value), cut to `limit` characters, for messages (values may be huge)."""
    try:
        r = repr(value)
    except RecursionError:
        r = f"<a {type(value).__name__} nested too deeply>"
    except ValueError as exc:  # an integer past Python's digit limit, alone or inside a value
        if not _is_digit_limit(exc):
            raise
        r = (f"<an integer of about {int(value.bit_length() * 0.30103) + 1} digits>" if isinstance(value, int)
             else f"<a {type(value).__name__} holding an integer of thousands of digits>")
    return r if len(r) <= limit else r[:limit - 3] + "..."


def path_key(name) -> str:
    """A table key in a field path: as is when it reads as a name, else quoted as a JSON string
    (e.g. "", "a.b", "a b"), so that the path names one field."""
    import json
    import re

    name = str(name)
    if re.fullmatch(r"[A-Za-z0-9_%-]+", name):
        return name
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: shown as its escape
        return json.dumps(name)
    return json.dumps(name, ensure_ascii=False)
