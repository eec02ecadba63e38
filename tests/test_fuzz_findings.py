"""Defects the input fuzzer (bench/fuzz_inputs.py) found, each fixed and pinned here."""
from __future__ import annotations

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from click.testing import CliRunner

from rocketspec.cli import main
from rocketspec.reference.runner import run
from rocketspec.reference.scenario import load_scenario
from rocketspec.rocketmq.profiles import get_profile


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


# ---------------------------------------------------------------- compressed traces

def _lines(events) -> list[bytes]:
    return [orjson.dumps(e) + b"\n" for e in events]


def _compress(codec: str, data: bytes) -> bytes:
    if codec == "gzip":
        import gzip

        return gzip.compress(data, mtime=0)
    import zstandard

    return zstandard.ZstdCompressor().compress(data)


def _read_until_error(path):
    """(events read, the TraceInputError that ended the reading or None)."""
    from rocketspec.traces.io import TraceInputError, read_events

    got = []
    try:
        for _, ev in read_events(path):
            got.append(ev)
    except TraceInputError as exc:
        return got, exc
    return got, None


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_a_compressed_trace_cut_short_is_an_error_not_a_shorter_trace(tmp_path, events, codec):
    # was (zstd): the reader stopped silently where the file did, so a truncated .zst read as a
    # shorter trace (or "empty trace" when cut inside the first frame), without a place
    lines = _lines(events)
    k = len(lines) // 2
    first, second = _compress(codec, b"".join(lines[:k])), _compress(codec, b"".join(lines[k:]))
    p = tmp_path / f"t.jsonl.{codec}"
    for cut in (6, len(second) // 2, len(second) - 1):
        p.write_bytes(first + second[:cut])
        got, err = _read_until_error(p)
        assert err is not None, f"cut at {cut}: read {len(got)} events and no error"
        assert got[:k] == [orjson.loads(x) for x in lines[:k]]  # what came before the cut was read
        assert f"the file ends at byte {len(first) + cut}" in err.message and err.line >= k + 1, err
        assert f"began at byte {len(first)}" in err.message
    p.write_bytes(first[:len(first) // 2])  # inside the first member/frame: at line 1 at the latest
    got, err = _read_until_error(p)
    assert err is not None and "truncated" in err.message and "byte" in err.message


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_corrupted_compressed_data_is_named_by_its_byte_and_line(tmp_path, events, codec):
    # was: "not readable gzip data: Error -3 ..." / "zstd decompress error" without a place
    lines = _lines(events)
    k = len(lines) // 2
    first, second = _compress(codec, b"".join(lines[:k])), bytearray(_compress(codec, b"".join(lines[k:])))
    if codec == "gzip":
        second[10] |= 0b110  # the first deflate block's type: 3, reserved
    else:
        for i in range(len(second) // 3, len(second) // 3 + 40):
            second[i] ^= 0xA5
    p = tmp_path / f"t.jsonl.{codec}"
    p.write_bytes(first + bytes(second))
    got, err = _read_until_error(p)
    assert err is not None and got[:k] == [orjson.loads(x) for x in lines[:k]]
    assert err.line is not None and err.line >= k + 1
    assert f"corrupted {codec} data between byte" in err.message, err
    lo, hi = map(int, __import__("re").search(r"between byte (\d+) and byte (\d+)", err.message).groups())
    assert len(first) <= lo <= hi < len(first) + len(second)
    res = CliRunner().invoke(main, ["check", str(p)])
    assert res.exit_code == 2 and f"t.jsonl.{codec}:{err.line}: corrupted" in res.output, res.output


def test_bytes_after_a_gzip_stream_are_named(tmp_path, events):
    data = _compress("gzip", b"".join(_lines(events)))
    p = tmp_path / "t.jsonl.gz"
    p.write_bytes(data + b"\0\0\0" + _compress("gzip", b"") + b"\0\0")  # padding and an empty member: fine
    got, err = _read_until_error(p)
    assert err is None and len(got) == len(events)
    p.write_bytes(data + b"\0\0garbage")
    got, err = _read_until_error(p)
    assert err is not None and f"at byte {len(data) + 2}" in err.message and "not gzip data" in err.message


# ---------------------------------------------------------------- Parquet

@pytest.fixture()
def parquet_bytes(tmp_path, events):
    from rocketspec.traces.io import write_trace

    p = tmp_path / "seed.parquet"
    write_trace(p, events)
    return p.read_bytes()


def test_a_parquet_file_that_does_not_open_is_placed_at_its_footer(tmp_path, parquet_bytes):
    # was: "not a readable Parquet file: Couldn't deserialize thrift: ..." without a place
    data = bytearray(parquet_bytes)
    n = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - n
    for i in range(start, start + 24):  # the metadata's first fields
        data[i] ^= 0xFF
    p = tmp_path / "t.parquet"
    p.write_bytes(bytes(data))
    res = CliRunner().invoke(main, ["check", str(p)])
    assert res.exit_code == 2, res.output
    assert f"the Parquet footer (metadata from byte {start} to byte {len(data) - 9})" in res.output
    res = CliRunner().invoke(main, ["check", "-"], input=bytes(data))  # standard input: the same place
    assert res.exit_code == 2 and f"metadata from byte {start}" in res.output, res.output
    p.write_bytes(parquet_bytes[:-3])  # cut short: no PAR1 at the end
    res = CliRunner().invoke(main, ["check", str(p)])
    assert res.exit_code == 2 and f"does not end with PAR1 (byte {len(parquet_bytes) - 7}" in res.output, res.output
    p.write_bytes(parquet_bytes[:-8] + (10 ** 9).to_bytes(4, "little") + b"PAR1")
    res = CliRunner().invoke(main, ["check", str(p)])
    assert res.exit_code == 2 and "its length (1000000000 bytes" in res.output, res.output


# ---------------------------------------------------------------- scenario steps

def _scenario(steps):
    return {"duration_ms": 3000, "topics": [{"name": "T", "queues": 2}],
            "groups": [{"name": "G", "subscriptions": {"T": "*"}}],
            "producers": [{"topic": "T", "count": 4, "rate_per_s": 10.0}], "steps": steps}


def test_steps_are_checked_in_the_order_they_run():
    # was: KeyError in runner.do_step: the check read the steps in the file's order, the runner
    # takes them by at_ms, so a crash listed after a start but timed before it got through
    from rocketspec.reference.scenario import ScenarioError, validate

    steps = [{"at_ms": 0, "action": "start", "client": "c1", "group": "G"},
             {"at_ms": 2000, "action": "start", "client": "c2", "group": "G"},
             {"at_ms": 1000, "action": "crash", "client": "c2"}]
    with pytest.raises(ScenarioError) as e:
        validate(_scenario(steps), "s.toml")
    assert e.value.field == "steps[2].client" and "not started by an earlier step (at_ms 1000)" in str(e.value)
    # the other way round: listed first, timed after the start: a valid scenario (was refused)
    steps = [{"at_ms": 2500, "action": "crash", "client": "c2"}] + steps[:2]
    out = []
    run(validate(_scenario(steps), "s.toml"), 1, get_profile("rocketmq-5.3.3"), out.append)
    assert [e["ts"] for e in out if e["kind"] == "client_crashed" and e["client"] == "c2"] == [2500]


_CLIENT = st.sampled_from(["c1", "c2", "c3"])
_STEP = st.one_of(
    st.builds(lambda c: {"action": "start", "client": c, "group": "G"}, _CLIENT),
    st.builds(lambda c: {"action": "shutdown", "client": c}, _CLIENT),
    st.builds(lambda c: {"action": "crash", "client": c}, _CLIENT),
    st.builds(lambda c, d: {"action": "pause", "client": c, "duration_ms": d}, _CLIENT, st.integers(1, 2000)),
    st.builds(lambda c, n: {"action": "fail_offset_queries", "client": c, "count": n}, _CLIENT, st.integers(1, 3)),
    st.builds(lambda b, d: {"action": "restart_broker", "broker": b, "downtime_ms": d},
              st.just("broker-a"), st.integers(0, 2000)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 3000), _STEP), max_size=8))
def test_any_steps_are_refused_with_a_field_or_run(steps):
    # each client's life in any order: start, shutdown, crash, pause, again; refused at a step's
    # field when they make no sense, else they run (no KeyError or state error in the runner)
    from rocketspec.reference.scenario import ScenarioError, validate

    sc = _scenario([dict(s, at_ms=at) for at, s in steps])
    try:
        sc = validate(sc, "s.toml")
    except ScenarioError as exc:
        assert exc.field and exc.field.startswith("steps"), exc
        return
    run(sc, 1, get_profile("rocketmq-5.3.3"), lambda e: None)


# ---------------------------------------------------------------- explore's output files

@pytest.mark.parametrize("name", ["x" * 300, "a\x00b/c d"])
def test_a_scope_name_of_any_text_gives_plain_trace_file_names(tmp_path, name):
    # was: OSError "File name too long" (a 300-character name) and ValueError "embedded null
    # byte" out of write_trace: the scope's name went into the file name as it was
    import json
    import os
    from pathlib import Path

    from rocketspec.model_checks.scopes import BUG_SCOPES, load_scope

    base, over = BUG_SCOPES["#4215"]
    d = dict(load_scope(base, **over).to_dict(), name=name)
    scope = tmp_path / "s.toml"
    scope.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in d.items()))
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["explore", "--scope", str(scope), "--profile", "bug-4215-rocketmq-4.9.3",
                                    "--json", "--max-states", "1000", "--out-dir", str(out)])
    assert res.exit_code == 1, res.output
    files = [v["trace"] for v in json.loads(res.stdout)["violations"]]
    assert files and len(set(files)) == len(files)
    for f in files:
        base = os.path.basename(f)
        assert os.path.dirname(f) == str(out) and os.path.isfile(f)
        assert len(base.encode()) <= 160 and base.isascii() and "\x00" not in base and " " not in base
        assert "-bug-4215-rocketmq-4.9.3-INV-" in base


