"""Fuzz the command line's inputs: traces (JSON Lines, Parquet), scenario files, scope files.

Each input is a mutant of a real seed: traces that `rocketspec simulate` writes for a few
built-in scenarios (shortened), the built-in scenario and scope files, and any real RocketMQ
traces under tests/fixtures/real/ (or --seed-dir). Most mutations are structure-aware: the seed
is parsed, changed as data (events deleted, duplicated, reordered; fields deleted or given
another type; numbers set to 2^62, 10^12, -1, 2^64+1, floats, "NaN"; offsets shifted by 10^12;
kinds swapped; keys added; values nested deep) and written back, so that most mutants parse and
reach the spec, not just the parser. The rest are changed as text or bytes: pretty-printed
JSON, duplicate keys, a BOM, UTF-16, invalid UTF-8, gzip and zstd, byte flips, truncation,
corrupted Parquet pages, YAML instead of TOML, a directory in place of a file.

Every input goes in-process through the CLI's own entry point (`rocketspec check`, `simulate`
with a scenario file, `explore` with a scope file and a state cap), in forked worker processes
that run many inputs each and hold real limits: 5 s of CPU time per input (a CPU-time alarm in
the worker, and a kill from the parent 2 s of CPU later if the alarm cannot interrupt it; CPU,
not wall time, so that a loaded machine does not turn slow into hung), 60 s of wall time (an
input that blocks), and 1 GB of memory (peak RSS measured per input; the parent kills a worker
whose RSS passes it; an address space limit stops a runaway allocation). A worker that dies is
replaced.

Outcomes (`classify`): verdict (exit 0 or 1), incomplete (exit 4), located (exit 2 with a
message that names the input file and a line, row, byte, event or field path: see
`is_located`), and the failures: unlocated (exit 2 without such a message), nojson (`--json`
printed no JSON object), crash (exit 3, a traceback, any other exit), hang (past 5 s), memory
(MemoryError or past 1 GB). Every failing input is saved to the corpus
(tests/fuzz_corpus/<kind>/<hash>.<ext> with a sidecar <hash>.case.json: command, outcome, message),
one per outcome signature (the exception type and the function that raised it, or the shape
of the message); tests/test_fuzz_corpus.py replays the corpus.

    python -m bench.fuzz_inputs [--inputs N] [--seed S] [--workers W] [--kinds K,..]
                                [--corpus DIR | --no-save] [--seed-dir DIR] [--only INDEX]
                                [--start I] [--status FILE] [--replay]

Prints the counts per kind and outcome, the share of inputs that parse, the rate in inputs
per second and the workers' CPU time per input; exits 1 when any input failed.
"""
from __future__ import annotations

import argparse
import copy
import gzip
import hashlib
import io
import json
import math
import os
import pickle
import random
import re
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "fuzz_corpus"
REAL_TRACES = REPO / "tests" / "fixtures" / "real"

KINDS = ("trace-jsonl", "trace-parquet", "scenario", "scope")
KIND_WEIGHTS = {"trace-jsonl": 40, "trace-parquet": 15, "scenario": 25, "scope": 20}
CLEAN = ("verdict", "incomplete", "located")
FAILURES = ("unlocated", "nojson", "crash", "hang", "memory")
OUTCOMES = CLEAN + FAILURES

LIMIT_SECONDS = 5.0         # per input, the hang limit, in CPU seconds: on a loaded machine
                            # (the fuzzer runs at nice 19 beside other jobs) slow is not hung
WALL_SECONDS = 60.0         # per input, in wall seconds: an input that blocks (uses no CPU) or starves
KILL_GRACE = 2.0            # the parent kills a worker this long after the alarm should have fired
MEMORY_BYTES = 1 << 30      # per input, peak RSS
# simulate's event budget per input (--max-events; exit 4 when spent): a scenario may ask for hours of
# simulated time (a mutant that deletes the seed's drain cap gets the 6 h default), which costs time
# in proportion, not a hang; at ~100,000 events per CPU-second this keeps an input near 2 s
SIMULATE_EVENTS = 200_000
BIG_LIST_BYTES = 16 << 20     # the "big-list" mutation's size cap
EXPLORE_STATES = 100        # explore's state cap per input: enough to run the explorer on the mutant, not to exhaust it
MAX_ROW_GROUPS = 4          # a Parquet mutant with small row groups has at most this many

# Seeds: built-in scenarios whose (shortened) traces seed the trace mutants.
TRACE_SCENARIOS = ("basic", "orderly", "rebalance", "faults", "tags", "sql-filter", "broadcast",
                   "retry-dlq", "multi-broker", "orderly-dlq", "offsets", "orderly-pause-lease")
SEED_DURATION_MS = 6000     # a seed scenario runs at most this long (simulated) ...
SEED_MESSAGES = 8           # ... and each producer sends at most this many messages
REAL_SEED_EVENTS = 400      # a real trace seeds with its first events (and its trace_ended)

INTERESTING_INTS = [0, 1, -1, 2, 7, 2**31 - 1, 2**31, 2**32, 2**53 + 1, 2**62, 2**63 - 1, 2**63, 2**64 + 1,
                    10**12, 10**18, -(2**63), -(10**12)]
INTERESTING_OTHER = [1.5, -0.0, 0.5, 1e300, -1e300, 1e-300, float("nan"), float("inf"), "NaN", "Infinity",
                     "1", "-1", "", "0x10", "1e3", True, False, None, [], {}, [1], {"a": 1}]
WEIRD_STRINGS = ["", " ", "x" * 70000, "\u00e9\u4e2d\U0001F600", "\ud800", "a\x00b", "%RETRY%GID", "%DLQ%x",
                 "../../etc/passwd", "TopicTest", "c1", "broker-a", "GID_basic", "*", "||", "a || b",
                 "CONCURRENTLY", "ORDERLY", "orderly", "BROADCASTING", "AVG", "\n", "'", '"', "\\"]


class FuzzTimeout(BaseException):
    """The wall-time alarm; a BaseException so that no `except Exception` in rocketspec eats it."""


# ====================================================================== seeds

def _short_scenario(raw: dict) -> dict:
    """A built-in scenario cut short: at most SEED_DURATION_MS and SEED_MESSAGES per producer."""
    raw = copy.deepcopy(raw)
    raw["duration_ms"] = min(int(raw.get("duration_ms", 60000)), SEED_DURATION_MS)
    raw["drain_limit_ms"] = min(int(raw.get("drain_limit_ms", SEED_DURATION_MS)), SEED_DURATION_MS)
    for pr in raw.get("producers", []):
        pr["count"] = min(int(pr.get("count", 1)), SEED_MESSAGES)
        pr["rate_per_s"] = max(float(pr.get("rate_per_s", 10)), 20.0)
    return raw


def _read_real_trace(path: Path) -> list[dict]:
    """The first REAL_SEED_EVENTS events of a real trace (and its last event if it ends it)."""
    from rocketspec.traces.io import iter_trace

    events = []
    last = None
    for ev in iter_trace(str(path), validate=False):
        if len(events) < REAL_SEED_EVENTS:
            events.append(ev)
        last = ev
    if last is not None and last.get("kind") == "trace_ended" and events[-1] is not last:
        events.append(last)
    return events


def build_seeds(seed_dirs=()) -> dict:
    """{'traces': [(name, events)], 'scenarios': [(name, raw, text)], 'scopes': [(name, raw, text)]}."""
    import tomllib

    from rocketspec.reference.runner import run
    from rocketspec.reference.scenario import validate
    from rocketspec.rocketmq.profiles import get_profile

    scen_dir = REPO / "reference" / "scenarios"
    scope_dir = REPO / "model_checks" / "scopes"
    seeds = {"traces": [], "scenarios": [], "scopes": []}
    for p in sorted(scen_dir.glob("*.toml")):
        text = p.read_text()
        seeds["scenarios"].append((p.stem, tomllib.loads(text), text))
    for p in sorted(scope_dir.glob("*.toml")):
        text = p.read_text()
        seeds["scopes"].append((p.stem, tomllib.loads(text), text))
    raw_by_name = {n: r for n, r, _ in seeds["scenarios"]}
    for i, name in enumerate(TRACE_SCENARIOS):
        if name not in raw_by_name:
            continue
        sc = validate(_short_scenario(raw_by_name[name]), f"builtin:{name}")
        events: list[dict] = []
        prof = get_profile("rocketmq-4.9.8" if i % 2 else "rocketmq-5.3.3")
        run(sc, 1 + i, prof, events.append)
        seeds["traces"].append((f"sim-{name}", events))
    dirs = [REAL_TRACES, *map(Path, seed_dirs)]
    for d in dirs:
        if not d.is_dir():
            continue
        for p in sorted(d.iterdir()):
            if p.is_file() and (p.suffix in (".jsonl", ".parquet") or p.name.endswith((".jsonl.gz", ".jsonl.zst"))):
                try:
                    events = _read_real_trace(p)
                except Exception as exc:  # a seed the readers refuse is reported, not used
                    print(f"seed {p} skipped: {exc}", file=sys.stderr)
                    continue
                if events:
                    seeds["traces"].append((f"real-{p.name}", events))
    return seeds


