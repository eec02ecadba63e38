"""The input fuzzer (bench/fuzz_inputs.py): its rule for a located message, its outcome
classes and limits, and a short run of a few hundred inputs through the CLI."""
from __future__ import annotations

import gzip
import json

import pytest

from bench import fuzz_inputs as fz

SHORT_INPUTS = 300
SHORT_SEED = 20261124


# ---------------------------------------------------------------- the located-message rule

@pytest.mark.parametrize("message", [
    "error: /w/in/trace.jsonl:12: pull_held: missing required field 'queue'",
    "error: /w/in/scenario.toml: topics[0].queues: expected a queue count, got 'x'",
    "error: /w/in/scenario.toml: duration_ms: expected milliseconds, got 1.5",
    "error: /w/in/trace.jsonl: event seq 7: offset: expected a non-negative integer",
    "error: /w/in/scope.toml: not valid TOML: Invalid value (at line 3, column 9)",
    "error: /w/in/trace.parquet: row 17: field 'ts' must be an integer",
    "error: /w/in/scope.toml: not valid TOML: Unterminated string (at end of document)",
    "error: trace.jsonl: byte 0: gzip data is truncated",
    'error: /w/in/scenario.toml: groups[0].subscriptions."": topic is not declared in [[topics]]',
    'error: /w/in/scenario.toml: producers[0]."a: b".x: unknown key',
    'error: /w/in/scope.toml: "": unknown scope key',
    "error: /w/in/scope.toml: -ode: unknown scope key (known: adversary, consumers)",  # a TOML bare key
])
def test_located_messages(message):
    name = "scope.toml" if "scope" in message else "scenario.toml" if "scenario" in message else \
        "trace.parquet" if "parquet" in message else "trace.jsonl"
    assert fz.is_located(message, f"/w/in/{name}")


@pytest.mark.parametrize("message", [
    "error: /w/in/trace.jsonl: unknown trace format: expected a .jsonl or .parquet file",
    "error: /w/in/scope.toml: consumers 1..4, queues 1..6, messages 0..12",
    "error: /w/in/scope.toml: threads must be a non-negative integer, got -1",
    "error: /w/in/scenario.yaml: not a built-in scenario (basic, broadcast)",
    "error: surrogates not allowed",
    "error: line 3: malformed JSON",             # a place, but not the file
    "error: /w/in/other.jsonl:3: malformed JSON",  # another file
    "error: /w/in/scenario.toml: groups[0].subscriptions.: topic is not declared",  # an empty segment
    'error: /w/in/scenario.toml: groups[0].subscriptions."unclosed: topic is not declared',
])
def test_unlocated_messages(message):
    name = "scope.toml" if "scope" in message else "scenario.yaml" if "scenario" in message else "trace.jsonl"
    assert not fz.is_located(message, f"/w/in/{name}")


def test_a_file_wrong_as_a_whole_is_located_by_its_name():
    msg = "error: /w/in/scenario.toml: is a directory; expected a scenario file (.toml or .json)"
    assert fz.is_located(msg, "/w/in/scenario.toml", whole_file=True)
    assert not fz.is_located(msg, "/w/in/scenario.toml")
    assert not fz.is_located("error: is a directory", "/w/in/scenario.toml", whole_file=True)


def test_json_error_objects_and_options_are_located():
    obj = {"error": "bad", "file": "/w/in/trace.jsonl", "line": None, "event": 4, "field": None}
    assert fz.is_located("bad", "/w/in/trace.jsonl", obj)
    assert not fz.is_located("bad", "/w/in/trace.jsonl", dict(obj, event=None))
    # a rejected option value is located by the option's name
    assert fz.is_located("Invalid value for '--seed': 18446744073709551617 is too large", "/w/in/s.toml",
                         argv=["--seed", str(2**64 + 1)])
    assert fz.is_located("unknown profile 'nope'", "/w/in/t.jsonl", argv=["--profile", "nope"])
    assert not fz.is_located("no such thing: 'nope'", "/w/in/t.jsonl", argv=["--profile", "nope"])


