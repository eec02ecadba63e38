"""Hypothesis strategies for SQL92 selectors and message properties, for the differential
test against RocketMQ's own filter (conformance/java/SqlDiff.java, `realdiff.RealSql92`).

`selectors()` draws texts over RocketMQ's grammar (SelectorParser.jj): comparisons, BETWEEN,
IN, IS [NOT] NULL, NOT/AND/OR, CONTAINS/STARTSWITH/ENDSWITH (identifiers in 4.9.x), string,
integer, long and floating literals, TRUE/FALSE/NULL, signs, parentheses, chained comparisons, keywords in any letter case, comments and odd white
space, and - on purpose - illegal forms: literals out of range, semantic errors (a string
on either side of ``>``, NULL in ``=``), dropped or trailing tokens. `properties()` draws a
message's properties over the same names and over values that meet the literals (numbers as
strings, padded or signed numbers, booleans, empty strings), with keys left out (null) and
TAGS among them. `requests()` gives {expr, props}.
"""
from __future__ import annotations

from hypothesis import strategies as st

NAMES = ["a", "b", "c", "TAGS", "KEYS", "A", "n_1", "$x", "CONTAINS", "Nul"]

INT_TEXTS = ["0", "1", "5", "10", "07", "00", "2147483647", "2147483648", "9223372036854775807",
             "9223372036854775808", "1L", "5l", "99999999999999999999", "1_0"]
FLOAT_TEXTS = ["1.5", "1.", "0.5", ".5", "1e3", "1E-3", "3.14e+2", "5.0", "1e308", "1e309", "0.0", "0.", ".0",
               "0e5", "1e-400", "4.9e-324", "2.5E1", "1d", "1f"]
STRING_TEXTS = ["", "x", "abc", "5", "1.5", "it's", "TRUE", "true", "'", "a b", "%_", "\u00e9", "\n", "5 ", "-5",
                "NaN", "Infinity", "1e3", "9223372036854775808"]
VALUE_TEXTS = ["x", "abc", "5", "1.5", "", " 5", "5 ", "+5", "-5", "1e3", "0x10", "NaN", "Infinity", "-Infinity",
               "-0", "0", "10", "2147483647", "2147483648", "9223372036854775807", "9223372036854775808", "true",
               "TRUE", "false", "it's", "\u00e9", "1L", "07", "5.0", "1.", ".5", "1d", "0.1", "4.9e-324", "1e309",
               "\uff15", "%_", "a b"]
KEYWORDS = {"NOT", "AND", "OR", "BETWEEN", "IN", "IS", "NULL", "TRUE", "FALSE"}
SEPARATORS = [" "] * 12 + ["  ", "\t", "\n", "\r\n", "\f", "/* c */", " /**/ ", "-- c\n",
              "\u000b", "\u00a0"]     # the last two are lexical errors
TRAILERS = [" b", ")", " #", " NOT", " 1", " 'x'", " IS", " AND", " =", " ,", " OR a", "  ", " -- end", ";"]


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


_CASES = {w: st.sampled_from([w, w, w.lower(), w.capitalize()]) for w in KEYWORDS}

names = st.sampled_from(NAMES)
ints = st.one_of(st.sampled_from(INT_TEXTS), st.integers(0, 2**63 - 1).map(str), st.integers(0, 20).map(str))
floats = st.one_of(st.sampled_from(FLOAT_TEXTS),
                   st.floats(min_value=1e-300, max_value=1e300).map(repr))
strings = st.one_of(st.sampled_from(STRING_TEXTS).map(_quote),
                    st.text(alphabet="ab'5. ", max_size=4).map(_quote))
numbers = st.one_of(ints, floats)
constants = st.sampled_from(["TRUE", "FALSE", "NULL"])
signs = st.sampled_from(["-", "+", "-", "- -", "-+"])


