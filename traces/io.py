"""Streaming readers and writers for traces in JSON Lines and Parquet.

Readers yield one event at a time (Parquet in record batches), so memory does not grow with
the trace. The format is told by the first bytes, not the name: Parquet (`PAR1`), gzip or
zstd compressed JSON Lines (decompressed on the fly), else JSON Lines. Every problem in the
input is reported as a TraceInputError naming the file and the line (JSON Lines) or row
(Parquet), never as a traceback. Rules of the stream itself (one object per line, no
duplicate keys, a supported schema_version, nothing after trace_ended) hold for every reader.
"""
from __future__ import annotations

import contextlib
import io
import os
import sys
from collections import deque
from functools import partial
from itertools import chain, count, repeat
from operator import setitem
from pathlib import Path
from typing import Callable, Iterator

import orjson

from rocketspec.errors import UserError

from .schema import ENVELOPE, fields, validate_event, version_problem

PARQUET_BATCH_ROWS = 65536


class TraceInputError(UserError):
    """Bad trace input: the file, the line (JSON Lines) or row (Parquet), and what was expected."""

    def __init__(self, path, line: int | None, message: str, *, event: int | None = None):
        super().__init__(message, file=path, line=line, event=event)
        self.path = self.file


def trace_format(path) -> str:
    """The format a trace is written in, by its name (readers look at the bytes instead)."""
    p = str(path)
    if p.endswith(".parquet"):
        return "parquet"
    if p.endswith(".jsonl") or p.endswith(".json") or p == "-":
        return "jsonl"
    raise TraceInputError(path, None, "unknown trace format: expected a .jsonl or .parquet file")


# ---------------------------------------------------------------- writing

class JsonlWriter:
    """One compact JSON object per line, written in chunks. A file is written under a temporary
    name and appears only complete: `close()` renames it onto `path`, `abort()` removes it
    (rocketspec/outputs.py). Standard output ("-") is a stream, written as it goes. As a context
    manager: close on success, abort on an exception."""

    _CHUNK = 2048

    def __init__(self, path):
        self.path = path
        self._stdout = str(path) == "-"
        self._file = None if self._stdout else _open_for_writing(path)
        self._fh = sys.stdout.buffer if self._stdout else self._file
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
        if self._stdout:
            self._fh.flush()
        else:
            self._file.commit()

    def abort(self) -> None:
        """Stop without making the file: what was written is removed, an older file stays."""
        self._lines.clear()
        if self._stdout:
            with contextlib.suppress(OSError, ValueError):
                self._fh.flush()
        else:
            self._file.discard()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()
        return False


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
        self._file = _open_for_writing(path)
        try:
            self._writer = pq.ParquetWriter(self._file.fh, self._schema, compression="zstd")
        except BaseException:
            self._file.discard()
            raise

    def write(self, event: dict) -> None:
        self._rows.append(event)
        if len(self._rows) >= PARQUET_BATCH_ROWS:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if not self._rows:
            return
        # An event sets a dozen of the ~80 columns: fill each row's own fields into columns of
        # None rather than asking every row for every column.
        n = len(self._rows)
        cols = {name: [None] * n for name in self._names}
        for i, r in enumerate(self._rows):
            for k, v in r.items():
                col = cols.get(k)
                if col is not None:     # a field outside the schema has no column, as before
                    col[i] = v
        for name in self._json:
            col = cols[name]
            for i, v in enumerate(col):
                if v is not None:
                    col[i] = orjson.dumps(v).decode()
        self._writer.write_batch(pa.record_batch(cols, schema=self._schema))
        self._rows = []

    def close(self) -> None:
        try:
            self._flush()
            self._writer.close()
        except BaseException:
            self._file.discard()
            raise
        self._file.commit()

    def abort(self) -> None:
        """Stop without making the file: what was written is removed, an older file stays."""
        self._rows = []
        with contextlib.suppress(Exception):
            self._writer.close()
        self._file.discard()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()
        return False


def _open_for_writing(path):
    from rocketspec.outputs import AtomicFile

    if os.path.isdir(str(path)):
        raise TraceInputError(path, None, "is a directory; expected the path of a trace file to write")
    try:
        return AtomicFile(path)
    except UserError as exc:
        raise TraceInputError(path, None, exc.message) from None


def open_writer(path):
    """A writer for a trace file by its name (.jsonl or .parquet; "-" is standard output). The file
    appears at `path` only when the writer is closed: use it as a context manager, or call
    `abort()` when the run fails, so no prefix is ever left under the name."""
    return ParquetWriter(path) if trace_format(path) == "parquet" else JsonlWriter(path)


def write_trace(path, events) -> int:
    """Write `events` to `path`, whole or not at all."""
    n = 0
    with open_writer(path) as w:
        for e in events:
            w.write(e)
            n += 1
    return n