def _in_child(fn, *args, print_traceback: bool = False):
    """(True, fn(*args)) computed in a forked child process, or (False, None) if it failed: the
    parent must not start pyarrow's threads (Parquet) before it forks its workers."""
    fd, path = tempfile.mkstemp(prefix="fuzz-child-", suffix=".pickle")
    os.close(fd)
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            with open(path, "wb") as fh:
                pickle.dump(fn(*args), fh)
        except BaseException:  # noqa: BLE001 - the parent reports the failure
            if print_traceback:
                traceback.print_exc()
            code = 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    try:
        if os.waitstatus_to_exitcode(status) != 0:
            return False, None
        with open(path, "rb") as fh:
            return True, pickle.load(fh)
    finally:
        os.unlink(path)


def build_seeds_forked(seed_dirs=()) -> dict:
    """build_seeds in a child process (see _in_child)."""
    ok, seeds = _in_child(build_seeds, seed_dirs, print_traceback=True)
    if not ok:
        raise RuntimeError("building the fuzz seeds failed (see the traceback above)")
    return seeds


def _make_input_forked(seeds, seed: int, index: int, kinds) -> dict | None:
    """make_input in a child process (see _in_child). None if it fails."""
    return _in_child(make_input, seeds, seed, index, kinds)[1]


# ====================================================================== mutation of values

def _any_value(r: random.Random):
    c = r.random()
    if c < 0.45:
        return r.choice(INTERESTING_INTS)
    if c < 0.8:
        # a copy: the document is mutated in place later, and a shared [] or {} that an input
        # grew into itself corrupted every later input of that worker (seed 30, from #844871 on:
        # RecursionError, "Circular reference detected", a SIGSEGV in pyarrow)
        return copy.deepcopy(r.choice(INTERESTING_OTHER))
    return r.choice(WEIRD_STRINGS)


def _swap_type(r: random.Random, v):
    """The same value as another JSON/TOML type, or a value of another type."""
    choices = []
    if isinstance(v, bool):
        choices = [int(v), str(v).lower(), None, [v]]
    elif isinstance(v, int):
        choices = [str(v), float(v) if abs(v) < 2**1000 else 1e308, v != 0, None, [v], {"value": v}]
    elif isinstance(v, float):
        choices = [int(v) if math.isfinite(v) else 0, repr(v), None]
    elif isinstance(v, str):
        choices = [len(v), None, [v], {"name": v}, True, 1.5]
        if v.lstrip("-").isdigit():
            choices.append(int(v))
    elif isinstance(v, list):
        choices = [v[0] if v else None, {"0": v}, len(v), ",".join(map(str, v))]
    elif isinstance(v, dict):
        choices = [list(v.values()), list(v.keys()), None, json.dumps(v)]
    else:
        choices = [0, "", [], {}]
    return r.choice(choices)


def _number_for(r: random.Random, v):
    """An interesting number in place of a number (or anything)."""
    c = r.random()
    if c < 0.6:
        return r.choice(INTERESTING_INTS)
    if c < 0.75 and isinstance(v, int) and not isinstance(v, bool):
        return v + r.choice([1, -1, 10**12, -(10**12), 2**62, 2**32])
    if c < 0.9:
        return r.choice([1.5, -1.0, 1e300, float("nan"), float("inf"), 0.1])
    return r.choice(["NaN", "1", "-1", "9" * 30])


