"""The black-box level (spec/history): the guarantees checked from a produce/consume history.

A full trace yields its history, so both levels are compared on the same runs: every clean run
(built-in scenarios, real-RocketMQ fixtures) holds at the history level, and each known-bug
profile is flagged with the history symptom docs/history.md names (or the reason it cannot be).
"""
import glob
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketspec.spec.history import check_history, load_history
from rocketspec.traces.history.from_trace import history_from_events
from rocketspec.spec.history.guarantees import GUARANTEES, KNOWN_BUG_SYMPTOMS, RELEASE_SYMPTOMS
from rocketspec.traces.history.model import Consume, Disruption, Group, History, Produce
from rocketspec.rocketmq.profiles import PROFILES

reference = pytest.importorskip("rocketspec.reference.runner")
from rocketspec.reference.scenario import builtin_names, expected_failures, load_scenario, runs_under  # noqa: E402

HERE = os.path.dirname(__file__)
REAL = sorted(glob.glob(os.path.join(HERE, "fixtures", "real", "*.jsonl")))
# simulated scenarios (the POP ones run under 5.x only: reference.scenario.runs_under)
SIMULATED = [n for n in builtin_names() if not n.startswith("real-")]


def history_of(name, profile, seed=1):
    evs = reference.run_to_list(load_scenario(name), seed, profile)
    return history_from_events(enumerate(evs, 1), f"{name}@{profile}")


def judged(rep):
    return {v.id: v for v in rep.verdicts}


def clean(name, profile):
    return not expected_failures(load_scenario(name), profile)


@pytest.mark.parametrize("name", SIMULATED)
def test_clean_builtin_scenarios_hold_at_history_level(name):
    profile = "rocketmq-5.3.3"
    if not clean(name, profile):
        pytest.skip("the scenario breaks a guarantee under this profile by design")
    h = history_of(name, profile)
    assert h.complete and h.produces and h.consumes
    rep = check_history(h)
    assert rep.ok, [(f.guarantee, f.message) for v in rep.verdicts for f in v.findings[:3]]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3])
@pytest.mark.parametrize("profile", ["rocketmq-4.9.8", "rocketmq-5.3.3"])
@pytest.mark.parametrize("name", SIMULATED)
def test_clean_builtin_scenarios_hold_many_seeds(name, profile, seed):
    if not runs_under(load_scenario(name), profile):
        pytest.skip("a POP scenario runs under 5.x only")
    if not clean(name, profile):
        pytest.skip("the scenario breaks a guarantee under this profile by design")
    rep = check_history(history_of(name, profile, seed))
    assert rep.ok, [(f.guarantee, f.message) for v in rep.verdicts for f in v.findings[:3]]


@pytest.mark.parametrize("path", REAL, ids=os.path.basename)
def test_real_rocketmq_runs_hold_at_history_level(path):
    rep = check_history(load_history(path))
    assert rep.history.format == "trace" and rep.history.complete
    # a recording of a release's own defect shows the symptom RELEASE_SYMPTOMS names, and only it
    symptom = RELEASE_SYMPTOMS.get((os.path.basename(path)[:-len(".jsonl")], "rocketmq-4.9.8"), (None,))[0]
    if symptom is not None:
        assert rep.violated() == [symptom]
    else:
        assert rep.ok, [(f.guarantee, f.message) for v in rep.verdicts for f in v.findings[:3]]
    # a real trace carries every field the guarantees need
    assert [v.id for v in rep.verdicts if v.status == "skipped"] == []


def test_the_guarantee_loss_of_a_lease_margin_failure_shows_in_the_history():
    # the scenario declares INV-ORDER-1: two consumers inside one orderly queue; the history sees it
    rep = check_history(history_of("orderly-pause-broker-lock", "rocketmq-4.9.8"))
    assert rep.violated() == ["H-ORDER-1"]
    assert "inside a listener call at once" in judged(rep)["H-ORDER-1"].findings[0].message


def scenario_for(pname):
    num = PROFILES[pname].known_bug.lstrip("#")
    named = [n for n in builtin_names() if num in n]
    return named[0] if named else {"#6163": "orderly-dlq"}[PROFILES[pname].known_bug]


def test_every_known_bug_profile_has_a_history_symptom_or_a_reason():
    assert sorted(KNOWN_BUG_SYMPTOMS) == sorted(n for n, p in PROFILES.items() if p.known_bug)
    doc = open(os.path.join(HERE, "..", "docs", "history.md")).read()
    for name, (hid, why) in KNOWN_BUG_SYMPTOMS.items():
        assert f"`{name}`" in doc and (hid is None or hid in doc)


