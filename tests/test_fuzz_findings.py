"""Defects the input fuzzer (bench/fuzz_inputs.py) found, each fixed and pinned here."""
from __future__ import annotations

import orjson
import pytest
from click.testing import CliRunner

from rocketspec.cli import main
from rocketspec.reference.runner import run
from rocketspec.reference.scenario import load_scenario
from rocketspec.spec.profiles import get_profile


@pytest.fixture(scope="module")
def events():
    out = []
    run(dict(load_scenario("offsets"), duration_ms=3000), 1, get_profile("rocketmq-5.3.3"), out.append)
    return out


def _check(tmp_path, events):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    return CliRunner().invoke(main, ["check", str(p)])


@pytest.mark.parametrize("kind", [{"a": 1}, ["trace_started"], 7, None])
def test_an_event_kind_that_is_not_a_string_is_bad_input(tmp_path, events, kind):
    # was: TypeError (unhashable type) out of the validator's lookup by kind
    evs = [dict(e) for e in events]
    evs[3]["kind"] = kind
    res = _check(tmp_path, evs)
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "t.jsonl:4" in res.output and "kind" in res.output


def _with(events, kind, field, value):
    evs = [dict(e) for e in events]
    i = next(i for i, e in enumerate(evs) if e["kind"] == kind)
    evs[i][field] = value
    return evs, i + 1


@pytest.mark.parametrize("field,value", [
    ("mqs", [["TopicTest", "broker-a"]]),               # was IndexError in mq_sort_key
    ("mqs", [["TopicTest", "broker-a", "0"]]),          # was TypeError in is_sorted_view
    ("mqs", 7),                                         # was TypeError: 'int' object is not iterable
    ("allocated", [[1, 2, 3]]),                         # was TypeError ('<' between int and str)
    ("cids", [["c1"]]),                                 # was AttributeError in java_string_key
    ("cids", "c1"),
])
def test_allocation_contents_of_another_shape_are_bad_input(tmp_path, events, field, value):
    evs, line = _with(events, "allocation_computed", field, value)
    res = _check(tmp_path, evs)
    assert res.exit_code == 2, res.output
    assert f"t.jsonl:{line}" in res.output and repr(field) in res.output and "must be" in res.output


@pytest.mark.parametrize("subs", [{"TopicTest": {"type": ["TAG"], "expr": "*"}}, {"TopicTest": "*"}, ["TopicTest"]])
def test_subscriptions_of_another_shape_are_bad_input(tmp_path, events, subs):
    # was: TypeError (unhashable list) in the filter check of a pull answer
    evs, line = _with(events, "client_started", "subscriptions", subs)
    res = _check(tmp_path, evs)
    assert res.exit_code == 2, res.output
    assert f"t.jsonl:{line}" in res.output and "'subscriptions' must be" in res.output


def test_a_client_config_value_of_another_type_is_bad_input(tmp_path, events):
    ev = next(e for e in events if e["kind"] == "client_started")
    evs, line = _with(events, "client_started", "config", dict(ev["config"], max_reconsume_times={"value": 16}))
    res = _check(tmp_path, evs)          # was TypeError: int() argument ... not 'dict'
    assert res.exit_code == 2, res.output
    assert f"t.jsonl:{line}" in res.output and "max_reconsume_times" in res.output
    evs, line = _with(events, "client_started", "config", ["not", "an", "object"])
    res = _check(tmp_path, evs)
    assert res.exit_code == 2 and f"t.jsonl:{line}" in res.output and "config" in res.output, res.output


def test_a_deeply_nested_value_is_named_briefly(events):
    # orjson reads values nested up to 1024 levels; repr() of one in the message recursed too deep
    from rocketspec.traces.schema import validate_event

    deep = 1
    for _ in range(5000):
        deep = [deep]
    ev = dict(next(e for e in events if e["kind"] == "allocation_computed"), topic=deep)
    msg = validate_event(ev)
    assert msg.startswith("allocation_computed: field 'topic' must be str, got [[[") and len(msg) < 200
    msg = validate_event(dict(ev, topic="x" * 70000, view=2**64 + 1, strategy="y" * 70000))
    assert msg.startswith("allocation_computed: field") and len(msg) < 200
