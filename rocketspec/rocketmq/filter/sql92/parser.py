"""The selector grammar of ``SelectorParser.jj``, parsed the way its generated parser does.

Grammar (lowest precedence first; every binary level is left-associative)::

    JmsSelector  := orExpr                          -- must be a condition, see below
    orExpr       := andExpr ( OR andExpr )*
    andExpr      := eqExpr ( AND eqExpr )*
    eqExpr       := cmpExpr ( '=' cmpExpr | '<>' cmpExpr | IS NULL | IS NOT NULL )*
    cmpExpr      := unary ( ('>'|'>='|'<'|'<=') unary
                          | [NOT] BETWEEN unary AND unary
                          | [NOT] IN '(' string (',' string)* ')'
                          | [NOT] (CONTAINS|STARTSWITH|ENDSWITH) string   -- 5.1.3+ only
                          )*
    unary        := '+' unary | '-' unary | NOT unary | primary
    primary      := literal | ID | '(' orExpr ')'

Facts of the real parser kept here:

* **Trailing input.** ``JmsSelector`` does not require the end of input: once no loop can
  continue, parsing stops and the rest is ignored without being scanned. Only the one
  token after the expression is read (two when it is NOT or IS, which start a loop and
  must be followed by BETWEEN/IN/string-function or NULL/NOT NULL). So ``a = 1 b`` is
  ``a = 1``, ``a = 1) #`` is ``a = 1``, but ``a = 1 #`` (lexical error on the next token)
  and ``a = 1 NOT b`` (NOT enters the loop) do not compile. Right after ``IS [NOT] NULL``
  the parser is in the equality loop, with no comparison loop running: there a comparison
  operator, BETWEEN, IN or NOT ends the selector (``a IS NULL NOT`` and ``a IS NULL > 1``
  are ``a IS NULL``). Without the string functions (4.9.x), ``CONTAINS`` is an
  identifier, so ``a CONTAINS 'x'`` compiles as the bare condition ``a`` (FALSE or null,
  never a match) and ``a NOT CONTAINS 'x'`` fails.
* **Conditions.** AND/OR operands, NOT's operand and the whole selector must be boolean
  expressions; a bare property becomes a boolean cast (FALSE when present, since broker
  properties are Strings); anything else (a number, a string, a negation) is rejected.
* **Semantic checks** (``ComparisonExpression``): ``= <>`` reject a NULL literal on either
  side and TRUE/FALSE/NULL on the left of a non-boolean literal; ``> >= < <=`` and BETWEEN
  take only properties, negations and number literals (no string, boolean or NULL
  literal, no condition); BETWEEN with two literals needs low <= high; IN needs a
  property on its left. BETWEEN becomes ``x >= low AND x <= high`` and NOT BETWEEN
  ``x < low OR x > high``; ``<>`` is ``NOT (=)``; IS NULL is ``= NULL`` without the check.
* **Literals.** A decimal literal (a trailing ``L`` is dropped) is an Integer when it fits
  32 bits, else a Long; beyond the Long range it does not compile. A floating literal is a
  Double, rejected when it overflows or is below ``Double.MIN_VALUE`` - which includes
  ``0.0`` and every other zero spelling (``0.``, ``.0``, ``0e5``) and underflows such as
  ``1e-400``.
* NOT binds tighter than the comparisons: ``NOT a = 1`` is ``(NOT a) = 1``, and
  ``NOT a > 1`` does not compile.

* **Nesting.** RocketMQ's generated parser recurses once per parenthesis (orExpression
  down to primaryExpr) and once per unary operator; binary chains are loops, so ``a = a =
  a ...`` or a long AND chain never nests on its stack. Deep nesting overflows the stack,
  which ``SelectorParser.parse`` reports as a compile failure. Where that happens depends on
  the JIT: measured on a default (1 MiB) thread stack, JDK 17, x86-64, a cold parser fails
  at about 1,100-1,300 parentheses, a fully compiled one compiles up to 9,830
  (:data:`JAVA_MEASURED_NESTING`, ``python -m bench.sql92_java_depth`` prints them). This
  parser compiles whatever the warmest JVM compiles: each parenthesis and unary operator
  uses its share of the stack (1/9,879 for a parenthesis, 1/16,921 for NOT, ... :
  :data:`JAVA_MAX_NESTING`, the measured maxima plus 0.5%), and nesting is refused once the
  shares on one path exceed the whole stack. Mixed nesting costs the JVM somewhat more than
  the sum (``NOT (`` repeated: 5,361 levels, the sum allows 6,205), so near the edge this
  accepts a little more than Java, never less.

Limit of this implementation: at most :data:`MAX_EXPR_LENGTH` characters (RocketMQ has no
such limit). Deep input is parsed on a helper thread with a large stack (:mod:`.deep`).
"""
from __future__ import annotations

