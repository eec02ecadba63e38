"""The selector's tokens, as ``SelectorParser.jj`` (JavaCC) defines them.

* Skipped: the white space characters space, tab, LF, CR and FF (nothing else: a vertical
  tab or a no-break space is a lexical error); ``--`` line comments, which must end with
  LF, CR or CRLF (at the very end of the input ``--x`` is two ``-`` tokens and an
  identifier); ``/* */`` block comments (an unterminated one is a lexical error).
* Keywords, case-insensitive: NOT AND OR BETWEEN IN TRUE FALSE NULL IS, and with the
  profile's ``sql_string_functions`` also CONTAINS STARTSWITH ENDSWITH (otherwise those
  three words are ordinary identifiers, as in the 4.9.x grammar).
* DECIMAL_LITERAL ``0 | [1-9][0-9]*[lL]?``; FLOATING_POINT_LITERAL ``[0-9]+ . [0-9]*
  exp? | . [0-9]+ exp? | [0-9]+ exp`` with ``exp = [eE][+-]?[0-9]+``; there are no hex
  or octal literals.
* STRING_LITERAL: single quotes, ``''`` inside stands for one quote; any other
  character, line breaks included, is taken as it is.
* ID ``[a-zA-Z_$][a-zA-Z0-9_$]*`` (ASCII only; case-sensitive).
* Operators ``= <> > >= < <= ( ) , + -``.

Like JavaCC, the scanner takes the longest match at each position (``007`` is the tokens
``0``, ``0``, ``7``; ``1abc`` is ``1`` then ``abc``) and runs only when the parser asks
for the next token, so a lexical error after the point where the parser stops is never
seen. Each token is found with one anchored regular expression whose alternatives cannot
backtrack more than linearly, so scanning is linear in the input length.
"""
from __future__ import annotations

import re
from typing import NamedTuple

from .errors import FilterCompileError

# token kinds
EOF = "EOF"
DECIMAL = "DECIMAL_LITERAL"
FLOAT = "FLOATING_POINT_LITERAL"
STRING = "STRING_LITERAL"
ID = "ID"
EQ, NE, GT, GE, LT, LE = "=", "<>", ">", ">=", "<", "<="
LPAREN, RPAREN, COMMA, PLUS, MINUS = "(", ")", ",", "+", "-"
NOT, AND, OR, BETWEEN, IN, TRUE, FALSE, NULL, IS = (
    "NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS")
CONTAINS, STARTSWITH, ENDSWITH = "CONTAINS", "STARTSWITH", "ENDSWITH"

BASE_KEYWORDS = frozenset({NOT, AND, OR, BETWEEN, IN, TRUE, FALSE, NULL, IS})
STRING_FUNCTION_KEYWORDS = frozenset({CONTAINS, STARTSWITH, ENDSWITH})


class Token(NamedTuple):
    kind: str
    text: str
    pos: int

    def describe(self) -> str:
        if self.kind == EOF:
            return "<EOF>"
        if self.kind in (DECIMAL, FLOAT, STRING, ID):
            shown = self.text if len(self.text) <= 40 else self.text[:37] + "..."
            return f"{self.kind.lower().replace('_', ' ')} {shown!r}"
        return repr(self.text)


# Alternatives are ordered so that Python's first match is JavaCC's longest match: a
# float literal is always longer than the decimal literal at the same place. Line
# comments are handled before the expression (see Lexer.next) so that a run of '-'
# without a line break after it is not rescanned to the end at every position.
_TOKEN = re.compile(r"""
    (?P<skip>[ \t\n\r\f]+
        | /\*[^*]*\*+(?:[^/*][^*]*\*+)*/ )
  | (?P<FLOATING_POINT_LITERAL>
          [0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?
        | \.[0-9]+(?:[eE][+-]?[0-9]+)?
        | [0-9]+[eE][+-]?[0-9]+ )
  | (?P<DECIMAL_LITERAL>0|[1-9][0-9]*[lL]?)
  # a run of non-quotes is taken whole (possessive), so a long literal is one backtracking
  # state, not one per character; the loop itself still backtracks as JavaCC's longest match needs
  | (?P<STRING_LITERAL>'(?:[^']++|'')*')
  | (?P<ID>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<op><>|<=|>=|[=<>(),+\-])
""", re.VERBOSE)
_LINE_BREAK = re.compile(r"[\n\r]")


class Lexer:
    """Hands out tokens on demand; ``keywords`` is the profile's keyword set."""

    __slots__ = ("src", "pos", "keywords", "last_break")

    def __init__(self, src: str, keywords: frozenset[str]):
        self.src = src
        self.pos = 0
        self.keywords = keywords
        # A '--' comment needs a line break after it; past the last one there is none.
        self.last_break = max(src.rfind("\n"), src.rfind("\r"))

    def next(self) -> Token:
        src, match = self.src, _TOKEN.match
        n = len(src)
        pos = self.pos
        while True:
            if pos >= n:
                self.pos = pos
                return Token(EOF, "", pos)
            if src.startswith("--", pos) and self.last_break > pos + 1:
                # a complete line comment: up to and including the first line break
                end = _LINE_BREAK.search(src, pos + 2).start()
                if src[end] == "\r" and src.startswith("\n", end + 1):
                    end += 1
                pos = end + 1
                continue
            m = match(src, pos)
            if m is None:
                self.pos = pos
                raise self._lexical_error(pos)
            kind = m.lastgroup
            end = m.end()
            if kind == "skip":
                pos = end
                continue
            text = m.group()
            self.pos = end
            if kind == "op":
                return Token(text, text, pos)
            if kind == ID:
                upper = text.upper()
                if upper in self.keywords:
                    return Token(upper, text, pos)
            return Token(kind, text, pos)

    def _lexical_error(self, pos: int) -> FilterCompileError:
        src = self.src
        ch = src[pos]
        if src.startswith("/*", pos):
            what = "an unterminated /* comment"
        elif ch == "'":
            what = "an unterminated string literal"
        else:
            what = f"the character {ch!r} (U+{ord(ch):04X})"
        return FilterCompileError(f"Lexical error: {what} cannot start a token", expr=src, position=pos)
