"""Tag filtering: tags codes, subscription parsing, and the two tag checks.

Digest section 9 ("Tags", "Broker matching", "Client re-check"), checked against the
public source:

* The tags code stored in the consume queue is Java ``String.hashCode()`` of the message's
  tags string, or 0 when the message has no tags (``MessageExtBrokerInner.tagsString2tagsCode``).
* ``FilterAPI.buildSubscriptionData`` turns a subscription string into ``tagsSet`` and
  ``codeSet``; ``FilterAPI.build`` does the same for TAG and keeps an SQL92 expression as
  it is.
* The broker compares only hash codes (``ExpressionMessageFilter.isMatchedByConsumeQueue``),
  so hash collisions pass it; the client then checks the tag string exactly
  (``PullAPIWrapper.processPullResult``).

Everything here is a pure function of its arguments.
"""
from __future__ import annotations

import re
from array import array
from dataclasses import dataclass

SUB_ALL = "*"
TAG = "TAG"
SQL92 = "SQL92"
EXPRESSION_TYPES = (TAG, SQL92)

_MASK32 = 0xFFFFFFFF


def to_int32(value: int) -> int:
    """Java's ``(int)`` narrowing of an integer: keep the low 32 bits, signed."""
    value &= _MASK32
    return value - (1 << 32) if value & 0x80000000 else value


def _utf16_units(s: str) -> array:
    # surrogatepass keeps lone surrogates (possible in a Python str) as the single code
    # unit Java would hold; a supplementary character becomes its surrogate pair.
    units = array("H")
    units.frombytes(s.encode("utf-16-le", "surrogatepass"))
    return units


def java_string_hash(s: str) -> int:
    """Java ``String.hashCode()``: ``h = 31*h + unit`` over the UTF-16 code units, in
    32-bit two's complement arithmetic (the result is a signed 32-bit integer)."""
    h = 0
    if s.isascii():
        for ch in s.encode("ascii"):
            h = (31 * h + ch) & _MASK32
    else:
        for unit in _utf16_units(s):
            h = (31 * h + unit) & _MASK32
    return h - (1 << 32) if h & 0x80000000 else h


def tags_code(tag: str | None) -> int:
    """The consume-queue tags code of a message: 0 for no tags (None or empty), else
    ``tag.hashCode()``. The tag is not trimmed."""
    if not tag:
        return 0
    return java_string_hash(tag)


def java_trim(s: str) -> str:
    """Java ``String.trim()``: strip every character <= U+0020 from both ends (not the
    Unicode notion of white space that ``str.strip()`` uses)."""
    start, end = 0, len(s)
    while start < end and s[start] <= " ":
        start += 1
    while end > start and s[end - 1] <= " ":
        end -= 1
    return s[start:end]


_TAG_SEPARATOR = re.compile(r"\|\|")


def java_split_double_bar(s: str) -> list[str]:
    """Java ``s.split("\\\\|\\\\|")``: regex split on ``||`` with trailing empty strings
    removed (limit 0). Leading empty strings stay."""
    parts = _TAG_SEPARATOR.split(s)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


class SubscriptionError(ValueError):
    """``FilterAPI`` rejects the subscription (it throws in RocketMQ)."""


@dataclass(frozen=True)
class SubscriptionData:
    """The parts of RocketMQ's ``SubscriptionData`` that filtering reads.

    ``tags_set`` and ``code_set`` are tuples in the order the tags were parsed, without
    duplicates (RocketMQ keeps them in hash sets, so order carries no meaning there).
    Both are empty for SUB_ALL (``"*"``) and for SQL92 subscriptions.
    """

    sub_string: str
    tags_set: tuple[str, ...] = ()
    code_set: tuple[int, ...] = ()
    expression_type: str = TAG

    @property
    def is_tag_type(self) -> bool:
        """``ExpressionType.isTagType``."""
        return self.expression_type == TAG

    @property
    def is_sub_all(self) -> bool:
        return self.sub_string == SUB_ALL


