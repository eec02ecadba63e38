"""Which adapter reads a file, and declarations of what a source does not carry."""
from __future__ import annotations

from rocketspec.config_files import short as _short_value

from ...errors import UserError
from .model import History

GROUP_KEYS = {"consume_mode": ("CONCURRENTLY", "ORDERLY"), "message_model": ("CLUSTERING", "BROADCASTING")}


def detect_format(path) -> str:
    """trace (JSON Lines / Parquet), msgtrace (\\u0001-separated fields), or openchaos
    (tab-separated), plain, gzip or zstd: told by the file's first bytes."""
    from ...traces.io import _decompressing, _open_raw

    if str(path) == "-":
        raise UserError("give --format when reading a history from standard input", file=path)
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
    if sample.lstrip()[:1] == b"{":
        return "trace"
    if b"\x01" in sample:
        return "msgtrace"
    if b"\t" in sample:
        return "openchaos"
    raise UserError("cannot tell the history's format from its first bytes (not a trace, message-trace bodies "
                    "or an OpenChaos history): give --format", file=path)


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


def declare_groups(h: History, groups: dict, source) -> None:
    """Apply declarations {group: {consume_mode, message_model, max_reconsume_times,
    consume_timeout_ms, subscriptions: {topic: expr | {type, expr}}}} (a --groups file)."""
    if not isinstance(groups, dict):
        raise UserError("expected an object of group name -> settings", file=source)
    for name, d in groups.items():
        if not isinstance(d, dict):
            raise UserError("expected an object of settings", file=source, field=name)
        g = h.group(name)
        for k, v in d.items():
            f = f"{name}.{k}"
            if k in GROUP_KEYS:
                if v not in GROUP_KEYS[k]:
                    raise UserError(f"expected one of {', '.join(GROUP_KEYS[k])}, got {_short_value(v)}", file=source, field=f)
                setattr(g, k, v)
                g.declared.add(k)
            elif k in ("max_reconsume_times", "consume_timeout_ms"):
                if not isinstance(v, int) or isinstance(v, bool) or v < -1:
                    raise UserError(f"expected an integer >= -1, got {_short_value(v)}", file=source, field=f)
                setattr(g, k, v)
                g.declared.add(k)
            elif k == "subscriptions":
                if not isinstance(v, dict):
                    raise UserError("expected an object of topic -> expression", file=source, field=f)
                subs = {}
                for t, e in v.items():
                    if isinstance(e, str):
                        subs[t] = ("TAG", e)
                    elif isinstance(e, dict) and e.get("type", "TAG") in ("TAG", "SQL92") and \
                            isinstance(e.get("expr"), str):
                        subs[t] = (e.get("type", "TAG"), e["expr"])
                    else:
                        raise UserError("expected a tag expression or {type: TAG|SQL92, expr}", file=source,
                                        field=f"{f}.{t}")
                g.subscriptions, g.subscriptions_inferred = subs, False
                g.declared.add(k)
            else:
                raise UserError("unknown setting: expected consume_mode, message_model, max_reconsume_times, "
                                "consume_timeout_ms or subscriptions", file=source, field=f)
