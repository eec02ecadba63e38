"""Fuzz the SQL92 filter: a million generated selectors through compile and evaluate.

Inputs are a mix of selectors generated from the grammar (valid by construction), the
same selectors mutated (characters inserted, deleted, replaced; tokens swapped; cut
short), token soup, random text, and a few long or deeply nested inputs at and beyond the
limits. Each is compiled under one of the profiles and, when it compiles, evaluated on
random message properties, matched, and printed and compiled back (the reprint must be
an equal expression with the same outcome).

The only exceptions allowed out of the filter are FilterCompileError and
FilterEvaluateError; anything else is a crash. Each input runs under a SIGALRM watchdog
(--hang-seconds): an input that runs longer counts as a hang. Prints the number of
inputs, crashes, hangs, the slowest input's time and inputs per second; exits 1 when
there was a crash or a hang.

    python -m bench.fuzz_filter [--count N] [--seed S] [--hang-seconds T]
"""
from __future__ import annotations

import argparse
import random
import signal
import string
import sys
import time
import traceback

from rocketspec.rocketmq.filter import (
    MAX_DEPTH,
    MAX_EXPR_LENGTH,
    FilterCompileError,
    FilterEvaluateError,
    compile_sql92,
    sql92_match,
    stored_properties,
)
from rocketspec.rocketmq.profiles import get_profile

PROFILES = [get_profile("rocketmq-4.9.8"), get_profile("rocketmq-5.3.3")]
NAMES = ["a", "b", "c", "A", "x1", "_", "$", "$x_9", "now", "TAGS", "contains", "notx"]
KEYWORDS = ["NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS",
            "CONTAINS", "STARTSWITH", "ENDSWITH"]
PROP_VALUES = ["", "0", "1", "-1", "5", "6", "3.5", "1e2", "1E400", "-0.0", "NaN", "Infinity",
               "-Infinity", "true", "TRUE", "false", "yes", "abc", " 7 ", "+8", "0x1p3", "1.5f",
               "2147483647", "2147483648", "-2147483649", "9223372036854775807",
               "9223372036854775808", "\u0661\u0662", "\U0001F600", "\ud83d", "it's", "''", "a,b",
               "\x00", "x" * 300]
SOUP = ["a", "b", "A", "$x", "0", "1", "007", "1L", "2147483648", "99999999999999999999", "1.5",
        "0.0", ".5", "5.", "1e400", "1e-400", "1E2", "'s'", "''", "'it''s'", "'", "=", "<>", ">", ">=",
        "<", "<=", "(", ")", ",", "+", "-", "--", "/*", "*/", "*", "/", "\n", "\r\n", "\t", "\f", "\v",
        "#", "!", "==", "!=", "é", "\x00", "\U0001F600", "\ud800", ";", "."] + KEYWORDS + \
       [k.lower() for k in KEYWORDS]
WHITESPACE = [" ", " ", " ", "  ", "\n", "\t", "\r\n", "\f", " /* c */ ", " /**/ ", " -- c\n"]


class Hang(Exception):
    pass


def _on_alarm(signum, frame):
    raise Hang()


