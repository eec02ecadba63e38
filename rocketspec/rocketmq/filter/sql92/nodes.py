"""The compiled form of a selector: an expression tree and its evaluation.

Each node class stands for one of RocketMQ's expression classes and evaluates the way it
does (``F/expression/``: ``ConstantExpression``, ``BooleanConstantExpression``,
``PropertyExpression``, ``UnaryExpression`` (negate, NOT, boolean cast, IN),
``LogicExpression``, ``ComparisonExpression`` and its CONTAINS / STARTSWITH / ENDSWITH
classes). Values are Java values held as described in :mod:`.javavalues`; ``None`` is
SQL NULL (Java null).

Two classifications decide what the parser accepts, as in RocketMQ:

* ``is_boolean`` - the node is a ``BooleanExpression`` (comparisons, logic, NOT, IN, the
  string functions, and the constants TRUE, FALSE and NULL);
* ``is_constant`` - the node is a ``ConstantExpression`` (literals; TRUE, FALSE and NULL
  included). A negated literal is *not* a constant: ``-5`` is a negation node.

``AND``/``OR`` chains are kept flat (``a AND b AND c`` is one node with three operands).
RocketMQ builds a left-deep binary tree; evaluating left to right with the same
short-circuit gives the same result and the same exceptions, and a flat node keeps long
chains from nesting deeply.

Every node records its ``depth`` (1 for a leaf), so the parser can bound it.
"""
from __future__ import annotations

from .errors import FilterEvaluateError
from .javavalues import (
    JLong,
    as_code_units,
    canonical_string,
    compare,
    java_equals,
    java_repr,
    parse_double,
    wrap32,
    wrap64,
)


class Node:
    __slots__ = ("depth",)
    is_boolean = False
    is_constant = False

    def evaluate(self, props):  # pragma: no cover - every node overrides it
        raise NotImplementedError

    def _key(self) -> tuple:
        raise NotImplementedError

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(map(repr, self._key()))})"


# ---- leaves ----------------------------------------------------------------------------

class Const(Node):
    """A string or number literal (``ConstantExpression``)."""

    __slots__ = ("value",)
    is_constant = True

    def __init__(self, value):
        self.value = value
        self.depth = 1

    def evaluate(self, props):
        return self.value

    def _key(self):
        # keep Integer 5, Long 5 and Double 5.0 apart
        return (type(self.value).__name__, self.value)


class BoolConst(Node):
    """TRUE, FALSE or NULL (``BooleanConstantExpression``): constants that are also
    boolean expressions."""

    __slots__ = ("value",)
    is_constant = True
    is_boolean = True

    def __init__(self, value: bool | None):
        self.value = value
        self.depth = 1

    def evaluate(self, props):
        return self.value

    def _key(self):
        return (self.value,)


TRUE_NODE = BoolConst(True)
FALSE_NODE = BoolConst(False)
NULL_NODE = BoolConst(None)