def _paths(obj, prefix=()):
    """Every (path, value) in a nested dict/list, the root excluded."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append((prefix + (k,), v))
            out.extend(_paths(v, prefix + (k,)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.append((prefix + (i,), v))
            out.extend(_paths(v, prefix + (i,)))
    return out


def _parent(obj, path):
    for p in path[:-1]:
        obj = obj[p]
    return obj


DEEP = "\x00DEEP\x00"  # a placeholder string, replaced by a deeply nested value when written


def mutate_tree(r: random.Random, doc, notes: list[str], keys_pool=()):
    """One structure-aware change to a parsed JSON/TOML document (a dict), in place."""
    paths = _paths(doc)
    if not paths:
        doc[r.choice(list(keys_pool) or ["x"])] = _any_value(r)
        notes.append("add-key")
        return
    path, v = r.choice(paths)
    parent = _parent(doc, path)
    key = path[-1]
    op = r.choices(["delete", "type", "number", "string", "any", "dup", "shuffle", "add-key", "rename",
                    "deep", "empty", "big-list"],
                   [14, 16, 24, 7, 6, 6, 4, 6, 4, 3, 5, 1])[0]
    notes.append(f"{op}:{'.'.join(map(str, path))}"[:80])
    if op == "delete":
        del parent[key]
    elif op == "type":
        parent[key] = _swap_type(r, v)
    elif op == "number":
        # numbers are the interesting leaves: prefer one
        nums = [(p, x) for p, x in paths if isinstance(x, (int, float)) and not isinstance(x, bool)]
        if nums:
            path, v = r.choice(nums)
            parent, key = _parent(doc, path), path[-1]
            notes[-1] = f"number:{'.'.join(map(str, path))}"[:80]
        parent[key] = _number_for(r, v)
    elif op == "string":
        strs = [(p, x) for p, x in paths if isinstance(x, str)]
        if strs:
            path, v = r.choice(strs)
            parent, key = _parent(doc, path), path[-1]
        parent[key] = r.choice(WEIRD_STRINGS + [v * 2, v[: len(v) // 2], v.upper(), v.lower()] if isinstance(v, str)
                               else WEIRD_STRINGS)
    elif op == "any":
        parent[key] = _any_value(r)
    elif op == "dup":
        lists = [(p, x) for p, x in paths if isinstance(x, list) and x]
        if lists:
            path, lst = r.choice(lists)
            i = r.randrange(len(lst))
            lst.insert(r.randrange(len(lst) + 1), copy.deepcopy(lst[i]))
        elif isinstance(parent, dict):
            parent[f"{key}_"] = copy.deepcopy(v)
    elif op == "shuffle":
        lists = [x for _, x in paths if isinstance(x, list) and len(x) > 1]
        if lists:
            r.shuffle(r.choice(lists))
        elif isinstance(parent, list):
            r.shuffle(parent)
    elif op == "add-key":
        dicts = [x for _, x in paths if isinstance(x, dict)] + [doc]
        d = r.choice(dicts)
        name = r.choice(list(keys_pool) + ["extra", "x", ""]) if keys_pool else "extra"
        d[name] = _any_value(r)
    elif op == "rename":
        if isinstance(parent, dict):
            new = r.choice([str(key).upper(), f"{key}s", str(key)[:-1], f"{key}-x", str(key).replace("_", "-")])
            parent[new] = parent.pop(key)
    elif op == "deep":
        parent[key] = DEEP
    elif op == "empty":
        parent[key] = r.choice([[], {}, "", 0])
    elif op == "big-list":
        if repr(DEEP)[1:-1] in repr(v):
            # one deep value is the point; 5000 copies of one 100,000 deep were a 416 MB input
            # whose making passed the worker's 1 GB (seed 30 #51829, reported as the CLI's)
            v = 1
        n = r.choice([100, 1000, 5000])
        # at most BIG_LIST_BYTES in all: 5000 copies of a 70,000-character string made a 350 MB
        # input whose making passed the worker's 1 GB (seed 30 #913089); past 4 MiB the CLI
        # refuses the file anyway
        n = max(1, min(n, BIG_LIST_BYTES // max(1, len(repr(v)))))
        parent[key] = [copy.deepcopy(v) for _ in range(n)]


def _deep_text(r: random.Random, style: str) -> str:
    n = r.choice([50, 200, 1000, 5000, 100000])
    if style == "toml":
        return "[" * n + "1" + "]" * n if r.random() < 0.7 else "{ a = " * n + "1" + " }" * n
    return "[" * n + "1" + "]" * n if r.random() < 0.5 else '{"a":' * n + "1" + "}" * n


# ====================================================================== writing documents

# one encoder per style, made once: json.dumps with options builds a new encoder on every call
_COMPACT = {a: json.JSONEncoder(ensure_ascii=a, separators=(",", ":")).encode for a in (True, False)}


def json_text(obj, r: random.Random, indent=None) -> str:
    ascii_ = r.random() < 0.2
    text = json.dumps(obj, ensure_ascii=ascii_, indent=indent) if indent else _COMPACT[ascii_](obj)
    if DEEP in text or "\\u0000DEEP\\u0000" in text:
        text = text.replace(json.dumps(DEEP), _deep_text(r, "json"))
    return text


def _toml_key(k) -> str:
    k = str(k)
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


def _toml_value(v, r) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        if v == DEEP:
            return _deep_text(r, "toml")
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x, r) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(x, r)}" for k, x in v.items()) + " }"
    if v is None:
        return '""'  # TOML has no null
    return json.dumps(str(v))


def toml_text(doc: dict, r: random.Random) -> str:
    """TOML: scalars and inline values first, then [tables] and [[arrays of tables]]."""
    head, tail = [], []
    for k, v in doc.items():
        if isinstance(v, dict) and v and r.random() < 0.8:
            tail.append(f"\n[{_toml_key(k)}]")
            tail.extend(f"{_toml_key(k2)} = {_toml_value(x, r)}" for k2, x in v.items())
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v) and r.random() < 0.9:
            for x in v:
                tail.append(f"\n[[{_toml_key(k)}]]")
                tail.extend(f"{_toml_key(k2)} = {_toml_value(y, r)}" for k2, y in x.items())
        else:
            head.append(f"{_toml_key(k)} = {_toml_value(v, r)}")
    return "\n".join(head + tail) + "\n"


def yaml_text(doc, indent=0) -> str:
    pad = "  " * indent
    out = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            if isinstance(v, (dict, list)) and v:
                out.append(f"{pad}{k}:")
                out.append(yaml_text(v, indent + 1))
            else:
                out.append(f"{pad}{k}: {json.dumps(v)}")
    else:
        for v in doc:
            if isinstance(v, (dict, list)) and v:
                out.append(f"{pad}-")
                out.append(yaml_text(v, indent + 1))
            else:
                out.append(f"{pad}- {json.dumps(v)}")
    return "\n".join(out)


def _zstd(data: bytes) -> bytes:
    import pyarrow as pa

    return pa.compress(data, codec="zstd", asbytes=True)


def encode_text(r: random.Random, text: str, notes: list[str], compress_names=None) -> tuple[bytes, str | None]:
    """Bytes for a text, sometimes in another encoding or compressed; returns (bytes, name suffix)."""
    c = r.random()
    if c < 0.88:
        return text.encode("utf-8", "surrogatepass"), None
    op = r.choice(["bom", "utf16", "utf16-nobom", "latin1", "invalid-utf8", "gzip", "zstd", "gzip", "zstd"])
    notes.append(f"encoding:{op}")
    if op == "bom":
        return b"\xef\xbb\xbf" + text.encode("utf-8", "surrogatepass"), None
    if op == "utf16":
        return text.encode("utf-16", "surrogatepass"), None
    if op == "utf16-nobom":
        return text.encode("utf-16-le", "surrogatepass"), None
    if op == "latin1":
        return text.encode("latin-1", "replace"), None
    if op == "invalid-utf8":
        b = bytearray(text.encode("utf-8", "surrogatepass"))
        for _ in range(r.randint(1, 3)):
            if b:
                b[r.randrange(len(b))] = r.choice([0xFF, 0xC3, 0x80, 0xFE, 0xED])
        return bytes(b), None
    data = text.encode("utf-8", "surrogatepass")
    if op == "gzip":
        return gzip.compress(data, mtime=0), (".gz" if compress_names and r.random() < 0.5 else None)
    return _zstd(data), (".zst" if compress_names and r.random() < 0.5 else None)


def mutate_bytes(r: random.Random, data: bytes, notes: list[str]) -> bytes:
    b = bytearray(data)
    op = r.choice(["flip", "flip", "truncate", "insert", "delete", "zero"])
    notes.append(f"bytes:{op}")
    if not b:
        return bytes(r.randbytes(8))
    if op == "flip":
        for _ in range(r.choice([1, 1, 2, 4, 16])):
            i = r.randrange(len(b))
            b[i] ^= 1 << r.randrange(8)
    elif op == "truncate":
        del b[r.randrange(len(b)):]
    elif op == "insert":
        i = r.randrange(len(b) + 1)
        b[i:i] = r.randbytes(r.randint(1, 16))
    elif op == "delete":
        i = r.randrange(len(b))
        del b[i:i + r.randint(1, 64)]
    else:
        i = r.randrange(len(b))
        b[i:i + r.randint(1, 64)] = bytes(min(64, len(b) - i))
    return bytes(b)


# ====================================================================== trace mutants

OFFSET_FIELDS = ("offset", "queue_offset", "min_offset", "max_offset", "next_offset", "next_begin_offset",
                 "commit_offset", "from_offset", "to_offset")


def _clone(obj):
    """A deep copy, faster than copy.deepcopy for plain data."""
    return pickle.loads(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL))


def mutate_events(r: random.Random, events: list[dict], notes: list[str]) -> list[dict]:
    events = _clone(events)
    for _ in range(r.choice([1, 1, 1, 1, 2, 2, 3, 5])):
        op = r.choices(["field", "int-value", "same-field", "delete-event", "dup-event", "swap-events",
                        "move-event", "truncate", "shift-offsets", "kind", "schema-version", "after-end", "seq-ts",
                        "drop-ended"],
                       [30, 20, 10, 6, 6, 5, 4, 4, 8, 5, 3, 3, 5, 3])[0]
        if not events:
            events.append({"seq": 0, "ts": 0, "kind": "trace_started"})
        i = r.randrange(len(events))
        if op == "field":
            mutate_tree(r, events[i], notes, keys_pool=("seq", "ts", "kind", "queue", "offset", "client",
                                                        "group", "topic", "broker", "obs", "extra"))
            continue
        if op == "int-value":
            # a value of the right type, so that the event stays valid and reaches the spec
            ints = [k for k, v in events[i].items() if isinstance(v, int) and not isinstance(v, bool)
                    and k not in ("seq", "ts")]
            if ints:
                k = r.choice(ints)
                v = events[i][k]
                events[i][k] = r.choice([0, 1, 2, 3, 2**31, 2**62, 10**12, 2**63 - 1, v + 1, max(0, v - 1), v * 2,
                                         v + 10**12])
                notes.append(f"int-value:{k}")
            continue
        if op == "same-field":
            # a value this field has elsewhere in the trace (another queue, client, offset...)
            k = r.choice(list(events[i]) or ["kind"])
            others = [e[k] for e in events if isinstance(e, dict) and k in e and k not in ("seq", "ts")]
            if others:
                events[i][k] = _clone(r.choice(others))
                notes.append(f"same-field:{k}")
            continue
        notes.append(op)
        if op == "delete-event":
            del events[i]
        elif op == "dup-event":
            events.insert(r.randrange(len(events) + 1), copy.deepcopy(events[i]))
        elif op == "swap-events" and len(events) > 1:
            j = r.randrange(len(events))
            events[i], events[j] = events[j], events[i]
        elif op == "move-event":
            ev = events.pop(i)
            events.insert(r.randrange(len(events) + 1), ev)
        elif op == "truncate":
            del events[r.randrange(1, len(events) + 1):]
        elif op == "shift-offsets":
            # every offset of the trace moved by the same amount: the verdict must not change,
            # and the cost must not grow with the amount
            delta = r.choice([10**12, 2**62 - 10**6, 2**40, 10**6])
            for ev in events:
                for f in OFFSET_FIELDS:
                    if isinstance(ev.get(f), int) and not isinstance(ev.get(f), bool):
                        ev[f] += delta
        elif op == "kind":
            kinds = sorted({e.get("kind") for e in events if isinstance(e.get("kind"), str)})
            events[i]["kind"] = r.choice(kinds + ["trace_started", "bogus_kind", ""])
        elif op == "schema-version":
            events[0]["schema_version"] = r.choice([99, 0, -1, 2**64 + 1, "2", 1.5, None, 1, 2, 3])
        elif op == "after-end":
            last = copy.deepcopy(events[i])
            if isinstance(events[-1].get("seq"), int) and isinstance(events[-1].get("ts"), int):
                last["seq"], last["ts"] = events[-1]["seq"] + 1, events[-1]["ts"]
            events.append(last)
        elif op == "seq-ts":
            f = r.choice(["seq", "ts"])
            big = r.choice([2**62, 10**12, 2**63 - 1, 2**64 + 1])
            for ev in events[i:]:
                if isinstance(ev.get(f), int) and not isinstance(ev.get(f), bool):
                    ev[f] += big if r.random() < 0.9 else -big
        elif op == "drop-ended":
            events = [e for e in events if e.get("kind") != "trace_ended"]
    moved = {"dup-event", "swap-events", "move-event", "after-end"} & set(notes)
    if moved and "seq-ts" not in notes and r.random() < 0.8:
        # renumbered, so that the moved events reach the spec instead of the order check
        notes.append("renumber")
        seq = ts = None
        for ev in events:
            if isinstance(ev.get("seq"), int) and isinstance(ev.get("ts"), int):
                seq = ev["seq"] if seq is None else seq + 1
                ts = ev["ts"] if ts is None else max(ts, ev["ts"])
                ev["seq"], ev["ts"] = seq, ts
    return events


def jsonl_bytes(r: random.Random, events: list[dict], notes: list[str]) -> tuple[bytes, str]:
    """The events as JSON Lines, sometimes pretty-printed, with duplicate keys, blank lines..."""
    lines = [json_text(ev, r) for ev in events]
    c = r.random()
    if c < 0.04:
        notes.append("pretty")
        lines = [json_text(ev, r, indent=2) for ev in events]
    elif c < 0.08 and lines:
        notes.append("pretty-one")
        i = r.randrange(len(lines))
        lines[i] = json_text(events[i], r, indent=r.choice([1, 2, 4]))
    elif c < 0.13 and lines:
        notes.append("duplicate-key")
        i = r.randrange(len(lines))
        ev = events[i]
        if isinstance(ev, dict) and ev:
            k = r.choice(list(ev))
            lines[i] = "{" + json.dumps(k) + ":" + json.dumps(_any_value(r) if r.random() < 0.5 else ev[k],
                                                              allow_nan=True) + "," + lines[i][1:]
    elif c < 0.16:
        notes.append("blank-lines")
        for _ in range(r.randint(1, 4)):
            lines.insert(r.randrange(len(lines) + 1), r.choice(["", "  ", "\t"]))
    elif c < 0.18:
        notes.append("json-array")
        lines = ["[" + ",".join(lines) + "]"]
    elif c < 0.20 and lines:
        notes.append("trailing-garbage")
        i = r.randrange(len(lines))
        lines[i] += r.choice([",", " x", "}", " // c", "\x00"])
    sep = "\r\n" if r.random() < 0.03 else "\n"
    text = sep.join(lines) + (sep if r.random() < 0.95 else "")
    data, suffix = encode_text(r, text, notes, compress_names=True)
    name = "trace.jsonl" + (suffix or "")
    if r.random() < 0.03:
        name = "trace.json"
    if r.random() < 0.07:
        data = mutate_bytes(r, data, notes)
    return data, name


def _parquet_writable(typ) -> bool:
    """Whether Parquet can hold the Arrow type: not a struct without fields, at any depth."""
    import pyarrow as pa

    if pa.types.is_struct(typ):
        return typ.num_fields > 0 and all(_parquet_writable(typ.field(i).type) for i in range(typ.num_fields))
    if pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ):
        return _parquet_writable(typ.value_type)
    if pa.types.is_map(typ):
        return _parquet_writable(typ.key_type) and _parquet_writable(typ.item_type)
    return True


def _parquet_table(r: random.Random, events: list[dict], notes: list[str]):
    import pyarrow as pa

    from rocketspec.traces.schema import ENVELOPE, fields

    fdefs = fields()
    types = {"int": pa.int64(), "str": pa.string(), "bool": pa.bool_(), "int_list": pa.list_(pa.int64()),
             "str_list": pa.list_(pa.string()), "json": pa.string()}
    names = list(ENVELOPE) + [n for n in fdefs if n not in ENVELOPE]
    extra = sorted({k for e in events for k in e if isinstance(k, str)} - set(names))
    names += extra
    columns = {n: [None] * len(events) for n in names}
    for i, e in enumerate(events):  # by the keys each event has: ~10 of the 81 columns
        if isinstance(e, dict):
            for k, v in e.items():
                if isinstance(k, str):
                    columns[k][i] = v
    arrays, fields_ = [], []
    for n in names:
        vals = columns[n]
        kind = fdefs.get(n, {}).get("type")
        if kind == "json":
            vals = [None if v is None else json.dumps(v) for v in vals]
        typ = types.get(kind)
        if r.random() < 0.03:
            typ = r.choice([pa.int32(), pa.string(), pa.float64(), pa.int64(), pa.bool_()])
            notes.append(f"parquet-type:{n}")
        try:
            arr = pa.array(vals, type=typ)
            if not _parquet_writable(arr.type):
                raise TypeError("Parquet cannot hold a struct without fields (a value {})")
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError, ValueError,
                TypeError):
            try:
                arr = pa.array([None if v is None else json.dumps(v) if not isinstance(v, str) else v
                                for v in vals], type=pa.string())
            except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeEncodeError, ValueError):
                continue
        if n in ENVELOPE and r.random() < 0.02:
            notes.append(f"parquet-drop:{n}")
            continue
        arrays.append(arr)
        fields_.append(pa.field(n, arr.type, nullable=n not in ENVELOPE or arr.null_count > 0))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields_))


def parquet_bytes(r: random.Random, events: list[dict], notes: list[str]) -> tuple[bytes, str, bool]:
    """The events as a Parquet file; returns (bytes, name, parseable)."""
    import pyarrow.parquet as pq

    table = _parquet_table(r, events, notes)
    sink = io.BytesIO()
    compression = r.choice(["zstd", "zstd", "snappy", "gzip", "none", "lz4"])
    # many small row groups are slow to write and to read (each is a chunk per column, 81 of
    # them): rare, and at most MAX_ROW_GROUPS of them, enough for batches that span groups
    rows = None if r.random() < 0.9 else r.choice([7, 64]) if r.random() < 0.9 else 1
    if rows is not None:
        rows = max(rows, -(-table.num_rows // MAX_ROW_GROUPS))
    pq.write_table(table, sink, compression=compression, row_group_size=rows, use_dictionary=r.random() < 0.7)
    data = sink.getvalue()
    parseable = True
    c = r.random()
    if c < 0.10 and len(data) > 16:
        # a valid footer over corrupted pages
        notes.append("parquet-pages")
        footer_len = int.from_bytes(data[-8:-4], "little")
        end = max(5, len(data) - 8 - footer_len)
        b = bytearray(data)
        for _ in range(r.choice([1, 4, 32])):
            i = r.randrange(4, end)
            b[i] = r.randrange(256)
        data, parseable = bytes(b), False
    elif c < 0.15:
        data, parseable = mutate_bytes(r, data, notes), False
    elif c < 0.17:
        notes.append("parquet-jsonl-inside")
        data, parseable = b"\n".join(json_text(e, r).encode("utf-8", "surrogatepass") for e in events), False
    return data, "trace.parquet", parseable


# ====================================================================== scenario and scope mutants

def toml_doc_bytes(r: random.Random, raw: dict, kind: str, notes: list[str]) -> tuple[bytes, str]:
    doc = _clone(raw)
    if kind == "scenario" and r.random() < 0.95:
        doc = _short_scenario(doc)
    pool = ("name", "duration_ms", "queues", "count", "at_ms", "consumers", "messages", "max_states",
            "max_depth", "pause_ms", "faults", "steps", "topics", "groups", "producers")
    for _ in range(r.choice([0, 1, 1, 1, 2, 2, 3, 5])):
        mutate_tree(r, doc, notes, keys_pool=pool)
    c = r.random()
    name = f"{kind}.toml"
    if kind == "scenario" and c < 0.08:
        notes.append("as-json")
        text, name = json_text(doc, r, indent=r.choice([None, 2])), "scenario.json"
    elif c < 0.11:
        notes.append("as-yaml")
        text = yaml_text(doc) + "\n"
        name = r.choice([f"{kind}.yaml", name])
    else:
        text = toml_text(doc, r)
        if c < 0.15:
            notes.append("duplicate-key")
            lines = text.splitlines()
            j = r.randrange(len(lines) + 1)
            key = r.choice(list(doc) or ["name"])
            lines.insert(j, f"{_toml_key(key)} = {_toml_value(_any_value(r), r)}")
            text = "\n".join(lines) + "\n"
    data, suffix = encode_text(r, text, notes)
    if r.random() < 0.06:
        data = mutate_bytes(r, data, notes)
    return data, name


# ====================================================================== one input

def _arg_mutation(r: random.Random, kind: str, notes: list[str]) -> list[str]:
    """Rarely, an odd option value along with the file."""
    if r.random() > 0.03:
        return []
    opts = {"trace-jsonl": [["--profile", "nope"], ["--max-violations", "-1"], ["--max-violations", str(2**64 + 1)]],
            "trace-parquet": [["--profile", "nope"], ["--max-violations", "0"]],
            "scenario": [["--seed", str(2**64 + 1)], ["--seed", "-1"], ["--seed", str(2**63)], ["--profile", "nope"]],
            "scope": [["--max-depth", "0"], ["--max-states", "-1"], ["--profile", "nope"], ["--engine", "model"]]}
    extra = r.choice(opts[kind])
    notes.append("args:" + " ".join(extra)[:40])
    return extra


def _input_kind(r: random.Random, kinds) -> str:
    kinds = [k for k in KINDS if k in kinds]
    return r.choices(kinds, [KIND_WEIGHTS[k] for k in kinds])[0]


def make_input(seeds: dict, seed: int, index: int, kinds=KINDS) -> dict:
    """Input `index` of run `seed`: {kind, name, data (bytes, or None for a directory), argv, notes, parseable}."""
    r = random.Random(f"{seed}:{index}")
    kind = _input_kind(r, kinds)
    notes: list[str] = []
    parseable = None
    if kind in ("trace-jsonl", "trace-parquet"):
        src, events = r.choice(seeds["traces"])
        notes.append(f"seed:{src}")
        events = mutate_events(r, events, notes) if r.random() < 0.95 else _clone(events)
        if kind == "trace-jsonl":
            data, name = jsonl_bytes(r, events, notes)
        else:
            data, name, parseable = parquet_bytes(r, events, notes)
        argv = ["check", "{input}"] + (["--json"] if r.random() < 0.3 else [])
    else:
        src, raw, _ = r.choice(seeds["scenarios" if kind == "scenario" else "scopes"])
        notes.append(f"seed:{src}")
        data, name = toml_doc_bytes(r, raw, kind, notes)
        if kind == "scenario":
            argv = ["simulate", "--scenario", "{input}", "--out", "{dir}/out.jsonl", "--quiet",
                    "--seed", str(r.randrange(1, 1000)), "--max-events", str(SIMULATE_EVENTS)]
        else:
            argv = ["explore", "--scope", "{input}", "--max-states", str(EXPLORE_STATES),
                    "--quiet", "--out-dir", "{dir}/explore-out"] + (["--json"] if r.random() < 0.3 else [])
    extra = _arg_mutation(r, kind, notes)
    argv += extra
    if r.random() < 0.003:
        notes.append("directory")
        data = None
    if parseable is None:
        parseable = data is not None and _parses(data, name)
    return {"kind": kind, "name": name, "data": data, "argv": argv, "notes": notes, "parseable": parseable,
            "seed": seed, "index": index, "extra_args": extra}


def _parses(data: bytes, name: str) -> bool:
    """Whether the bytes parse as what the name says, strictly (UTF-8, no BOM, no compression)."""
    import tomllib

    import orjson

    try:
        text = data.decode("utf-8")
        if name.endswith(".toml"):
            return isinstance(tomllib.loads(text), dict)
        if name.endswith(".json") and not name.startswith("trace"):
            return isinstance(json.loads(text), dict)
        if name.endswith((".jsonl", ".json")):
            lines = [ln for ln in text.splitlines() if ln.strip()]
            return bool(lines) and all(isinstance(orjson.loads(ln), dict) for ln in lines)
    except (UnicodeDecodeError, ValueError, RecursionError, tomllib.TOMLDecodeError):
        return False
    return False


# ====================================================================== outcomes

# a key that does not read as a name is quoted as a JSON string (`subscriptions."": ...`); a TOML
# bare key (letters, digits, _ and -, e.g. `-ode`) reads as a name
_QUOTED_KEY = r'"(?:[^"\\]|\\.)*"'
_FIELD_PATH = re.compile(rf"(?:[\w$%-]+|{_QUOTED_KEY})(?:\[\d+\]|\.[\w$%-]+|\.{_QUOTED_KEY})*")
_NUMBERED = re.compile(r"\b(?:line|row|byte|column|event(?: seq)?|seq|record|row group)\s+#?-?\d+"
                       r"|\bend of (?:the )?(?:document|file|input)\b|\bParquet footer\b", re.I)


def is_located(message: str, input_path: str, json_obj: dict | None = None, argv=(), whole_file=False) -> bool:
    """The rule for a located rejection: the message names the input file (its path or its
    name) and a place in it: a line or row (`file:12:`), or `line|row|byte|column|event|seq N`,
    or a field path right after the file name (`file: topics[0].queues: ...`), or, in a
    `--json` error object, a non-null `line`, `event` or `field`. A rejected option value is
    located by the option's name (`--seed`, or `seed`) instead: `argv` lists the options given
    beyond the harness's own (see `_arg_mutation`). When the input is wrong as a whole (a
    directory, a file named .yaml: `whole_file`), naming the file is enough."""
    for opt in re.findall(r"--[a-z][a-z-]*", " ".join(argv)):
        if re.search(rf"{opt}\b|\b{opt[2:].replace('-', '[-_ ]')}\b", message):
            return True
    if json_obj is not None and any(json_obj.get(k) not in (None, "") for k in ("line", "event", "field")):
        named = str(json_obj.get("file") or json_obj.get("path") or "")
        if named and (named == input_path or os.path.basename(named) == os.path.basename(input_path)):
            return True
    for name in {input_path, os.path.basename(input_path)}:
        if whole_file and re.search(rf"{re.escape(name)}\b", message):
            return True
        start = 0
        while True:
            i = message.find(name, start)
            if i < 0:
                break
            start = i + len(name)
            rest = message[start:]
            if re.match(r":\d+\b", rest):
                return True
            if _NUMBERED.search(rest):
                return True
            if re.match(rf":\s+(?:event seq \d+:\s+)?{_FIELD_PATH.pattern}:\s", rest):
                return True
    return False


def _frames(tb_text: str) -> list[tuple[str, str]]:
    return re.findall(r'File "([^"]+)", line \d+, in (\S+)', tb_text)


def _where(frames: list[tuple[str, str]]) -> str:
    """The innermost frame in this repository (else the innermost), as 'path:function'."""
    root = str(REPO) + os.sep
    mine = [(f, fn) for f, fn in frames if f.startswith(root) and "/bench/fuzz_inputs.py" not in f]
    f, fn = (mine or frames or [("?", "?")])[-1]
    return f"{f[len(root):] if f.startswith(root) else os.path.basename(f)}:{fn}"


def _path_from_command(frames: list[tuple[str, str]], depth: int = 3) -> str:
    """Where a long run was, as the first few calls below the command's function: the innermost
    frame of a hang is wherever the alarm happened to land, the calls it came through are not."""
    root = str(REPO) + os.sep
    mine = [(f[len(root):], fn) for f, fn in frames if f.startswith(root) and "/bench/" not in f]
    start = next((i + 1 for i, (f, _) in enumerate(mine) if f.startswith("rocketspec/commands/")), 0)
    below = mine[start:start + depth] or mine[-depth:]
    return ">".join(f"{os.path.basename(f)}:{fn}" for f, fn in below) or "?"


def _norm_message(msg: str, input_path: str, workdir: str) -> str:
    """The shape of a message: paths, quoted text, numbers and the field a message starts with
    replaced, cut at its first clause, so that one kind of rejection is one signature."""
    msg = msg.replace(input_path, "<input>").replace(workdir, "<dir>")
    msg = re.sub(r"^error:\s*", "", msg.strip())
    msg = re.sub(r"^<input>(:\d+)?:\s*", "", msg)
    msg = re.sub(r"'[^']*('|$)|\"[^\"]*(\"|$)", "Q", msg)
    for _ in range(20):  # innermost lists first, to a fixed point
        msg, n = re.subn(r"\[[^\[\]]*\]", "L", msg)
        if not n:
            break
    msg = re.sub(r"\[[^\]]*$", "L", msg)
    msg = re.sub(r"\b(True|False|None|nan|inf)\b", "V", msg)
    msg = re.sub(r"\d+", "N", msg)
    msg = re.split(r"[,(:;]| got ", msg)[0]
    msg = re.sub(r"^[\w.\[\]]+ (must|is|are|should) ", r"K \1 ", msg)
    return " ".join(msg.split())[:60]


def classify(res: dict, input_path: str, workdir: str) -> tuple[str, str]:
    """(outcome, signature) of a finished run; the signature groups inputs that fail the same way."""
    code, out, err, exc = res["exit"], res["stdout"], res["stderr"], res["exception"]
    cmd = res["argv"][0]
    if res.get("timeout"):
        return "hang", f"hang:{cmd}:{_path_from_command(_frames(res.get('hang_tb', '')))}"
    if res.get("peak_rss", 0) > MEMORY_BYTES or (exc and exc[0] == "MemoryError") or \
            (code == 3 and "MemoryError" in err):
        where = _where(_frames(exc[2] if exc else err))
        return "memory", f"memory:{cmd}:{where}"
    if exc is not None:
        return "crash", f"crash:{cmd}:{exc[0]}@{_where(_frames(exc[2]))}"
    if code == 3 or code not in (0, 1, 2, 4):
        m = re.search(r"internal error[^:]*:\s*([A-Za-z_][\w.]*)", err + out)
        etype = m.group(1) if m else f"exit{code}"
        frames = _frames(err)
        where = _where(frames) if frames else _norm_message(err.strip().splitlines()[-1] if err.strip() else "",
                                                             input_path, workdir)[:50]
        return "crash", f"crash:{cmd}:{etype}@{where}"
    as_json = "--json" in res["argv"]
    json_obj = None
    if as_json:
        try:
            json_obj = json.loads(out.strip().splitlines()[-1]) if out.strip() else None
        except ValueError:
            json_obj = None
        if not isinstance(json_obj, dict):
            return "nojson", f"nojson:{cmd}:exit{code}"
    if code in (0, 1):
        return "verdict", "verdict"
    if code == 4:
        return "incomplete", "incomplete"
    text = err + "\n" + out
    if json_obj is not None:
        text += "\n" + str(json_obj.get("error", ""))
    if is_located(text, input_path, json_obj, res.get("extra_args", ()), res.get("whole_file", False)):
        return "located", "located"
    first = next((ln for ln in (err or out).splitlines() if ln.strip()), "")
    if json_obj is not None and json_obj.get("error"):
        first = str(json_obj["error"])
    return "unlocated", f"unlocated:{cmd}:{_norm_message(first, input_path, workdir)}"


# ====================================================================== the worker

def _entry_point():
    """The `rocketspec` console script's function (rocketspec.cli:main unless packaging says otherwise)."""
    try:
        from importlib.metadata import entry_points

        for ep in entry_points(group="console_scripts"):
            if ep.name == "rocketspec":
                return ep.load()
    except Exception:  # noqa: BLE001 - fall back to the module's own name
        pass
    from rocketspec.cli import main

    return main


