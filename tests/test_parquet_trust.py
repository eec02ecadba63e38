"""traces.parquet_trust: the kinds of a Parquet batch whose rows need no schema check one by
one. The claim: every row of a trusted kind passes the schema check (spec.replay's validator
and traces.schema's reference one). Checked on reference traces bent at random in every way the
writer's schema lets a row be wrong, and a wrong row still meets its message on the whole path."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import load_scenario
from rocketspec.spec.replay import check_trace, fast_validator
from rocketspec.traces.io import _json_fields, read_events, write_trace
from rocketspec.traces.parquet_trust import trusted_kinds
from rocketspec.traces.schema import fields, kinds, validate_event
from rocketspec.traces.spark.spark_whole import replay_whole


@pytest.fixture(scope="module")
def events():
    return run_to_list(load_scenario("basic"), 3, "rocketmq-4.9.8")[:400]


def _batches(path):
    return list(pq.ParquetFile(path).iter_batches(batch_size=1 << 16))


# (trace_started and trace_ended are where the reader's own rules judge a row's place)
KINDS = sorted(set(kinds()) - {"trace_started", "trace_ended"})
# the ways a row of the writer's schema can still be wrong: a field its kind lacks, a required
# field left out, a null in a list, an obs outside the schema's values, another kind's name
BENDS = st.sampled_from(["extra", "drop", "null_in_list", "obs", "kind"])


def _bend(ev, how, other, data):
    ev = dict(ev)
    fd = fields()
    if how == "extra":
        n = data.draw(st.sampled_from([n for n in other if n not in ev]) if set(other) - set(ev) else st.none())
        if n is not None:
            ev[n] = other[n]
    elif how == "drop":
        opt = [n for n in ev if n not in ("seq", "ts", "kind")]
        if opt:
            del ev[data.draw(st.sampled_from(opt))]
    elif how == "null_in_list":
        lists = [n for n in ev if fd.get(n, {}).get("type") in ("int_list", "str_list")]
        if lists:
            n = data.draw(st.sampled_from(lists))
            ev[n] = list(ev[n]) + [None]
    elif how == "obs":
        ev["obs"] = data.draw(st.sampled_from(["exact", "sampled", "inferred", "guessed", ""]))
    else:
        ev["kind"] = data.draw(st.sampled_from(KINDS))
    return ev


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_row_of_a_trusted_kind_passes_the_schema_check(events, tmp_path_factory, data):
    evs = [dict(e) for e in events[1:]]      # trace_started is always checked in full
    bends = set()
    for _ in range(data.draw(st.integers(1, 6))):
        i = data.draw(st.integers(0, len(evs) - 1))
        other = evs[data.draw(st.integers(0, len(evs) - 1))]
        how = data.draw(BENDS)
        bends.add(how)
        evs[i] = _bend(evs[i], how, other, data)
    path = str(tmp_path_factory.mktemp("trust") / "t.parquet")
    write_trace(path, evs)
    trusted = set()
    for b in _batches(path):
        trusted |= trusted_kinds(b)
    rows = [ev for _, ev in read_events(path, validate=False)]
    for ev in rows:
        if ev.get("kind") in trusted:
            assert validate_event(ev) is None, ev
            assert fast_validator()(ev) is None, ev
    # and the rule is no stricter than it must be: a kind whose rows are all intact is trusted
    # unless it holds a JSON value (those are checked per event). A null in a list and a bad obs
    # are judged per column: they leave every kind with a value in that column to the check
    if bends & {"null_in_list", "obs"}:
        return
    json_fields = _json_fields()
    for k in {ev["kind"] for ev in rows if isinstance(ev.get("kind"), str)} - {"trace_started"}:
        mine = [ev for ev in rows if ev.get("kind") == k]
        if all(validate_event(ev) is None and not (set(ev) & json_fields) for ev in mine):
            assert k in trusted, k


def test_a_file_in_another_schema_is_not_trusted(events, tmp_path):
    # a column typed otherwise than the writer types it vouches for nothing
    path = str(tmp_path / "t.parquet")
    write_trace(path, events)
    table = pq.read_table(path)
    i = table.schema.names.index("queue")
    table = table.set_column(i, pa.field("queue", pa.int32()), table.column(i).cast(pa.int32()))
    other = str(tmp_path / "other.parquet")
    pq.write_table(table, other)
    assert any(trusted_kinds(b) for b in _batches(path))
    assert not any(trusted_kinds(b) for b in _batches(other))


def test_a_bad_row_of_a_trusted_file_meets_checks_message_on_the_whole_path(events, tmp_path):
    # one row of an otherwise trusted kind loses a required field: its kind is not trusted in
    # that batch, the row is checked, and the trace goes back to the exact path with check's words
    evs = [dict(e) for e in events]
    i = next(j for j, e in enumerate(evs) if e["kind"] == "pull_issued")
    req = [n for n in kinds()["pull_issued"]["required"] if n in evs[i]]
    del evs[i][req[0]]
    path = str(tmp_path / "t.parquet")
    write_trace(path, evs)
    with pytest.raises(Exception) as c:
        check_trace(path)
    r = replay_whole(0, [(0, path)], None, 50)
    assert "back" in r and str(c.value) in r["back"], (r, str(c.value))