def build_subscription(sub_string: str | None, expression_type: str | None = TAG) -> SubscriptionData:
    """``FilterAPI.build`` (the path ``subscribe(topic, MessageSelector)`` takes).

    TAG (also for ``expression_type`` None or ""):

    * None, ``""`` or exactly ``"*"`` -> SUB_ALL: ``sub_string="*"``, empty sets;
    * otherwise split on ``||`` the way Java's ``String.split`` does, ``trim()`` each part,
      drop the empty ones, and keep each tag with its ``hashCode``. So ``" * "`` is *not*
      SUB_ALL (it is the tag ``"*"``, code 42), ``"A || *"`` has the tags ``A`` and ``*``,
      and ``" || "`` has no tags at all while not being SUB_ALL (the broker then passes
      only messages whose tags code is unknown, the client keeps everything);
    * a string made only of ``|`` pairs (``"||"``, ``"||||"``) splits into nothing, and
      RocketMQ throws "subString split error": :class:`SubscriptionError` here.

    SQL92: the expression is kept as it is, with empty sets; an empty or None expression
    throws in RocketMQ ("Expression can't be null!"): :class:`SubscriptionError`.
    Any other expression type: :class:`SubscriptionError` (RocketMQ has no filter for it).
    """
    if expression_type is None or expression_type == "":
        expression_type = TAG
    if expression_type not in EXPRESSION_TYPES:
        raise SubscriptionError(f"unknown expression type {expression_type!r}; expected TAG or SQL92")
    if sub_string is not None and not isinstance(sub_string, str):
        raise TypeError(f"sub_string must be a str or None, not {type(sub_string).__name__}")
    if expression_type == SQL92:
        if not sub_string:
            raise SubscriptionError("Expression can't be null! SQL92")
        return SubscriptionData(sub_string=sub_string, expression_type=SQL92)

    if not sub_string or sub_string == SUB_ALL:
        return SubscriptionData(sub_string=SUB_ALL)
    parts = java_split_double_bar(sub_string)
    if not parts:
        raise SubscriptionError(f"subString split error: {sub_string!r}")
    tags: dict[str, None] = {}
    codes: dict[int, None] = {}
    for part in parts:
        tag = java_trim(part)
        if tag:
            tags.setdefault(tag)
            codes.setdefault(java_string_hash(tag))
    return SubscriptionData(sub_string=sub_string, tags_set=tuple(tags), code_set=tuple(codes))


def broker_tag_match(sub: SubscriptionData | None, tags_code: int | None) -> bool:
    """The broker's consume-queue decision (``ExpressionMessageFilter.isMatchedByConsumeQueue``)
    for a TAG subscription.

    * no subscription -> match;
    * ``tags_code`` None (the consume queue had no legal code) -> match;
    * SUB_ALL -> match;
    * otherwise ``codeSet.contains((int) tagsCode)``. An untagged message has code 0, so it
      never matches a tag list (unless a subscribed tag itself hashes to 0, such as
      ``"f5a5a608"``); a different tag with a colliding hash passes.

    For an SQL92 subscription this step passes (only a bloom-filter bitmap, which is not
    modelled, can reject here, and it rejects only what the SQL evaluation rejects).
    """
    if sub is None or not sub.is_tag_type:
        return True
    if tags_code is None:
        return True
    if sub.sub_string == SUB_ALL:
        return True
    return to_int32(tags_code) in sub.code_set


def client_tag_match(sub: SubscriptionData | None, tags: str | None) -> bool:
    """The client's exact re-check after a pull (``PullAPIWrapper.processPullResult``):
    with an empty ``tags_set`` (SUB_ALL, SQL92) every message is kept; otherwise only
    messages whose tags are not None and are in ``tags_set``. This removes hash
    collisions and untagged messages."""
    if sub is None or not sub.tags_set:
        return True
    return tags is not None and tags in sub.tags_set
