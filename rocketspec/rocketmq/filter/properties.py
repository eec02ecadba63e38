"""A message's properties as the broker holds them: what its SQL92 filter evaluates on.

A producer sends its property map as one string (``MessageDecoder.messageProperties2String``:
``name U+0001 value U+0002`` per entry, null values left out); the broker decodes it on
receipt (``SendMessageProcessor``) and again from the commit log before filtering
(``decodeProperties``), with ``string2messageProperties``, which keeps an entry only when
its name and its value are both non-empty. So a property set to ``""`` is absent (null) to
the broker's filter, and a name or value holding U+0001 or U+0002 is split where those
separators fall.
"""
from __future__ import annotations

from collections.abc import Mapping

NAME_VALUE_SEPARATOR = "\u0001"
PROPERTY_SEPARATOR = "\u0002"


def _clean(props: Mapping) -> bool:
    for k, v in props.items():
        if v is None:
            continue
        if type(k) is not str or type(v) is not str:
            continue      # not a broker's property: evaluation refuses it (nodes.Prop)
        if not k or not v:
            return False
        if (NAME_VALUE_SEPARATOR in k or PROPERTY_SEPARATOR in k or NAME_VALUE_SEPARATOR in v
                or PROPERTY_SEPARATOR in v):
            return False
    return True


def stored_properties(props: Mapping[str, str] | None) -> Mapping[str, str]:
    """The broker's decoding of the encoded ``props`` (the map itself when that changes
    nothing, the usual case). Entries are encoded in the mapping's order (Java's HashMap
    order can differ, which matters only when separators inside names or values make
    one entry collide with another)."""
    if not props:
        return {}
    if _clean(props):
        return props
    bad = [k for k, v in props.items() if v is not None and (type(k) is not str or type(v) is not str)]
    if bad:
        raise TypeError(f"property {bad[0]!r} must be a str name with a str value (the broker sees every "
                        "property as a String)")
    encoded = "".join(f"{k}{NAME_VALUE_SEPARATOR}{v}{PROPERTY_SEPARATOR}" for k, v in props.items()
                      if v is not None)
    out: dict[str, str] = {}
    index, n = 0, len(encoded)
    while index < n:
        end = encoded.find(PROPERTY_SEPARATOR, index)
        if end < 0:
            end = n
        if end - index >= 3:
            sep = encoded.find(NAME_VALUE_SEPARATOR, index)
            if index < sep < end - 1:
                out[encoded[index:sep]] = encoded[sep + 1:end]
        index = end + 1
    return out