def test_messages_of_one_shape_share_a_signature():
    res = {"exit": 2, "stdout": "", "exception": None, "argv": ["explore", "--scope", "/d/in/scope.toml"]}
    a = fz.classify(dict(res, stderr="error: /d/in/scope.toml: faults must be a non-negative integer, got -1"),
                    "/d/in/scope.toml", "/d")
    b = fz.classify(dict(res, stderr="error: /d/in/scope.toml: threads must be a non-negative integer, got 1e300"),
                    "/d/in/scope.toml", "/d")
    assert a == b and a[0] == "unlocated"


# ---------------------------------------------------------------- outcomes under the limits

def _trace_input(data: bytes, name="trace.jsonl", argv=("check", "{input}")) -> dict:
    return {"kind": "trace-jsonl", "name": name, "data": data, "argv": list(argv), "notes": [], "parseable": True,
            "index": 0, "extra_args": []}


@pytest.fixture(scope="module")
def seeds():
    return fz.build_seeds_forked()


def test_a_seed_trace_reaches_a_verdict(seeds):
    name, events = seeds["traces"][0]
    data = b"".join(json.dumps(e).encode() + b"\n" for e in events)
    r = fz.run_one(_trace_input(data))
    assert r["outcome"] == "verdict", r
    r = fz.run_one(_trace_input(data, argv=("check", "{input}", "--json")))
    assert r["outcome"] == "verdict", r
    # gzip: read (once the readers take compressed traces) or refused with a located message
    r = fz.run_one(_trace_input(gzip.compress(data)))
    assert r["outcome"] in ("verdict", "located", "unlocated"), r


def test_a_hang_is_caught_and_the_worker_replaced(monkeypatch):
    monkeypatch.setattr(fz, "LIMIT_SECONDS", 0.5)
    monkeypatch.setattr(fz, "_entry_point", lambda: (lambda *a, **k: _spin()))
    r = fz.run_one(_trace_input(b"{}"))
    assert r["outcome"] == "hang" and r["signature"].startswith("hang:check:"), r
    assert "_spin" in r["message"] and "of CPU" in r["message"]


def test_the_limit_is_cpu_time_and_a_blocked_input_meets_the_wall_limit(monkeypatch):
    import time

    # sleeping uses no CPU: not a hang under the CPU limit, one under the wall-time limit
    monkeypatch.setattr(fz, "LIMIT_SECONDS", 0.3)
    monkeypatch.setattr(fz, "_entry_point", lambda: (lambda *a, **k: time.sleep(1.0)))
    assert fz.run_one(_trace_input(b"{}"))["outcome"] == "verdict"
    monkeypatch.setattr(fz, "WALL_SECONDS", 0.5)
    monkeypatch.setattr(fz, "_entry_point", lambda: (lambda *a, **k: time.sleep(30)))
    r = fz.run_one(_trace_input(b"{}"))
    assert r["outcome"] == "hang" and "(wall)" in r["message"], r


def _spin():
    while True:
        pass


def test_memory_past_the_limit_is_caught(monkeypatch):
    monkeypatch.setattr(fz, "MEMORY_BYTES", 200 << 20)
    monkeypatch.setattr(fz, "_entry_point", lambda: (lambda *a, **k: bytearray(400 << 20)))
    r = fz.run_one(_trace_input(b"{}"))
    assert r["outcome"] == "memory", r


def test_a_traceback_is_a_crash_with_its_place(monkeypatch):
    def boom(*a, **k):
        {}["x"]
    monkeypatch.setattr(fz, "_entry_point", lambda: boom)
    r = fz.run_one(_trace_input(b"{}"))
    assert r["outcome"] == "crash" and r["signature"].startswith("crash:check:KeyError@"), r
    assert "KeyError" in r["message"]


# ---------------------------------------------------------------- a short run

@pytest.fixture(scope="module")
def short_run(seeds):
    tally, secs, saved = fz.fuzz(SHORT_INPUTS, SHORT_SEED, workers=1, corpus=None, seeds=seeds)
    return tally, secs


