"""The per-kind registry (traces/kinds.py): every kind of the trace schema has everything a kind
needs (a registry entry, an action in the spec, a sentence, a timeline lane behaviour, a
minimizer unit family, a renumbering rule, a history mapping), and one message names whatever
is missing, kind by kind."""
from dataclasses import replace

import pytest

from rocketspec.spec.actions import HANDLERS
from rocketspec.traces import kinds as K
from rocketspec.traces.schema import JSON_SHAPES, fields, kinds as schema_kinds
from rocketspec.traces.explain.timeline import _Builder

ACTORS = ("broker", "client", "operator", "recorder", "network", "broker or client")

# a value of each schema type, for a sample event of every kind
_SAMPLE = {"int": 1, "str": "x", "bool": True, "int_list": [1, 2, 4], "str_list": ["m1", "m2", "m3"]}
_JSON_SAMPLE = {"mqs": [["T", "b", 0]], "allocated": [["T", "b", 0]], "queues": [["T", "b", 0]],
                "cids": ["c1", "c2"], "config": {}, "subscriptions": {"T": {"type": "TAG", "expr": "*"}}}


# fields whose values are one of a fixed set (checked by the schema beyond their type)
_FIELD_SAMPLE = {"observed": ["broker", "client_reports"]}


def sample_event(kind: str, schema: dict, types: dict) -> dict:
    """An event of `kind` with every field its schema lists, each holding a value of its type."""
    kd = schema[kind]
    ev = {"seq": 0, "ts": 1000, "kind": kind}
    for f in (*kd["required"], *kd["optional"]):
        typ = types.get(f, {}).get("type", "json")
        ev[f] = _FIELD_SAMPLE[f] if f in _FIELD_SAMPLE else _SAMPLE[typ] if typ in _SAMPLE else _JSON_SAMPLE.get(f, {})
    return ev


def missing(registry: dict, schema: dict, types: dict, handlers: dict, builder: type) -> list[str]:
    """What each kind lacks, one line per kind ("kind "x": a; b"), in schema order; registry
    entries the schema does not know are named too."""
    out = []
    for name in schema:
        k = registry.get(name)
        if k is None:
            out.append(f'kind "{name}": no entry in traces/kinds.py KINDS')
            continue
        gaps = []
        if name not in handlers:
            gaps.append("no handler in spec.actions")
        if not getattr(k, "mechanism", ""):
            gaps.append("no mechanism")
        if getattr(k, "actor", None) not in ACTORS:
            gaps.append(f"actor {getattr(k, 'actor', None)!r} is not one of {', '.join(ACTORS)}")
        sentence = getattr(k, "sentence", None)
        if sentence is None:
            gaps.append("no sentence")
        else:
            try:
                text = sentence(sample_event(name, schema, types))
                if not isinstance(text, str) or not text:
                    gaps.append(f"sentence gives {text!r} for a sample event")
            except Exception as exc:    # any failure is what the message must name
                gaps.append(f"sentence fails on a sample event of the schema ({type(exc).__name__}: {exc})")
        lane = getattr(k, "lane", None)
        if not callable(getattr(builder, f"_lane_{lane}", None)):
            gaps.append(f'lane "{lane}" is not a _Builder behaviour (traces/explain/timeline.py: _lane_{lane})')
        if getattr(k, "unit", None) not in K.UNITS:
            gaps.append(f'unit "{getattr(k, "unit", None)}" is not a unit family ({", ".join(K.UNITS)})')
        if getattr(k, "renumber", None) not in K.RENUMBER:
            gaps.append(f'renumber "{getattr(k, "renumber", None)}" is not one of {", ".join(K.RENUMBER)}')
        h = getattr(k, "history", "(none)")
        if not (h is None or h in K.HISTORY or (isinstance(h, str) and h.startswith("disruption:")
                                                 and len(h) > len("disruption:"))):
            gaps.append(f"history {h!r} is not None, disruption:<what> or one of {', '.join(K.HISTORY)}")
        if not isinstance(getattr(k, "scripts", None), bool):
            gaps.append("scripts is not True or False")
        if gaps:
            out.append(f'kind "{name}": ' + "; ".join(gaps))
    out.extend(f'kind "{name}": in the registry but not in the schema (traces/schema_v2.json)'
               for name in registry if name not in schema)
    return out


def test_every_kind_of_the_schema_has_everything_it_needs():
    gaps = missing(K.KINDS, schema_kinds(), fields(), HANDLERS, _Builder)
    assert not gaps, "\n".join(gaps)


def test_the_message_names_what_a_new_kind_lacks():
    schema = dict(schema_kinds())
    schema["x_y"] = {"required": ["client", "offsets"], "optional": [], "doc": "", "category": "x"}
    bad = replace(K.KINDS["pull_issued"], name="x_y", lane="foo", unit="bar",
                  sentence=lambda e: e["no_such_field"])
    registry = {**K.KINDS, "x_y": bad}
    del registry["lease_expired"]
    registry["z_w"] = K.KINDS["pull_issued"]
    gaps = missing(registry, schema, fields(), HANDLERS, _Builder)
    assert gaps == [
        'kind "lease_expired": no entry in traces/kinds.py KINDS',
        'kind "x_y": no handler in spec.actions; sentence fails on a sample event of the schema '
        "(KeyError: 'no_such_field'); lane \"foo\" is not a _Builder behaviour (traces/explain/timeline.py: _lane_foo); "
        f'unit "bar" is not a unit family ({", ".join(K.UNITS)})',
        'kind "z_w": in the registry but not in the schema (traces/schema_v2.json)',
    ]


def test_sample_events_are_valid_events_of_the_schema():
    """The sample the sentences are tried on is an event the schema accepts (else a sentence
    could fail on the sample for a reason no trace has)."""
    from rocketspec.traces.schema import validate_event

    assert set(_JSON_SAMPLE) == set(JSON_SHAPES) - {"topic"}
    for name in schema_kinds():
        ev = sample_event(name, schema_kinds(), fields())
        if "topic" in ev:
            ev["topic"] = "T"
        assert validate_event(ev) is None, name


@pytest.mark.parametrize("field, bad, says", [
    ("unit", "queue", 'unit "queue" is not a unit family'),
    ("renumber", "offsets", 'renumber "offsets" is not one of'),
    ("history", "disruption:", "history 'disruption:' is not None"),
    ("actor", "scheduler", "actor 'scheduler' is not one of"),
    ("scripts", 1, "scripts is not True or False"),
])
def test_each_field_is_checked(field, bad, says):
    registry = {**K.KINDS, "pull_issued": replace(K.KINDS["pull_issued"], **{field: bad})}
    gaps = missing(registry, schema_kinds(), fields(), HANDLERS, _Builder)
    assert len(gaps) == 1 and gaps[0].startswith('kind "pull_issued": ') and says in gaps[0], gaps
