"""The Parquet reader's events are the rows' non-null cells, however the file is read.

`traces.io._batch_events` builds events column by column (`_column_getter`), from row groups read
without their all-null columns (`valued_columns`, from the file's own statistics), with text
plain or dictionary-encoded (`parquet_text_as_dictionary`), for every row or a subset of rows
(the scoped replay's). Whatever the combination, an event is its row's non-null cells in
column order: a null is left out, an empty list or an empty string is a value."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketspec.traces.io import _batch_events, parquet_text_as_dictionary, valued_columns

TYPES = {"int": (pa.int64(), st.integers(-2**62, 2**62)),
         "bool": (pa.bool_(), st.booleans()),
         "str": (pa.string(), st.text(max_size=4)),
         "int_list": (pa.list_(pa.int64()), st.lists(st.integers(-5, 5), max_size=3)),
         "str_list": (pa.list_(pa.string()), st.lists(st.text(max_size=3), max_size=3))}


@st.composite
def tables(draw):
    n = draw(st.integers(1, 40))
    kinds = draw(st.lists(st.sampled_from(sorted(TYPES)), min_size=1, max_size=7))
    cols = {}
    for j, k in enumerate(kinds):
        typ, values = TYPES[k]
        # a column may be all null, never null, or anything between
        null = draw(st.sampled_from(["all", "none", "some"]))
        if null == "all":
            cells = [None] * n
        else:
            cells = draw(st.lists(values if null == "none" else st.none() | values, min_size=n, max_size=n))
        cols[f"c{j}_{k}"] = pa.array(cells, typ)
    return pa.table(cols)


def _expected(table):
    return [{k: v for k, v in r.items() if v is not None} for r in table.to_pylist()]


@settings(max_examples=150, deadline=None)
@given(tables(), st.integers(1, 12), st.booleans(), st.data())
def test_an_event_is_its_row_s_non_null_cells_however_the_file_is_read(tmp_path_factory, table, group_rows,
                                                                        as_dictionary, data):
    p = tmp_path_factory.mktemp("cells") / "t.parquet"
    pq.write_table(table, p, row_group_size=group_rows)
    want = _expected(table)
    pf = parquet_text_as_dictionary(p) if as_dictionary else pq.ParquetFile(p)
    row0 = 0
    for rg in range(pf.metadata.num_row_groups):
        t = pf.read_row_group(rg, columns=valued_columns(pf, rg))
        n = t.num_rows
        batch = t.combine_chunks().to_batches()[0]
        # a batch may be a slice of what Arrow decoded (the reader's batches are): cells at an offset
        cut = data.draw(st.integers(0, n - 1))
        batch = batch.slice(cut)
        m = n - cut
        rows = data.draw(st.none() | st.lists(st.integers(0, m - 1), unique=True).map(sorted))
        evs, _ = _batch_events(str(p), batch, row0 + cut, set(),
                               rows=None if rows is None else np.array(rows, dtype=np.int64))
        picked = range(m) if rows is None else rows
        assert evs == [want[row0 + cut + r] for r in picked]
        assert [list(e) for e in evs] == [list(want[row0 + cut + r]) for r in picked]     # column order
        row0 += n
    assert row0 == table.num_rows


def test_all_null_columns_are_left_unread_but_empty_lists_are_values(tmp_path):
    p = tmp_path / "t.parquet"
    t = pa.table({"seq": [0, 1], "none": pa.array([None, None], pa.string()),
                  "empty": pa.array([[], []], pa.list_(pa.int64())),
                  "nolist": pa.array([None, None], pa.list_(pa.int64()))})
    pq.write_table(t, p)
    pf = pq.ParquetFile(p)
    # a flat column with a null in every row is left out; a list column is read, even all null
    assert valued_columns(pf, 0) == ["seq", "empty", "nolist"]
    batch = pf.read_row_group(0, columns=valued_columns(pf, 0)).to_batches()[0]
    assert _batch_events(str(p), batch, 0, set())[0] == [{"seq": 0, "empty": []}, {"seq": 1, "empty": []}]