def _on_alarm(signum, frame):
    raise FuzzTimeout("wall" if signum == signal.SIGALRM else "cpu")


def _vm(field: str) -> int:
    try:
        with open("/proc/self/status") as fh:
            for ln in fh:
                if ln.startswith(field + ":"):
                    return int(ln.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def place_input(inp: dict, workdir: str) -> str:
    """Write the input under its name in a fresh `workdir/in/`; return its path."""
    d = os.path.join(workdir, "in")
    os.makedirs(d, exist_ok=True)
    for entry in os.scandir(d):  # the previous input (emptying the folder is cheaper than a new one)
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            os.unlink(entry.path)
    path = os.path.join(d, inp["name"])
    if inp["data"] is None:
        os.makedirs(path)
    else:
        with open(path, "wb") as fh:
            fh.write(inp["data"])
    return path


def _short_tb(exc: BaseException) -> str:
    """The traceback's frames in this repository and the last few, each once in a row (a
    RecursionError's thousand frames would hide where it came from)."""
    frames = traceback.extract_tb(exc.__traceback__)
    root = str(REPO) + os.sep
    keep, last = [], None
    for i, fr in enumerate(frames):
        if fr.filename.startswith(root) or i >= len(frames) - 5:
            if (fr.filename, fr.name) != last:
                keep.append(f'  File "{fr.filename}", line {fr.lineno}, in {fr.name}\n    {fr.line or ""}\n')
            last = (fr.filename, fr.name)
    return "Traceback (most recent call last):\n" + "".join(keep) + f"{type(exc).__name__}: {str(exc)[:300]}\n"


class _Buffer(io.BytesIO):
    """Captured output that stays readable after the text wrapper over it is closed."""

    def close(self):
        pass


def run_argv(main, argv: list[str]) -> dict:
    """Run the CLI in this process with captured standard streams, under the wall-time alarm."""
    out_b, err_b = _Buffer(), _Buffer()
    saved = sys.stdin, sys.stdout, sys.stderr, sys.argv
    sys.stdin = io.TextIOWrapper(io.BytesIO(b""), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(out_b, encoding="utf-8", errors="strict", write_through=True)
    sys.stderr = io.TextIOWrapper(err_b, encoding="utf-8", errors="backslashreplace", write_through=True)
    sys.argv = ["rocketspec", *argv]
    res = {"argv": argv, "exit": None, "exception": None, "timeout": False}
    _reset_peak()
    t0 = time.perf_counter()
    signal.setitimer(signal.ITIMER_PROF, LIMIT_SECONDS)
    signal.setitimer(signal.ITIMER_REAL, WALL_SECONDS)
    try:
        try:
            main(argv, prog_name="rocketspec", standalone_mode=True)
            res["exit"] = 0
        except SystemExit as exc:
            c = exc.code
            res["exit"] = 0 if c is None else c if isinstance(c, int) else 1
            if not isinstance(c, (int, type(None))):
                sys.stderr.write(str(c) + "\n")
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.setitimer(signal.ITIMER_REAL, 0)
    except FuzzTimeout as exc:
        res["timeout"] = exc.args[0] if exc.args else "cpu"
        res["hang_tb"] = traceback.format_exc()
    except BaseException as exc:  # noqa: BLE001 - every escape is recorded
        res["exception"] = (type(exc).__name__, str(exc)[:300], _short_tb(exc))
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        for s in (sys.stdout, sys.stderr):
            try:
                s.flush()
            except Exception:  # noqa: BLE001 - a stream the command broke
                pass
        sys.stdin, sys.stdout, sys.stderr, sys.argv = saved
    res["seconds"] = time.perf_counter() - t0
    res["peak_rss"] = _vm("VmHWM")
    res["stdout"] = out_b.getvalue().decode("utf-8", "replace")
    res["stderr"] = err_b.getvalue()[:50000].decode("utf-8", "replace")
    return res


def execute(inp: dict, workdir: str, main) -> dict:
    """Place the input, run its command, classify the outcome."""
    for sub in ("out.jsonl", "explore-out"):
        p = os.path.join(workdir, sub)
        if os.path.isdir(p):
            shutil.rmtree(p, ignore_errors=True)
        elif os.path.exists(p):
            os.unlink(p)
    path = place_input(inp, workdir)
    argv = [a.replace("{input}", path).replace("{dir}", workdir) for a in inp["argv"]]
    res = run_argv(main, argv)
    res["extra_args"] = inp.get("extra_args", ())
    res["whole_file"] = inp["data"] is None or inp["name"].endswith(".yaml")
    outcome, sig = classify(res, path, workdir)
    msg = (res["exception"][0] + ": " + res["exception"][1]) if res["exception"] else \
        (res["stderr"].strip() or res["stdout"].strip())
    tb = res["exception"][2] if res["exception"] else ""
    if not res["exception"] and "Traceback (most recent call last)" in res["stderr"]:
        # exit 3 with the traceback printed (ROCKETSPEC_DEBUG): the message is the error line
        tb = res["stderr"]
        msg = next((ln for ln in reversed(res["stderr"].splitlines()) if ln.startswith("error:")),
                   res["stderr"].strip().splitlines()[-1])
    if res["timeout"]:
        limit = f"{LIMIT_SECONDS:.0f} s of CPU" if res["timeout"] == "cpu" else f"{WALL_SECONDS:.0f} s (wall)"
        msg = "no answer within %s; stack: %s" % (limit, " <- ".join(
            f"{os.path.basename(f)}:{fn}" for f, fn in reversed(_frames(res["hang_tb"])[-6:])))
    return {"outcome": outcome, "signature": sig, "exit": res["exit"], "seconds": res["seconds"],
            "peak_rss": res["peak_rss"], "message": msg[:600], "traceback": tb[-3000:]}


def _worker_loop(conn, seeds, kinds, workdir, as_limit, parent_pid) -> None:
    os.makedirs(workdir, exist_ok=True)
    os.chdir(workdir)
    os.environ["ROCKETSPEC_DEBUG"] = "1"  # an internal error prints its traceback, for the signature
    if not os.environ.get("FUZZ_WORKER_OUTPUT"):  # C-level chatter of the commands is not wanted
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.signal(signal.SIGPROF, _on_alarm)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if as_limit:
        resource.setrlimit(resource.RLIMIT_AS, (as_limit, as_limit))
    main = _entry_point()
    while True:
        try:
            while not conn.poll(1.0):
                if os.getppid() != parent_pid:  # the parent is gone (killed): so is the worker
                    os._exit(0)
            job = conn.recv()
        except EOFError:
            break
        if job is None:
            break
        cpu0 = time.process_time()
        if job[0] == "gen":
            try:
                inp = make_input(seeds, job[1], job[2], kinds)
            except BaseException as exc:  # noqa: BLE001 - the harness's own failure, reported as such
                conn.send(_harness_failure(job, kinds, exc))
                continue
        else:
            inp = job[1]
        try:
            r = execute(inp, workdir, main)
        except MemoryError:
            r = {"outcome": "memory", "signature": f"memory:{inp['argv'][0]}:harness", "exit": None,
                 "seconds": 0.0, "peak_rss": _vm("VmHWM"), "message": "MemoryError", "traceback": ""}
        except BaseException as exc:  # noqa: BLE001 - the harness's own failure, reported as such
            r = {"outcome": "crash", "signature": f"crash:{inp['argv'][0]}:harness-{type(exc).__name__}",
                 "exit": None, "seconds": 0.0, "peak_rss": _vm("VmHWM"), "message": f"in the fuzz harness: {exc!r}",
                 "traceback": traceback.format_exc()[-3000:]}
        r.update(kind=inp["kind"], parseable=inp["parseable"], index=inp.get("index"), name=inp["name"],
                 argv=inp["argv"], notes=inp["notes"], size=None if inp["data"] is None else len(inp["data"]),
                 cpu=time.process_time() - cpu0)  # making the input and running it, this worker's threads too
        if r["outcome"] in FAILURES:
            r["input"] = inp
        conn.send(r)
        if r["outcome"] in ("hang", "memory"):
            break  # an interrupted command may leave state behind: start afresh
    conn.close()
    os._exit(0)


def _harness_failure(job, kinds, exc: BaseException) -> dict:
    """The result of a gen job whose input could not be made: a crash of the harness, not of the CLI."""
    kind = _input_kind(random.Random(f"{job[1]}:{job[2]}"), kinds)
    return {"outcome": "crash", "signature": f"crash:make_input:harness-{type(exc).__name__}", "exit": None,
            "seconds": 0.0, "peak_rss": 0, "message": f"in the fuzz harness, making the input: {exc!r}"[:600],
            "traceback": traceback.format_exc()[-3000:], "kind": kind, "parseable": False, "index": job[2],
            "name": None, "argv": [], "notes": [], "size": None}


class Pool:
    """Forked workers, each running many inputs; a worker past the limits is killed and replaced."""

    def __init__(self, n: int, seeds, kinds=KINDS, root: str | None = None):
        import multiprocessing as mp

        self.ctx = mp.get_context("fork")
        self.seeds, self.kinds = seeds, kinds
        # on a tmpfs when there is one: every input is written, and often a trace or a report
        shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        self.root = root or tempfile.mkdtemp(prefix="fuzz-work-", dir=shm)
        self.own_root = root is None
        _preload()
        base = _vm("VmSize")
        # an address-space backstop: the interpreter's own mappings (pyarrow reserves ~1.3 GB of
        # address space it does not use) plus the memory limit; the limit itself is on peak RSS
        self.as_limit = base + (1 << 30) * 2 + MEMORY_BYTES
        self.workers = [self._start(i) for i in range(n)]

    def _start(self, i: int) -> dict:
        parent, child = self.ctx.Pipe()
        wd = os.path.join(self.root, f"w{i}")
        p = self.ctx.Process(target=_worker_loop, args=(child, self.seeds, self.kinds, wd, self.as_limit, os.getpid()),
                             daemon=True)
        p.start()
        child.close()
        return {"i": i, "proc": p, "conn": parent, "job": None, "t0": 0.0, "dir": wd}

    def _restart(self, w: dict) -> None:
        try:
            w["conn"].close()
        except OSError:
            pass
        if w["proc"].is_alive():
            w["proc"].kill()
        w["proc"].join(5)
        self.workers[self.workers.index(w)] = self._start(w["i"])

    def run(self, jobs, on_result) -> None:
        """Feed every job (('gen', seed, index) or ('run', input)) to the workers; call on_result(r)."""
        from multiprocessing.connection import wait

        jobs = iter(jobs)
        pending = True
        while True:
            for w in self.workers:
                if w["job"] is None and pending:
                    job = next(jobs, None)
                    if job is None:
                        pending = False
                        break
                    w["job"], w["t0"], w["cpu0"] = job, time.monotonic(), _cpu_of(w["proc"].pid)
                    w["conn"].send(job)
            busy = [w for w in self.workers if w["job"] is not None]
            if not busy and not pending:
                return
            ready = wait([w["conn"] for w in busy], timeout=0.05)
            now = time.monotonic()
            for w in list(busy):
                if w["conn"] in ready:
                    try:
                        r = w["conn"].recv()
                    except (EOFError, OSError):
                        r = self._dead(w, "died")
                        self._restart(w)
                    else:
                        if r["outcome"] in ("hang", "memory"):
                            self._restart(w)
                    w["job"] = None
                    on_result(r)
                    continue
                rss = _rss_of(w["proc"].pid)
                if not w["proc"].is_alive() and w["conn"].poll():
                    continue  # its answer came in after the wait: read it on the next round
                cpu = _cpu_of(w["proc"].pid) - w["cpu0"]
                late = cpu > LIMIT_SECONDS + KILL_GRACE or now - w["t0"] > WALL_SECONDS + KILL_GRACE
                if late or rss > MEMORY_BYTES or not w["proc"].is_alive():
                    why = "died" if not w["proc"].is_alive() else "memory" if rss > MEMORY_BYTES else "hang"
                    w["proc"].kill()
                    w["proc"].join(5)
                    r = self._dead(w, why)
                    self._restart(w)
                    on_result(r)

    def _dead(self, w: dict, why: str) -> dict:
        w["proc"].join(2)
        job = w["job"]
        # the input the worker died on: given, or made again (input i of seed s is always the same)
        inp = job[1] if job[0] == "run" else _make_input_forked(self.seeds, job[1], job[2], self.kinds)
        code = w["proc"].exitcode
        cmd = inp["argv"][0] if inp else "?"
        if why == "died":
            outcome, sig = "crash", f"crash:{cmd}:died-{_signame(code)}"
            msg = f"the worker died ({_signame(code)})"
        elif why == "memory":
            outcome, sig, msg = "memory", f"memory:{cmd}:rss", f"RSS past {MEMORY_BYTES >> 20} MB: killed"
        else:
            outcome, sig = "hang", f"hang:{cmd}:killed"
            msg = (f"no answer within {LIMIT_SECONDS + KILL_GRACE:.0f} s of CPU or {WALL_SECONDS + KILL_GRACE:.0f} s, "
                   "not interruptible: killed")
        r = {"outcome": outcome, "signature": sig, "exit": None, "seconds": time.monotonic() - w["t0"],
             "peak_rss": 0, "message": msg, "traceback": "", "input": inp,
             "kind": inp["kind"] if inp else "?", "parseable": inp["parseable"] if inp else False,
             "index": inp.get("index") if inp else None}
        if inp:
            r.update(name=inp["name"], argv=inp["argv"], notes=inp["notes"],
                     size=None if inp["data"] is None else len(inp["data"]))
        return r

    def close(self) -> None:
        for w in self.workers:
            try:
                w["conn"].send(None)
            except OSError:
                pass
        for w in self.workers:
            w["proc"].join(2)
            if w["proc"].is_alive():
                w["proc"].kill()
                w["proc"].join(2)
        if self.own_root:
            shutil.rmtree(self.root, ignore_errors=True)


def _preload() -> None:
    """Import the commands once in the parent, so that every forked worker starts warm (imports
    start no threads; pyarrow is only used in the workers)."""
    import importlib

    for m in ("rocketspec.cli", "rocketspec.commands.check", "rocketspec.commands.simulate",
              "rocketspec.commands.explore", "rocketspec.spec.replay", "rocketspec.reference.runner",
              "rocketspec.reference.scenario", "rocketspec.model_checks.refexplore", "rocketspec.traces.io",
              "pyarrow", "pyarrow.parquet", "tomllib", "orjson"):
        try:
            importlib.import_module(m)
        except ImportError:
            pass


def _signame(code) -> str:
    if code is None:
        return "unknown"
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal{-code}"
    return f"exit{code}"


def _cpu_of(pid: int) -> float:
    """CPU seconds (user + system) the process has used."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _CLK_TCK
    except (OSError, ValueError, IndexError):
        return 0.0


_CLK_TCK = os.sysconf("SC_CLK_TCK")


def _rss_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for ln in fh:
                if ln.startswith("VmRSS:"):
                    return int(ln.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


# ====================================================================== the corpus

SIDECAR = ".case.json"  # next to <hash>.<ext>: the command, the outcome, the message


def _ext(name: str) -> str:
    base = os.path.basename(name)
    return base.split(".", 1)[1] if "." in base else "bin"


def corpus_entries(corpus: Path = CORPUS) -> list[dict]:
    """Every sidecar in the corpus, with 'sidecar' (its path) and 'data_path' (None for a directory)."""
    out = []
    for side in sorted(corpus.glob(f"*/*{SIDECAR}")):
        try:
            meta = json.loads(side.read_text())
        except ValueError:
            continue
        if not isinstance(meta, dict) or "argv" not in meta:
            continue
        meta["sidecar"] = str(side)
        data = side.with_name(side.name[:-len(SIDECAR)] + "." + meta["ext"]) if meta.get("ext") else None
        meta["data_path"] = str(data) if data else None
        out.append(meta)
    return out


def corpus_input(meta: dict) -> dict:
    data = None if meta.get("directory") else Path(meta["data_path"]).read_bytes()
    return {"kind": meta["kind"], "name": meta["input_name"], "data": data, "argv": meta["argv"],
            "notes": meta.get("mutations", []), "parseable": meta.get("parseable", False),
            "index": meta.get("index"), "seed": meta.get("seed"), "extra_args": meta.get("extra_args", [])}


def save_to_corpus(r: dict, corpus: Path, known: set[str]) -> str | None:
    """Save a failing input unless its signature is already in the corpus; return the sidecar path."""
    inp = r.get("input")
    if inp is None or r["signature"] in known:
        return None
    known.add(r["signature"])
    data = inp["data"]
    h = hashlib.sha256((data if data is not None else b"<directory>") + repr(inp["argv"]).encode()).hexdigest()[:16]
    d = corpus / r["kind"]
    d.mkdir(parents=True, exist_ok=True)
    meta = {"kind": r["kind"], "input_name": inp["name"], "argv": inp["argv"], "outcome": r["outcome"],
            "signature": r["signature"], "message": r["message"][:400], "mutations": inp["notes"],
            "seed": inp.get("seed"), "index": inp.get("index"), "parseable": inp["parseable"],
            "extra_args": inp.get("extra_args", [])}
    if data is None:
        meta["directory"] = True
    else:
        meta["ext"] = _ext(inp["name"])
        (d / f"{h}.{meta['ext']}").write_bytes(data)
    side = d / f"{h}{SIDECAR}"
    side.write_text(json.dumps(meta, indent=1, ensure_ascii=True) + "\n")
    return str(side)


def run_one(inp: dict) -> dict:
    """One input through a fresh one-worker pool, under the same limits as a fuzz run."""
    out: list[dict] = []
    pool = Pool(1, None)
    try:
        pool.run([("run", inp)], out.append)
    finally:
        pool.close()
    assert len(out) == 1, out
    return out[0]


def replay(entries: list[dict], workers: int = 1) -> list[tuple[dict, dict]]:
    """Run each corpus entry again; [(entry, result)]."""
    out: list[tuple[dict, dict]] = []
    by_index = {}
    jobs = []
    for i, meta in enumerate(entries):
        inp = corpus_input(meta)
        inp["index"] = i
        by_index[i] = meta
        jobs.append(("run", inp))
    pool = Pool(workers, seeds=None)
    try:
        pool.run(jobs, lambda r: out.append((by_index[r["index"]], r)))
    finally:
        pool.close()
    return sorted(out, key=lambda x: x[0]["sidecar"])


# ====================================================================== the run

class Tally:
    def __init__(self):
        self.counts: dict[str, dict[str, int]] = {k: {o: 0 for o in OUTCOMES} for k in KINDS}
        self.parsed = {k: 0 for k in KINDS}
        self.total = {k: 0 for k in KINDS}
        self.secs = {k: 0.0 for k in KINDS}
        self.signatures: dict[str, list] = {}  # failing signature -> [count, example result]
        self.slowest = (0.0, None)
        self.peak = 0
        self.interrupted = False
        self.cpu = 0.0                      # the workers' CPU seconds, making and running the inputs

    def add(self, r: dict) -> None:
        k = r["kind"]
        if k not in self.counts:
            return
        self.counts[k][r["outcome"]] += 1
        self.total[k] += 1
        self.parsed[k] += bool(r["parseable"])
        self.secs[k] += r["seconds"] or 0.0
        if r["outcome"] in FAILURES:
            e = self.signatures.setdefault(r["signature"], [0, r])
            e[0] += 1
        if r["outcome"] in CLEAN and r["seconds"] > self.slowest[0]:
            self.slowest = (r["seconds"], r.get("index"))
        self.peak = max(self.peak, r.get("peak_rss") or 0)
        self.cpu += r.get("cpu") or 0.0

    def failures(self) -> int:
        return sum(self.counts[k][o] for k in KINDS for o in FAILURES)

    def report(self, seconds: float, workers: int) -> str:
        n = sum(self.total.values())
        w = max(len(o) for o in OUTCOMES)
        lines = [f"{'kind':14}{'inputs':>8}{'parse':>7}{'ms/in':>7} " + "".join(f"{o:>{w + 1}}" for o in OUTCOMES)]
        for k in KINDS:
            if not self.total[k]:
                continue
            share = 100.0 * self.parsed[k] / self.total[k]
            ms = 1000.0 * self.secs[k] / self.total[k]
            lines.append(f"{k:14}{self.total[k]:>8}{share:>6.0f}%{ms:>7.0f} " +
                         "".join(f"{self.counts[k][o]:>{w + 1}}" for o in OUTCOMES))
        tot = {o: sum(self.counts[k][o] for k in KINDS) for o in OUTCOMES}
        parsed = sum(self.parsed.values())
        ms = 1000.0 * sum(self.secs.values()) / n if n else 0.0
        lines.append(f"{'all':14}{n:>8}{(100.0 * parsed / n if n else 0):>6.0f}%{ms:>7.0f} " +
                     "".join(f"{tot[o]:>{w + 1}}" for o in OUTCOMES))
        rate = n / seconds if seconds else 0.0
        if self.interrupted:
            lines.append("interrupted: the counts are of the inputs that finished")
        lines.append(f"{n} inputs in {seconds:.1f} s with {workers} worker(s): {rate:.1f} inputs/s; "
                     f"parsed {parsed} ({100.0 * parsed / n if n else 0:.0f}%), reached a verdict "
                     f"{tot['verdict'] + tot['incomplete']} ({100.0 * (tot['verdict'] + tot['incomplete']) / n if n else 0:.0f}%); "
                     f"slowest clean input {self.slowest[0]:.2f} s (#{self.slowest[1]}), peak RSS {self.peak >> 20} MB")
        if n and self.cpu:
            # the figure that does not move with the other jobs on the machine
            lines.append(f"worker CPU {1000.0 * self.cpu / n:.1f} ms per input: {n / self.cpu:.0f} inputs per CPU "
                         f"second; 10^6 inputs take {1e6 / (n / self.cpu) / 3600:.1f} h of one core")
        if rate:
            lines.append(f"projected for 10^6 inputs: {1e6 / rate / 3600:.1f} h at this rate")
        if self.signatures:
            lines.append(f"failure signatures ({len(self.signatures)}):")
            for sig, (cnt, ex) in sorted(self.signatures.items(), key=lambda x: -x[1][0]):
                lines.append(f"  {cnt:>6}  {sig}")
                lines.append(f"          e.g. #{ex.get('index')}: {' '.join(ex['message'].split())[:150]}")
        return "\n".join(lines)


STATUS_EVERY = 60.0  # seconds between two writes of the status file


def write_status(path: Path, tally: "Tally", seconds: float, workers: int, seed: int, start: int,
                 final: bool) -> None:
    """The counts so far, as the report's text and as JSON (written whole, then renamed)."""
    n = sum(tally.total.values())
    counts = {"seed": seed, "start": start, "inputs_done": n, "seconds": round(seconds, 1),
              "inputs_per_s": round(n / seconds, 2) if seconds else 0.0, "final": final,
              "interrupted": tally.interrupted, "worker_cpu_seconds": round(tally.cpu, 1),
              "by_outcome": {o: sum(tally.counts[k][o] for k in KINDS) for o in OUTCOMES},
              "by_kind": tally.counts, "parsed": tally.parsed,
              "signatures": {sig: c for sig, (c, _) in tally.signatures.items()}}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(tally.report(seconds, workers) + "\n" + json.dumps(counts) + "\n")
    os.replace(tmp, path)


def fuzz(inputs: int, seed: int, workers: int = 1, kinds=KINDS, corpus: Path | None = CORPUS, seed_dirs=(),
         progress: bool = False, seeds=None, max_seconds: float | None = None, start: int = 0,
         status: Path | None = None, select: tuple | None = None):
    """Run mutants `start` .. `start + inputs - 1` (with `select`, only those of these kinds, the
    input stream unchanged: to re-run one kind's inputs of a range after a fix) (fewer if `max_seconds` runs out first, or on
    an interrupt: SIGINT, SIGTERM); return (tally, seconds, saved sidecars). With `status`, the
    counts so far are written there every STATUS_EVERY seconds and at the end."""
    seeds = seeds or build_seeds_forked(seed_dirs)
    tally = Tally()
    known = {m["signature"] for m in corpus_entries(corpus)} if corpus else set()
    saved: list[str] = []
    last = [time.monotonic(), time.monotonic()]

    def on_result(r):
        tally.add(r)
        if corpus is not None and r["outcome"] in FAILURES:
            s = save_to_corpus(r, corpus, known)
            if s:
                saved.append(s)
        now = time.monotonic()
        if progress and now - last[0] > 30:
            last[0] = now
            n = sum(tally.total.values())
            print(f"  ... {n} inputs, {tally.failures()} failures, {len(tally.signatures)} signatures, "
                  f"{n / (now - t0):.1f} inputs/s", file=sys.stderr, flush=True)
        if status is not None and now - last[1] > STATUS_EVERY:
            last[1] = now
            write_status(status, tally, now - t0, workers, seed, start, final=False)

    pool = Pool(workers, seeds, kinds)
    t0 = time.monotonic()
    old_term = signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM stops the run as ^C does
    try:
        def jobs():
            for i in range(start, start + inputs):
                if max_seconds is not None and time.monotonic() - t0 > max_seconds:
                    return
                if select and _input_kind(random.Random(f"{seed}:{i}"), kinds) not in select:
                    continue
                yield ("gen", seed, i)

        pool.run(jobs(), on_result)
    except KeyboardInterrupt:
        tally.interrupted = True  # the inputs still running are not counted
    finally:
        signal.signal(signal.SIGTERM, old_term)
        pool.close()
    if status is not None:
        write_status(status, tally, time.monotonic() - t0, workers, seed, start, final=True)
    return tally, time.monotonic() - t0, saved


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.fuzz_inputs", description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--kinds", default=",".join(KINDS), help="comma-separated subset of " + ", ".join(KINDS))
    ap.add_argument("--corpus", default=str(CORPUS), help="where failing inputs are saved")
    ap.add_argument("--no-save", action="store_true", help="do not save failing inputs")
    ap.add_argument("--seed-dir", action="append", default=[], help="more seed traces (.jsonl, .parquet)")
    ap.add_argument("--max-seconds", type=float, default=None, help="stop feeding inputs after this long")
    ap.add_argument("--start", type=int, default=0, help="the first input's index (to continue a run)")
    ap.add_argument("--select", default=None,
                    help="comma-separated kinds: run only the inputs of the range that are of these kinds "
                         "(the same inputs as in the full run, unlike --kinds)")
    ap.add_argument("--status", default=None, help="write the counts so far to this file every minute and at the end")
    ap.add_argument("--only", type=int, default=None, help="run input INDEX alone and describe it")
    ap.add_argument("--replay", action="store_true", help="replay the corpus and print each entry's outcome")
    a = ap.parse_args(argv)
    kinds = tuple(k for k in a.kinds.split(",") if k)
    bad = set(kinds) - set(KINDS)
    if bad:
        ap.error(f"unknown kinds {sorted(bad)}")
    select = tuple(k for k in (a.select or "").split(",") if k) or None
    if select and set(select) - set(kinds):
        ap.error(f"--select {sorted(set(select) - set(kinds))}: not among --kinds")
    if a.replay:
        rows = replay(corpus_entries(Path(a.corpus)), a.workers)
        bad_n = 0
        for meta, r in rows:
            ok = r["outcome"] in CLEAN
            bad_n += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {os.path.relpath(meta['sidecar'], REPO)} [{meta['signature']}] -> "
                  f"{r['outcome']}: {' '.join(r['message'].split())[:160]}")
        print(f"{len(rows)} corpus entries, {bad_n} still failing")
        return 1 if bad_n else 0
    if a.only is not None:
        seeds = build_seeds_forked(a.seed_dir)
        res = []
        pool = Pool(1, seeds, kinds)
        try:
            pool.run([("gen", a.seed, a.only)], res.append)
        finally:
            pool.close()
        r = res[0]
        print(f"input #{a.only}: {r['kind']} {r.get('name')} ({r.get('size')} bytes), argv {r.get('argv')}, "
              f"mutations {r.get('notes')}, parses: {r['parseable']}")
        print(f"outcome {r['outcome']} [{r['signature']}] exit {r['exit']} in {r['seconds']:.2f} s\n{r['message']}")
        if r["traceback"]:
            print(r["traceback"])
        return 0 if r["outcome"] in CLEAN else 1
    tally, secs, saved = fuzz(a.inputs, a.seed, a.workers, kinds, None if a.no_save else Path(a.corpus),
                              a.seed_dir, progress=True, max_seconds=a.max_seconds, start=a.start,
                              status=Path(a.status) if a.status else None, select=select)
    print(f"fuzz_inputs: seed {a.seed}, inputs {a.start}..{a.start + a.inputs - 1}, kinds {', '.join(kinds)}"
          + (f", only those of kinds {', '.join(select)}" if select else ""))
    print(tally.report(secs, a.workers))
    if saved:
        print(f"{len(saved)} new corpus entries:")
        for s in saved:
            print(f"  {os.path.relpath(s, REPO)}")
    return 1 if tally.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