from . import lexer as L
from .deep import SHALLOW, run_deep
from .errors import FilterCompileError, FilterEvaluateError
from .javavalues import DOUBLE_MAX, DOUBLE_MIN, INT_MAX, INT_MIN, LONG_MAX, JLong, canonical_string, compare
from .nodes import (
    FALSE_NODE,
    NULL_NODE,
    TRUE_NODE,
    And,
    BoolCast,
    BoolConst,
    Compare,
    Const,
    Equal,
    InList,
    Negate,
    Node,
    Not,
    Or,
    Prop,
    StringTest,
    describe,
)

MAX_EXPR_LENGTH = 1 << 18

# The deepest nesting of each kind that RocketMQ 4.9.8's SelectorParser compiled on a
# thread with the default 1 MiB stack, JIT-compiled (JDK 17.0.15, x86-64), the most seen over
# repeated runs (`python -m bench.sql92_java_depth`): "(" 9,830 (after AND; 9,826 bare,
# 8,425 after =), NOT 16,837, "-" 19,643, "+" 16,836. Runs differ by a few levels (and
# some JIT runs stop far earlier), so the limits here are those plus 0.5%: a run not seen
# may go a little further, and rocketspec must compile whatever RocketMQ can.
JAVA_MEASURED_NESTING = {"(": 9830, "NOT": 16837, "-": 19643, "+": 16836}
JAVA_MAX_NESTING = {k: n + n // 200 for k, n in JAVA_MEASURED_NESTING.items()}
_STACK = 1
for _n in JAVA_MAX_NESTING.values():
    _STACK *= _n
_SHARE = {k: _STACK // n for k, n in JAVA_MAX_NESTING.items()}
# Kept for callers that name one nesting limit: the parentheses one.
MAX_DEPTH = JAVA_MAX_NESTING["("]


class _Deep(Exception):
    """The input nests deeper than the caller's thread can recurse: parse it on a deep one."""

# binary operator levels
_OR, _AND, _EQ, _CMP = 1, 2, 3, 4
_BINARY_LEVEL = {L.OR: _OR, L.AND: _AND, L.EQ: _EQ, L.NE: _EQ, L.GT: _CMP, L.GE: _CMP,
                 L.LT: _CMP, L.LE: _CMP}
_STRING_FUNCS = (L.CONTAINS, L.STARTSWITH, L.ENDSWITH)
_LITERALS = {L.TRUE: TRUE_NODE, L.FALSE: FALSE_NODE, L.NULL: NULL_NODE}


def keywords_for(string_functions: bool) -> frozenset[str]:
    return L.BASE_KEYWORDS | L.STRING_FUNCTION_KEYWORDS if string_functions else L.BASE_KEYWORDS


class Parser:
    __slots__ = ("src", "lexer", "string_functions", "tok", "tok2", "paren_depth", "stack", "deep")

    def __init__(self, src: str, string_functions: bool, deep: bool = False):
        self.src = src
        self.deep = deep          # on a deep thread: no shallow bound
        self.stack = 0            # the share of Java's stack the current nesting uses
        self.string_functions = string_functions
        self.lexer = L.Lexer(src, keywords_for(string_functions))
        self.tok: L.Token | None = None   # the next token, once read
        self.tok2: L.Token | None = None  # the one after it, once read
        self.paren_depth = 0

    # ---- token access (lazy, like JavaCC's jj_ntk) ------------------------------------

    def peek(self) -> L.Token:
        if self.tok is None:
            self.tok = self.lexer.next()
        return self.tok

    def peek2(self) -> L.Token:
        self.peek()
        if self.tok2 is None:
            self.tok2 = self.lexer.next()
        return self.tok2

    def take(self) -> L.Token:
        t = self.peek()
        self.tok, self.tok2 = self.tok2, None
        return t

    def expect(self, kind: str, what: str) -> L.Token:
        t = self.peek()
        if t.kind != kind:
            raise self.syntax_error(t, what)
        return self.take()

    # ---- errors ------------------------------------------------------------------------

    def syntax_error(self, t: L.Token, expected: str) -> FilterCompileError:
        return FilterCompileError(f"Encountered {t.describe()}; expected {expected}",
                                  expr=self.src, position=t.pos)

    def semantic_error(self, message: str, at: L.Token | int | None) -> FilterCompileError:
        pos = at.pos if isinstance(at, L.Token) else at
        return FilterCompileError(message, expr=self.src, position=pos)

    def node(self, n: Node, at: L.Token | int) -> Node:
        if n.depth > SHALLOW and not self.deep:
            raise _Deep()
        return n

    def nest(self, kind: str, at: L.Token) -> None:
        """One more level of Java's recursion (a parenthesis or a unary operator)."""
        self.stack += _SHARE[kind]
        if self.stack > _STACK:
            raise self.semantic_error(
                "parentheses and unary operators nest too deeply: RocketMQ's parser overflows "
                "a default thread stack here (it compiles at most about "
                f"{JAVA_MAX_NESTING['(']} nested parentheses, {JAVA_MAX_NESTING['NOT']} NOT, "
                f"{JAVA_MAX_NESTING['-']} '-', {JAVA_MAX_NESTING['+']} '+', mixed nesting "
                "in proportion)", at)

    # ---- the grammar -------------------------------------------------------------------

    def parse(self) -> Node:
        if len(self.src) > MAX_EXPR_LENGTH:
            raise FilterCompileError(
                f"expression too long: {len(self.src)} characters, at most {MAX_EXPR_LENGTH} "
                "(a limit of this implementation)", expr=self.src, position=MAX_EXPR_LENGTH)
        root = self.or_expr()
        # No end-of-input check: RocketMQ's JmsSelector() stops here and ignores the rest.
        return self.as_condition(root, 0)

    def or_expr(self) -> Node:
        """orExpr with all four binary levels, by precedence (one Python frame for all of
        them); reductions happen in the order RocketMQ's nested loops make them."""
        operands: list[Node] = [self.unary()]
        ops: list[tuple[int, L.Token]] = []

        def reduce_to(level: int) -> None:
            while ops and ops[-1][0] >= level:
                lvl, op = ops.pop()
                right = operands.pop()
                left = operands.pop()
                operands.append(self.binary(op, left, right))

        after_is = False
        while True:
            t = self.peek()
            k = t.kind
            level = _BINARY_LEVEL.get(k)
            if after_is and (level == _CMP or k in (L.BETWEEN, L.IN, L.NOT) or k in _STRING_FUNCS):
                # Right after IS [NOT] NULL RocketMQ is in the equality loop: no comparison
                # loop is running to take > >= < <=, [NOT] BETWEEN/IN/..., so the selector
                # ends here and the rest is ignored (``a IS NULL > 1`` is ``a IS NULL``).
                break
            after_is = False
            if level is not None:
                reduce_to(level)
                self.take()
                ops.append((level, t))
                operands.append(self.unary())
                continue
            if k == L.IS:
                reduce_to(_EQ)
                operands.append(self.is_null(operands.pop()))
                after_is = True
                continue
            if k in (L.BETWEEN, L.IN) or k in _STRING_FUNCS:
                reduce_to(_CMP)
                operands.append(self.postfix(operands.pop(), negated=False))
                continue
            if k == L.NOT:
                # Inside the comparison loop NOT must start NOT BETWEEN / NOT IN / NOT
                # CONTAINS...; RocketMQ commits to the loop on NOT and fails otherwise.
                k2 = self.peek2().kind
                if k2 in (L.BETWEEN, L.IN) or k2 in _STRING_FUNCS:
                    reduce_to(_CMP)
                    self.take()
                    operands.append(self.postfix(operands.pop(), negated=True))
                    continue
                words = "BETWEEN, IN" + (", CONTAINS, STARTSWITH, ENDSWITH" if self.string_functions else "")
                raise self.syntax_error(self.peek2(), f"{words} after NOT")
            break
        reduce_to(_OR)
        return operands[0]

    def binary(self, op: L.Token, left: Node, right: Node) -> Node:
        k = op.kind
        if k == L.OR or k == L.AND:
            left = self.as_condition(left, op)
            right = self.as_condition(right, op)
            cls = Or if k == L.OR else And
            if type(left) is cls:  # left-deep chain: keep it flat
                left.extend(right)
                return self.node(left, op)
            return self.node(cls((left, right)), op)
        if k == L.EQ:
            return self.create_equal(left, right, op)
        if k == L.NE:
            return self.node(Not(self.create_equal(left, right, op)), op)
        return self.create_order(k, left, right, op)

    def is_null(self, left: Node) -> Node:
        is_tok = self.take()
        if self.peek().kind == L.NULL:
            self.take()
            return self.node(Equal(left, NULL_NODE), is_tok)
        self.expect(L.NOT, "NULL or NOT NULL after IS")
        self.expect(L.NULL, "NULL after IS NOT")
        return self.node(Not(self.node(Equal(left, NULL_NODE), is_tok)), is_tok)

    def postfix(self, left: Node, negated: bool) -> Node:
        """The rest of [NOT] BETWEEN / IN / CONTAINS / STARTSWITH / ENDSWITH."""
        op = self.take()
        k = op.kind
        if k == L.BETWEEN:
            low = self.unary()
            self.expect(L.AND, "AND between the bounds of BETWEEN")
            high = self.unary()
            if negated:
                return self.node(Or((self.create_order(L.LT, left, low, op),
                                     self.create_order(L.GT, left, high, op))), op)
            self.check_between_bounds(low, high, op)
            return self.node(And((self.create_order(L.GE, left, low, op),
                                  self.create_order(L.LE, left, high, op))), op)
        if k == L.IN:
            self.expect(L.LPAREN, "'(' after IN")
            values = [self.string_literal()]
            while self.peek().kind == L.COMMA:
                self.take()
                values.append(self.string_literal())
            self.expect(L.RPAREN, "',' or ')' in the IN list")
            if type(left) is not Prop:
                raise self.semantic_error(f"Expected a property for In expression, got: {describe(left)}", op)
            return self.node(InList(left, tuple(values), negated), op)
        search = self.string_literal()
        return self.node(StringTest(k, left, search, negated), op)

    def string_literal(self) -> str:
        t = self.expect(L.STRING, "a string literal")
        return canonical_string(t.text[1:-1].replace("''", "'"))

    def unary(self) -> Node:
        """unary := ('+' | '-' | NOT)* primary, applied innermost first."""
        prefixes: list[L.Token] = []
        stack = self.stack
        while True:
            k = self.peek().kind
            if k == L.PLUS or k == L.MINUS or k == L.NOT:
                t = self.take()
                prefixes.append(t)
                self.nest("+" if k == L.PLUS else "-" if k == L.MINUS else "NOT", t)
            else:
                break
        node = self.primary()
        self.stack = stack
        for op in reversed(prefixes):
            if op.kind == L.MINUS:
                node = self.node(Negate(node), op)
            elif op.kind == L.NOT:
                node = self.node(Not(self.as_condition(node, op)), op)
            # '+' is the identity
        return node

    def primary(self) -> Node:
        t = self.peek()
        k = t.kind
        if k == L.ID:
            self.take()
            return Prop(t.text)
        if k == L.STRING:
            return Const(self.string_literal())
        if k == L.DECIMAL:
            self.take()
            return Const(self.decimal_value(t))
        if k == L.FLOAT:
            self.take()
            return Const(self.float_value(t))
        if k in _LITERALS:
            self.take()
            return _LITERALS[k]
        if k == L.LPAREN:
            self.take()
            self.paren_depth += 1
            if self.paren_depth > SHALLOW and not self.deep:
                raise _Deep()
            self.nest("(", t)
            inner = self.or_expr()
            self.expect(L.RPAREN, "')'")
            self.paren_depth -= 1
            self.stack -= _SHARE["("]
            return inner
        raise self.syntax_error(t, "a literal, a property name, '(', '+', '-' or NOT")

    # ---- literals (ConstantExpression.createFromDecimal / createFloat) ------------------

    def decimal_value(self, t: L.Token):
        text = t.text
        if text[-1] in "lL":
            text = text[:-1]
        if len(text) > 19 or int(text) > LONG_MAX:
            raise self.semantic_error(f"NumberFormatException: the literal {t.text} is beyond the "
                                      "Long range", t)
        value = int(text)
        return value if INT_MIN <= value <= INT_MAX else JLong(value)

    def float_value(self, t: L.Token) -> float:
        value = float(t.text)
        if value > DOUBLE_MAX:
            raise self.semantic_error(f"{t.text} is greater than {DOUBLE_MAX!r}", t)
        if value < DOUBLE_MIN:
            raise self.semantic_error(
                f"{t.text} is less than Double.MIN_VALUE (4.9E-324); RocketMQ rejects every "
                "zero or underflowing floating literal", t)
        return value

    # ---- ComparisonExpression's checks ---------------------------------------------------

    def as_condition(self, node: Node, at: L.Token | int) -> Node:
        if node.is_boolean:
            return node
        if type(node) is Prop:
            return self.node(BoolCast(node), at)
        raise self.semantic_error(f"Expression will not result in a boolean value: {describe(node)}", at)

    def create_equal(self, left: Node, right: Node, op: L.Token) -> Node:
        for side in (left, right):
            if side.is_constant and side.value is None:
                raise self.semantic_error("'NULL' cannot be compared (write IS NULL)", op)
        if left.is_constant and right.is_constant and left.is_boolean and not right.is_boolean:
            raise self.semantic_error(f"'{describe(left)}' cannot be compared with '{describe(right)}'", op)
        return self.node(Equal(left, right), op)

    def check_order_operand(self, node: Node, op: L.Token) -> None:
        if node.is_constant:
            v = node.value
            if v is not None and type(v) is not bool and type(v) is not str:
                return  # a number
            raise self.semantic_error(f"Value '{describe(node)}' cannot be compared with {op.text}", op)
        if node.is_boolean:
            raise self.semantic_error(f"Value '{describe(node)}' cannot be compared with {op.text}", op)

    def create_order(self, kind: str, left: Node, right: Node, op: L.Token) -> Node:
        self.check_order_operand(left, op)
        self.check_order_operand(right, op)
        return self.node(Compare(kind, left, right), op)

    def check_between_bounds(self, low: Node, high: Node, op: L.Token) -> None:
        if not (low.is_constant and high.is_constant):
            return
        lv, hv = low.value, high.value
        if lv is None or hv is None:
            raise self.semantic_error("Illegal values of between, values can not be null!", op)
        try:
            ret = compare(hv, lv)
        except FilterEvaluateError as exc:
            raise self.semantic_error(f"Illegal values of between: {exc}", op) from None
        if ret < 0:
            raise self.semantic_error(
                f"Illegal values of between, left value({describe(low)}) must less than or equal "
                f"to right value({describe(high)})", op)


def parse(src: str, string_functions: bool) -> Node:
    """Compile ``src`` to a tree; raises :class:`FilterCompileError`."""
    if not isinstance(src, str):
        raise TypeError(f"a selector must be a str, not {type(src).__name__}")
    try:
        return Parser(src, string_functions).parse()
    except _Deep:
        return run_deep(Parser(src, string_functions, deep=True).parse)