# ---------------------------------------------------------------- field paths of odd keys

_GOOD_SCENARIO = {"topics": [{"name": "T", "queues": 2}], "groups": [{"name": "G", "subscriptions": {"T": "*"}}],
                  "producers": [{"topic": "T", "count": 3, "props": {"a": "b"}}],
                  "steps": [{"at_ms": 0, "action": "start", "client": "c", "group": "G"}]}


def _scenario_error(tmp_path, where, key, value=1):
    import copy
    import json

    sc = copy.deepcopy(_GOOD_SCENARIO)
    node = sc
    for k in where:
        node = node[k]
    node[key] = value
    p = tmp_path / "s.json"
    p.write_text(json.dumps(sc))
    res = CliRunner().invoke(main, ["simulate", "--scenario", str(p), "--out", str(tmp_path / "o.jsonl"), "--quiet"])
    assert res.exit_code == 2, res.output
    return res.stderr.strip().removeprefix(f"error: {p}: ")


@pytest.mark.parametrize("key,shown", [("", '""'), (" ", '" "'), ("a.b", '"a.b"'), ("é", '"é"'), ("x", "x")])
def test_an_odd_key_is_named_by_a_field_path(tmp_path, key, shown):
    # was: "s.json: unknown top-level keys: x" (no field), "producers[0].: unknown keys" (an empty
    # segment), "producers[0].props.: a blank property name" and "a.b: ..." read as two keys
    assert _scenario_error(tmp_path, (), key).startswith(f"{shown}: unknown top-level key")
    assert _scenario_error(tmp_path, ("producers", 0), key).startswith("producers[0]: unknown keys")
    assert _scenario_error(tmp_path, ("groups", 0, "subscriptions"), key).startswith(
        f"groups[0].subscriptions.{shown}: topic is not declared")
    # a topic took any key silently (a typo such as `queue = 8` was ignored)
    assert _scenario_error(tmp_path, ("topics", 0), key).startswith(f"topics[0].{shown}: unknown key")
    if not key.strip():
        assert _scenario_error(tmp_path, ("producers", 0, "props"), key, "v").startswith(
            f"producers[0].props.{shown}: a blank property name")
    p = tmp_path / "scope.toml"
    p.write_text(f"consumers = 1\n{json_key(key)} = 1\n")
    res = CliRunner().invoke(main, ["explore", "--scope", str(p), "--quiet"])
    assert res.exit_code == 2 and f"scope.toml: {shown}: unknown scope key" in res.output, res.output


