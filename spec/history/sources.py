"""Which adapter reads a file, and declarations of what a source does not carry."""
from __future__ import annotations

from rocketspec.config_files import short as _short_value

from ...errors import UserError
from .model import History

GROUP_KEYS = {"consume_mode": ("CONCURRENTLY", "ORDERLY"), "message_model": ("CLUSTERING", "BROADCASTING")}


def detect_format(path) -> str:
    """trace (JSON Lines / Parquet / compressed), msgtrace (\\u0001-separated fields), or
    openchaos (tab-separated): told by the file's first bytes."""
    from ...traces.io import _open_raw

    if str(path) == "-":
        raise UserError("give --format when reading a history from standard input", file=path)
    fh, head, owned = _open_raw(path)
    try:
        sample = head + fh.read(4096)
    finally:
        if owned:
            fh.close()
    if sample[:4] == b"PAR1" or sample[:2] == b"\x1f\x8b" or sample[:4] == b"\x28\xb5\x2f\xfd" or \
            sample.lstrip()[:1] == b"{":
        return "trace"
    if b"\x01" in sample:
        return "msgtrace"
    if b"\t" in sample:
        return "openchaos"
    raise UserError("cannot tell the history's format from its first bytes (not a trace, message-trace bodies "
                    "or an OpenChaos history): give --format", file=path)


def read(path, fmt: str) -> History:
    if fmt == "trace":
        from .from_trace import history_from_trace

        return history_from_trace(path)
    if fmt == "msgtrace":
        from .msgtrace import read_msgtrace

        return read_msgtrace(path)
    if fmt == "openchaos":
        from .openchaos import read_openchaos

        return read_openchaos(path)
    raise UserError(f"unknown history format {fmt!r}: expected trace, msgtrace or openchaos")


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
            elif k in ("max_reconsume_times", "consume_timeout_ms"):
                if not isinstance(v, int) or isinstance(v, bool) or v < -1:
                    raise UserError(f"expected an integer >= -1, got {_short_value(v)}", file=source, field=f)
                setattr(g, k, v)
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
            else:
                raise UserError("unknown setting: expected consume_mode, message_model, max_reconsume_times, "
                                "consume_timeout_ms or subscriptions", file=source, field=f)
    h._fields.clear()
