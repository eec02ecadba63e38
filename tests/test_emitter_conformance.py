"""`rocketspec check --emitter` on the real recordings: a faithful client-level cut conforms; the
whole recording with its obs marks stripped is the recorder's fault (marks), not the client's; a
side written but not declared is the recorder's; a real client violation stays the client's."""
from __future__ import annotations

import os

import orjson

from rocketspec.traces.reports.emitter_conformance import conformance

from test_observation_levels import CLIENT, REAL, cut, read


def write(tmp_path, events, name="t.jsonl"):
    p = tmp_path / name
    p.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    return str(p)


def test_a_client_level_cut_conforms(tmp_path):
    d = conformance(write(tmp_path, cut(read(os.path.join(REAL, "real-basic.jsonl")), CLIENT, marks=False)))
    assert d["verdict"] == "conforms" and d["recorder"] == [] and d["client"] == {}


def test_stripped_obs_marks_are_the_recorders_fault_not_the_clients(tmp_path):
    evs = read(os.path.join(REAL, "real-basic.jsonl"))
    for e in evs:
        e.pop("obs", None)
    d = conformance(write(tmp_path, evs))
    assert d["verdict"] == "fails" and d["client"] == {}
    assert any(x.startswith("obs marks:") and "INV-OFFSET-1" in x for x in d["recorder"]), d["recorder"]


def test_a_side_written_but_not_declared_is_the_recorders(tmp_path):
    evs = cut(read(os.path.join(REAL, "real-basic.jsonl")), CLIENT)
    evs[0]["observed"] = ["client_reports"]
    d = conformance(write(tmp_path, evs))
    assert any("of the client_internals side" in x for x in d["recorder"]), d["recorder"]


def test_a_client_violation_stays_the_clients(tmp_path):
    evs = cut(read(os.path.join(REAL, "real-orderly-dlq.jsonl")), ("broker", "client_reports"))
    d = conformance(write(tmp_path, evs))
    assert d["client"] == {"INV-DLQ-1": 6}
