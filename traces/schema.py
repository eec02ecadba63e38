"""Trace schema (version 5): loading the machine-readable schema and validating events.

The schema file (`schema_v2.json`, which holds version 5) is the contract; this module is the one place that
interprets it. Each version only adds to the one before (version 2: new kinds, optional fields,
new values; version 3: the POP kinds and their fields; version 4: client_start_returned; version 5: pop_response_lost), so one
schema reads them all; `trace_started.schema_version` must be one of `SUPPORTED_VERSIONS`.
Validation reports what was expected, never raises on user data.
"""
from __future__ import annotations

import json
import reprlib
from functools import lru_cache
from importlib import resources

SCHEMA_VERSION = 5                  # what the reference emits
SUPPORTED_VERSIONS = (1, 2, 3, 4, 5) # what the readers and the checker accept
SCHEMA_FILE = "schema_v2.json"
ENVELOPE = ("seq", "ts", "kind")
ENVELOPE_OPTIONAL = ("obs",)        # v2: how the recorder knows the event (exact | sampled | inferred)
OBS_VALUES = ("exact", "sampled", "inferred")
# trace_started.observed (v2, optional): the sides a trace observed; absent means all of them
OBSERVED_SIDES = ("broker", "client_reports", "client_internals")


@lru_cache(maxsize=1)
def load_schema() -> dict:
    return json.loads(resources.files("rocketspec.traces").joinpath(SCHEMA_FILE).read_text())


def kinds() -> dict[str, dict]:
    return load_schema()["kinds"]


def fields() -> dict[str, dict]:
    return load_schema()["fields"]


def _type_ok(typ: str, value) -> bool:
    if typ == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if typ == "str":
        return isinstance(value, str)
    if typ == "bool":
        return isinstance(value, bool)
    if typ == "int_list":
        return isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    if typ == "str_list":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return True  # json: any value


def _queue(m) -> bool:
    return type(m) is list and len(m) == 3 and type(m[0]) is str and type(m[1]) is str and type(m[2]) is int


def _queues(v) -> bool:
    return type(v) is list and all(_queue(m) for m in v)


# fields whose contents the spec reads, and what each must hold: checked with the types, so
# that a trace with another value is bad input at its line, not a traceback in the spec
JSON_SHAPES = {
    # RocketMQ refuses a blank topic (Validators.checkTopic, the broker's TopicValidator)
    "topic": ("a topic name (a non-empty string)", lambda v: type(v) is str and v != ""),
    "mqs": ("a list of queues [topic, broker, queueId]", _queues),
    "allocated": ("a list of queues [topic, broker, queueId]", _queues),
    "queues": ("a list of queues [topic, broker, queueId]", _queues),
    "cids": ("a list of client ids (strings)", lambda v: type(v) is list and all(type(c) is str for c in v)),
    "config": ("an object", lambda v: type(v) is dict),
    "subscriptions": ('an object {topic: {"type": "TAG"|"SQL92", "expr": "..."}}', lambda v: type(v) is dict and all(
        type(x) is dict and all(x.get(k) is None or type(x[k]) is str for k in ("type", "expr")) for x in v.values())),
}

_BRIEF = reprlib.Repr()
_BRIEF.maxlevel, _BRIEF.maxstring, _BRIEF.maxother = 3, 80, 80
_BRIEF.maxlist = _BRIEF.maxtuple = _BRIEF.maxdict = 8


def brief(value) -> str:
    """repr() cut short: a value in a message may be 70,000 characters long or nested 1,000 deep."""
    return _BRIEF.repr(value)


@lru_cache(maxsize=None)
def _kind_rules(kind: str):
    kd = kinds()[kind]
    ftypes = fields()
    required = tuple((n, ftypes[n]["type"]) for n in kd["required"])
    allowed = {n: ftypes[n]["type"] for n in (*ENVELOPE, *ENVELOPE_OPTIONAL, *kd["required"], *kd["optional"])}
    return required, allowed