@pytest.mark.parametrize("pname", sorted(KNOWN_BUG_SYMPTOMS))
def test_known_bug_profiles_at_history_level(pname):
    hid, why = KNOWN_BUG_SYMPTOMS[pname]
    name = scenario_for(pname)
    rep = check_history(history_of(name, pname))
    if hid is None:
        assert rep.ok, why       # says why a history cannot show it: keep the reason true
    else:
        assert hid in rep.violated(), (name, rep.violated())
        # the same scenario on the fixed release holds at this guarantee
        fixed = "rocketmq-5.3.3"
        if clean(name, fixed):
            assert judged(check_history(history_of(name, fixed)))[hid].status == "holds"


# ---------------------------------------------------------------- hand-made histories

def tiny(consumes, produces=None, complete=True, groups=None, disruptions=(), observes=("dead_letters",
                                                                                         "disruptions")):
    h = History("mem", "trace", complete, observes=frozenset(observes))
    h.produces = produces if produces is not None else [Produce("m1", "T", 0, True, ("T", "b", 0), 0)]
    h.consumes = consumes
    h.disruptions = list(disruptions)
    for g in groups or [Group("G", "CONCURRENTLY", "CLUSTERING", {"T": ("TAG", "*")}, max_reconsume_times=-1,
                                     consume_timeout_ms=900000, started_ts=0)]:
        h.groups[g.name] = g
    return h


def C(ts, end, client="c1", mid="m1", offset=0, success=True, batch=None, group="G", rc=0, copy=None):
    return Consume(group, mid, ts, end, client, ("T", "b", 0), offset, rc, success, copy or mid,
                   batch or f"{client}/{ts}", f"mem:{ts}")


def test_absent_consume_is_lost_when_complete_and_unobserved_when_lossy():
    assert judged(check_history(tiny([])))["H-DELIVER-1"].status == "violated"
    v = judged(check_history(tiny([], complete=False)))["H-DELIVER-1"]
    assert v.status == "holds" and v.counts["unobserved"] == 1


def test_a_check_is_skipped_where_the_history_lacks_its_fields():
    h = tiny([Consume("G", "m1", 5, None, None, None, None, None, True)],
             groups=[Group("G", None, None, {"T": ("TAG", "*")})], observes=())
    v = judged(check_history(h))
    assert v["H-ORDER-1"].status == "skipped" and "consume.client" in v["H-ORDER-1"].missing
    assert v["H-RETRY-1"].status == "skipped" and "group.max_reconsume_times" in v["H-RETRY-1"].missing
    assert v["H-DUP-1"].status == "skipped" and "observes.disruptions" in v["H-DUP-1"].missing
    assert v["H-DELIVER-1"].status == "holds"


ORDERLY = Group("G", "ORDERLY", "CLUSTERING", {"T": ("TAG", "*")}, max_reconsume_times=-1, started_ts=0)


def test_orderly_overlap_of_two_consumers_is_flagged_and_back_to_back_is_not():
    prods = [Produce(f"m{i}", "T", 0, True, ("T", "b", 0), i) for i in range(2)]
    ok = tiny([C(10, 20, "c1", "m0", 0), C(20, 30, "c2", "m1", 1)], prods, groups=[ORDERLY])
    assert judged(check_history(ok))["H-ORDER-1"].status == "holds"
    bad = tiny([C(10, 25, "c1", "m0", 0), C(20, 30, "c2", "m1", 1)], prods, groups=[ORDERLY])
    assert judged(check_history(bad))["H-ORDER-1"].status == "violated"


def test_orderly_first_deliveries_out_of_offset_order_are_flagged_suspect_when_lossy():
    prods = [Produce(f"m{i}", "T", 0, True, ("T", "b", 0), i) for i in range(2)]
    cons = [C(10, 11, "c1", "m1", 1), C(20, 21, "c1", "m0", 0)]
    assert judged(check_history(tiny(cons, prods, groups=[ORDERLY])))["H-ORDER-2"].status == "violated"
    assert judged(check_history(tiny(cons, prods, complete=False, groups=[ORDERLY])))["H-ORDER-2"].status == "suspect"


