"""Java value semantics the SQL92 evaluator needs, on plain Python values.

A value is one of the Java classes RocketMQ's filter can meet, held as:

=========  ==================================================
Java       Python
=========  ==================================================
null       ``None``
Boolean    ``bool``
Integer    ``int`` (exactly ``int``, in 32-bit range)
Long       :class:`JLong` (an ``int`` subclass, 64-bit range)
Double     ``float``
String     ``str``
=========  ==================================================

Dispatch is on the exact type (``type(v) is int``), since ``bool`` is an ``int`` in Python.
The parsing functions follow ``Integer.parseInt``, ``Long.parseLong``,
``Double.parseDouble`` and ``Boolean.parseBoolean``; :func:`compare` follows
``ComparisonExpression.__compare`` with string conversion on (which the parser always
turns on).
"""
from __future__ import annotations

import math
import re
import unicodedata
from array import array

from .errors import FilterEvaluateError

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1
DOUBLE_MAX = 1.7976931348623157e308
DOUBLE_MIN = 5e-324  # Double.MIN_VALUE: the smallest positive double


class JLong(int):
    """A Java ``Long`` (Python ``int`` stands for ``Integer``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"JLong({int(self)})"


def wrap32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def wrap64(v: int) -> int:
    v &= 0xFFFFFFFFFFFFFFFF
    return v - (1 << 64) if v & 0x8000000000000000 else v


def java_class(v) -> str:
    """The Java class name of a value (for messages)."""
    t = type(v)
    if v is None:
        return "null"
    return {bool: "Boolean", int: "Integer", JLong: "Long", float: "Double", str: "String"}.get(t, t.__name__)


def java_repr(v) -> str:
    """Roughly Java's ``toString`` of a value (for messages)."""
    if v is None:
        return "null"
    if type(v) is bool:
        return "true" if v else "false"
    if type(v) is float:
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
    return str(int(v)) if type(v) is JLong else str(v)


# ---- strings ---------------------------------------------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")


def canonical_string(s: str) -> str:
    """Java compares strings by UTF-16 code units. A Python str may hold a supplementary
    character either as one code point or as two surrogate code points; fold the second
    form into the first so that ``==`` agrees with ``String.equals``. Lone surrogates stay."""
    if s.isascii() or _SURROGATE.search(s) is None:
        return s
    return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _code_units(s: str) -> str:
    units = array("H")
    units.frombytes(s.encode("utf-16-le", "surrogatepass"))
    return "".join(map(chr, units))


def as_code_units(value: str, search: str) -> tuple[str, str]:
    """The two strings re-spelt one character per UTF-16 code unit when that can matter
    (a lone surrogate in either), so ``in``/``startswith``/``endswith`` act as Java's
    ``contains``/``startsWith``/``endsWith`` do."""
    if value.isascii() and search.isascii():
        return value, search
    if _SURROGATE.search(search) is None and _SURROGATE.search(value) is None:
        return value, search
    return _code_units(value), _code_units(search)


def string_compare(a: str, b: str) -> int:
    """``String.compareTo``: UTF-16 code unit order."""
    if a == b:
        return 0
    if a.isascii() and b.isascii():
        return -1 if a < b else 1
    ea, eb = a.encode("utf-16-be", "surrogatepass"), b.encode("utf-16-be", "surrogatepass")
    return -1 if ea < eb else (1 if ea > eb else 0)


def java_trim(s: str) -> str:
    """``String.trim()``: drop characters <= U+0020 at both ends."""
    start, end = 0, len(s)
    while start < end and s[start] <= " ":
        start += 1
    while end > start and s[end - 1] <= " ":
        end -= 1
    return s[start:end]


# ---- parsing (the NumberFormatException cases) -----------------------------------------

def _nfe(s: str) -> FilterEvaluateError:
    return FilterEvaluateError(f'For input string: "{s}"', "NumberFormatException")


def _java_digit(ch: str) -> int:
    """``Character.digit(ch, 10)`` for one UTF-16 code unit: any decimal digit (Nd) of the
    Basic Multilingual Plane counts, not just 0-9."""
    if "0" <= ch <= "9":
        return ord(ch) - 48
    if ord(ch) < 0x80 or ord(ch) > 0xFFFF:
        return -1
    if unicodedata.category(ch) != "Nd":
        return -1
    return unicodedata.decimal(ch, -1)


def _parse_integral(s: str, lo: int, hi: int) -> int:
    n = len(s)
    if n == 0:
        raise FilterEvaluateError('For input string: ""', "NumberFormatException")
    i = 0
    negative = False
    first = s[0]
    if first < "0":  # a possible sign, as Integer.parseInt tests it
        if first == "-":
            negative = True
        elif first != "+":
            raise _nfe(s)
        if n == 1:
            raise _nfe(s)
        i = 1
    if s.isascii():
        digits = s[i:]
        if not digits.isdigit():
            raise _nfe(s)
    else:
        out = []
        for ch in s[i:]:
            d = _java_digit(ch)
            if d < 0:
                raise _nfe(s)
            out.append(chr(48 + d))
        digits = "".join(out)
    digits = digits.lstrip("0") or "0"
    if len(digits) > 20:  # far beyond the long range, and below int()'s digit limit
        raise _nfe(s)
    value = int(digits)
    if negative:
        value = -value
    if not lo <= value <= hi:
        raise _nfe(s)
    return value