# ---------------------------------------------------------------- reading

GZIP_MAGIC, ZSTD_MAGIC, PARQUET_MAGIC = b"\x1f\x8b", b"\x28\xb5\x2f\xfd", b"PAR1"
EXPECTED_FORMATS = "JSON Lines (one JSON object per line) or Parquet, optionally gzip or zstd compressed"
PROGRESS_EVERY = 1 << 16
MAX_LINE = 16 << 20  # an event is a few hundred bytes; its config object a few kilobytes
# Blank lines are skipped (an editor's last newline, a separator), but the work they cost is
# bounded by the events: a trace may hold this many more blank lines than events, no more, so
# that a gigabyte of newlines is refused at once instead of read for an hour.
BLANK_ALLOWANCE = 1024


class _Prefixed(io.RawIOBase):
    """A stream whose first bytes were already read (to tell the format of a stream that cannot
    seek back: standard input, a pipe, a FIFO). `owns`: closing it closes `rest`."""

    def __init__(self, head: bytes, rest, owns: bool = False):
        self._head, self._rest, self._owns = head, rest, owns

    def readable(self):
        return True

    def close(self):
        if self._owns and not self.closed:
            self._rest.close()
        super().close()

    def readinto(self, b):
        if self._head:
            n = min(len(b), len(self._head))
            b[:n], self._head = self._head[:n], self._head[n:]
            return n
        data = self._rest.read(len(b))
        b[:len(data)] = data
        return len(data)


def _open_raw(path):
    """(binary stream, its first four bytes, whether we own it)."""
    p = str(path)
    if p == "-":
        src = sys.stdin.buffer
        head = src.read(4)
        return io.BufferedReader(_Prefixed(head, src), 1 << 20), head, False
    if os.path.isdir(p):
        raise TraceInputError(path, None, f"is a directory; expected a trace file: {EXPECTED_FORMATS}")
    if not os.path.exists(p):
        raise TraceInputError(path, None, "no such file")
    try:
        fh = _open_waiting(p)
        if not fh.seekable():
            # a pipe (`<(zcat t.gz)`) or a FIFO: read as a stream, like standard input, and once
            st = os.fstat(fh.fileno())
            if (st.st_dev, st.st_ino) in _STREAMS_READ:
                fh.close()
                raise TraceInputError(path, None, "a pipe or FIFO that was already read: this command reads its "
                                                  "input more than once; give a file (e.g. `zcat t.gz > t.jsonl`)")
            _STREAMS_READ.add((st.st_dev, st.st_ino))
            head = fh.read(4)
            return io.BufferedReader(_Prefixed(head, fh, owns=True), 1 << 20), head, True
        head = fh.read(4)
        fh.seek(0)
    except OSError as exc:
        raise TraceInputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    return fh, head, True


WAIT_NOTICE_S = 1.0
_STREAMS_READ: set = set()  # (device, inode) of the pipes and FIFOs this process has read


def _open_waiting(p: str):
    """open(p, "rb"); a FIFO's open waits for a writer, and if that takes more than a second a
    line on standard error says what rocketspec waits for, so that a job never hangs silently."""
    import stat
    import threading

    try:
        fifo = stat.S_ISFIFO(os.stat(p).st_mode)
    except OSError:
        fifo = False
    if not fifo:
        return open(p, "rb")

    def notice():
        sys.stderr.write(f"rocketspec: {p} is a FIFO with no writer yet: waiting for one to open it\n")
        sys.stderr.flush()

    timer = threading.Timer(WAIT_NOTICE_S, notice)
    timer.daemon = True
    timer.start()
    try:
        return open(p, "rb")
    finally:
        timer.cancel()


class _CompressedDataError(Exception):
    """The compressed data failed to decompress, or ended early; the message names the byte."""


