"""The one place where the spec decides whether a message matches a subscription.

Delegates to `rocketspec.spec.filter` (tags codes, subscription parsing, SQL92). Until the SQL92
evaluator is available, SQL92 decisions are "unknown" (None) and the spec does not judge them.
"""
from __future__ import annotations

from functools import lru_cache

from .filter import broker_tag_match, build_subscription, client_tag_match

try:  # SQL92 lands separately (spec/filter/sql92); use it when present.
    from .filter import compile_sql92 as _compile_sql92  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - depends on the filter package's progress
    _compile_sql92 = None

RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"


@lru_cache(maxsize=4096)
def subscription(expr_type: str | None, expr: str | None):
    """Parsed SubscriptionData (TAG) or a compiled SQL92 expression; None if unusable."""
    try:
        if expr_type == "SQL92":
            return ("SQL92", _sql(expr))
        return ("TAG", build_subscription(expr, "TAG"))
    except Exception:
        return None


@lru_cache(maxsize=1024)
def _sql(expr):
    if _compile_sql92 is None:
        return None
    try:
        return _compile_sql92(expr, None)
    except TypeError:
        return _compile_sql92(expr)


def _sql_eval(compiled, props) -> bool | None:
    if compiled is None:
        return None
    try:
        return compiled.evaluate(props or {}) is True
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
        code = tags_code if tags_code is not None else (None if tags is None else None)
        b = broker_tag_match(s, code if tags_code is not None else _code(tags))
        return b, (b and client_tag_match(s, tags))
    r = _sql_eval(s, props)
    return r, r


def _code(tags):
    from .filter import tags_code

    return tags_code(tags)