def test_short_run_mutants_parse_and_reach_the_spec(short_run):
    tally, secs = short_run
    n = sum(tally.total.values())
    assert n == SHORT_INPUTS
    assert all(tally.total[k] > 0 for k in fz.KINDS)
    # most mutants are structure-aware: they parse, and a good share gets a verdict
    assert sum(tally.parsed.values()) >= 0.6 * n
    verdicts = sum(tally.counts[k]["verdict"] + tally.counts[k]["incomplete"] for k in fz.KINDS)
    assert verdicts >= 0.15 * n
    for k in fz.KINDS:
        assert tally.counts[k]["verdict"] + tally.counts[k]["incomplete"] > 0, k
    report = tally.report(secs, 1)
    assert "inputs/s" in report and "trace-parquet" in report


def test_short_run_has_no_crash_hang_runaway_or_unlocated_rejection(short_run):
    tally, secs = short_run
    if tally.failures():
        lines = [f"{tally.failures()} of {SHORT_INPUTS} inputs failed (seed {SHORT_SEED}); "
                 f"reproduce one with `python -m bench.fuzz_inputs --seed {SHORT_SEED} --only INDEX`:"]
        for sig, (count, ex) in sorted(tally.signatures.items(), key=lambda x: -x[1][0]):
            lines.append(f"  {count:>3} x {sig}  (e.g. #{ex.get('index')}: {' '.join(ex['message'].split())[:140]})")
        pytest.fail("\n".join(lines), pytrace=False)


def test_a_worker_that_dies_on_a_generated_input_reports_that_input(monkeypatch, seeds):
    """The parent makes the input again from (seed, index): the worker leaves nothing behind."""
    import os
    import signal

    monkeypatch.setattr(fz, "_entry_point", lambda: (lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)))
    tally, secs, saved = fz.fuzz(2, 5, workers=1, corpus=None, seeds=seeds, start=40)
    assert tally.failures() == 2
    (sig, (count, r)), = tally.signatures.items()
    assert sig.endswith(":died-SIGKILL") and count == 2
    want = fz.make_input(seeds, 5, r["index"])
    assert r["index"] in (40, 41) and r["input"]["data"] == want["data"] and r["input"]["argv"] == want["argv"]


def test_a_value_parquet_cannot_hold_is_written_as_text(seeds):
    import io
    import random

    import pyarrow.parquet as pq

    events = [dict(e) for e in seeds["traces"][0][1][:3]]
    events[1]["extra"] = {}               # an empty struct: Parquet has no such column type
    events[2]["extra"] = [{}]
    table = fz._parquet_table(random.Random(0), events, [])
    assert table.column("extra").to_pylist() == [None, "{}", "[{}]"]
    pq.write_table(table, io.BytesIO())


def test_the_status_file_holds_the_counts_so_far(tmp_path, seeds):
    status = tmp_path / "status.txt"
    tally, secs, saved = fz.fuzz(20, SHORT_SEED, workers=1, corpus=None, seeds=seeds, status=status)
    counts = json.loads(status.read_text().splitlines()[-1])
    assert counts["inputs_done"] == 20 and counts["final"] and not counts["interrupted"]
    assert sum(counts["by_outcome"].values()) == 20


def test_mutating_documents_never_changes_the_harness_constants():
    """Inputs are a function of (seed, index) only: no mutation may grow a shared constant
    (seed 30's run: a shared {} grown into itself broke every later input of its worker)."""
    import copy as _copy
    import random as _random

    before = _copy.deepcopy(fz.INTERESTING_OTHER)
    for s in range(3000):
        r = _random.Random(s)
        doc = {"a": 1, "b": [1, 2], "c": {"d": "x"}}
        for _ in range(4):
            fz.mutate_tree(r, doc, [], keys_pool=("a", "b", "c"))
    assert repr(fz.INTERESTING_OTHER) == repr(before)


def test_big_list_mutation_stays_bounded():
    import random as _random

    for s in range(200):
        doc = {"description": "x" * 70000}
        r = _random.Random(s)
        fz.mutate_tree(r, doc, [])
        assert len(repr(doc)) < 2 * fz.BIG_LIST_BYTES
