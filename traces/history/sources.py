"""Which adapter reads a file, and declarations of what a source does not carry."""
from __future__ import annotations

from rocketspec.config_files import path_key
from rocketspec.config_files import short as _short_value

from ...errors import UserError
from .model import History

GROUP_KEYS = {"consume_mode": ("CONCURRENTLY", "ORDERLY"), "message_model": ("CLUSTERING", "BROADCASTING"),
              # 4.9.8 ConsumeFromWhere: where a group with no committed offset starts
              "consume_from_where": ("CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_FIRST_OFFSET", "CONSUME_FROM_TIMESTAMP",
                                     "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST", "CONSUME_FROM_MIN_OFFSET",
                                     "CONSUME_FROM_MAX_OFFSET")}


def detect_format(path) -> str:
    """trace (JSON Lines / Parquet), msgtrace (\\u0001-separated fields, or an export of trace
    messages: JSON lines with a body, `mqadmin printMsg` output), or openchaos (tab-separated),
    plain, gzip or zstd: told by the file's first bytes."""
    from ...traces.io import _decompressing, _open_raw

    if str(path) == "-":
        raise UserError("give --format when reading a history from standard input", file=path)
    if _is_stream(path):
        # telling the format reads the first bytes, and a pipe cannot give them twice
        raise UserError("give --format (trace, msgtrace or openchaos) when reading a history from a pipe or "
                        "FIFO", file=path)
    fh, head, owned = _open_raw(path)
    try:
        if head[:4] == b"PAR1":
            return "trace"
        # compressed: look at what it holds
        stream, _ = _decompressing(path, fh, head)
        try:
            sample = stream.read(4096)
        except Exception as exc:  # noqa: BLE001 - _CompressedDataError
            raise UserError(str(exc), file=path) from None
    finally:
        if owned:
            fh.close()
    from .msgtrace import export_layout

    layout = export_layout(sample)
    if layout == "json":
        # a trace's events have a kind; a message-trace export's lines have a body
        first = sample.lstrip().split(b"\n", 1)[0]
        return "msgtrace" if b'"body"' in first and b'"kind"' not in first else "trace"
    if layout == "printmsg" or b"\x01" in sample:
        return "msgtrace"
    if b"\t" in sample:
        return "openchaos"
    raise UserError("cannot tell the history's format from its first bytes (not a trace, message-trace bodies "
                    "or an OpenChaos history): give --format", file=path)


def _is_stream(path) -> bool:
    """A pipe or FIFO (`<(zcat h.gz)`): what can be read only once."""
    import os
    import stat

    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


def new_history(path, fmt: str) -> History:
    """An empty history header for `path` in `fmt`, with the source's defaults."""
    if fmt == "trace":
        from .from_trace import new_history as new
    elif fmt == "msgtrace":
        from .msgtrace import new_history as new
    elif fmt == "openchaos":
        from .openchaos import new_history as new
    else:
        raise UserError(f"unknown history format {fmt!r}: expected trace, msgtrace or openchaos", field="--format")
    return new(path)


def stream(path, h: History):
    """The records of the history at `path`, one at a time, in the source's order; `h` (from
    new_history) is kept up to date: group settings, unreadable records, completeness."""
    if h.format == "trace":
        from .from_trace import stream_trace

        return stream_trace(path, h)
    if h.format == "msgtrace":
        from .msgtrace import stream_msgtrace

        return stream_msgtrace(path, h)
    from .openchaos import stream_openchaos

    return stream_openchaos(path, h)


class Groups(dict):
    """A --groups file's declarations, with the file they came from and the line of each key
    (`lines`: (group,), (group, setting) or (group, "subscriptions", topic) -> line), so that
    an error names the groups file, not the history it is applied to."""

    def __init__(self, data: dict, source: str, lines: dict):
        super().__init__(data)
        self.source, self.lines = source, lines


def read_groups(path) -> Groups:
    """The --groups file at `path` (JSON: group name -> settings), checked: any problem is a
    UserError naming this file and the line of the key at fault."""
    from rocketspec.config_files import parse, read_text

    text = read_text(path, "--groups file (JSON: group name -> settings)")
    groups = Groups(parse(text, "json", str(path)), str(path), key_lines(text))
    declare_groups(History(source=str(path), format="trace", complete=None), groups)   # checked before any history
    return groups


def key_lines(text: str) -> dict:
    """The line of each object key of JSON `text` (already parsed), by its path of keys."""
    import json

    dec = json.JSONDecoder()
    out, stack, i, n = {}, [], 0, len(text)       # stack: per open container, [path, key or None]
    pending = None
    while i < n:
        ch = text[i]
        if ch == '"':
            key, end = dec.raw_decode(text, i)
            j = end
            while j < n and text[j] in " \t\r\n":
                j += 1
            if stack and stack[-1][1] is not None and j < n and text[j] == ":":
                path = (*stack[-1][0], key)
                out.setdefault(path, text.count("\n", 0, i) + 1)
                pending = path
            i = end
            continue
        if ch in "{[":
            base = pending if pending is not None else (stack[-1][0] if stack else ())
            stack.append([base, ch == "{" or None])
            pending = None
        elif ch in "}]" and stack:
            stack.pop()
            pending = None
        elif ch == ",":
            pending = None
        i += 1
    return out


def declare_groups(h: History, groups: dict, source=None) -> None:
    """Apply declarations {group: {consume_mode, message_model, max_reconsume_times,
    consume_timeout_ms, consume_from_where, subscriptions: {topic: expr | {type, expr}}}} (a --groups file; a
    `Groups` names its own file and lines, else `source`)."""
    source = getattr(groups, "source", None) or source
    lines = getattr(groups, "lines", {})

    def bad(message, *at):
        """The error, located in the groups file: its key's line, else its parent's."""
        line = next((lines[at[:i]] for i in range(len(at), 0, -1) if at[:i] in lines), None)
        return UserError(message, file=source, line=line, field=".".join(map(path_key, at)) or None)

    if not isinstance(groups, dict):
        raise bad("expected an object of group name -> settings")
    for name, d in groups.items():
        if not isinstance(d, dict):
            raise bad("expected an object of settings", name)
        g = h.group(name)
        for k, v in d.items():
            if k in GROUP_KEYS:
                if v not in GROUP_KEYS[k]:
                    raise bad(f"expected one of {', '.join(GROUP_KEYS[k])}, got {_short_value(v)}", name, k)
                setattr(g, k, v)
                g.declared.add(k)
            elif k in ("max_reconsume_times", "consume_timeout_ms"):
                if not isinstance(v, int) or isinstance(v, bool) or v < -1:
                    raise bad(f"expected an integer >= -1, got {_short_value(v)}", name, k)
                setattr(g, k, v)
                g.declared.add(k)
            elif k == "subscriptions":
                if not isinstance(v, dict):
                    raise bad("expected an object of topic -> expression", name, k)
                subs = {}
                for t, e in v.items():
                    if isinstance(e, str):
                        subs[t] = ("TAG", e)
                    elif isinstance(e, dict) and e.get("type", "TAG") in ("TAG", "SQL92") and \
                            isinstance(e.get("expr"), str):
                        subs[t] = (e.get("type", "TAG"), e["expr"])
                    else:
                        raise bad("expected a tag expression or {type: TAG|SQL92, expr}", name, k, t)
                g.subscriptions, g.subscriptions_inferred = subs, False
                g.declared.add(k)
            else:
                raise bad("unknown setting: expected consume_mode, message_model, max_reconsume_times, "
                          "consume_timeout_ms, consume_from_where or subscriptions", name, k)
