"""A loss that a scenario's declared break explains is the break's expected loss, even where check
could not judge the break's invariant at the trace's observation level.

Random real Go-client run 17169 (broker 4.9.8, rocketmq-client-go v2.1.2): the scenario declares
`subscriptions_differ:GID_r0` (g0c8 subscribes TopicS with 'TagA', the group with '*'; the broker
filters the group's pulls with the newest subscription, so RocketMQ drops the group's other
messages by design). A Java run reports INV-SUB-1 naming the break; a client under test's trace
has no pull answers, so check lists INV-SUB-1 among its rules_not_judged and holds, while the
oracle (RocketMQ's message traces and store) finds 62 TopicS messages that never reached GID_r0
(H-DELIVER-1). The classifier called that a missed loss. A loss only in the groups of breaks
whose invariant (one that protects the violated guarantee) check could not judge is the break's;
a loss anywhere else, or where check judged the invariant, is still a missed loss.

The fixture is the run's own files (the commit log cut at its last message and gzipped)."""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketspec.conformance import real_random as rr

RUN = Path(__file__).parent / "fixtures" / "real" / "random" / "seed-17169-go-subscriptions-differ"
BREAK = "expected loss (break)"


def _unpacked(tmp_path: Path) -> Path:
    """The fixture as `record --random` left the run: trace.jsonl and the commit log unpacked."""
    f = tmp_path / "seed-17169"
    shutil.copytree(RUN, f)
    (f / "trace.jsonl").write_bytes(gzip.decompress((RUN / "trace.jsonl.gz").read_bytes()))
    (f / "trace.jsonl.gz").unlink()
    log = f / "run" / "store" / "commitlog" / "00000000000000000000"
    log.write_bytes(gzip.decompress(log.with_suffix(".gz").read_bytes()))
    log.with_suffix(".gz").unlink()
    return f


def _result(f: Path) -> None:
    (f / "result.json").write_text(json.dumps({"seed": 17169, "class": "missed loss", "events": 2882,
                                               "ended": "quiescent", "folder": str(f), "seconds": 26.6}))


def test_the_rejudged_run_is_the_breaks_expected_loss(tmp_path):
    f = _unpacked(tmp_path)
    _result(f)
    [res] = rr.reclassify(tmp_path)
    assert (res.cls, res.blamed, res.breaks) == (BREAK, ["INV-SUB-1"], ["subscriptions_differ:GID_r0"])
    check = json.loads((f / "check.json").read_text())
    oracle = json.loads((f / "oracle.json").read_text())
    # check holds and says it could not judge INV-SUB-1; the oracle sees the loss, all in GID_r0
    assert res.check_ids == {} and check["verdict"] == "holds"
    assert "INV-SUB-1" in {r["rule"] for r in check["rules_not_judged"]}
    deliver = next(g for g in oracle["guarantees"] if g["id"] == "H-DELIVER-1")
    assert deliver["status"] == "violated" and deliver["findings_by_group"] == {"GID_r0": 62} == \
        {"GID_r0": deliver["findings"]}
    assert json.loads((f / "result.json").read_text())["class"] == BREAK


def _judged(tmp_path):
    f = _unpacked(tmp_path)
    _result(f)
    rr.reclassify(tmp_path)
    return (json.loads((f / "scenario.json").read_text()), json.loads((f / "check.json").read_text()),
            json.loads((f / "oracle.json").read_text()))


def _with_groups(oracle: dict, by_group: dict) -> dict:
    gs = [dict(g, findings_by_group=by_group, findings=sum(by_group.values())) if g["id"] == "H-DELIVER-1" else g
          for g in oracle["guarantees"]]
    return dict(oracle, guarantees=gs)


def test_a_loss_outside_the_breaks_group_is_still_missed(tmp_path):
    sc, check, oracle = _judged(tmp_path)
    other = _with_groups(oracle, {"GID_r0": 60, "GID_r1": 2})
    assert rr.break_unjudged(check, sc, other) == {}
    assert rr.classify({}, other, set(), set(), rr.break_unjudged(check, sc, other)) == ("missed loss", ["H-DELIVER-1"])


def test_a_break_whose_invariant_check_judged_explains_no_unreported_loss(tmp_path):
    sc, check, oracle = _judged(tmp_path)
    # a trace that held pull answers: check judged INV-SUB-1 and did not report it
    judged = dict(check, rules_not_judged=[r for r in check["rules_not_judged"] if r["rule"] != "INV-SUB-1"])
    assert rr.break_unjudged(judged, sc, oracle) == {}
    assert rr.classify({}, oracle, set(), set(), rr.break_unjudged(judged, sc, oracle))[0] == "missed loss"


def test_findings_not_all_counted_by_group_explain_nothing(tmp_path):
    sc, check, oracle = _judged(tmp_path)
    old = dict(oracle, guarantees=[{k: v for k, v in g.items() if k != "findings_by_group"}
                                   for g in oracle["guarantees"]])
    assert rr.break_unjudged(check, sc, old) == {}
    part = _with_groups(oracle, {"GID_r0": 62})
    next(g for g in part["guarantees"] if g["id"] == "H-DELIVER-1")["findings"] = 63   # one kept by no group count
    assert rr.break_unjudged(check, sc, part) == {}


GROUPS = ("GID_r0", "GID_r1", "GID_r2")


@settings(max_examples=200, deadline=None)
@given(by_group=st.dictionaries(st.sampled_from(GROUPS), st.integers(1, 50), min_size=1),
       targets=st.sets(st.sampled_from(GROUPS)), reported=st.booleans())
def test_an_unjudged_break_explains_a_loss_exactly_when_every_lost_group_is_its_target(by_group, targets, reported):
    sc = {"breaks": [{"kind": "subscriptions_differ", "target": g, "expect": ["INV-SUB-1"]} for g in sorted(targets)]}
    check = {"rules_not_judged": [{"rule": "INV-SUB-1"}]}
    oracle = {"guarantees": [{"id": "H-DELIVER-1", "status": "violated", "findings": sum(by_group.values()),
                              "findings_by_group": by_group}]}
    explained = rr.break_unjudged(check, sc, oracle)
    assert bool(explained) == (set(by_group) <= targets)
    got = rr.classify({"INV-OFFSET-3": 1} if reported else {}, oracle, set(), set(), explained)
    if reported:
        # check reported an invariant the loss is seen as: the run agrees, break or not
        assert got == ("agreed", ["H-DELIVER-1"])
    elif explained:
        assert got == (BREAK, ["INV-SUB-1"])
    else:
        assert got == ("missed loss", ["H-DELIVER-1"])