def test_a_duplicate_needs_a_reason():
    cons = [C(10, 11), C(50_000, 50_001)]
    assert judged(check_history(tiny(cons)))["H-DUP-1"].status == "violated"
    fault = Disruption(30_000, "crashed", "G", "c1")
    v = judged(check_history(tiny(cons, disruptions=[fault])))["H-DUP-1"]
    assert v.status == "holds" and v.counts["allowed: after a fault (crashed)"] == 1
    # a redelivery after a failed call is a retry, not a duplicate
    v = judged(check_history(tiny([C(10, 11, success=False), C(50_000, 50_001, rc=1)])))["H-DUP-1"]
    assert v.status == "holds" and not v.findings


def test_retry_limit_counts_failures_and_reconsume_times():
    g = Group("G", "CONCURRENTLY", "CLUSTERING", {"T": ("TAG", "*")}, max_reconsume_times=2, started_ts=0)
    within = [C(10 * i, 10 * i + 1, success=False, rc=i, copy=f"k{i}") for i in range(3)]
    assert judged(check_history(tiny(within, groups=[g])))["H-RETRY-1"].status == "holds"
    over = within + [C(100, 101, rc=3, copy="k3")]
    assert judged(check_history(tiny(over, groups=[g])))["H-RETRY-1"].status == "violated"


def test_retries_count_afresh_after_an_operator_reset_to_the_message():
    # maxReconsumeTimes 0: one failure sends the message to the DLQ. An operator's reset of the
    # group back to the beginning hands the original copy out again (random real run 103 of
    # 2026-12-06): a redelivery the operator asked for, not a retry past the limit
    from rocketspec.traces.history.model import Reset

    g = Group("G", "CONCURRENTLY", "CLUSTERING", {"T": ("TAG", "*")}, max_reconsume_times=0, started_ts=0)
    cons = [C(10, 11, success=False), C(50_000, 50_001)]
    assert judged(check_history(tiny(cons, groups=[g])))["H-RETRY-1"].status == "violated"
    h = tiny(cons, groups=[g])
    h.resets = [Reset(30_000, "G")]
    h.observes = frozenset(h.observes | {"resets"})
    assert judged(check_history(h))["H-RETRY-1"].status == "holds"
    # a reset before the failure excuses nothing
    h = tiny(cons, groups=[g])
    h.resets = [Reset(5, "G")]
    h.observes = frozenset(h.observes | {"resets"})
    assert judged(check_history(h))["H-RETRY-1"].status == "violated"


def test_a_failed_message_then_a_reset_past_it_is_left_unjudged_not_excused():
    """A delivery that failed, no retry copy, then an operator reset past the message: RocketMQ's
    records cannot tell a failed send-back (the message stayed in the ProcessQueue, and the reset
    skipped it by design) from one never tried (a client that acks what its listener declared not
    consumed: random real run 26040, rocketmq-client-go and ackIndex -1, lost before the reset).
    The history leaves it unjudged and lists it; a message the group never received is skipped."""
    from rocketspec.spec.history.guarantees import FAILED_THEN_RESET
    from rocketspec.traces.history.model import Reset

    def judged_with_reset(cons):
        h = tiny(cons)
        h.resets = [Reset(30_000, "G")]
        h.observes = frozenset(h.observes | {"resets"})
        return check_history(h, list_unjudged=True)

    rep = judged_with_reset([C(10, 11, success=False)])
    v = judged(rep)["H-DELIVER-1"]
    assert v.status == "holds" and v.counts == {FAILED_THEN_RESET: 1}
    assert v.unjudged_messages == {"G": {FAILED_THEN_RESET: [["m1", None, None]]}}
    v = judged(judged_with_reset([]))["H-DELIVER-1"]
    assert v.counts == {"skipped by an operator reset past it": 1}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_dropping_records_from_a_lossy_history_never_reports_loss(data):
    # An absent record is unobserved, not lost: any subset of a clean run's consume records,
    # read as lossy, still holds for delivery.
    h = _basic()
    keep = data.draw(st.lists(st.booleans(), min_size=len(h.consumes), max_size=len(h.consumes)))
    lossy = History(h.source, h.format, False, h.produces, [c for c, k in zip(h.consumes, keep) if k],
                    h.dead_letters, h.disruptions, h.resets, h.expired, h.groups, h.observes)
    v = judged(check_history(lossy, only={"H-DELIVER-1"}))["H-DELIVER-1"]
    assert v.status == "holds"


_BASIC = []


def _basic():
    if not _BASIC:
        _BASIC.append(history_of("basic", "rocketmq-5.3.3"))
    return _BASIC[0]


def test_catalogue_ids_are_unique_and_declare_fields():
    ids = [g.id for g in GUARANTEES]
    assert len(ids) == len(set(ids)) and all(g.needs for g in GUARANTEES)