class Generator:
    """Random selectors from the grammar; with ``string_functions`` also CONTAINS etc."""

    def __init__(self, rng: random.Random):
        self.r = rng

    def ws(self) -> str:
        return self.r.choice(WHITESPACE)

    def kw(self, word: str) -> str:
        c = self.r.random()
        return word if c < 0.6 else word.lower() if c < 0.85 else word.capitalize()

    def name(self) -> str:
        r = self.r
        if r.random() < 0.8:
            return r.choice(NAMES[:10])
        first = r.choice(string.ascii_letters + "_$")
        return first + "".join(r.choice(string.ascii_letters + string.digits + "_$")
                               for _ in range(r.randrange(6)))

    def string_lit(self) -> str:
        r = self.r
        if r.random() < 0.5:
            s = r.choice(PROP_VALUES)
        else:
            s = "".join(r.choice("ab'xyz 1\u00e9\U0001F600") for _ in range(r.randrange(6)))
        return "'" + s.replace("'", "''") + "'"

    def number(self) -> str:
        r = self.r
        c = r.randrange(6)
        if c == 0:
            return str(r.randrange(0, 100))
        if c == 1:
            return str(r.randrange(1, 2**31)) + r.choice(["", "L", "l"])
        if c == 2:
            return str(r.randrange(2**31, 2**63))
        if c == 3:
            return repr(r.uniform(1e-3, 1e6))
        if c == 4:
            return f"{r.randrange(1, 100)}E{r.randrange(-20, 20)}"
        return r.choice(["5.", ".5", "1e2", "3.14", "4.9e-324", "1.7976931348623157e308"])

    def operand(self) -> str:
        base = self.name() if self.r.random() < 0.6 else self.number()
        return "- " * self.r.choice([0, 0, 0, 1, 2]) + base

    def condition(self, depth: int, sf: bool) -> str:
        r, s = self.r, self.ws()
        c = r.randrange(12 if depth < 4 else 8)
        if c == 0:
            return f"{self.operand()}{s}{r.choice(['>', '>=', '<', '<='])}{s}{self.operand()}"
        if c == 1:
            right = r.choice([self.string_lit, self.number, self.name, lambda: self.kw("TRUE")])()
            return f"{self.name()}{s}{r.choice(['=', '<>'])}{s}{right}"
        if c == 2:
            lo, hi = sorted([r.randrange(-50, 100), r.randrange(-50, 100)])
            neg = self.kw("NOT") + " " if r.random() < 0.3 else ""
            lo_t = str(lo) if lo >= 0 else f"-{-lo}"
            hi_t = str(hi) if hi >= 0 else f"-{-hi}"
            return f"{self.name()} {neg}{self.kw('BETWEEN')} {lo_t} {self.kw('AND')} {hi_t}"
        if c == 3:
            neg = self.kw("NOT") + " " if r.random() < 0.3 else ""
            values = ",".join(self.string_lit() for _ in range(r.randrange(1, 7)))
            return f"{self.name()} {neg}{self.kw('IN')} ({values})"
        if c == 4:
            neg = self.kw("NOT") + " " if r.random() < 0.5 else ""
            return f"{self.name()} {self.kw('IS')} {neg}{self.kw('NULL')}"
        if c == 5:
            return r.choice([self.name(), self.kw("TRUE"), self.kw("FALSE"), self.kw("NULL")])
        if c == 6:
            if not sf:
                return f"{self.name()} = {self.string_lit()}"
            neg = self.kw("NOT") + " " if r.random() < 0.3 else ""
            func = r.choice(["CONTAINS", "STARTSWITH", "ENDSWITH"])
            return f"{self.name()} {neg}{self.kw(func)} {self.string_lit()}"
        if c == 7:
            return f"{self.name()} = {self.kw(r.choice(['TRUE', 'FALSE']))}"
        if c == 8:
            return f"{self.kw('NOT')} ({self.condition(depth + 1, sf)})"
        if c == 9:
            return f"({self.condition(depth + 1, sf)})"
        word = self.kw("AND" if c == 10 else "OR")
        parts = [self.condition(depth + 1, sf) for _ in range(r.randrange(2, 4))]
        return f"{s}{word}{s}".join(f"({p})" for p in parts)

    def mutate(self, text: str) -> str:
        r = self.r
        chars = list(text)
        for _ in range(r.randrange(1, 4)):
            op = r.randrange(6)
            i = r.randrange(len(chars) + 1)
            if op == 0 and chars:
                del chars[min(i, len(chars) - 1)]
            elif op == 1:
                chars.insert(i, r.choice(SOUP))
            elif op == 2 and chars:
                chars[min(i, len(chars) - 1)] = r.choice(SOUP)
            elif op == 3:
                chars = chars[:i]
            elif op == 4 and len(chars) > 2:
                j = r.randrange(len(chars))
                chars[i % len(chars)], chars[j] = chars[j], chars[i % len(chars)]
            else:
                chars.insert(i, " " + r.choice(KEYWORDS) + " ")
        return "".join(chars)

    def soup(self) -> str:
        r = self.r
        return r.choice(["", " ", ""]).join(r.choice(SOUP) for _ in range(r.randrange(0, 16)))

    def noise(self) -> str:
        r = self.r
        alphabet = string.printable + "\u00e9\u0661\U0001F600\ud800\x00\x7f"
        return "".join(r.choice(alphabet) for _ in range(r.randrange(0, 40)))

    def big(self) -> str:
        r = self.r
        c = r.randrange(8)
        # around the parentheses limit (MAX_DEPTH), and deeper than any limit
        n = r.choice([MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 500, 5000, 20000])
        if c == 0:
            return "(" * n + "a > 1" + ")" * n
        if c == 1:
            return "NOT " * n + "a"
        if c == 2:
            return " AND ".join(f"p{i} = {i}" for i in range(n))
        if c == 3:
            return "a = a" + " = a" * n
        if c == 4:
            return "- " * n + "1 < a"
        if c == 5:
            return "a = '" + "x" * r.choice([MAX_EXPR_LENGTH - 10, MAX_EXPR_LENGTH + 10])
        if c == 6:
            return "a IN (" + ",".join(f"'{i}'" for i in range(n)) + ")"
        return "--" * n

    def props(self) -> dict[str, str]:
        r = self.r
        out = {}
        for _ in range(r.randrange(0, 5)):
            key = r.choice(NAMES + ["p0", "p1", "B"])
            if r.random() < 0.7:
                value = r.choice(PROP_VALUES)
            elif r.random() < 0.5:
                value = str(r.randrange(-10**12, 10**12))
            else:
                value = repr(r.uniform(-1e3, 1e3))
            out[key] = value
        return out

    def expression(self, sf: bool) -> tuple[str, str]:
        c = self.r.random()
        if c < 0.40:
            return "grammar", self.condition(0, sf)
        if c < 0.75:
            return "mutated", self.mutate(self.condition(0, sf))
        if c < 0.88:
            return "soup", self.soup()
        if c < 0.999:
            return "noise", self.noise()
        return "big", self.big()