def validate_event(event) -> str | None:
    """Return None if `event` is a valid event of a supported version, else a sentence saying what was expected."""
    if not isinstance(event, dict):
        return f"expected a JSON object, got {type(event).__name__}"
    for name in ENVELOPE:
        if event.get(name) is None:
            return f"missing envelope field {name!r}"
    kind = event["kind"]
    if not isinstance(kind, str) or kind not in kinds():
        return f"unknown event kind {brief(kind)} (schema v{SCHEMA_VERSION} has {len(kinds())} kinds)"
    for name in ("seq", "ts"):
        if not _type_ok("int", event[name]):
            return f"field {name!r} must be an integer, got {brief(event[name])}"
    required, allowed = _kind_rules(kind)
    for name, typ in required:
        if event.get(name) is None:
            return f"{kind}: missing required field {name!r}"
    for name, value in event.items():
        typ = allowed.get(name)
        if typ is None:
            return f"{kind}: field {name!r} is not part of this kind in schema v{SCHEMA_VERSION}"
        if value is not None and not _type_ok(typ, value):
            return f"{kind}: field {name!r} must be {typ}, got {brief(value)}"
        shape = JSON_SHAPES.get(name)
        if shape is not None and value is not None and not shape[1](value):
            return f"{kind}: field {name!r} must be {shape[0]}, got {brief(value)}"
    obs = event.get("obs")
    if obs is not None and obs not in OBS_VALUES:
        return f"{kind}: field 'obs' must be one of {', '.join(OBS_VALUES)}, got {brief(obs)}"
    if kind == "trace_started":
        return version_problem(event["schema_version"]) or observed_problem(event.get("observed"))
    return None


def version_problem(version) -> str | None:
    """None if a trace_started `schema_version` is one this code reads, else what was expected."""
    if type(version) is int and version in SUPPORTED_VERSIONS:
        return None
    known = ", ".join(map(str, SUPPORTED_VERSIONS))
    return (f"trace_started: schema_version {brief(version)} is not supported; this rocketspec reads "
            f"schema version{'s' if len(SUPPORTED_VERSIONS) > 1 else ''} {known}")


def observed_problem(observed) -> str | None:
    """None if a trace_started `observed` is absent or a valid list of sides, else what was expected."""
    if observed is None or (0 < len(observed) == len(set(observed)) and all(x in OBSERVED_SIDES for x in observed)):
        return None
    return (f"trace_started: field 'observed' must be a non-empty list of distinct sides, each one of "
            f"{', '.join(OBSERVED_SIDES)}, got {brief(observed)}")


def markdown() -> str:
    """The schema as a Markdown reference (docs/trace-schema.md is generated from this)."""
    s = load_schema()
    out = [f"# Trace schema, version {s['version']}", "", s["doc"], "",
           f"Readers accept traces of schema versions {', '.join(map(str, SUPPORTED_VERSIONS))}. Optional on every "
           f"event: {', '.join('`' + n + '`' for n in ENVELOPE_OPTIONAL)}.", "",
           f"Generated from `traces/{SCHEMA_FILE}` by `rocketspec schema --markdown`; do not edit by hand.", "",
           "## Event kinds", ""]
    cats: dict[str, list[str]] = {}
    for name, kd in s["kinds"].items():
        cats.setdefault(kd["category"], []).append(name)
    for cat, names in cats.items():
        out.append(f"### {cat}")
        out.append("")
        for name in names:
            kd = s["kinds"][name]
            out.append(f"- **`{name}`**: {kd['doc']}")
            out.append(f"  - required: {', '.join('`'+n+'`' for n in kd['required']) or 'none'}")
            if kd["optional"]:
                out.append(f"  - optional: {', '.join('`'+n+'`' for n in kd['optional'])}")
        out.append("")
    out += ["## Fields", "", "| field | type | meaning |", "|---|---|---|"]
    for name, fd in s["fields"].items():
        out.append(f"| `{name}` | {fd['type']} | {fd['doc'].replace('|', '/')} |")
    out.append("")
    out += ["## Types", ""] + [f"- `{t}`: {d}" for t, d in s["types"].items()] + [""]
    return "\n".join(out)
