"""The trace contract: schema validation, readers and writers, bad-input reports."""
import functools
import json

import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from rocketspec.cli import main
from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import load_scenario
from rocketspec.traces.io import TraceInputError, iter_trace, read_events, write_trace
from rocketspec.traces.schema import fields, kinds, markdown, validate_event


def test_docs_schema_is_generated_from_the_schema_file():
    from pathlib import Path

    doc = Path(__file__).parent.parent / "docs" / "trace-schema.md"
    assert doc.read_text() == markdown(), "run `rocketspec schema --markdown > docs/trace-schema.md`"


def test_every_kind_names_known_fields_and_every_field_is_documented():
    for name, kd in kinds().items():
        assert kd["doc"] and kd["category"]
        for f in kd["required"] + kd["optional"]:
            assert f in fields(), (name, f)
    for name, fd in fields().items():
        assert fd["doc"] and fd["type"] in ("int", "str", "bool", "int_list", "str_list", "json")


def test_reference_emits_only_valid_events_of_every_core_kind():
    seen = set()
    for name in ("faults", "retry-dlq", "broadcast", "offsets", "tags"):
        for e in run_to_list(load_scenario(name), 1, "rocketmq-5.3.3"):
            assert validate_event(e) is None, (name, e, validate_event(e))
            seen.add(e["kind"])
    for k in ("message_stored", "pull_answered", "consume_finished", "offset_committed", "message_dead_lettered",
              "schedule_delivered", "offset_flushed", "offset_loaded", "client_paused", "messages_deleted"):
        assert k in seen


@pytest.mark.parametrize("ext", ["jsonl", "parquet"])
def test_roundtrip_both_formats(tmp_path, ext):
    events = run_to_list(load_scenario("basic"), 2, "rocketmq-4.9.8")
    path = tmp_path / f"t.{ext}"
    assert write_trace(path, events) == len(events)
    back = list(iter_trace(path))
    assert back == events


json_values = st.recursive(st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.text(max_size=5),
                           lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
                           max_leaves=8)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.text(min_size=1, max_size=8),  # a topic name is not blank
                          st.one_of(st.none(), st.text(max_size=8)), json_values),
                min_size=1, max_size=30))
def test_parquet_roundtrip_any_values(tmp_path_factory, rows):
    events = []
    for i, (topic, tags, props) in enumerate(rows):
        e = {"seq": i, "ts": i * 3, "kind": "message_stored", "topic": topic, "broker": "b", "queue": i % 3,
             "offset": i, "msg_id": f"m{i}", "origin_msg_id": f"m{i}", "source": "producer", "props": props}
        if tags is not None:
            e["tags"] = tags
        if props is None:
            del e["props"]
        events.append(e)
    path = tmp_path_factory.mktemp("pq") / "t.parquet"
    write_trace(path, events)
    assert list(iter_trace(path)) == events


@pytest.mark.parametrize("line,needle", [
    ("{not json", "malformed JSON"),
    ('{"seq": 1, "ts": 0}', "missing envelope field 'kind'"),
    ('{"seq": 1, "ts": 0, "kind": "teleported"}', "unknown event kind"),
    ('{"seq": 1, "ts": 0, "kind": "client_paused", "client": "c", "group": "g"}', "missing required field 'duration'"),
    ('{"seq": 1, "ts": 0, "kind": "client_paused", "client": "c", "group": "g", "duration": "5"}', "must be int"),
    ('{"seq": 1, "ts": 0, "kind": "client_paused", "client": "c", "group": "g", "duration": 5, "x": 1}', "not part of"),
    ('[1, 2]', "expected a JSON object"),
])
def test_bad_lines_name_the_line(tmp_path, line, needle):
    p = tmp_path / "bad.jsonl"
    good = {"seq": 0, "ts": 0, "kind": "trace_started", "schema_version": 1, "profile": "rocketmq-5.3.3"}
    p.write_text(json.dumps(good) + "\n" + line + "\n")
    with pytest.raises(TraceInputError) as ei:
        list(read_events(p))
    assert ei.value.line == 2 and needle in str(ei.value) and str(p) in str(ei.value)


def test_out_of_order_events_are_rejected(tmp_path):
    p = tmp_path / "o.jsonl"
    evs = [{"seq": 0, "ts": 10, "kind": "broker_started", "broker": "b"},
           {"seq": 1, "ts": 5, "kind": "trace_ended", "reason": "duration"}]
    p.write_text("".join(json.dumps(e) + "\n" for e in evs))
    with pytest.raises(TraceInputError, match="out of order: ts 5 after ts 10"):
        list(read_events(p))


def test_not_a_parquet_file_and_unknown_extension(tmp_path):
    p = tmp_path / "x.parquet"
    p.write_text("hello")
    with pytest.raises(TraceInputError, match="not a readable Parquet file"):
        list(read_events(p))
    (tmp_path / "x.csv").write_text("a,b\n")  # read by its content, whatever its name
    with pytest.raises(TraceInputError, match="x.csv:1: malformed JSON"):
        list(read_events(tmp_path / "x.csv"))
    with pytest.raises(TraceInputError, match="no such file"):
        list(read_events(tmp_path / "missing.jsonl"))


