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