def outcome(expression, props):
    try:
        return expression.evaluate(props)
    except FilterEvaluateError:
        return "error"


def run_one(text: str, profile, props: dict, stats: dict) -> None:
    """Compile, evaluate, match and reprint one input; only the filter errors may escape."""
    try:
        compiled = compile_sql92(text, profile, cache=False)
    except FilterCompileError as exc:
        if not str(exc):
            raise AssertionError("a compile error without a message") from None
        stats["compile_errors"] += 1
        return
    stats["compiled"] += 1
    result = outcome(compiled, props)
    if result not in (True, False, None, "error"):
        raise AssertionError(f"evaluate returned {result!r}")
    stats["results"][result] = stats["results"].get(result, 0) + 1
    if sql92_match(compiled, props) is not (outcome(compiled, stored_properties(props)) is True):
        raise AssertionError("sql92_match disagrees with evaluate on the stored properties")
    reprinted = compile_sql92(compiled.to_sql(), profile, cache=False)
    if reprinted != compiled or outcome(reprinted, props) != result:
        raise AssertionError(f"reprint differs: {compiled.to_sql()!r}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fuzz_filter", description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=1_000_000, help="inputs to run (default 1000000)")
    parser.add_argument("--seed", type=int, default=20240604, help="random seed")
    parser.add_argument("--hang-seconds", type=float, default=5.0,
                        help="an input running longer than this is a hang (default 5)")
    parser.add_argument("--progress", type=int, default=0, help="print progress every N inputs")
    args = parser.parse_args(argv if argv is not None else sys.argv[1:])

    rng = random.Random(args.seed)
    gen = Generator(rng)
    stats = {"compiled": 0, "compile_errors": 0, "results": {}}
    kinds: dict[str, int] = {}
    crashes: list[tuple[str, str, str, dict, str]] = []
    hangs: list[tuple[str, str]] = []
    slowest = (0.0, "", "")
    use_alarm = hasattr(signal, "setitimer")
    if use_alarm:
        previous = signal.signal(signal.SIGALRM, _on_alarm)
    clock = time.perf_counter
    start = clock()
    try:
        for i in range(args.count):
            profile = PROFILES[i & 1]
            kind, text = gen.expression(profile.sql_string_functions)
            props = gen.props()
            kinds[kind] = kinds.get(kind, 0) + 1
            t0 = clock()
            try:
                if use_alarm:
                    signal.setitimer(signal.ITIMER_REAL, args.hang_seconds)
                try:
                    run_one(text, profile, props, stats)
                finally:
                    if use_alarm:
                        signal.setitimer(signal.ITIMER_REAL, 0)
            except Hang:
                hangs.append((profile.name, text))
            except Exception as exc:  # noqa: BLE001 - anything else is what we look for
                crashes.append((profile.name, kind, text, props, "".join(
                    traceback.format_exception_only(type(exc), exc)).strip()))
            elapsed = clock() - t0
            if elapsed > slowest[0]:
                slowest = (elapsed, kind, text)
            if args.progress and (i + 1) % args.progress == 0:
                print(f"  {i + 1} inputs, {clock() - start:.1f} s", flush=True)
    finally:
        if use_alarm:
            signal.signal(signal.SIGALRM, previous)
    total = clock() - start

    n = args.count
    res = stats["results"]
    print(f"inputs run:          {n}  (seed {args.seed}; "
          + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())) + ")")
    print(f"compiled:            {stats['compiled']}  (compile errors {stats['compile_errors']})")
    print(f"evaluations:         TRUE {res.get(True, 0)}, FALSE {res.get(False, 0)}, "
          f"null {res.get(None, 0)}, evaluate errors {res.get('error', 0)}")
    print(f"crashes:             {len(crashes)}")
    print(f"hangs (> {args.hang_seconds:g} s):      {len(hangs)}")
    shown = slowest[2] if len(slowest[2]) <= 60 else slowest[2][:57] + "..."
    print(f"slowest input:       {slowest[0] * 1000:.2f} ms  ({slowest[1]}, {len(slowest[2])} chars: {shown!r})")
    print(f"throughput:          {n / total:.0f} inputs/s  ({total:.1f} s in all)")
    for profile, kind, text, props, err in crashes[:10]:
        print(f"CRASH [{profile}, {kind}] {text!r} props={props!r}: {err}")
    for profile, text in hangs[:10]:
        print(f"HANG [{profile}] {text[:200]!r}")
    return 1 if crashes or hangs else 0


if __name__ == "__main__":
    sys.exit(main())