def test_parquet_rows_are_read_column_by_column_as_the_rows_they_are(tmp_path):
    """The reader builds events from the non-null cells of each column: fields in column order,
    nulls left out, a JSON-typed column parsed at its row; a column name given twice is refused
    (which of the two would be the field?)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = tmp_path / "t.parquet"
    t = pa.table({"seq": [0, 1, 2], "ts": [0, 0, 1], "kind": ["trace_started", "broker_started", "trace_ended"],
                  "schema_version": [2, None, None], "profile": ["rocketmq-5.3.3", None, None],
                  "broker": [None, "b", None], "config": [None, '{"broker_lock_max_live_ms": 60000}', None],
                  "reason": [None, None, "duration"]})
    pq.write_table(t, p)
    evs = list(iter_trace(p))
    assert evs == [{"seq": 0, "ts": 0, "kind": "trace_started", "schema_version": 2, "profile": "rocketmq-5.3.3"},
                   {"seq": 1, "ts": 0, "kind": "broker_started", "broker": "b",
                    "config": {"broker_lock_max_live_ms": 60000}},
                   {"seq": 2, "ts": 1, "kind": "trace_ended", "reason": "duration"}]
    assert [list(e) for e in evs][1] == ["seq", "ts", "kind", "broker", "config"]
    bad = t.set_column(7, "config", pa.array([None, "{", None]))      # a second column named config
    pq.write_table(bad, p)
    with pytest.raises(TraceInputError, match=r"t.parquet:1: column 7 \('config'\) has the name of column 6"):
        list(read_events(p))
    pq.write_table(t.set_column(6, "config", pa.array([None, "{", None])), p)
    with pytest.raises(TraceInputError, match=r"t.parquet:2: field 'config' is not valid JSON"):
        list(read_events(p))


@functools.lru_cache(maxsize=1)
def _basic_events():
    return run_to_list(load_scenario("basic"), 1, "rocketmq-5.3.3")[:260]


def _outcome(path):
    out = []
    try:
        for line, ev in read_events(path, validate=False):
            out.append((line, ev))
    except TraceInputError as exc:
        out.append(("error", exc.line, exc.message))
    return out


@pytest.mark.parametrize("seed", range(3))
def test_parquet_batches_read_as_every_row_through_the_stream_rules(tmp_path, monkeypatch, seed):
    """A batch whose kind column tells which rows the stream's rules judge (a trace_started, a
    trace_ended, the row after one) yields only those through the rules; the result (events,
    lines, and the first error with its row) is what checking every row gives, whatever the
    batch boundaries: a trace_ended in the middle or at a batch's end, a second header with a
    bad schema_version, a JSON cell that does not parse, a missing kind."""
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq

    from rocketspec.traces import io as tio

    base = _basic_events()
    rnd = random.Random(seed)
    for trial in range(15):
        rows = [dict(e) for e in base[:rnd.randint(1, len(base))]]
        m = trial % 5
        if m == 1:
            rows.insert(rnd.randrange(len(rows)), dict(base[-1], kind="trace_ended"))
        elif m == 2:
            rows.insert(rnd.randrange(len(rows)), dict(base[0], schema_version=rnd.choice([1, 2, 99])))
        p = tmp_path / f"t{trial}.parquet"
        write_trace(p, rows)
        t = pq.read_table(p)
        if m == 3 and "mqs" in t.column_names:
            col = t.column("mqs").to_pylist()
            cells = [i for i, v in enumerate(col) if v is not None]
            if cells:
                col[rnd.choice(cells)] = rnd.choice(["{bad", '{"a":1,"a":2}'])
                t = t.set_column(t.column_names.index("mqs"), "mqs", pa.array(col, pa.string()))
        if m == 4:
            col = t.column("kind").to_pylist()
            col[rnd.randrange(len(col))] = None
            t = t.set_column(t.column_names.index("kind"), "kind", pa.array(col, pa.string()))
        pq.write_table(t, p)
        monkeypatch.setattr(tio, "PARQUET_BATCH_ROWS", rnd.choice([3, 16, 65536]))
        fast = _outcome(p)
        with monkeypatch.context() as mp:
            mp.setattr(tio, "_stream_rows", lambda batch, rules: None)     # every row through the rules
            assert _outcome(p) == fast, (trial, m)


def test_simulate_cli_writes_and_reports_errors(tmp_path):
    r = CliRunner().invoke(main, ["simulate", "--scenario", "basic", "--out", str(tmp_path / "t.parquet")])
    assert r.exit_code == 0 and "ended quiescent" in r.output
    r = CliRunner().invoke(main, ["simulate", "--scenario", "nope"])
    assert r.exit_code == 2 and "not a built-in scenario" in r.output
    r = CliRunner().invoke(main, ["simulate", "--profile", "rocketmq-1.0"])
    assert r.exit_code == 2 and "unknown profile" in r.output
    bad = tmp_path / "bad.toml"
    bad.write_text('[[topics]]\nname = "T"\n[[groups]]\nname = "G"\nsubscriptions = { Nope = "*" }\n')
    r = CliRunner().invoke(main, ["simulate", "--scenario", str(bad)])
    assert r.exit_code == 2 and "groups[0].subscriptions.Nope" in r.output and "bad.toml" in r.output