def _tokens(s: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    return s.map(lambda t: [t])


# Values by the use the grammar allows them (mostly legal; `anything` gives the rest).
numeric = st.deferred(lambda: st.one_of(
    _tokens(names), _tokens(names), _tokens(numbers), _tokens(numbers),
    st.tuples(signs, numeric).map(lambda x: [x[0]] + x[1]),
    numeric.map(lambda t: ["("] + t + [")"])))
anything = st.deferred(lambda: st.one_of(
    numeric, _tokens(strings), _tokens(constants),
    st.tuples(signs, anything).map(lambda x: [x[0]] + x[1]),
    anything.map(lambda t: ["("] + t + [")"])))
equatable = st.one_of(numeric, _tokens(strings), anything)      # = and <>
ordered = st.one_of(numeric, numeric, numeric, anything)         # > >= < <= BETWEEN
in_items = st.integers(0, 9).flatmap(      # an empty list or a non-string item: one in ten
    lambda i: st.lists(st.one_of(strings, numbers, names), max_size=3) if i == 7
    else st.lists(strings, min_size=1, max_size=4))
in_lists = in_items.map(lambda items: ["("] + [t for i, it in enumerate(items) for t in ([","] if i else []) + [it]]
                        + [")"])
in_left = st.one_of(_tokens(names), _tokens(names), _tokens(names), anything)
negated = st.sampled_from([[], [], ["NOT"]])


@st.composite
def _atom(draw) -> list[str]:
    kind = draw(st.sampled_from(["eq"] * 4 + ["cmp"] * 4 + ["between", "between", "in", "in", "null", "null",
                                                              "bare", "bool", "chain", "strfunc"]))
    if kind == "eq":
        return draw(equatable) + [draw(st.sampled_from(["=", "<>"]))] + draw(equatable)
    if kind == "cmp":
        return draw(ordered) + [draw(st.sampled_from([">", ">=", "<", "<="]))] + draw(ordered)
    if kind == "chain":      # a = b = c, a > b > c: left-associative, legal or not
        return (draw(anything) + [draw(st.sampled_from(["=", "<>", ">", "<"]))] + draw(anything)
                + [draw(st.sampled_from(["=", "<>", ">", "<", "="]))] + draw(anything))
    if kind == "between":
        return draw(ordered) + draw(negated) + ["BETWEEN"] + draw(ordered) + ["AND"] + draw(ordered)
    if kind == "in":
        return draw(in_left) + draw(negated) + ["IN"] + draw(in_lists)
    if kind == "null":
        return draw(anything) + ["IS"] + draw(negated) + ["NULL"]
    if kind == "strfunc":    # 5.1.3+ functions; in 4.9.x's grammar CONTAINS... are identifiers
        return (draw(in_left) + draw(negated) + [draw(st.sampled_from(["CONTAINS", "STARTSWITH", "ENDSWITH"]))]
                + [draw(strings)])
    if kind == "bare":
        return [draw(names)]
    return [draw(constants)]


atoms = _atom()

# A condition: atoms joined by NOT, AND, OR and parentheses, or compared with a value.
conditions = st.recursive(
    atoms,
    lambda inner: st.one_of(
        inner.map(lambda t: ["NOT", "("] + t + [")"]),
        # NOT binds tighter than = and >: NOT before a comparison is mostly illegal
        inner.map(lambda t: ["NOT"] + t if t[0] == "(" or len(t) == 1 or t[0] == "NOT" else ["NOT", "("] + t + [")"]),
        inner.map(lambda t: ["("] + t + [")"]),
        st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(lambda x: x[0] + [x[1]] + x[2]),
        st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(lambda x: ["("] + x[0] + [x[1]] + x[2] + [")"]),
        st.tuples(inner, st.sampled_from(["=", "<>", "IS"]), equatable).map(
            lambda x: ["("] + x[0] + [")", x[1]] + (["NULL"] if x[1] == "IS" else x[2])),
    ),
    max_leaves=6,
)
plain_space = st.just(" ")
odd_space = st.sampled_from(SEPARATORS)
legal_space = st.sampled_from(SEPARATORS[:-2])


@st.composite
def _selector(draw) -> str:
    tokens = list(draw(conditions))
    if len(tokens) > 1 and draw(st.integers(0, 19)) == 7:      # a token dropped: mostly illegal
        del tokens[draw(st.integers(0, len(tokens) - 1))]
    space = odd_space if draw(st.integers(0, 19)) == 7 else legal_space if draw(st.integers(0, 4)) == 3 else plain_space
    text = ""
    for i, tok in enumerate(tokens):
        case = _CASES.get(tok)
        if case is not None:
            tok = draw(case)
        text += (draw(space) if i else "") + tok
    if draw(st.integers(0, 9)) == 7:
        text += draw(st.sampled_from(TRAILERS))
    if draw(st.integers(0, 19)) == 7:
        text = draw(legal_space) + text
    return text


def selectors() -> st.SearchStrategy[str]:
    return _selector()


values = st.one_of(st.sampled_from(VALUE_TEXTS), st.sampled_from(STRING_TEXTS), st.integers(-2**64, 2**64).map(str),
                   st.floats(allow_nan=False).map(repr), st.text(alphabet="ab5.-e ", max_size=4))


def properties() -> st.SearchStrategy[dict[str, str]]:
    """A message's properties as the broker decodes them: string keys and values (keys
    left out are null), without the characters U+0001 and U+0002 that separate them on the
    wire."""
    return st.dictionaries(names, values, max_size=5)


def requests() -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({"expr": selectors(), "props": properties()})