def parse_int(s: str) -> int:
    """``Integer.valueOf(String)``."""
    return _parse_integral(s, INT_MIN, INT_MAX)


def parse_long(s: str) -> JLong:
    """``Long.valueOf(String)``."""
    return JLong(_parse_integral(s, LONG_MIN, LONG_MAX))


_DOUBLE = re.compile(
    r"(?P<sign>[+-]?)(?:"
    r"(?P<nan>NaN)|(?P<inf>Infinity)"
    r"|(?P<dec>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]?"
    r"|0[xX](?P<hex>(?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?"
    r")")


def parse_double(s: str) -> float:
    """``Double.valueOf(String)``: Java's grammar (leading/trailing characters <= U+0020
    trimmed, optional sign, ``NaN``, ``Infinity``, decimal with optional exponent, hex
    with a binary exponent, an optional ``f``/``F``/``d``/``D`` suffix), correctly rounded."""
    t = java_trim(s)
    m = _DOUBLE.fullmatch(t)
    if m is None:
        raise _nfe(s)
    sign = -1.0 if m.group("sign") == "-" else 1.0
    if m.group("nan"):
        return math.nan
    if m.group("inf"):
        return sign * math.inf
    dec = m.group("dec")
    if dec is not None:
        return sign * float(dec)
    try:
        return sign * float.fromhex("0x" + m.group("hex"))
    except OverflowError:
        return sign * math.inf


def parse_boolean(s: str) -> bool:
    """``Boolean.valueOf(String)``: true only for "true" in any letter case."""
    return len(s) == 4 and s.isascii() and s.lower() == "true"


# ---- equality and ordering -------------------------------------------------------------

def double_compare(a: float, b: float) -> int:
    """``Double.compare``: -0.0 < 0.0, and NaN is above everything and equal to itself."""
    if a < b:
        return -1
    if a > b:
        return 1
    a_nan, b_nan = a != a, b != b
    if a_nan or b_nan:
        return 0 if a_nan and b_nan else (1 if a_nan else -1)
    if a == 0.0:  # both zero: order by sign
        sa, sb = math.copysign(1.0, a), math.copysign(1.0, b)
        return 0 if sa == sb else (-1 if sa < sb else 1)
    return 0


def java_equals(a, b) -> bool:
    """``a.equals(b)`` for two non-null values."""
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is float:
        return double_compare(a, b) == 0
    return a == b


def _compare_same(a, b) -> int:
    t = type(a)
    if t is float:
        return double_compare(a, b)
    if t is str:
        return string_compare(a, b)
    return -1 if a < b else (1 if a > b else 0)  # Integer, Long, Boolean (false < true)


def compare(lv, rv) -> int:
    """``ComparisonExpression.__compare(lv, rv, convertStringExpressions=true)`` for two
    non-null values: bring both to one class the way RocketMQ does, then ``compareTo``.

    Raises :class:`FilterEvaluateError` where RocketMQ throws: a string that does not parse
    as the other side's number class (NumberFormatException wrapped in RuntimeException),
    and a Boolean on the left of a String (RocketMQ casts the Boolean to String:
    ClassCastException). Pairs RocketMQ cannot convert compare as -1.
    """
    tl, tr = type(lv), type(rv)
    if tl is not tr:
        if tl is bool:
            if tr is str:
                raise FilterEvaluateError(
                    "java.lang.Boolean cannot be cast to java.lang.String (a Boolean compared "
                    "with a String on its right)", "ClassCastException")
            return -1
        try:
            if tl is int:
                if tr is JLong:
                    lv = JLong(lv)
                elif tr is float:
                    lv = float(lv)
                elif tr is str:
                    rv = parse_int(rv)
                else:
                    return -1
            elif tl is JLong:
                if tr is int:
                    rv = JLong(rv)
                elif tr is float:
                    lv = float(lv)
                elif tr is str:
                    rv = parse_long(rv)
                else:
                    return -1
            elif tl is float:
                if tr is int or tr is JLong:
                    rv = float(rv)
                elif tr is str:
                    rv = parse_double(rv)
                else:
                    return -1
            elif tl is str:
                if tr is bool:
                    lv = parse_boolean(lv)
                elif tr is int:
                    lv = parse_int(lv)
                elif tr is JLong:
                    lv = parse_long(lv)
                elif tr is float:
                    lv = parse_double(lv)
                else:
                    return -1
            else:
                return -1
        except FilterEvaluateError as exc:
            raise FilterEvaluateError(f"java.lang.NumberFormatException: {exc.message}",
                                      "RuntimeException") from None
    return _compare_same(lv, rv)
