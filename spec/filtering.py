"""The one place where the spec decides whether a message matches a subscription.

Tags: the spec's own reading (`spec.tag_rules`), not the implementation the reference filters
with. SQL92: the one evaluator (`rocketspec.rocketmq.filter`, tested against RocketMQ's Java
evaluator); a subscription that does not compile is None and the spec does not judge it.
"""
from __future__ import annotations

from functools import lru_cache

from rocketspec.rocketmq.filter import compile_sql92 as _compile_sql92
from rocketspec.rocketmq.filter import sql92_match as _sql92_match
from rocketspec.rocketmq.retry import DLQ_PREFIX, RETRY_PREFIX  # noqa: F401 (re-exported: importers of spec.filtering)

from . import tag_rules


@lru_cache(maxsize=4096)
def subscription(expr_type: str | None, expr: str | None):
    """("TAG", spec.tag_rules.TagSubscription) or ("SQL92", compiled expression); None if unusable."""
    try:
        if expr_type == "SQL92":
            return ("SQL92", _sql(expr))
        return ("TAG", tag_rules.parse(expr))
    except Exception:
        return None


@lru_cache(maxsize=1024)
def _sql(expr):
    try:
        return _compile_sql92(expr, None)
    except TypeError:
        return _compile_sql92(expr)


def _sql_eval(compiled, props) -> bool | None:
    if compiled is None:
        return None
    try:
        return _sql92_match(compiled, props or {})     # the broker's decision, on its view of props
    except Exception:
        return False


def decide(sub, tags, tags_code, props):
    """(broker_match, client_match) for one message; either may be None = unknown.

    TAG: the broker compares tags codes (hash collisions pass), the client compares the exact
    tag. SQL92: the broker evaluates the expression (TRUE only matches), the client keeps all."""
    if sub is None:
        return None, None
    typ, s = sub
    if typ == "TAG":
        b = tag_rules.broker_keeps(s, tags_code if tags_code is not None else tag_rules.tag_code(tags))
        return b, (b and tag_rules.client_keeps(s, tags))
    r = _sql_eval(s, props)
    return r, r

