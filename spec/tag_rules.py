"""The tag filter rules as the spec states them (digest section 9), independent of the filter
implementation the reference uses (`rocketspec.rocketmq.filter.tags`), so that INV-FILTER-1 compares two
readings of RocketMQ's source (tests/test_tag_rules.py shows they agree on all inputs). SQL92
has one evaluator (`rocketspec.rocketmq.filter.sql92`), tested against the real Java one instead.

A tag subscription is what `FilterAPI.buildSubscriptionData` makes of the consumer's string;
the broker keeps a message whose consume-queue tags code is one of the subscribed tags' codes
(`ExpressionMessageFilter.isMatchedByConsumeQueue`), the client then keeps a message whose tag
string is one of the subscribed tags (`PullAPIWrapper.processPullResult`).
"""
from __future__ import annotations

from typing import NamedTuple


class TagSubscription(NamedTuple):
    every: bool           # "*" (or no expression): every message, no tag test anywhere
    tags: frozenset       # the subscribed tags; their codes are what the broker compares


def tag_code(tags: str | None) -> int:
    """The consume queue's tags code: 0 without tags, else Java's String.hashCode of the tag
    string (31-polynomial over its UTF-16 code units, wrapped to a signed 32-bit int)."""
    if not tags:
        return 0
    units = tags.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (h * 31 + (units[i] << 8 | units[i + 1])) % 4294967296
    return h - 4294967296 if h >= 2147483648 else h


def parse(expr: str | None) -> TagSubscription:
    """The subscription an expression stands for. None, "" and "*" mean every message. Anything
    else is a list of tags separated by "||"; each is trimmed Java's way (every character up to
    the space, at both ends) and blanks are dropped, so " * " is the tag "*" and " || " a list
    of no tags (the broker then keeps only messages without a legal code, the client all).
    A string that is nothing but "||" separators is refused (ValueError), as RocketMQ refuses
    it ("subString split error")."""
    if not expr or expr == "*":
        return TagSubscription(True, frozenset())
    parts = expr.split("||")
    if all(p == "" for p in parts):
        raise ValueError(f"subString split error: {expr!r}")
    blank = "".join(chr(c) for c in range(33))
    return TagSubscription(False, frozenset(t for t in (p.strip(blank) for p in parts) if t))


def broker_keeps(sub: TagSubscription, code: int | None) -> bool:
    """The broker's test: codes only, so a tag whose hash collides with a subscribed one passes
    and an untagged message (code 0) does not. A consume-queue entry without a legal code
    (None) passes."""
    if sub.every or code is None:
        return True
    code = (code + 2147483648) % 4294967296 - 2147483648      # compared as Java's int
    return any(tag_code(t) == code for t in sub.tags)


def client_keeps(sub: TagSubscription, tags: str | None) -> bool:
    """The client's re-check: with no subscribed tags it keeps all, otherwise exactly the
    messages whose tag string is subscribed (collisions and untagged messages go)."""
    if sub.every or not sub.tags:
        return True
    return tags is not None and tags in sub.tags
