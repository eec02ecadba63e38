"""SQL92 nesting against RocketMQ 4.9.8's own parser (conformance/java/SqlDepth.java).

RocketMQ's SelectorParser recurses per parenthesis and unary operator and fails to compile
when the thread's stack overflows; where depends on the JIT (bench.sql92_java_depth prints
cold and warm maxima). rocketspec compiles whatever the warmest JVM compiles. Here: what a
cold JVM compiles or refuses, rocketspec decides the same (up to the nesting a cold JVM
handles), and beyond rocketspec's limit RocketMQ overflows too; `-m slow` measures the warm
maxima and checks rocketspec compiles at least as deep.

Without Java or the RocketMQ classes the tests skip and say why; with
ROCKETSPEC_REQUIRE_REAL=1 they fail instead.
"""
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketspec.conformance.realdiff import Unavailable, java_sql92_compile, java_sql92_edge, rocketmq_classpath
from rocketspec.rocketmq.filter import JAVA_MAX_NESTING, FilterCompileError, compile_sql92

P4 = "rocketmq-4.9.8"


@pytest.fixture(scope="module")
def java():
    try:
        rocketmq_classpath()
        java_sql92_compile(["a = 1"])
    except Unavailable as exc:
        if os.environ.get("ROCKETSPEC_REQUIRE_REAL") == "1":
            pytest.fail(f"ROCKETSPEC_REQUIRE_REAL=1 but the real classes are not at hand: {exc}")
        pytest.skip(f"real RocketMQ classes not at hand: {exc}")
    return java_sql92_compile


def ours(expr):
    try:
        compile_sql92(expr, P4, cache=False)
        return True
    except FilterCompileError:
        return False


def test_two_hundred_parentheses_compile_in_both(java):
    expr = "(" * 200 + "a = 1" + ")" * 200
    assert java([expr]) == [{"ok": True, "overflow": False}]
    assert ours(expr)


def test_beyond_our_limit_java_overflows_too(java):
    shapes = {"(": lambda n: "(" * n + "a = 1" + ")" * n, "NOT": lambda n: "NOT " * n + "a",
              "-": lambda n: "a > " + "- " * n + "1", "+": lambda n: "a > " + "+ " * n + "1"}
    exprs = [make(JAVA_MAX_NESTING[k] + 1) for k, make in shapes.items()]
    assert [r["overflow"] for r in java(exprs)] == [True] * len(exprs)
    assert not any(ours(e) for e in exprs)


# Nested selectors of every nesting kind, valid or not, up to a depth a cold JVM compiles.
PIECES = [("(", ")"), ("NOT (", ")"), ("NOT ", ""), ("- ", ""), ("+ ", ""), ("a = (", ")"), ("a AND (", ")"),
          ("a > (", ")"), ("(b OR ", ")"), ("a BETWEEN ", " AND 5"), ("+(", ")")]
LEAVES = ["a", "a = 1", "1", "'x'", "a > 1", "TRUE", "a IS NULL", "a IN ('x')", "1 > a", ""]


@st.composite
def nested(draw):
    out, close = [], []
    for _ in range(draw(st.integers(0, 6))):
        o, c = draw(st.sampled_from(PIECES))
        n = draw(st.integers(1, 120))
        out.append(o * n)
        close.append(c * n)
    return "".join(out) + draw(st.sampled_from(LEAVES)) + "".join(reversed(close))


@settings(max_examples=1, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.lists(nested(), min_size=300, max_size=300))
def test_compiles_exactly_when_java_compiles(java, exprs):
    """One cold JVM answers 300 selectors; each compiles in rocketspec exactly when it
    compiles in RocketMQ (none is deep enough to overflow a cold parser)."""
    real = java(exprs)
    assert not any(r["overflow"] for r in real)
    for expr, r in zip(exprs, real):
        assert ours(expr) == r["ok"], (expr[:200], r)


@pytest.mark.slow
@pytest.mark.parametrize("kind,java_kind,make", [
    ("(", "paren", lambda n: "(" * n + "a = 1" + ")" * n),
    ("NOT", "not", lambda n: "NOT " * n + "a"),
    ("-", "minus", lambda n: "a > " + "- " * n + "1"),
    ("+", "plus", lambda n: "a > " + "+ " * n + "1"),
    (None, "notparen", lambda n: "NOT (" * n + "a" + ")" * n),
    (None, "andparen", lambda n: "a AND (" * n + "a" + ")" * n),
    (None, "plusparen", lambda n: "a > " + "+(" * n + "1" + ")" * n),
])
def test_we_compile_as_deep_as_a_warm_jvm(java, kind, java_kind, make):
    warm = java_sql92_edge(java_kind, 5000)
    assert ours(make(warm)), f"RocketMQ compiles {java_kind} nested {warm} deep, rocketspec refuses"
    if kind is not None:     # and not much more: the limit is the measured maximum plus 0.5%
        assert JAVA_MAX_NESTING[kind] <= warm * 1.01 + 5