def json_key(key: str) -> str:
    import json

    return json.dumps(key, ensure_ascii=False)  # a TOML basic string key is a JSON string here


# ---------------------------------------------------------------- nesting and text, located

def test_a_json_value_nested_past_what_orjson_writes_is_bad_input_at_its_line(tmp_path, events):
    # was: TypeError "Recursion limit reached" out of the duplicate-key check, which wrote each
    # line back with orjson (255 levels at most) while orjson reads up to 1024
    lines = _lines(events)
    ev = orjson.loads(lines[4])
    raw = orjson.dumps(dict(ev, extra=0))
    lines[4] = raw.replace(b'"extra":0', b'"extra":' + b"[" * 300 + b"]" * 300) + b"\n"
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"".join(lines))
    res = CliRunner().invoke(main, ["check", str(p)])
    assert res.exit_code == 2 and "t.jsonl:5: a value nested too deeply" in res.output, res.output


def test_a_parquet_text_column_with_invalid_utf8_is_bad_input_at_its_row(tmp_path, events):
    # was: UnicodeDecodeError out of the column's conversion to Python values
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rocketspec.traces.io import write_trace

    p = tmp_path / "t.parquet"
    write_trace(p, events)
    table = pq.read_table(p)
    col = table.column("topic").to_pylist()
    row = next(i for i, v in enumerate(col) if v is not None and i > 3)
    raw = [None if v is None else v.encode() for v in col]
    raw[row] = b"Topic\x97"
    i = table.schema.get_field_index("topic")
    table = table.set_column(i, "topic", pa.array(raw, pa.binary()).view(pa.string()))
    pq.write_table(table, p)
    res = CliRunner().invoke(main, ["check", str(p)])
    assert res.exit_code == 2, res.output
    assert f"t.parquet:{row + 1}: column 'topic': not valid UTF-8 text (byte 0x97)" in res.output, res.output


