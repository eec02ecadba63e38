"""`rocketspec filter`: tag codes, subscriptions and SQL92 selectors as JSON Lines.

One request object per input line, one answer object per output line, in order, flushed
after each line.

Requests (each object has exactly one of "expr", "tag", "sub"):

\b
  {"id": any, "expr": "a > 5", "props": {"a": "6"}, "profile": "rocketmq-5.3.3"}
      compile the SQL92 selector as the profile's broker does and evaluate it on the
      message's properties (strings) as the broker stores them: a property with an empty
      name or value is absent there, so null ("props" may be omitted or null for none;
      "profile" may be omitted or null for --profile)
  {"id": any, "tag": "TagA"}
      the consume-queue tags code of a message tag (null or "" gives 0)
  {"id": any, "sub": "TagA || TagB", "type": "TAG"}
      the subscription FilterAPI builds ("type" TAG or SQL92; default TAG)

Answers:

\b
  {"id": ..., "ok": true, "result": true|false|null, "matched": true|false}
      "matched" is the broker's decision: only a TRUE result matches
  {"id": ..., "ok": false, "phase": "compile"|"evaluate", "error": "..."}
      the selector does not compile (with the position), or evaluating it throws in
      RocketMQ (the broker then does not match the message)
  {"id": ..., "ok": true, "tags_code": 2598919}
  {"id": ..., "ok": true, "sub_string": "...", "expression_type": "TAG",
   "tags": ["TagA", "TagB"], "codes": [2598919, 2598920]}
  {"id": ..., "ok": false, "phase": "subscription", "error": "..."}
      FilterAPI rejects the subscription (for example "||", or an empty SQL92 one)
  {"id": ..., "ok": false, "phase": "input", "line": N, "error": "line N: ..."}
      a line that is not a valid request (not JSON, not an object, a missing or
      ill-typed field, an unknown profile, ...)

Blank lines are skipped. Exit status: 0 once every line has been read and answered, even
when some answers are errors; 2 for a usage error (bad option, unknown --profile,
unreadable --input file); 1 if the output is closed before the input ends.
"""
from __future__ import annotations

from typing import Any

import click

from rocketspec.commands.jsonlines import LineError, decode, serve, type_name
from rocketspec.rocketmq.filter import (
    FilterCompileError,
    FilterEvaluateError,
    SubscriptionError,
    build_subscription,
    compile_sql92,
    stored_properties,
    tags_code,
)
from rocketspec.rocketmq.profiles import PROFILES, UnknownProfile, get_profile

KINDS = ("expr", "tag", "sub")
FIELDS = {
    "expr": frozenset({"id", "expr", "props", "profile"}),
    "tag": frozenset({"id", "tag"}),
    "sub": frozenset({"id", "sub", "type"}),
}


class BadRequest(Exception):
    """The line is not a valid request; the message says what was expected."""


def _kind(obj: dict) -> str:
    present = [k for k in KINDS if k in obj]
    if len(present) != 1:
        if not present:
            raise BadRequest('expected one of the fields "expr", "tag" or "sub"')
        raise BadRequest(f"fields {', '.join(map(repr, present))} exclude each other: give one")
    kind = present[0]
    unknown = sorted(set(obj) - FIELDS[kind])
    if unknown:
        raise BadRequest(f"unknown field(s) {', '.join(map(repr, unknown))} for a {kind!r} request; "
                         f"expected only {', '.join(sorted(FIELDS[kind]))}")
    return kind


def answer_expr(obj: dict, default_profile: str) -> dict:
    expr = obj["expr"]
    if not isinstance(expr, str):
        raise BadRequest(f"field 'expr': expected a string, got {type_name(expr)}")
    props = obj.get("props")
    if props is None:
        props = {}
    if not isinstance(props, dict):
        raise BadRequest(f"field 'props': expected an object of string values, got {type_name(props)}")
    for key, value in props.items():
        if not isinstance(value, str):
            raise BadRequest(f"field 'props' key {key!r}: expected a string value (the broker sees "
                             f"every property as a string), got {type_name(value)}")
    profile = obj.get("profile")
    if profile is None:
        profile = default_profile
    elif not isinstance(profile, str):
        raise BadRequest(f"field 'profile': expected a profile name, got {type_name(profile)}")
    try:
        prof = get_profile(profile)
    except UnknownProfile as exc:
        raise BadRequest(f"field 'profile': {exc}") from None

    try:
        compiled = compile_sql92(expr, prof)
    except FilterCompileError as exc:
        return {"ok": False, "phase": "compile", "error": str(exc)}
    try:
        result = compiled.evaluate(stored_properties(props))
    except FilterEvaluateError as exc:
        return {"ok": False, "phase": "evaluate", "error": str(exc)}
    return {"ok": True, "result": result, "matched": result is True}


def answer_tag(obj: dict) -> dict:
    tag = obj["tag"]
    if tag is not None and not isinstance(tag, str):
        raise BadRequest(f"field 'tag': expected a string or null, got {type_name(tag)}")
    return {"ok": True, "tags_code": tags_code(tag)}


def answer_sub(obj: dict) -> dict:
    sub = obj["sub"]
    if sub is not None and not isinstance(sub, str):
        raise BadRequest(f"field 'sub': expected a string or null, got {type_name(sub)}")
    etype = obj.get("type", "TAG")
    if etype is None:
        etype = "TAG"
    if etype not in ("TAG", "SQL92"):
        got = repr(etype) if isinstance(etype, str) else type_name(etype)
        raise BadRequest(f"field 'type': expected \"TAG\" or \"SQL92\", got {got}")
    try:
        data = build_subscription(sub, etype)
    except SubscriptionError as exc:
        return {"ok": False, "phase": "subscription", "error": str(exc)}
    return {"ok": True, "sub_string": data.sub_string, "expression_type": data.expression_type,
            "tags": list(data.tags_set), "codes": list(data.code_set)}


def answer_line(raw: bytes, lineno: int, default_profile: str) -> dict | None:
    """The answer to one input line, or None for a blank line."""
    if not raw.strip():
        return None

    def bad(rid: Any, message: str) -> dict:
        return {"id": rid, "ok": False, "phase": "input", "line": lineno, "error": f"line {lineno}: {message}"}

    try:
        obj = decode(raw)
    except LineError as exc:
        return bad(None, str(exc))
    if not isinstance(obj, dict):
        return bad(None, f"expected a JSON object, got {type_name(obj)}")
    rid = obj.get("id")
    try:
        kind = _kind(obj)
        if kind == "expr":
            answer = answer_expr(obj, default_profile)
        elif kind == "tag":
            answer = answer_tag(obj)
        else:
            answer = answer_sub(obj)
    except BadRequest as exc:
        return bad(rid, str(exc))
    return {"id": rid, **answer}


@click.command("filter", help=__doc__.split("\n", 2)[2],
               short_help="Tag and SQL92 filter evaluation as JSON Lines.")
@click.option("--input", "input_file", type=click.File("rb"), default="-", metavar="FILE",
              show_default=True, help="Read requests from FILE instead of standard input.")
@click.option("--profile", "default_profile", default=None, metavar="NAME",
              help=f"Profile for requests without one (default: {get_profile(None).name}; "
                   f"known: {', '.join(sorted(PROFILES))}).")
def filter_cmd(input_file, default_profile):
    try:
        default_profile = get_profile(default_profile).name
    except UnknownProfile as exc:
        raise click.BadParameter(str(exc), param_hint="--profile") from None
    serve(input_file, lambda raw, lineno: answer_line(raw, lineno, default_profile))