class Prop(Node):
    """A message property (``PropertyExpression``): its value, or null when absent."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name
        self.depth = 1

    def evaluate(self, props):
        v = props.get(self.name)
        if v is None:
            return None
        if type(v) is not str:
            raise TypeError(f"property {self.name!r} must be a str (the broker sees every "
                            f"property as a String), not {type(v).__name__}")
        return v if v.isascii() else canonical_string(v)

    def _key(self):
        return (self.name,)


# ---- unary -----------------------------------------------------------------------------

class Negate(Node):
    """Unary minus: negates a number (Java overflow rules), anything else gives null -
    so ``-a`` for a property (always a String) is null."""

    __slots__ = ("operand",)

    def __init__(self, operand: Node):
        self.operand = operand
        self.depth = operand.depth + 1

    def evaluate(self, props):
        v = self.operand.evaluate(props)
        t = type(v)
        if t is int:
            return wrap32(-v)
        if t is JLong:
            return JLong(wrap64(-v))
        if t is float:
            return -v
        return None

    def _key(self):
        return (self.operand,)


class Not(Node):
    """NOT in three-valued logic: null stays null."""

    __slots__ = ("operand",)
    is_boolean = True

    def __init__(self, operand: Node):
        self.operand = operand
        self.depth = operand.depth + 1

    def evaluate(self, props):
        v = self.operand.evaluate(props)
        if v is None:
            return None
        return not _as_bool(v)

    def _key(self):
        return (self.operand,)


class BoolCast(Node):
    """A bare property used as a condition (``UnaryExpression.createBooleanCast``):
    null when the property is absent, its value when it is a Boolean, else FALSE. Broker
    properties are Strings, so a present property is always FALSE here."""

    __slots__ = ("operand",)
    is_boolean = True

    def __init__(self, operand: Node):
        self.operand = operand
        self.depth = operand.depth + 1

    def evaluate(self, props):
        v = self.operand.evaluate(props)
        if v is None:
            return None
        return v if type(v) is bool else False

    def _key(self):
        return (self.operand,)


def _as_bool(v) -> bool:
    # RocketMQ casts the operand of NOT/AND/OR to Boolean; a boolean expression never
    # yields anything else, but keep the cast's failure mode.
    if type(v) is not bool:
        raise FilterEvaluateError(f"{type(v).__name__} cannot be cast to java.lang.Boolean",
                                  "ClassCastException")
    return v


# ---- logic -----------------------------------------------------------------------------

class _Chain(Node):
    """A flat AND/OR. While the parser builds a chain it appends operands in place
    (:meth:`extend`); the node is not shared with anything else at that point."""

    __slots__ = ("operands",)
    is_boolean = True

    def __init__(self, operands):
        self.operands = list(operands)
        self.depth = 1 + max(o.depth for o in self.operands)

    def extend(self, operand: Node) -> None:
        self.operands.append(operand)
        if operand.depth >= self.depth:
            self.depth = operand.depth + 1

    def _key(self):
        return tuple(self.operands)


class And(_Chain):
    """AND over two or more operands, left to right: FALSE as soon as one operand is
    FALSE (later operands are not evaluated); else null if any was null; else TRUE."""

    __slots__ = ()

    def evaluate(self, props):
        unknown = False
        for op in self.operands:
            v = op.evaluate(props)
            if v is None:
                unknown = True
            elif not _as_bool(v):
                return False
        return None if unknown else True


class Or(_Chain):
    """OR over two or more operands, left to right: TRUE as soon as one operand is TRUE;
    else null if any was null; else FALSE."""

    __slots__ = ()

    def evaluate(self, props):
        unknown = False
        for op in self.operands:
            v = op.evaluate(props)
            if v is None:
                unknown = True
            elif _as_bool(v):
                return True
        return None if unknown else False


# ---- comparisons -----------------------------------------------------------------------

class Equal(Node):
    """``=`` (and, with NULL on the right, ``IS NULL``): RocketMQ's ``doCreateEqual``.

    Both sides are evaluated (left first). Exactly one null: null if it is the left one,
    FALSE if it is the right one. Both null: TRUE. Otherwise ``equals``, then ``compareTo``
    after RocketMQ's conversions (a String against a number is parsed as that number's
    class, and may throw).
    """

    __slots__ = ("left", "right")
    is_boolean = True

    def __init__(self, left: Node, right: Node):
        self.left, self.right = left, right
        self.depth = 1 + max(left.depth, right.depth)

    def evaluate(self, props):
        lv = self.left.evaluate(props)
        rv = self.right.evaluate(props)
        if lv is None or rv is None:
            if lv is None and rv is None:
                return True
            return None if lv is None else False
        if java_equals(lv, rv):
            return True
        return compare(lv, rv) == 0

    def _key(self):
        return (self.left, self.right)


_ORDER_TESTS = {
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
}


class Compare(Node):
    """``>``, ``>=``, ``<``, ``<=``: null if a side is null (the right side is not
    evaluated when the left is null); two Strings are compared as Doubles (a String that
    is not a number throws); otherwise RocketMQ's conversions and ``compareTo``."""

    __slots__ = ("op", "left", "right", "_test")
    is_boolean = True

    def __init__(self, op: str, left: Node, right: Node):
        self.op, self.left, self.right = op, left, right
        self._test = _ORDER_TESTS[op]
        self.depth = 1 + max(left.depth, right.depth)

    def evaluate(self, props):
        lv = self.left.evaluate(props)
        if lv is None:
            return None
        rv = self.right.evaluate(props)
        if rv is None:
            return None
        if type(lv) is str and type(rv) is str:
            try:
                lv, rv = parse_double(lv), parse_double(rv)
            except FilterEvaluateError:
                raise FilterEvaluateError(
                    f"It's illegal to compare string by '>=', '>', '<', '<='. lv={lv}, rv={rv}") from None
        return self._test(compare(lv, rv))

    def _key(self):
        return (self.op, self.left, self.right)