def _deep_at(line: int, depth: int) -> str:
    head = "".join(f"k{i} = {i}\n" for i in range(line - 1))
    return head + "deep = " + "[" * depth + "1" + "]" * depth + "\n"


@pytest.mark.parametrize("depth", [40, 100_000])
def test_nesting_past_the_bound_names_its_line(tmp_path, depth):
    # was: "nested too deeply; expected at most 32 levels" without a line
    p = tmp_path / "s.toml"
    p.write_text(_deep_at(7, depth))
    for argv in (["simulate", "--scenario", str(p), "--out", str(tmp_path / "o.jsonl"), "--quiet"],
                 ["explore", "--scope", str(p), "--quiet"]):
        res = CliRunner().invoke(main, argv)
        assert res.exit_code == 2 and "s.toml:7: nested too deeply" in res.output, res.output
    p = tmp_path / "s.json"
    p.write_text('{"name": "x",\n "a": {"b": 1},\n "deep": ' + "[" * depth + "]" * depth + "}")
    res = CliRunner().invoke(main, ["simulate", "--scenario", str(p), "--out", str(tmp_path / "o.jsonl"), "--quiet"])
    assert res.exit_code == 2 and "s.json:3: nested too deeply" in res.output, res.output


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "blank"])
def test_an_empty_trace_is_named_at_its_first_line(tmp_path, events, fmt):
    # was: "t.parquet: empty trace: ..." without a place (a Parquet file of 0 rows, an empty or
    # blank JSON Lines file)
    from rocketspec.traces.io import write_trace

    p = tmp_path / f"t.{'parquet' if fmt == 'parquet' else 'jsonl'}"
    if fmt == "parquet":
        write_trace(p, [])
    else:
        p.write_bytes(b"" if fmt == "jsonl" else b"\n  \n\n")
    res = CliRunner().invoke(main, ["check", str(p)])
    assert res.exit_code == 2 and f"{p.name}:1: empty trace (no event): expected a trace_started" in res.output, \
        res.output


