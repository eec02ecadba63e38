"""RocketMQ's SQL92 message selector: lexer, parser and evaluator, as the spec's definition.

``compile_sql92(text, profile)`` gives an :class:`Expression` (or raises
:class:`FilterCompileError`); ``Expression.evaluate(props)`` gives TRUE, FALSE or null
(``True``/``False``/``None``) on an evaluation context of these properties (all strings),
or raises :class:`FilterEvaluateError`; :func:`sql92_match` is the broker's decision for a
message sent with them: evaluated on the properties as the broker decodes them (an empty
name or value is absent, :mod:`..properties`), only exactly TRUE matches, an error means
no match. Both are tested against RocketMQ's own classes (tests/test_real_sql92_diff.py).

The grammar and its quirks are described in :mod:`.parser`, the evaluation rules in
:mod:`.nodes` and :mod:`.javavalues`. The profile matters through one switch:
``sql_string_functions`` (CONTAINS / STARTSWITH / ENDSWITH, from 5.1.3).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping

from ...profiles import Profile, get_profile
from ..properties import stored_properties
from .deep import SHALLOW, run_deep
from .errors import FilterCompileError, FilterError, FilterEvaluateError
from .javavalues import JLong
from .nodes import Node, to_sql
from .parser import JAVA_MAX_NESTING, MAX_DEPTH, MAX_EXPR_LENGTH, parse

__all__ = [
    "Expression", "FilterCompileError", "FilterError", "FilterEvaluateError", "JLong",
    "JAVA_MAX_NESTING", "MAX_DEPTH", "MAX_EXPR_LENGTH", "compile_sql92", "sql92_match",
]


class Expression:
    """A compiled selector. Immutable; equal when the trees are equal. A deep tree (RocketMQ
    compiles thousands of levels) is walked on a helper thread (:mod:`.deep`)."""

    __slots__ = ("source", "root", "string_functions", "deep")

    def __init__(self, source: str, root: Node, string_functions: bool):
        self.source = source
        self.root = root
        self.string_functions = string_functions
        self.deep = root.depth > SHALLOW

    def evaluate(self, props: Mapping[str, str]) -> bool | None:
        """The value RocketMQ's ``evaluate`` returns for a message with these properties:
        ``True``, ``False`` or ``None`` (null). A property missing from ``props`` (or None)
        is null. Raises :class:`FilterEvaluateError` where RocketMQ throws."""
        if self.deep:
            return run_deep(self.root.evaluate, props)
        return self.root.evaluate(props)

    def matches(self, props: Mapping[str, str]) -> bool:
        """The broker's decision for one message; same as :func:`sql92_match`."""
        return sql92_match(self, props)

    def to_sql(self) -> str:
        """Fully parenthesised selector text that compiles back to an equal expression."""
        return run_deep(to_sql, self.root) if self.deep else to_sql(self.root)

    def __str__(self) -> str:
        return self.to_sql()

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"

    def __eq__(self, other) -> bool:
        if not isinstance(other, Expression):
            return False
        if self.deep or other.deep:
            return run_deep(self.root.__eq__, other.root)
        return self.root == other.root

    def __hash__(self) -> int:
        return run_deep(hash, self.root) if self.deep else hash(self.root)


_CACHE: OrderedDict[tuple[str, bool], Expression] = OrderedDict()
_CACHE_SIZE = 4096
_CACHE_LOCK = threading.Lock()


def _string_functions(profile: Profile | str | None) -> bool:
    return get_profile(profile).sql_string_functions


def compile_sql92(expr: str, profile: Profile | str | None = None, *, cache: bool = True) -> Expression:
    """Compile a selector as the given profile's broker does (``profile``: a
    :class:`~rocketspec.rocketmq.profiles.Profile`, a profile name, or None for the default).
    Raises :class:`FilterCompileError` with a message and position. Successful compilations
    are cached (like RocketMQ's parse cache); ``cache=False`` bypasses the cache."""
    sf = _string_functions(profile)
    if not cache:
        return Expression(expr, parse(expr, sf), sf)
    key = (expr, sf)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    compiled = Expression(expr, parse(expr, sf), sf)
    with _CACHE_LOCK:
        _CACHE[key] = compiled
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return compiled


def sql92_match(expression: Expression, props: Mapping[str, str]) -> bool:
    """The broker's SQL92 decision (``ExpressionMessageFilter.isMatchedByCommitLog``) for a
    message the producer sent with these properties: the expression is evaluated on the
    properties as the broker decoded them (:func:`~..properties.stored_properties`: an
    empty name or value is absent) and the message matches only when it gives exactly
    TRUE; FALSE, null and an evaluation error (logged by the broker) all mean no match."""
    try:
        return expression.evaluate(stored_properties(props)) is True
    except FilterEvaluateError:
        return False
