"""`record --client` declares the trace's observation level in the schema's own field,
`trace_started.observed` (schema v2): the broker's events and the client program's reports.
A reader that knows only the schema (not the driver protocol's `config.client_under_test`)
judges such a trace at that level, and the first event stays valid under the schema."""
from __future__ import annotations

import json
from pathlib import Path

from rocketspec.commands.record import mark_client_under_test
from rocketspec.spec import observation
from rocketspec.spec.replay import check_trace
from rocketspec.traces.schema import validate_event

ROOT = Path(__file__).resolve().parent.parent
GO = ROOT / "tests" / "fixtures" / "real" / "go" / "real-orderly-dlq.jsonl"
ARGV = [str(ROOT / "build" / "go-client" / "rocketspec-go-client")]


def _lines():
    return [json.loads(x) for x in GO.read_text().splitlines()]


def test_the_mark_is_the_schema_field_and_the_protocol_config():
    first = _lines()[0]
    first.pop("observed", None)
    first["config"].pop("client_under_test")
    mark_client_under_test(first, ARGV)
    assert first["observed"] == ["broker", "client_reports"]
    assert first["config"]["client_under_test"] == {"cmd": ARGV, "protocol": 1, "observed": "client_reports"}
    assert validate_event(first) is None
    assert observation.declared(first) == {"broker", "client_reports"}


def test_a_reader_of_the_schema_field_alone_judges_the_go_trace_at_its_level(tmp_path):
    ev = _lines()
    mark_client_under_test(ev[0], ARGV)
    del ev[0]["config"]["client_under_test"]        # what the schema carries must be enough
    path = tmp_path / "go.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in ev))
    rep = check_trace(str(path), "rocketmq-4.9.8")
    assert rep.level.observed == {"broker", "client_reports"}
    assert {"INV-DLQ-1", "INV-CLIENT-1", "ANOM-OFFSET-BACK"} <= set(rep.level.judged)
    assert {"INV-PQ-1", "INV-OFFSET-1", "INV-RETRY-1"} <= set(rep.level.not_judged)
    # judged whole, the same trace reads every ProcessQueue-less listener call as a violation; at
    # its level it shows only the Go client's own over-retry (Finding 1, INV-RETRY-1's judged part)
    assert {f.inv for f in rep.findings.errors} == {"INV-RETRY-1"}, rep.findings.counts
    assert rep.findings.counts["INV-RETRY-1"] == 6