@pytest.mark.parametrize("where,text", [
    ("steps[0].client", '"client": "\\ud800"'),
    ("groups[0].subscriptions.\"\\udc00x\"", '"subscriptions": {"\\udc00x": "*"}'),
])
def test_a_lone_surrogate_in_a_json_scenario_is_named_by_its_field(tmp_path, where, text):
    # was: "s.json: the string '\ud800' holds a lone surrogate ..." without a place (found by
    # bench.fuzz_inputs seed 12 #3614)
    import json

    sc = json.loads(json.dumps(_GOOD_SCENARIO))
    body = json.dumps(sc)
    if "client" in text:
        body = body.replace('"client": "c"', text)
    else:
        body = body.replace('"subscriptions": {"T": "*"}', text)
    p = tmp_path / "s.json"
    p.write_text(body)
    res = CliRunner().invoke(main, ["simulate", "--scenario", str(p), "--out", str(tmp_path / "o.jsonl"), "--quiet"])
    assert res.exit_code == 2 and f"s.json: {where}: the string" in res.output and "lone surrogate" in res.output, \
        res.output


def test_an_empty_topic_is_bad_input(tmp_path, events):
    # was: IndexError (topic[0]) in the message_stored action (found by bench.fuzz_inputs seed 14
    # #4569); RocketMQ refuses a blank topic, a trace cannot hold one
    evs, line = _with(events, "message_stored", "topic", "")
    res = _check(tmp_path, evs)
    assert res.exit_code == 2, res.output
    assert f"t.jsonl:{line}: message_stored: field 'topic' must be a topic name (a non-empty string)" in res.output


@pytest.mark.parametrize("name,shown", [("", '""'), ("a.b", '"a.b"'), ("rocketmq 4", '"rocketmq 4"')])
def test_an_expected_verdict_under_a_profile_name_that_is_not_a_name_is_located(tmp_path, name, shown):
    # was: 'expect.profiles.: expected "holds"...': an empty key made the field path end in a dot
    # (found by bench.fuzz_inputs, seed 30 #12038: an empty profile key given a number)
    import json

    p = tmp_path / "s.json"
    p.write_text(json.dumps({"name": "x", "expect": {"profiles": {name: -1}}}))
    res = CliRunner().invoke(main, ["simulate", "--scenario", str(p), "--out", str(tmp_path / "o.jsonl"), "--quiet"])
    assert res.exit_code == 2, res.output
    assert f"s.json: expect.profiles.{shown}: expected" in res.stderr, res.stderr


@pytest.mark.parametrize("value", [True, 7, ["CONSUME_FROM_FIRST_OFFSET"], {"a": 1}])
def test_a_consume_from_where_that_is_not_a_name_is_bad_input(tmp_path, events, value):
    # was: TypeError ("argument of type 'bool' is not iterable") in the spec's computePullFromWhere
    # (found by bench.fuzz_inputs, seed 30 #17513)
    evs = [dict(e) for e in events]
    i = next(i for i, e in enumerate(evs) if e["kind"] == "client_started")
    evs[i]["config"] = dict(evs[i].get("config") or {}, consume_from_where=value)
    res = _check(tmp_path, evs)
    assert res.exit_code == 2, res.output
    assert f"t.jsonl:{i + 1}: client_started.config.consume_from_where: expected a ConsumeFromWhere name" \
        in res.output, res.output


