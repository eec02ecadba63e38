"""Observation levels (spec/observation.py): a trace that declares what it observed
(trace_started.observed) is judged only on the rules whose events that level holds, never with an
error that only a missing event could cause, and `check` says which rules it judged. Held to the
14 real 4.9.8 recordings cut down to a level, as a client's own emitter or the driver protocol
would write them."""
from __future__ import annotations

import glob
import json
import os
import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from rocketspec.cli import main
from rocketspec.spec import observation
from rocketspec.spec import invariants as inv
from rocketspec.spec.invariants import CATALOGUE
from rocketspec.spec.replay import check_trace
from rocketspec.traces.schema import OBSERVED_SIDES, kinds

REAL = os.path.join(os.path.dirname(__file__), "fixtures", "real")
FIXTURES = sorted(glob.glob(os.path.join(REAL, "*.jsonl")))
GO = os.path.join(REAL, "go")
CLIENT = ("client_reports", "client_internals")
LEVELS = [tuple(s for i, s in enumerate(OBSERVED_SIDES) if m >> i & 1) for m in range(1, 8)]


def read(path: str) -> list[dict]:
    with open(path, "rb") as fh:
        return [orjson.loads(x) for x in fh if x.strip()]


def cut(events: list[dict], sides, marks: bool = True, drop=frozenset()) -> list[dict]:
    """The events a trace observing `sides` holds (no `obs` marks unless `marks`; `drop`: kinds
    left out too), declared in its trace_started."""
    out = []
    for e in events:
        s = observation.side_of(e)
        if (s is not None and s not in sides) or e["kind"] in drop:
            continue
        e = dict(e)
        if not marks:
            e.pop("obs", None)
        out.append(e)
    for i, e in enumerate(out):
        e["seq"] = i
    out[0]["observed"] = list(sides)
    return out


def judge(tmp_path, events, name="t.jsonl"):
    p = tmp_path / name
    p.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    rep = check_trace(str(p), max_listed=10_000)
    errs: dict = {}
    for f in rep.findings.errors:
        errs[f.inv] = errs.get(f.inv, 0) + 1
    return rep, errs


def test_every_rule_has_its_needs_and_every_need_is_a_kind():
    assert observation.rules_without_needs() == set()
    assert {i.id for i in CATALOGUE} | {"GUARD"} == set(observation.RULES)
    for rule, needs in observation.NEEDS.items():
        assert set(needs) <= set(kinds()), rule


@pytest.mark.parametrize("path", FIXTURES, ids=os.path.basename)
def test_a_client_level_trace_without_obs_marks_holds_and_lists_what_it_could_not_judge(tmp_path, path):
    """The emitter cut (no broker side), every `obs` mark removed: unmarked, the whole-trace
    judgement gave hundreds of false INV-OFFSET-1 and -3 (tests/test_emitter_contract.py); at the
    declared client level those rules need the broker's offset table and are not judged."""
    rep, errs = judge(tmp_path, cut(read(path), CLIENT, marks=False))
    assert errs == {}
    d = rep.to_dict()
    assert d["observed"] == list(CLIENT) and d["verdict"] == "holds"
    not_judged = {r["rule"]: r for r in d["rules_not_judged"]}
    assert {"INV-OFFSET-1", "INV-OFFSET-3", "INV-DLQ-1", "INV-LOCK-1", "INV-RETRY-2", "GUARD"} <= set(not_judged)
    assert not_judged["INV-OFFSET-1"]["lacks"] == ["broker"] and "offset_committed" in not_judged["INV-OFFSET-1"]["why"]
    assert {"INV-ORDER-1", "INV-PQ-1", "INV-PULL-1", "INV-CLIENT-1"} <= set(d["rules_judged"])


def test_a_violation_visible_at_the_client_level_still_fails(tmp_path):
    """Two batches of one orderly queue at once (a second listener call started while the first
    is in flight): INV-ORDER-1 needs only the client's reports and internals, and is judged."""
    evs = cut(read(os.path.join(REAL, "real-orderly-suspend.jsonl")), CLIENT, marks=False)
    i = next(i for i, e in enumerate(evs) if e["kind"] == "consume_started")
    first = evs[i]
    j = next(j for j in range(i + 1, len(evs)) if evs[j]["kind"] == "consume_finished"
             and evs[j]["consume_id"] == first["consume_id"])
    second = dict(first, consume_id=first["consume_id"] + 100_000, ts=evs[j - 1]["ts"])
    done = dict(evs[j], consume_id=second["consume_id"], ts=evs[j]["ts"])
    evs = evs[:j] + [second] + [evs[j], done] + evs[j + 1:]
    for k, e in enumerate(evs):
        e["seq"] = k
    rep, errs = judge(tmp_path, evs)
    assert not rep.ok and "INV-ORDER-1" in errs, errs
    assert "INV-ORDER-1" in rep.to_dict()["rules_judged"]


