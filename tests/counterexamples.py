"""One check for an explorer counterexample written as a trace file: schema v1 shape
(trace_started first, seq numbered from 0, ts never going back) and `rocketspec check` rejects
it with the same invariant id."""
from __future__ import annotations

import json

from rocketspec.model_checks.result import write_trace
from rocketspec.spec.replay import check_trace


def assert_trace_file_rejected(events, invariant, tmp_path, name="cex.jsonl"):
    path = tmp_path / name
    write_trace(path, events)
    evs = [json.loads(line) for line in path.read_text().splitlines()]
    assert evs[0]["kind"] == "trace_started"
    assert [e["seq"] for e in evs] == list(range(len(evs)))
    assert all(a["ts"] <= b["ts"] for a, b in zip(evs, evs[1:]))
    rep = check_trace(str(path))
    assert not rep.ok
    assert invariant in [f.inv for f in rep.findings.errors]
    return path