@pytest.mark.parametrize("missing", ["broker", "topic", "queue", "offset"])
def test_a_send_back_with_part_of_its_place_is_checked_without_a_traceback(tmp_path, missing):
    # was: KeyError 'broker' in send_back_requested when topic, queue and offset were given
    # without the broker (each is optional in the schema; found by bench.fuzz_inputs, seed 30 #44650)
    from pathlib import Path

    real = Path(__file__).parent / "fixtures" / "real" / "real-retry-dlq.jsonl"
    evs = [orjson.loads(line) for line in real.read_bytes().splitlines() if line.strip()]
    i = next(i for i, e in enumerate(evs) if e["kind"] == "send_back_requested" and e.get("broker"))
    del evs[i][missing]
    res = _check(tmp_path, evs)
    assert res.exit_code in (0, 1), res.output
    assert "internal error" not in res.output


def test_a_file_past_the_size_cap_is_refused_at_the_line_of_the_cap(tmp_path):
    # was: 'scope.toml: larger than 4 MiB' without a place (seed 30 #53852, an 84 MB scope file)
    p = tmp_path / "scope.toml"
    line = b"# " + b"x" * 1022 + b"\n"
    p.write_bytes(line * 5000)
    res = CliRunner().invoke(main, ["explore", "--scope", str(p), "--quiet"])
    assert res.exit_code == 2, res.output
    at = (4 << 20) // len(line) + 1                        # the line that holds byte 4 MiB
    assert f"scope.toml:{at}: larger than 4 MiB (byte 4194304 is past the limit)" in res.stderr, res.stderr


def test_a_big_list_of_a_deep_value_stays_small():
    # the fuzzer's own mutant: 5000 copies of a value nested 100,000 deep were a 416 MB input
    # whose making passed the worker's 1 GB (seed 30 #51829, reported as explore's memory)
    from bench import fuzz_inputs as fz

    inp = fz.make_input(fz.build_seeds_forked(), 30, 51829)
    assert "big-list:failures" in inp["notes"] and len(inp["data"]) < 1_000_000


def test_a_parquet_name_on_other_bytes_is_refused_at_byte_0(tmp_path):
    # 10^6 run, part 3 (#202052): the message named the file but no place in it
    p = tmp_path / "t.parquet"
    p.write_bytes(b"P\x00\x00\x00" + b"\x00" * 64)
    r = CliRunner().invoke(main, ["check", str(p)])
    assert r.exit_code == 2
    assert "at byte 0" in r.output and "PAR1" in r.output


def test_a_duplicate_key_in_a_json_scenario_is_located(tmp_path):
    # 10^6 run, part 3 (#159971): "duplicate key 'client' in one object" named no line
    p = tmp_path / "s.json"
    p.write_text('{\n "name": "x",\n "steps": [{"at_ms": 1, "client": "c1",\n   "client": "c2"}]\n}\n')
    r = CliRunner().invoke(main, ["simulate", "--scenario", str(p), "--out", str(tmp_path / "o.jsonl")])
    assert r.exit_code == 2
    assert f"{p}:4:" in r.output and "duplicate key 'client'" in r.output and "column 4" in r.output


def test_a_huge_wrong_value_is_cut_in_the_message(tmp_path):
    # 10^6 run, part 3 (#147464): a 700 KB list where a table belongs was printed whole
    groups = ", ".join(['{ name = "G", subscriptions = { T = "*" } }'] * 20000)
    p = tmp_path / "s.toml"
    p.write_text(f'name = "x"\ngroups = [[{groups}]]\n')
    r = CliRunner().invoke(main, ["simulate", "--scenario", str(p), "--out", str(tmp_path / "o.jsonl")])
    assert r.exit_code == 2
    assert "groups[0]: expected a table" in r.output and len(r.output) < 1000