def test_the_go_client_traces_are_judged_at_the_driver_protocols_level(tmp_path):
    """rocketspec record --client marks its traces client_reports (config.client_under_test): the
    broker's events and the client's reports. The Go traces' INV-PQ-1, GUARD, INV-OFFSET-1,
    INV-RETRY-2 and INV-LIVE-1 came from the client internals the trace does not hold; of
    INV-RETRY-1 and INV-OFFSET-3 the level judges the parts its events show (PART_NEEDS):
    real-orderly-dlq's six over-retries are Finding 1 (docs/notes/go-client.md)."""
    for name, counts in (("real-orderly-dlq.jsonl", {"INV-RETRY-1": 6}), ("real-basic-long.jsonl", {})):
        rep = check_trace(os.path.join(GO, name))
        d = rep.to_dict()
        assert d["observed"] == ["broker", "client_reports"]
        # (and the POP rules that read only the broker's events and the clients' starts; not
        # INV-POP-ORDER-2, which reads an orderly pop's request: its attempt id and room)
        assert set(d["rules_judged"]) == {"INV-DLQ-1", "INV-CLIENT-1", "ANOM-OFFSET-BACK",
                                          *(i for i in observation.NEEDS if i.startswith("INV-POP-")
                                            and i != "INV-POP-ORDER-2")}
        assert {(p["rule"], p["part"]) for p in d["rules_judged_in_part"]} == set(observation.PART_NEEDS)
        assert d["counts"] == counts


def test_a_trace_that_declares_nothing_is_judged_whole():
    rep = check_trace(os.path.join(REAL, "real-orderly-dlq.jsonl"))
    d = rep.to_dict()
    assert d["rules_not_judged"] == [] and d["observed"] == list(OBSERVED_SIDES)
    assert d["counts"].get("INV-DLQ-1") == 6


def test_check_lists_the_levels_rules_and_a_level_with_nothing_to_judge_is_incomplete(tmp_path):
    evs = cut(read(os.path.join(REAL, "real-basic.jsonl")), CLIENT, marks=False)
    p = tmp_path / "c.jsonl"
    p.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in evs))
    r = CliRunner().invoke(main, ["check", "--quiet", str(p)])
    assert r.exit_code == 0, r.output
    assert "HOLDS (observed client_reports, client_internals: " in r.output
    assert "rules not judged" in r.output and "INV-OFFSET-1: needs broker (offset_committed" in r.output
    r = CliRunner().invoke(main, ["check", "--quiet", str(p), "--json"])
    assert r.exit_code == 0 and "INV-OFFSET-1" in {x["rule"] for x in json.loads(r.output)["rules_not_judged"]}
    only = tmp_path / "i.jsonl"
    only.write_text(json.dumps({"seq": 0, "ts": 1, "kind": "trace_started", "schema_version": 2,
                                "profile": "rocketmq-4.9.8", "observed": ["client_internals"]}) + "\n")
    r = CliRunner().invoke(main, ["check", "--quiet", str(only)])
    assert r.exit_code == 4 and "INCOMPLETE" in r.output, (r.exit_code, r.output)


_FULL: dict = {}


def _full_errors(path):
    if path not in _FULL:
        _FULL[path] = set(judge_plain(read(path)))
    return _FULL[path]


def judge_plain(events):
    import tempfile

    with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as fh:
        fh.write(b"".join(orjson.dumps(e) + b"\n" for e in events))
    try:
        rep = check_trace(fh.name, max_listed=0)
    finally:
        os.unlink(fh.name)
    return {k for k, n in rep.findings.counts.items() if n and inv.severity(k) == "error"}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=hs.sampled_from(FIXTURES), sides=hs.sampled_from(LEVELS), data=hs.data())
def test_a_cut_to_a_level_never_reports_an_error_the_whole_recording_does_not_have(path, sides, data):
    """For a real recording, a declared level, and any of the kinds that level's judged rules do
    not need left out as well: every error check reports, the whole recording has too."""
    lv = observation.level(sides)
    needed = lv.needed_kinds()
    evs = read(path)
    present = sorted({e["kind"] for e in evs if observation.side_of(e) in sides} - needed)
    drop = data.draw(hs.sets(hs.sampled_from(present)) if present else hs.just(set()), label="dropped kinds")
    got = judge_plain(cut(evs, sides, marks=True, drop=frozenset(drop)))
    assert got <= _full_errors(path), (sides, sorted(drop), got - _full_errors(path))
