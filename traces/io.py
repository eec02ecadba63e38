"""Streaming readers and writers for traces in JSON Lines and Parquet.

Readers yield one event at a time (Parquet in record batches), so memory does not grow with
the trace. Every problem in the input is reported as a TraceInputError naming the file and
the line (JSON Lines) or row (Parquet), never as a traceback.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import orjson

from .schema import ENVELOPE, fields, validate_event

PARQUET_BATCH_ROWS = 65536


class TraceInputError(Exception):
    """Bad trace input: `where` is 'path:line' (or 'path row N'), `message` what was expected."""

    def __init__(self, path, line: int | None, message: str):
        self.path, self.line, self.message = str(path), line, message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


def trace_format(path) -> str:
    p = str(path)
    if p.endswith(".parquet"):
        return "parquet"
    if p.endswith(".jsonl") or p.endswith(".json") or p == "-":
        return "jsonl"
    raise TraceInputError(path, None, "unknown trace format: expected a .jsonl or .parquet file")


# ---------------------------------------------------------------- writing

class JsonlWriter:
    """One compact JSON object per line, written in chunks."""

    _CHUNK = 2048

    def __init__(self, path):
        self.path = path
        self._fh = open(path, "wb")
        self._lines: list[bytes] = []

    def write(self, event: dict) -> None:
        # Events are written as given: a None value becomes null, which readers treat as absent.
        self._lines.append(orjson.dumps(event, option=orjson.OPT_APPEND_NEWLINE))
        if len(self._lines) >= self._CHUNK:
            self._fh.write(b"".join(self._lines))
            self._lines.clear()

    def close(self) -> None:
        if self._lines:
            self._fh.write(b"".join(self._lines))
            self._lines.clear()
        self._fh.close()


def _arrow_schema():
    import pyarrow as pa

    types = {"int": pa.int64(), "str": pa.string(), "bool": pa.bool_(), "int_list": pa.list_(pa.int64()),
             "str_list": pa.list_(pa.string()), "json": pa.string()}
    order = list(ENVELOPE) + [n for n in fields() if n not in ENVELOPE]
    return pa.schema([pa.field(n, types[fields()[n]["type"]], nullable=n not in ENVELOPE) for n in order])


def _json_fields() -> set[str]:
    return {n for n, fd in fields().items() if fd["type"] == "json"}


class ParquetWriter:
    """One row per event; every schema field is a column, json-typed fields hold JSON text."""

    def __init__(self, path):
        import pyarrow.parquet as pq

        self.path = path
        self._schema = _arrow_schema()
        self._names = self._schema.names
        self._json = _json_fields()
        self._rows: list[dict] = []
        self._writer = pq.ParquetWriter(path, self._schema, compression="zstd")

    def write(self, event: dict) -> None:
        self._rows.append(event)
        if len(self._rows) >= PARQUET_BATCH_ROWS:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if not self._rows:
            return
        cols = {}
        for n in self._names:
            if n in self._json:
                cols[n] = [None if r.get(n) is None else orjson.dumps(r[n]).decode() for r in self._rows]
            else:
                cols[n] = [r.get(n) for r in self._rows]
        self._writer.write_batch(pa.record_batch(cols, schema=self._schema))
        self._rows = []

    def close(self) -> None:
        self._flush()
        self._writer.close()


def open_writer(path):
    return ParquetWriter(path) if trace_format(path) == "parquet" else JsonlWriter(path)


def write_trace(path, events) -> int:
    w = open_writer(path)
    n = 0
    try:
        for e in events:
            w.write(e)
            n += 1
    finally:
        w.close()
    return n


# ---------------------------------------------------------------- reading

def _iter_jsonl(path) -> Iterator[tuple[int, dict]]:
    import sys

    fh = sys.stdin.buffer if str(path) == "-" else open(path, "rb")
    try:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                yield lineno, orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise TraceInputError(path, lineno, f"malformed JSON: {exc}") from None
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()


def _iter_parquet(path) -> Iterator[tuple[int, dict]]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several types for a bad file
        raise TraceInputError(path, None, f"not a readable Parquet file: {exc}") from None
    jf = _json_fields()
    row = 0
    for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS):
        names = batch.schema.names
        columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        for values in zip(*columns):
            row += 1
            ev = {}
            for n, v in zip(names, values):
                if v is None:
                    continue
                if n in jf:
                    try:
                        v = orjson.loads(v)
                    except orjson.JSONDecodeError as exc:
                        raise TraceInputError(path, row, f"field {n!r} is not valid JSON text: {exc}") from None
                ev[n] = v
            yield row, ev


def read_events(path, validate: bool = True) -> Iterator[tuple[int, dict]]:
    """Yield (line, event) pairs. With validate, check each event against the schema and the
    envelope order (seq strictly increasing, ts never decreasing)."""
    path_s = str(path)
    if path_s != "-" and not os.path.exists(path_s):
        raise TraceInputError(path, None, "no such file")
    fmt = trace_format(path)
    it = _iter_parquet(path) if fmt == "parquet" else _iter_jsonl(path)
    if not validate:
        yield from it
        return
    last_seq = last_ts = None
    for line, ev in it:
        problem = validate_event(ev)
        if problem:
            raise TraceInputError(path, line, problem)
        seq, ts = ev["seq"], ev["ts"]
        if last_seq is not None and seq <= last_seq:
            raise TraceInputError(path, line, f"events out of order: seq {seq} after seq {last_seq}")
        if last_ts is not None and ts < last_ts:
            raise TraceInputError(path, line, f"events out of order: ts {ts} after ts {last_ts} (seq {seq})")
        last_seq, last_ts = seq, ts
        yield line, ev


def iter_trace(path, validate: bool = True) -> Iterator[dict]:
    for _, ev in read_events(path, validate):
        yield ev


__all__ = ["TraceInputError", "read_events", "iter_trace", "open_writer", "write_trace", "Path"]