class _Decompressing(io.RawIOBase):
    """gzip or zstd compressed bytes in, what they hold out: member after member (gzip, with
    zero padding between) or frame after frame (zstd), as the tools that write them do.

    The decoder gets CHUNK bytes of the file at a time: one step's output stays small whatever
    the ratio (a decompression bomb costs no more memory than CHUNK times the format's largest
    ratio), and a failure is placed within CHUNK bytes of the file. What decoded before a failure
    is handed out first, so that the error comes at the line where it happened. A file that ends
    inside a member or frame is an error too: a truncated file must not read as a shorter trace
    (zstandard's stream_reader ends there silently)."""

    CHUNK = 1024

    def __init__(self, fh, comp: str):
        self._fh, self._comp = fh, comp
        self._unit = "gzip member" if comp == "gzip" else "zstd frame"
        self._dec = None
        self._pending = b""  # bytes read from the file, not yet given to a decoder
        self._pos = 0  # the file offset of _pending's first byte
        self._began = 0  # where the current member or frame began
        self._out, self._off = b"", 0
        self._fail: _CompressedDataError | None = None

    def readable(self):
        return True

    def readinto(self, b):
        while self._off >= len(self._out):
            if self._fail is not None:
                raise self._fail
            try:
                if not self._step():
                    return 0
            except _CompressedDataError as exc:
                self._fail = exc
        n = min(len(b), len(self._out) - self._off)
        b[:n] = self._out[self._off:self._off + n]
        self._off += n
        return n

    def _fill(self, n: int) -> bool:
        while len(self._pending) < n:
            data = self._fh.read(self.CHUNK)
            if not data:
                return False
            self._pending += data
        return True

    def _next_unit(self) -> bool:
        """Start the next member or frame; False at the end of the file."""
        if self._comp == "gzip":
            while self._fill(1):
                rest = self._pending.lstrip(b"\0")
                self._pos += len(self._pending) - len(rest)
                self._pending = rest
                if rest:
                    break
        self._fill(4)
        if not self._pending:
            return False
        head = self._pending[:4]
        if self._comp == "gzip":
            ok = head.startswith(GZIP_MAGIC)
        else:  # a frame, or a skippable frame (magic 0x184D2A50 to 0x184D2A5F)
            ok = head == ZSTD_MAGIC or (len(head) == 4 and head[1:] == b"\x2a\x4d\x18" and head[0] & 0xF0 == 0x50)
        if not ok:
            raise _CompressedDataError(f"at byte {self._pos}, after the {self._unit} that began at byte "
                                       f"{self._began}: bytes that are not {self._comp} data")
        if self._comp == "gzip":
            import zlib

            self._dec = zlib.decompressobj(wbits=31)  # 16 + 15: a gzip header and trailer (CRC-32, length)
        else:
            import zstandard

            self._dec = zstandard.ZstdDecompressor().decompressobj()
        self._began = self._pos
        return True

    def _step(self) -> bool:
        """Decode one chunk more; False at the end of the file, after a complete member or frame."""
        if self._dec is None and not self._next_unit():
            return False
        if not self._fill(1):
            raise _CompressedDataError(f"truncated {self._comp} data: the file ends at byte {self._pos}, inside the "
                                       f"{self._unit} that began at byte {self._began}")
        chunk, self._pending = self._pending[:self.CHUNK], self._pending[self.CHUNK:]
        start, self._pos = self._pos, self._pos + len(chunk)
        try:
            out = self._dec.decompress(chunk)
        except Exception as exc:  # noqa: BLE001 - zlib.error, zstandard.ZstdError
            raise _CompressedDataError(f"corrupted {self._comp} data between byte {start} and byte {self._pos - 1} "
                                       f"(in the {self._unit} that began at byte {self._began}): "
                                       f"{' '.join(str(exc).split())}") from None
        if self._dec.eof:
            rest = self._dec.unused_data
            self._pending, self._pos, self._dec = rest + self._pending, self._pos - len(rest), None
        self._out, self._off = out, 0
        return True


def _decompressing(path, fh, head):
    """(stream of JSON Lines bytes, compression name or None)."""
    if head.startswith(GZIP_MAGIC):
        comp = "gzip"
    elif head == ZSTD_MAGIC:
        comp = "zstd"
    else:
        return fh, None
    stream = io.BufferedReader(_Decompressing(fh, comp), 1 << 20)
    try:
        inner = stream.peek(4)[:4]
    except _CompressedDataError as exc:
        raise TraceInputError(path, 1, str(exc)) from None
    if inner == PARQUET_MAGIC:
        raise TraceInputError(path, None, f"a {comp}-compressed Parquet file: Parquet compresses its own "
                                          "pages, give the .parquet file itself")
    return stream, comp


class _Stream:
    """The rules of a trace as a stream, whatever its format: one JSON object per event, a
    supported schema_version, nothing after trace_ended. One definition, called per event."""

    __slots__ = ("path", "ended")

    def __init__(self, path):
        self.path, self.ended = path, None

    def check(self, line, ev) -> None:
        if self.ended is not None:
            raise TraceInputError(self.path, line, f"an event after trace_ended (line {self.ended}): "
                                                   "trace_ended is the last event of a trace")
        if type(ev) is not dict:
            raise TraceInputError(self.path, line, f"expected a JSON object on each line (JSON Lines), got "
                                                   f"{_json_type(ev)}")
        kind = ev.get("kind")
        if type(kind) is not str and kind is not None:
            raise TraceInputError(self.path, line, f"field 'kind' must be a string (an event kind), got "
                                                   f"{_json_type(kind)}", event=_seq(ev))
        if kind == "trace_ended":
            self.ended = line
        elif kind == "trace_started" and "schema_version" in ev:
            problem = version_problem(ev["schema_version"])
            if problem:
                raise TraceInputError(self.path, line, problem, event=_seq(ev))