class InList(Node):
    """``prop [NOT] IN ('a', ...)``: null when the property is null (or not a String);
    else membership, inverted for NOT IN."""

    __slots__ = ("prop", "values", "negated", "_set")
    is_boolean = True

    def __init__(self, prop: Prop, values: tuple[str, ...], negated: bool):
        self.prop, self.values, self.negated = prop, values, negated
        self._set = frozenset(values)
        self.depth = prop.depth + 1

    def evaluate(self, props):
        v = self.prop.evaluate(props)
        if v is None or type(v) is not str:
            return None
        return (v in self._set) != self.negated

    def _key(self):
        return (self.prop, self.values, self.negated)


_STRING_TESTS = {
    "CONTAINS": lambda value, search: search in value,
    "STARTSWITH": str.startswith,
    "ENDSWITH": str.endswith,
}


class StringTest(Node):
    """``x [NOT] CONTAINS|STARTSWITH|ENDSWITH 'lit'`` (5.1.3 and later). FALSE when the
    literal is empty (without evaluating ``x``), when ``x`` is null, or when it is not a
    String - for the NOT forms too. Otherwise the test, inverted for NOT."""

    __slots__ = ("func", "operand", "search", "negated", "_test")
    is_boolean = True

    def __init__(self, func: str, operand: Node, search: str, negated: bool):
        self.func, self.operand, self.search, self.negated = func, operand, search, negated
        self._test = _STRING_TESTS[func]
        self.depth = operand.depth + 1

    def evaluate(self, props):
        search = self.search
        if not search:
            return False
        v = self.operand.evaluate(props)
        if v is None or type(v) is not str:
            return False
        v, search = as_code_units(v, search)
        return self._test(v, search) != self.negated

    def _key(self):
        return (self.func, self.operand, self.search, self.negated)


# ---- printing --------------------------------------------------------------------------

def quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def literal_text(value) -> str:
    t = type(value)
    if t is str:
        return quote(value)
    if t is float:
        return repr(value)  # shortest text that reads back as the same double
    return str(int(value))


# Binding levels of the grammar, loosest first (see .parser).
_OR, _AND, _EQ, _CMP, _UNARY, _ATOM = range(1, 7)


def _level(node: Node) -> int:
    t = type(node)
    if t is BoolCast:
        return _level(node.operand)
    if t is Or:
        return _OR
    if t is And:
        return _AND
    if t is Equal:
        return _EQ
    if t is Compare or t is InList or t is StringTest:
        return _CMP
    if t is Negate or t is Not:
        return _UNARY
    return _ATOM


def _operand(node: Node, parens_below: int) -> str:
    text = to_sql(node)
    return f"({text})" if _level(node) < parens_below else text


def to_sql(node: Node) -> str:
    """Selector text that compiles back to an equal tree (under the same profile).
    Parentheses only where the grammar needs them (every binary level is left-associative),
    so the text nests no deeper than any text that gives this tree: RocketMQ's parser spends
    stack on every parenthesis, and a tree read at the edge of its nesting limit must read
    back."""
    t = type(node)
    if t is Const:
        return literal_text(node.value)
    if t is BoolConst:
        return {True: "TRUE", False: "FALSE", None: "NULL"}[node.value]
    if t is Prop:
        return node.name
    if t is BoolCast:
        return to_sql(node.operand)  # re-created wherever a condition is required
    if t is Negate:
        return f"- {_operand(node.operand, _UNARY)}"
    if t is Not:
        return f"NOT {_operand(node.operand, _UNARY)}"
    if t is And or t is Or:
        level = _AND if t is And else _OR
        word = " AND " if t is And else " OR "
        first, *rest = node.operands
        return word.join([_operand(first, level)] + [_operand(o, level + 1) for o in rest])
    if t is Equal:
        if node.right is NULL_NODE:
            return f"{_operand(node.left, _EQ)} IS NULL"
        return f"{_operand(node.left, _EQ)} = {_operand(node.right, _CMP)}"
    if t is Compare:
        return f"{_operand(node.left, _CMP)} {node.op} {_operand(node.right, _UNARY)}"
    if t is InList:
        word = "NOT IN" if node.negated else "IN"
        return f"{node.prop.name} {word} ({', '.join(map(quote, node.values))})"
    if t is StringTest:
        word = f"NOT {node.func}" if node.negated else node.func
        return f"{_operand(node.operand, _CMP)} {word} {quote(node.search)}"
    raise TypeError(f"not a filter node: {node!r}")


def describe(node: Node) -> str:
    """A short text for error messages."""
    if type(node) is Const:
        return literal_text(node.value) if type(node.value) is str else java_repr(node.value)
    text = to_sql(node)
    return text if len(text) <= 60 else text[:57] + "..."
