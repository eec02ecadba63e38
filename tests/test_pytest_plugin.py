"""The pytest plugin: `pytest --rocketspec-traces DIR` makes each trace a test item."""
from __future__ import annotations

import shutil
from pathlib import Path

import orjson

pytest_plugins = ["pytester"]

TRACES = Path(__file__).parent / "traces"


def _with_expect(src: Path, dst: Path, expect) -> None:
    """Copy a trace, declaring `expect` in its trace_started.config (the scenario format)."""
    lines = src.read_bytes().splitlines()
    first = orjson.loads(lines[0])
    first.setdefault("config", {})["expect"] = expect
    dst.write_bytes(b"\n".join([orjson.dumps(first), *lines[1:]]) + b"\n")


def test_each_trace_is_an_item_judged_by_its_declared_verdict(pytester):
    d = pytester.mkdir("traces")
    shutil.copy(TRACES / "valid_orderly.jsonl", d / "valid_orderly.jsonl")          # holds, declares nothing
    _with_expect(TRACES / "wrong_two_lock_holders.jsonl", d / "declared_lock.jsonl", {"fails": "INV-LOCK-1"})
    _with_expect(TRACES / "wrong_dlq_consume.jsonl", d / "declared_list.jsonl", ["INV-DLQ-1"])
    shutil.copy(TRACES / "wrong_two_pullers.jsonl", d / "undeclared_violation.jsonl")  # must hold: fails
    _with_expect(TRACES / "valid_dlq.jsonl", d / "declared_wrongly.jsonl", {"fails": "INV-RETRY-1"})
    shutil.copy(TRACES / "bad_malformed.jsonl", d / "bad_malformed.jsonl")
    (d / "notes.txt").write_text("not a trace")

    res = pytester.runpytest("--rocketspec-traces", str(d), "-p", "no:cacheprovider", "-o", "addopts=", "-rA")
    res.assert_outcomes(passed=3, failed=3)
    out = res.stdout.str()
    for passed in ("valid_orderly.jsonl", "declared_lock.jsonl", "declared_list.jsonl"):
        assert any(passed in ln for ln in out.splitlines() if ln.startswith("PASSED")), out
    assert "undeclared_violation.jsonl: INV-PULL-1 under rocketmq-5.3.3; expected holds (no declared verdict" in out
    assert "declared_wrongly.jsonl: holds under" in out and "expected INV-RETRY-1 (declared)" in out
    assert "bad input" in out and "bad_malformed.jsonl" in out


def test_per_profile_verdicts_and_the_profile_option(pytester):
    d = pytester.mkdir("traces")
    # 'holds' by default, but declared to fail INV-PULL-1 under 5.3.3, the trace's own profile
    # (scenario syntax); judged under 4.9.8 instead, it must hold, and does not
    _with_expect(TRACES / "wrong_two_pullers.jsonl", d / "t.jsonl",
                 {"profiles": {"rocketmq-5.3.3": {"fails": ["INV-PULL-1"]}}})
    res = pytester.runpytest("--rocketspec-traces", str(d), "-p", "no:cacheprovider", "-o", "addopts=")
    res.assert_outcomes(passed=1)
    res = pytester.runpytest("--rocketspec-traces", str(d), "--rocketspec-profile", "rocketmq-4.9.8",
                             "-p", "no:cacheprovider", "-o", "addopts=")
    res.assert_outcomes(failed=1)


def test_a_malformed_declaration_names_the_trace_and_field(pytester):
    d = pytester.mkdir("traces")
    _with_expect(TRACES / "valid_orderly.jsonl", d / "t.jsonl", {"fails": "INV-NOPE"})
    res = pytester.runpytest("--rocketspec-traces", str(d), "-p", "no:cacheprovider", "-o", "addopts=")
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines(["*t.jsonl*expect.fails*unknown invariant ids*INV-NOPE*"])


def test_a_missing_directory_is_a_usage_error(pytester):
    res = pytester.runpytest("--rocketspec-traces", "no/such/dir", "-p", "no:cacheprovider")
    assert res.ret == 4        # pytest's usage error
    res.stderr.fnmatch_lines(["*--rocketspec-traces no/such/dir: no such directory*"])