def _seq(ev):
    s = ev.get("seq") if type(ev) is dict else None
    return s if type(s) is int else None


def _json_type(v) -> str:
    return {list: "a JSON array", dict: "a JSON object", str: "a JSON string", int: "a number", float: "a number", bool: "a boolean",
            type(None): "null"}.get(type(v), type(v).__name__)


class _DuplicateKey(Exception):
    pass


def _no_duplicates(pairs):
    seen = set()
    for k, _ in pairs:
        if k in seen:
            raise _DuplicateKey(k)
        seen.add(k)
    return None  # only the keys matter here


def duplicate_key(text) -> str | None:
    """The first key that appears twice in one object of this JSON text, or None.
    (orjson keeps the last value silently; a trace must not say two things at once.)"""
    import json

    try:
        json.loads(text, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as dup:
        return dup.args[0]
    except (ValueError, RecursionError):
        pass  # orjson accepted the text; what json's parser thinks of it otherwise does not matter
    return None


def _line_problem(raw: bytes, exc) -> str:
    """Why a non-blank line is not a JSON value, and what was expected."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as u:
        return (f"not valid UTF-8 (byte 0x{raw[u.start]:02x} at column {u.start + 1}); a trace is UTF-8 text: "
                f"{EXPECTED_FORMATS}")
    if b"\x00" in raw:
        return f"binary data (a NUL byte); expected {EXPECTED_FORMATS}"
    text = raw.strip()
    if text in (b"{", b"[", b"}", b"]", b"},", b"],") or text.startswith((b'"', b"}", b"]")):
        return ("this looks like pretty-printed JSON spread over several lines; a trace holds one JSON object "
                "per line (JSON Lines; e.g. `jq -c . FILE` writes it so)")
    if not raw.endswith(b"\n") and "end of data" in exc.msg:
        return ("malformed JSON: the last line ends inside its JSON object (a truncated trace?); expected one "
                "JSON object per line")
    return f"malformed JSON ({exc.msg} at column {exc.colno}); expected one JSON object per line"


def _iter_jsonl(path, stream, raw_fh, comp, progress) -> Iterator[tuple[int, dict]]:
    loads, dumps, err, nl = orjson.loads, orjson.dumps, orjson.JSONDecodeError, orjson.OPT_APPEND_NEWLINE
    rules = _Stream(path)
    check = rules.check
    every = PROGRESS_EVERY
    lineno = blank = 0
    try:
        # lines are read at most MAX_LINE + 1 bytes at a time: a file without newlines costs no
        # more memory than that (an over-long line does not parse, and is reported as too long)
        for lineno, raw in enumerate(iter(partial(stream.readline, MAX_LINE + 1), b""), 1):
            try:
                ev = loads(raw)
            except err as exc:
                if not raw.strip():
                    blank += 1
                    if blank > BLANK_ALLOWANCE + lineno - blank:
                        raise TraceInputError(path, lineno, f"{blank:,} blank lines against {lineno - blank:,} "
                                                            "event(s): not a trace (a blank line is allowed, but "
                                                            f"at most {BLANK_ALLOWANCE:,} more of them than "
                                                            "events)") from None
                    continue
                if len(raw) > MAX_LINE:
                    raise TraceInputError(path, lineno, f"a line longer than {MAX_LINE >> 20} MiB; expected one "
                                                        "event per line") from None
                raise TraceInputError(path, lineno, _line_problem(raw, exc)) from None
            # A line byte-equal to the canonical form of what it parsed to has no duplicate key;
            # only other lines (other writers, CRLF, spaces) pay for the exact check.
            try:
                canonical = dumps(ev, option=nl)
            except TypeError:  # orjson writes at most 255 levels; it reads more
                raise TraceInputError(path, lineno, "a value nested too deeply (more than 255 levels); expected "
                                                    "an event object with flat fields") from None
            if canonical != raw:
                dup = duplicate_key(raw)
                if dup is not None:
                    raise TraceInputError(path, lineno, f"duplicate key {dup!r} in one JSON object: each field "
                                                        "appears once", event=_seq(ev))
            # the stream's rules (_Stream.check) concern only the first and last events and odd
            # lines: the common event passes on these few tests
            if rules.ended is not None or type(ev) is not dict:
                check(lineno, ev)
            else:
                kind = ev.get("kind")
                if type(kind) is not str or kind == "trace_ended" or kind == "trace_started":
                    check(lineno, ev)
            if progress is not None and not lineno % every:
                progress(raw_fh.tell())
            yield lineno, ev
    except _CompressedDataError as exc:  # what decoded before it was read: the error is at its line
        raise TraceInputError(path, lineno + 1, str(exc)) from None
    except OSError as exc:
        raise TraceInputError(path, lineno + 1, f"cannot read: {exc}") from None


def _column_values(path, batch, i: int, row: int) -> list:
    """Column i of a record batch as Python values; text that is not UTF-8 is bad input at its row."""
    try:
        return batch.column(i).to_pylist()
    except UnicodeDecodeError:
        col = batch.column(i)
        for j in range(len(col)):
            try:
                col[j].as_py()
            except UnicodeDecodeError as exc:
                raise TraceInputError(path, row + j + 1, f"column {batch.schema.names[i]!r}: not valid UTF-8 text "
                                                         f"(byte 0x{exc.object[exc.start]:02x})") from None
        raise


def _check_names(path, names, row: int) -> None:
    if len(set(names)) < len(names):
        i = next(i for i, n in enumerate(names) if n in names[:i])
        raise TraceInputError(path, row + 1, f"column {i} ({names[i]!r}) has the name of column {names.index(names[i])}: "
                                             "each field is one column")


def _py_values(col) -> list:
    """`col.to_pylist()` of an array without nulls, the same values made faster for the writer's
    column types (pyarrow makes a scalar object per cell): numbers through numpy, text through a
    dictionary (each distinct string made once), lists from their flattened values and offsets."""
    import pyarrow as pa

    t = col.type
    if col.null_count:
        return col.to_pylist()
    if t == pa.int64() or t == pa.bool_():
        return col.to_numpy(zero_copy_only=False).tolist()
    if t == pa.string():
        enc = col.dictionary_encode()
        return list(map(enc.dictionary.to_pylist().__getitem__, enc.indices.to_numpy().tolist()))
    if t == pa.list_(pa.int64()) or t == pa.list_(pa.string()):
        flat = col.flatten()
        if not flat.null_count:
            vals = _py_values(flat)
            offs = col.offsets.to_numpy()
            offs = (offs - offs[0]).tolist()
            return list(map(vals.__getitem__, map(slice, offs, offs[1:])))
    return col.to_pylist()


def _is_dict_text(t) -> bool:
    """A dictionary-encoded text column (as Parquet stores text, and as a reader may ask for it)."""
    import pyarrow as pa

    return pa.types.is_dictionary(t) and t.value_type == pa.string()


def _column_getter(col):
    """For one column of a record batch: a function from row positions (a numpy array) to the
    column's values at those rows as Python values, what `_py_values(col.take(positions))` gives
    for rows that hold a value, made once per batch so that each group of rows costs numpy
    indexing rather than an Arrow take: numbers as a numpy array, text as one Python string per
    distinct value and an array of indices."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = col.type
    if t == pa.int64():
        arr = _int_cells(col)
        return lambda pos: arr[pos].tolist()
    if t == pa.bool_():
        arr = (pc.fill_null(col, False) if col.null_count else col).to_numpy(zero_copy_only=False)
        return lambda pos: arr[pos].tolist()
    if t == pa.string() or _is_dict_text(t):
        enc = col if _is_dict_text(t) else col.dictionary_encode()
        get = enc.dictionary.to_pylist().__getitem__
        ind = _int_cells(enc.indices)
        return lambda pos: list(map(get, ind[pos].tolist()))
    return lambda pos: _py_values(col.take(pa.array(pos)))


def _int_cells(arr):
    """An integer array's values as numpy, without a copy; a null's cell holds whatever the
    buffer holds there, and is never read (only the positions of values are indexed)."""
    import numpy as np

    if not arr.null_count:
        return arr.to_numpy()
    dt = np.dtype(arr.type.to_pandas_dtype())
    return np.frombuffer(arr.buffers()[1], dtype=dt, count=arr.offset + len(arr))[arr.offset:]


def _batch_events(path, batch, row: int, jf, rows=None) -> tuple[list[dict], list[str]]:
    """The rows of a record batch as event dicts (fields in column order, nulls left out; the
    JSON-typed fields still as text), and the JSON-typed columns that hold a value. `rows`, if
    given, is a sorted numpy array of the row indices wanted: only those become events, in
    that order (the rest of the batch is not converted). `row`: the file's row before the
    batch's first (for messages).

    An event sets ~13 of the schema's 81 fields, and the rows of a batch fall into a few dozen
    sets of non-null columns (mostly one per kind). So the rows are grouped by that set, and
    each group's columns are taken as Python lists (`_column_getter`) and filled into copies of
    one dict of the group's fields, a column at a time in C (`map(setitem, ...)`), so no dict is
    resized while it fills."""
    import numpy as np

    n = batch.num_rows
    names = batch.schema.names
    _check_names(path, names, row)
    cols = [i for i in range(len(names)) if batch.column(i).null_count < n]
    json_cols = [names[i] for i in cols if names[i] in jf]
    # which cells hold a value, for the columns with a null somewhere (the others: every row)
    valid = {i: batch.column(i).is_valid().to_numpy(zero_copy_only=False)
             for i in cols if batch.column(i).null_count}
    if rows is not None:
        valid = {i: v[rows] for i, v in valid.items()}
    m = n if rows is None else len(rows)
    # each row's set of non-null columns as a group number (62 columns to an int64 word)
    group = np.zeros(m, dtype=np.int64)
    partial = list(valid)
    for k in range(0, len(partial), 62):
        word = np.zeros(m, dtype=np.int64)
        for bit, i in enumerate(partial[k:k + 62]):
            word |= valid[i].astype(np.int64) << bit
        u, inv = np.unique(word, return_inverse=True)
        group = group * len(u) + inv.reshape(-1)
    order = np.argsort(group, kind="stable")        # positions among the rows wanted
    at = order if rows is None else rows[order]     # the same rows' indices in the batch
    sgroup = group[order]
    starts = np.flatnonzero(np.r_[True, sgroup[1:] != sgroup[:-1]]).tolist() + [m] if m else [0]
    events: list = [None] * m
    full = [i for i in cols if i not in valid]
    # each group's first row: which of the columns with nulls hold a value there
    firsts = np.stack([valid[i][order[starts[:-1]]] for i in partial]).T.tolist() if partial and m else []
    try:
        getters = {i: _column_getter(batch.column(i)) for i in cols} if m else {}
        for g, (a, b) in enumerate(zip(starts, starts[1:])):
            has = set(full)
            if partial:
                has.update(i for i, v in zip(partial, firsts[g]) if v)
            here = [i for i in cols if i in has]
            copy = dict.fromkeys(names[i] for i in here).copy
            evs = [copy() for _ in range(b - a)]
            pos = at[a:b]
            for i in here:
                deque(map(setitem, evs, repeat(names[i]), getters[i](pos)), maxlen=0)
            deque(map(events.__setitem__, order[a:b].tolist(), evs), maxlen=0)
    except UnicodeDecodeError:
        for i in cols:      # the first column, in column order, with text that is not UTF-8 says where
            _column_values(path, batch, i, row)
        # (a distinct value no row holds: a dictionary page of the file's own)
        raise TraceInputError(path, row + 1, "text that is not valid UTF-8 in the Parquet data of rows "
                                             f"{row + 1} to {row + n}") from None
    return events, json_cols


def _json_rows(batch, json_cols) -> dict[int, list[str]]:
    """The JSON-typed columns that hold a value, by row index in the batch."""
    import pyarrow.compute as pc

    out: dict[int, list[str]] = {}
    names = batch.schema.names
    for n in json_cols:
        col = batch.column(names.index(n))
        rows = range(len(col)) if col.null_count == 0 else pc.indices_nonzero(col.is_valid()).to_pylist()
        for j in rows:
            js = out.get(j)
            if js is None:
                out[j] = [n]
            else:
                js.append(n)
    return out


def json_column_value(path, row: int, n: str, v):
    """The value of a json-typed field stored as JSON text in a Parquet column (the writer's
    form), or TraceInputError at its row: not text, not JSON, nested too deeply, a duplicate key."""
    if not isinstance(v, (str, bytes)):
        raise TraceInputError(path, row, f"column {n!r} must hold JSON text, got {v!r}"[:200])
    text = v.encode() if isinstance(v, str) else v
    try:
        v = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        why = _line_problem(text, exc) if isinstance(text, bytes) else str(exc)
        raise TraceInputError(path, row, f"field {n!r} is not valid JSON text: {why}") from None
    try:
        differs = isinstance(v, (dict, list)) and orjson.dumps(v) != text
    except TypeError:  # orjson writes at most 255 levels
        raise TraceInputError(path, row, f"field {n!r}: a value nested too deeply (more than "
                                         "255 levels)") from None
    if differs:
        dup = duplicate_key(text)
        if dup is not None:
            raise TraceInputError(path, row, f"field {n!r}: duplicate key {dup!r} in one "
                                             "JSON object: each field appears once")
    return v


def _footer_place(source) -> str:
    """Where a Parquet file that does not open went wrong: opening reads only its footer, the
    last 8 bytes (the footer's length, PAR1) and the metadata before them."""
    try:
        size = source.seek(0, 2)
        source.seek(max(0, size - 8))
        tail = source.read(8)
    except Exception:  # noqa: BLE001 - only the message's place
        return "its Parquet footer"
    if size < 12:
        return f"the Parquet footer: {size} bytes, too short for a Parquet file (PAR1, data, footer, PAR1)"
    if tail[4:] != PARQUET_MAGIC:
        return f"the Parquet footer: the file does not end with PAR1 (byte {size - 4}; a truncated file?)"
    n = int.from_bytes(tail[:4], "little")
    if n > size - 12:
        return f"the Parquet footer: its length ({n} bytes, at byte {size - 8}) is more than the file holds"
    return f"the Parquet footer (metadata from byte {size - 8 - n} to byte {size - 9})"


def parquet_text_as_dictionary(path):
    """A ParquetFile of `path` whose flat text columns are read dictionary-encoded, as Parquet
    stores them: no string is made per cell, and each row group's distinct values are made
    once (traces.io._column_getter). Worth it for big row groups (the scoped replay); on a small
    file the second open costs more than it saves. (List columns stay plain: Arrow cannot read
    a list of dictionaries into more than one chunk.)"""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    names = [f.name for f in pf.schema_arrow if f.type == pa.string()]
    if not names or len(set(pf.schema_arrow.names)) < len(pf.schema_arrow.names):
        return pf
    return pq.ParquetFile(path, metadata=pf.metadata, read_dictionary=names)


def valued_columns(pf, rg: int) -> list[str] | None:
    """The columns of row group `rg` of a ParquetFile that may hold a value, for reading it:
    every column but the flat ones whose own statistics count a null in every row (decoding an
    all-null column is no cheaper than a full one, and most of the schema's 81 columns are all
    null in a row group: an event sets ~13). None: read every column (none to leave out, or
    names that repeat, which the reader reports). List columns are always read: their leaf's
    null count also counts empty lists, which are values."""
    md = pf.metadata
    names = pf.schema_arrow.names
    if len(set(names)) < len(names):
        return None
    g = md.row_group(rg)
    n = g.num_rows
    empty = set()
    for i in range(g.num_columns):
        c = g.column(i)
        st = c.statistics
        # (a list column's statistics are its leaf's, `name.list.element`, never a column name)
        if st is not None and st.has_null_count and st.null_count == n:
            empty.add(c.path_in_schema)
    if not empty or n == 0:
        return None
    return [x for x in names if x not in empty]


def _stream_rows(batch, rules: _Stream) -> list[int] | None:
    """The rows of this batch (indices) that `_Stream.check` may have something to say about:
    a trace_started or trace_ended, and the row after a trace_ended. None when that cannot be
    told from the kind column alone (something came after trace_ended already, or a kind that
    is missing or not text): then every row goes through the check."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    names = batch.schema.names
    if rules.ended is not None or "kind" not in names:
        return None
    col = batch.column(names.index("kind"))
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)) or col.null_count:
        return None
    started = pc.equal(col, "trace_started").to_numpy(zero_copy_only=False)
    ended = pc.equal(col, "trace_ended").to_numpy(zero_copy_only=False)
    if not started.any() and not ended.any():
        return []
    out = set(np.flatnonzero(started | ended).tolist())
    out.update(j + 1 for j in np.flatnonzero(ended).tolist() if j + 1 < len(col))
    return sorted(out)


def _iter_parquet(path, fh, owned, progress, on_batch=None) -> Iterator[tuple[int, dict]]:
    """(row, event) of a Parquet trace: the batches' rows chained in C (chain.from_iterable),
    so that an event costs no Python step of the reader's own but for the rows that need one."""
    return chain.from_iterable(_parquet_batches(path, fh, owned, progress, on_batch))


def _parquet_batches(path, fh, owned, progress, on_batch):
    """For each record batch, an iterator of its (row, event) pairs. The next batch is read only
    once the previous one's rows were all taken: errors come in row order, and `on_batch` and
    `progress` are called between the rows of two batches, as before."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    # Parquet needs to seek: a stream (standard input, a pipe, a FIFO) is read whole
    source = fh if owned and fh.seekable() else pa.BufferReader(fh.read())
    try:
        pf = pq.ParquetFile(source)
    except Exception as exc:  # pyarrow raises several types for a bad file
        raise TraceInputError(path, None, f"not a readable Parquet file: {_footer_place(source)}: "
                                          f"{' '.join(str(exc).split())}"[:300]) from None
    jf = _json_fields()
    rules = _Stream(path)
    row = 0
    try:
        # threads decode a big file's columns in parallel; on a small one they cost more than they save
        threads = pf.metadata.num_rows > PARQUET_BATCH_ROWS
        batches = chain.from_iterable(
            pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, row_groups=[rg], columns=valued_columns(pf, rg),
                            use_threads=threads)
            for rg in range(pf.metadata.num_row_groups))
        for batch in batches:
            marked = _stream_rows(batch, rules)
            events, json_cols = _batch_events(path, batch, row, jf)
            if on_batch is not None:
                on_batch(batch)
            if marked is None:
                yield _checked_rows(path, row, events, json_cols, rules)
            else:
                yield _plain_rows(path, row, events, json_cols, marked, batch, rules)
            row += len(events)
            if progress is not None:
                progress(row)
    except (OSError, pa.ArrowException) as exc:
        raise TraceInputError(path, row + 1, f"corrupted Parquet data after row {row}: "
                                             f"{' '.join(str(exc).split())}"[:300]) from None


def _checked_rows(path, row, events, json_cols, rules):
    """A batch's rows when `_stream_rows` could not tell which rows the stream's rules judge:
    every row through them."""
    for ev in events:
        row += 1
        for n in json_cols:
            v = ev.get(n)
            if v is not None:
                ev[n] = json_column_value(path, row, n, v)
        rules.check(row, ev)
        yield row, ev


def _plain_rows(path, row, events, json_cols, marked, batch, rules):
    """A batch's rows when `_stream_rows` told which rows the stream's rules judge: the same
    steps, for the few rows that need more than yielding (those with a JSON value to decode, and
    `marked`); the rows between them go by in C (zip)."""
    more = _json_rows(batch, json_cols) if json_cols else {}
    for j in marked:
        more.setdefault(j, [])
    if not more:
        return zip(count(row + 1), events)
    return _rows_with_more(path, row, events, more, rules)


def _rows_with_more(path, row, events, more, rules):
    last = 0
    for j in sorted(more):
        if j > last:
            yield from zip(count(row + 1 + last), events[last:j])
        ev = events[j]
        for n in more[j]:
            ev[n] = json_column_value(path, row + 1 + j, n, ev[n])
        rules.check(row + 1 + j, ev)
        yield row + 1 + j, ev
        last = j + 1
    if last < len(events):
        yield from zip(count(row + 1 + last), events[last:])


def out_of_order(seq, ts, last_seq, last_ts) -> str | None:
    """Why an event with (seq, ts) may not follow one with (last_seq, last_ts), or None: seq
    strictly increases, ts never decreases (the envelope order every reader checks)."""
    if last_seq is not None and seq <= last_seq:
        return f"events out of order: seq {seq} after seq {last_seq}"
    if last_ts is not None and ts < last_ts:
        return f"events out of order: ts {ts} after ts {last_ts} (seq {seq})"
    return None


def read_events(path, validate: bool = True,
                progress: Callable[[int], None] | None = None, on_batch=None) -> Iterator[tuple[int, dict]]:
    """Yield (line, event) pairs (line: the line of a JSON Lines file, the row of a Parquet one).
    With validate, check each event against the schema and the envelope order (seq strictly
    increasing, ts never decreasing). `progress(n)`, if given, is called now and then with the
    bytes read so far (JSON Lines) or rows (Parquet); `input_size(path)` is the total.
    `on_batch(batch)`, if given, is called with each Parquet record batch before its rows are
    yielded (traces.parquet_trust)."""
    fh, head, owned = _open_raw(path)
    try:
        if head == PARQUET_MAGIC:
            it = _iter_parquet(path, fh, owned, progress, on_batch)
        elif str(path).endswith(".parquet") and not head.startswith((GZIP_MAGIC, ZSTD_MAGIC, b"{")):
            raise TraceInputError(path, None, f"not a readable Parquet file: at byte 0 it holds {head[:4]!r}, not "
                                              "the magic PAR1 a Parquet file starts with (nor is it JSON Lines)")
        else:
            stream, comp = _decompressing(path, fh, head)
            it = _iter_jsonl(path, stream, fh, comp, progress)
        if not validate:
            yield from it
            return
        last_seq = last_ts = None
        for line, ev in it:
            problem = validate_event(ev)
            if problem:
                raise TraceInputError(path, line, problem, event=_seq(ev))
            seq, ts = ev["seq"], ev["ts"]
            if last_seq is not None and (seq <= last_seq or ts < last_ts):
                raise TraceInputError(path, line, out_of_order(seq, ts, last_seq, last_ts), event=seq)
            last_seq, last_ts = seq, ts
            yield line, ev
    finally:
        if owned:
            fh.close()


def is_parquet(path) -> bool:
    """A regular file that starts with Parquet's magic (as the readers tell it)."""
    p = str(path)
    if p == "-" or not os.path.isfile(p):
        return False
    try:
        with open(p, "rb") as fh:
            return fh.read(4) == PARQUET_MAGIC
    except OSError:
        return False


def input_size(path) -> tuple[int | None, str]:
    """(total for `progress`, its unit): bytes of a JSON Lines file, rows of a Parquet one."""
    p = str(path)
    if p == "-" or not os.path.isfile(p):
        return None, "B"
    try:
        if is_parquet(p):
            import pyarrow.parquet as pq

            return pq.ParquetFile(p).metadata.num_rows, " rows"
        return os.path.getsize(p), "B"
    except Exception:  # noqa: BLE001 - only a progress total; the reader reports the real problem
        return None, "B"


def iter_trace(path, validate: bool = True) -> Iterator[dict]:
    for _, ev in read_events(path, validate):
        yield ev


__all__ = ["TraceInputError", "read_events", "iter_trace", "open_writer", "write_trace", "input_size", "Path",
           "duplicate_key"]
