"""The open upstream bugs of issue 43 that every release still has (#10955), as known-bug
profiles: the bug profile is the release with `known_bug` set, the clean side a variant with the
fix (profiles.OPEN_BUG_FIXES). Each is found by the explorer of the reference in its scope
(model_checks/scopes.py BUG_SCOPES), by the state machine, on its built-in scenario, and on real
RocketMQ: recorded traces (tests/fixtures/real/bugs/, gzip) that `check` rejects with the bug's
invariant, whole and minimized (docs/notes/issue43-bugs.md)."""
from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketspec.model_checks.refexplore import RefExplorer
from rocketspec.model_checks.result import write_trace
from rocketspec.model_checks.scopes import BUG_SCOPES, load_scope
from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import bug_scenario, load_scenario
from rocketspec.rocketmq.profiles import OPEN_BUG_FIXES, OPEN_BUG_PROFILES, PROFILES, get_profile
from rocketspec.spec.replay import check_events, check_trace
from rocketspec.traces.schema import validate_event

REAL = Path(__file__).parent / "fixtures" / "real" / "bugs"


def _scope(bug):
    name, over = BUG_SCOPES[bug]
    return load_scope(name, **over)


def _report(events, profile):
    return check_events(enumerate(events, 1), get_profile(profile))


@pytest.mark.parametrize("prof", OPEN_BUG_PROFILES, ids=lambda p: p.known_bug)
def test_open_bug_found_in_its_scope_with_a_trace_the_spec_rejects(prof, tmp_path):
    r = RefExplorer(_scope(prof.known_bug), prof, stop_at_first=True).run()
    assert [v.invariant for v in r.violations] == [prof.expected_violation], r.violations
    path = tmp_path / "cex.jsonl"
    write_trace(path, r.violations[0].events)
    rep = check_trace(str(path), prof)
    assert not rep.ok and prof.expected_violation in rep.findings.counts, rep.findings.counts


@pytest.mark.parametrize("prof", OPEN_BUG_PROFILES, ids=lambda p: p.known_bug)
def test_every_release_has_it_and_the_fix_takes_the_scope_clean(prof):
    for release in ("rocketmq-4.9.8", "rocketmq-5.3.3", "rocketmq-5.5.1"):
        r = RefExplorer(_scope(prof.known_bug), release, stop_at_first=True).run()
        assert [v.invariant for v in r.violations] == [prof.expected_violation], (release, r.violations)
    r = RefExplorer(_scope(prof.known_bug), OPEN_BUG_FIXES[prof.known_bug]).run()
    assert r.complete and r.violations == [] and r.quiescent > 0, r.violations


def test_open_bugs_are_registered_with_their_fix_scenario_and_scope():
    for p in OPEN_BUG_PROFILES:
        fix = OPEN_BUG_FIXES[p.known_bug]
        assert PROFILES[p.name] is p and PROFILES[fix.name] is fix and fix.known_bug is None
        assert p.known_bug in BUG_SCOPES and bug_scenario(p.known_bug) == f"bug-{p.known_bug[1:]}"
        # the bug profile is its release: only the name, description and known bug differ
        release = PROFILES[f"rocketmq-{p.release}"]
        diff = {k for k, v in p.switches().items() if release.switches()[k] != v}
        assert diff == {"name", "description", "known_bug", "expected_violation"}, diff


# ---------------------------------------------------------------- #10955

def test_10955_a_stop_before_the_first_offset_entry_skips_what_was_stored_meanwhile():
    sc = load_scenario("bug-10955")
    for release in ("rocketmq-4.9.8", "rocketmq-5.3.3", "bug-10955-rocketmq-5.5.1"):
        rep = _report(run_to_list(sc, 1, release), release)
        [f] = rep.findings.errors
        assert f.inv == "INV-LOSS-1" and "A-OFFSET-ENTRY" in f.message and "3 messages" in f.message, f.message
    # the fix: the start offset is in the table from the ProcessQueue's creation, the shutdown
    # persists it, the restart reads it and consumes the three messages
    evs = run_to_list(sc, 1, "fix-10955-rocketmq-5.5.1")
    assert _report(evs, "fix-10955-rocketmq-5.5.1").ok
    assert evs[-1]["reason"] == "quiescent"
    assert sum(e["kind"] == "consume_started" for e in evs) >= 1


def test_10955_the_state_machine_finds_it_when_it_may_stop_a_client_before_its_first_entry(tmp_path):
    # The machine keeps A-OFFSET-ENTRY (a broadcasting client stops only once its offset table has
    # an entry for each queue it holds): the stop that shows #10955 is an assumption's break, so
    # it is played only with respect_assumptions=False. Under the fix every ProcessQueue has its
    # entry from its creation, so the machine stops clients at any moment and the run holds.
    from rocketspec.conformance.statemachine import check_reference

    # only A-OFFSET-ENTRY is off: with the others off too the machine finds shallower breaks first
    # (a produce between a LAST client's start() and its first rebalance, #9281; an orderly queue
    # whose lease outlives a restarted broker's lock, INV-ORDER-1)
    res = check_reference("bug-10955-rocketmq-5.5.1", max_examples=300, respect_assumptions=False,
                          keep=("A-LAST-FIRST-REBALANCE", "A-LEASE-MARGIN", "A-BROKER-LOCKS"),
                          trace_path=str(tmp_path / "f.jsonl"), shrink_budget_s=10)
    assert not res.ok and res.finding == "INV-LOSS-1", res.summary()
    rep = check_trace(res.trace_path, "bug-10955-rocketmq-5.5.1")
    assert any("A-OFFSET-ENTRY" in f.message for f in rep.findings.errors if f.inv == "INV-LOSS-1")
    assert check_reference("fix-10955-rocketmq-5.5.1", max_examples=60).ok


def _real(name):
    with gzip.open(REAL / name, "rt") as fh:
        return [__import__("json").loads(line) for line in fh if line.strip()]


def _ran_on_its_release(name, evs):
    """The fixture's name says the release it was recorded on (`record --release`); the broker's
    own version says the same (a 5.5.1 run: the 5.5.1 broker with 5.5.0's push consumer)."""
    release = re.search(r"-(\d+\.\d+\.\d+)", name).group(1)
    return next(e["config"]["version"] for e in evs if e["kind"] == "broker_started") == release


@pytest.mark.parametrize("name, profile", [("bug-10955-5.5.1.jsonl.gz", "rocketmq-5.5.1"),
                                           ("bug-10955-5.5.1.min.jsonl.gz", "rocketmq-5.5.1"),
                                           ("bug-10955-5.5.0.jsonl.gz", "rocketmq-5.5.1"),
                                           ("bug-10955-5.5.0.min.jsonl.gz", "rocketmq-5.5.1"),
                                           ("bug-10955-4.9.8.jsonl.gz", "rocketmq-4.9.8"),
                                           ("bug-10955-4.9.8.min.jsonl.gz", "rocketmq-4.9.8")])
def test_10955_reproduced_on_real_rocketmq(name, profile):
    # real b1 (orderly, broadcasting, LAST) shut down 2 s after its start, before its held first
    # pull was answered; three messages stored; b1 started again: its ProcessQueue starts at 3
    evs = _real(name)
    assert evs[0]["profile"] == profile and _ran_on_its_release(name, evs)
    rep = _report(evs, profile)
    assert [f.inv for f in rep.findings.errors] == ["INV-LOSS-1"], rep.findings.counts
    assert "A-OFFSET-ENTRY" in rep.findings.errors[0].message
    starts = [e for e in evs if e["kind"] == "client_started"]
    assert len(starts) == 2 and any(e["kind"] == "client_stopped" for e in evs)


# ---------------------------------------------------------------- #3731

def test_3731_the_fallback_send_back_ignores_the_listeners_delay_level():
    sc = load_scenario("bug-3731")
    for release in ("rocketmq-4.9.8", "rocketmq-5.3.3", "bug-3731-rocketmq-5.5.1"):
        evs = run_to_list(sc, 1, release)
        rep = _report(evs, release)
        assert {f.inv for f in rep.findings.errors} == {"INV-RETRY-2"}, (release, rep.findings.counts)
        assert all("#3731" in f.message and "expected 1" in f.message for f in rep.findings.errors)
        fallbacks = [e for e in evs if e["kind"] == "message_sent_back" and e.get("via") == "fallback_producer"]
        assert fallbacks and all(e["delay_level"] == 3 + e["reconsume_times"] - 1 for e in fallbacks)
    evs = run_to_list(sc, 1, "fix-3731-rocketmq-5.5.1")
    assert _report(evs, "fix-3731-rocketmq-5.5.1").ok
    assert {e["delay_level"] for e in evs if e["kind"] == "message_sent_back" and e.get("via") == "fallback_producer"} == {1}


def test_3731_a_fallback_after_a_send_back_at_level_0_is_owed_3_plus_r():
    # the consumer send-back's level 0 means "the broker's 3 + r": the fallback's own level is right
    evs = _real("../exact/interrupted-send-back-twice.jsonl.gz")
    assert any(e["kind"] == "send_back_requested" and e.get("via") == "fallback_producer" for e in evs)
    assert _report(evs, "rocketmq-4.9.8").ok


def test_3731_the_state_machine_finds_it_when_a_send_back_throws_after_a_delay_level(tmp_path):
    # The send-back environment (SEND_BACK): GID_C's listener may ask for a delay level on a
    # failure, and a consumerSendMessageBack may throw with its broker up, so the producer
    # fallback sends the copy, at 3 + reconsumeTimes under every release (#3731). The fix keeps
    # the listener's level, and the same environment holds.
    from rocketspec.conformance.monitor import SpecViolation
    from rocketspec.conformance.statemachine import SEND_BACK, check_reference

    res = check_reference("bug-3731-rocketmq-5.5.1", max_examples=100, scenario=SEND_BACK,
                          trace_path=str(tmp_path / "f.jsonl"), shrink_budget_s=10)
    assert not res.ok and res.finding == "INV-RETRY-2", res.summary()
    rep = check_trace(res.trace_path, "bug-3731-rocketmq-5.5.1")
    assert any("#3731" in f.message for f in rep.findings.errors if f.inv == "INV-RETRY-2")
    code = res.falsifying_code
    assert "listener_delay_level(level=" in code and "send_back_throws(probability=" in code, code
    # the example runs as printed, in its environment, and fails the same way
    with pytest.raises(SpecViolation) as info:
        exec(compile(code.replace("scenario=SEND_BACK", f"scenario=SEND_BACK, trace_path={str(tmp_path / 'r.jsonl')!r}"),
                     "<falsifying example>", "exec"), {})
    assert info.value.finding.inv == "INV-RETRY-2" and "#3731" in str(info.value)
    assert check_reference("fix-3731-rocketmq-5.5.1", max_examples=60, scenario=SEND_BACK).ok
    assert check_reference("fix-3731-rocketmq-5.5.1", max_examples=60).ok


@pytest.mark.parametrize("name", ["bug-3731-4.9.8.jsonl.gz", "bug-3731-4.9.8.min.jsonl.gz",
                                  "bug-3731-5.5.0.jsonl.gz", "bug-3731-5.5.0.min.jsonl.gz",
                                  "bug-3731-5.5.1.jsonl.gz", "bug-3731-5.5.1.min.jsonl.gz"])
def test_3731_reproduced_on_real_rocketmq(name):
    # real 4.9.8 and 5.5.0 (tests/fixtures/real/bugs/bug-3731-real.toml) and 5.5.1
    # (bug-3731-real-5x.toml): a consumer send-back at level 1 threw (4.9.8 and 5.5.1: the shutdown
    # interrupted its wait, after the broker stored it), and the catch sent the copy again through
    # the producer at DELAY 3 (reconsume_times 0): INV-RETRY-2 naming #3731
    evs = _real(name)
    assert _ran_on_its_release(name, evs)
    rep = _report(evs, evs[0]["profile"])
    assert {f.inv for f in rep.findings.errors} == {"INV-RETRY-2"}, rep.findings.counts
    named = [f for f in rep.findings.errors if "expected 1" in f.message and "#3731" in f.message]
    others = [f.message for f in rep.findings.errors if f not in named]
    assert named
    # 5.5.0's whole run: one fallback copy (of a send-back that threw with no shutdown, its producer
    # send made twice) was stored with reconsume_times 0, not 1: sendKernelImpl cleared the count
    # from the message on the first attempt (random real run 13109 shows the same), and check says so
    lost = "; cause: a producer send of the copy retried after a failed attempt carries no count"
    assert [m.split(lost)[0] for m in others] == ([] if name != "bug-3731-5.5.0.jsonl.gz" else
                                                  ["scheduled copy carries reconsume_times 0, expected 1",
                                                   "retry copy stored with reconsume_times 0, expected 1"]), others
    assert all(lost in m for m in others), others
    fb = [e for e in evs if e["kind"] == "send_back_requested" and e.get("via") == "fallback_producer"]
    ctx = [e for e in evs if e["kind"] == "send_back_requested" and e.get("via") == "consumer_send_back"]
    assert fb and all(e["delay_level"] == 3 for e in fb) and ctx and all(e["delay_level"] == 1 for e in ctx)
    if name == "bug-3731-5.5.1.jsonl.gz":
        # the two fallbacks are c1's, sent while its graceful shutdown ran (before it unregistered);
        # the broker had stored both send-backs as well (ANOM-DUP-1)
        unreg = next(e["seq"] for e in evs if e["kind"] == "consumer_unregistered" and e["client"] == "127.0.0.1@c1")
        assert len(fb) == 2 and all(e["client"] == "127.0.0.1@c1" and e["seq"] < unreg for e in fb)
        assert rep.findings.counts.get("ANOM-DUP-1") == 4, rep.findings.counts


# ---------------------------------------------------------------- #9281

def _known_bug_cause(f):
    from rocketspec.conformance.real_random import _known_bug_cause as named

    return named({"message": f.message})


def test_9281_a_first_start_at_last_skips_what_is_stored_after_start_returned():
    sc = load_scenario("bug-9281")
    for release in ("rocketmq-4.9.8", "rocketmq-5.3.3", "bug-9281-rocketmq-5.5.1"):
        evs = run_to_list(sc, 1, release)
        [f] = _report(evs, release).findings.errors
        assert f.inv == "INV-LOSS-1" and "#9281" in f.message and "3 messages stored after" in f.message, f.message
        assert _known_bug_cause(f)
        kinds = [e["kind"] for e in evs if e["kind"] in ("client_start_returned", "message_stored", "pq_created")]
        assert kinds[:5] == ["client_start_returned", "message_stored", "message_stored", "message_stored",
                             "pq_created"]
    # the fix: start() takes the queue's end (0); the ProcessQueue starts there, b1 consumes all three
    evs = run_to_list(sc, 1, "fix-9281-rocketmq-5.5.1")
    assert _report(evs, "fix-9281-rocketmq-5.5.1").ok
    assert sorted(o for e in evs if e["kind"] == "consume_started" for o in e["offsets"]) == [0, 1, 2]


def test_9281_the_state_machine_finds_it_when_it_may_produce_before_the_first_rebalance(tmp_path):
    # The machine keeps A-LAST-FIRST-REBALANCE (a produce waits for the first rebalance of every
    # LAST client started); with assumptions off it produces between a start() and that rebalance
    from rocketspec.conformance.statemachine import check_reference

    res = check_reference("bug-9281-rocketmq-5.5.1", max_examples=100, respect_assumptions=False,
                          trace_path=str(tmp_path / "f.jsonl"), shrink_budget_s=10)
    assert not res.ok and res.finding == "INV-LOSS-1", res.summary()
    rep = check_trace(res.trace_path, "bug-9281-rocketmq-5.5.1")
    assert any("#9281" in f.message for f in rep.findings.errors if f.inv == "INV-LOSS-1")
    assert check_reference("rocketmq-5.5.1", max_examples=60).ok


def _v4(before, after, tags=(), expr="*"):
    """A broadcasting LAST client b1: `before` messages stored before its start() returned, `after`
    after it, then its first rebalance reads the end (the store read gave -1)."""
    ev = [("trace_started", {"schema_version": 4, "profile": "rocketmq-5.5.1"}),
          ("broker_started", {"broker": "b"}), ("topic_created", {"topic": "T", "broker": "b", "queue_count": 1}),
          ("client_started", {"client": "c1", "group": "G", "consume_mode": "CONCURRENTLY",
                              "message_model": "BROADCASTING", "subscriptions": {"T": {"type": "TAG", "expr": expr}},
                              "config": {"consume_from_where": "CONSUME_FROM_LAST_OFFSET"}})]
    n = before + after

    def stored(o):
        return ("message_stored", {"topic": "T", "broker": "b", "queue": 0, "offset": o, "msg_id": f"m{o}", "origin_msg_id": f"m{o}",
                                   "source": "producer", "tags": tags[o % len(tags)] if tags else None})
    ev += [stored(o) for o in range(before)] + [("client_start_returned", {"client": "c1", "group": "G"})]
    ev += [stored(o) for o in range(before, n)]
    ev += [("offset_read", {"client": "c1", "group": "G", "topic": "T", "broker": "b", "queue": 0, "source": "store",
                            "offset": -1}),
           ("pq_created", {"client": "c1", "group": "G", "topic": "T", "broker": "b", "queue": 0, "offset": n,
                           "from_where": "CONSUME_FROM_LAST_OFFSET"})]
    out = [{"seq": i, "ts": i, "kind": k, **f} for i, (k, f) in enumerate(ev)]
    assert [validate_event(e) for e in out] == [None] * len(out)
    return out


@given(before=st.integers(0, 6), after=st.integers(0, 6), tags=st.lists(st.sampled_from(["A", "B"]), min_size=1,
                                                                      max_size=3), expr=st.sampled_from(["*", "A"]))
@settings(max_examples=60, deadline=None)
def test_9281_counts_only_wanted_messages_stored_after_start_returned(before, after, tags, expr):
    evs = _v4(before, after, tags, expr)
    owed = [o for o in range(before, before + after) if expr == "*" or tags[o % len(tags)] == expr]
    for profile in ("rocketmq-5.5.1", "fix-9281-rocketmq-5.5.1"):
        rep = _report(evs, profile)
        if not owed:
            # stored before start() returned: skipped by design; filtered out: not owed
            assert rep.ok, rep.findings.counts
            continue
        [f] = rep.findings.errors
        assert f.inv == "INV-LOSS-1" and f"{len(owed)} messages stored after" in f.message, f.message
        assert f"first {owed[:8]}" in f.message
        # the release's own defect names #9281; under the fix the same skip is a plain loss
        assert _known_bug_cause(f) == (profile == "rocketmq-5.5.1"), f.message


def test_9281_without_the_mark_the_rule_is_listed_as_not_judged():
    evs = [e for e in _v4(0, 3) if e["kind"] != "client_start_returned"]
    evs[0]["schema_version"] = 3
    evs = [dict(e, seq=i) for i, e in enumerate(evs)]
    rep = _report(evs, "rocketmq-5.5.1")
    assert rep.ok
    [part] = rep.to_dict()["parts_not_judged"]
    assert part["rule"] == "INV-LOSS-1" and "#9281" in part["part"] and part["clients"] == ["c1"]


def test_9281_real_5_5_0_before_the_mark_is_not_judged():
    # #9281 (open) on real 5.5.0 (tests/fixtures/real/bugs/bug-9281-real.toml), recorded before the
    # trace had client_start_returned (schema 2): broadcasting b1 at LAST with no offsets file; the
    # 20 messages sent after its start are all stored before its first rebalance reads maxOffset, and
    # its ProcessQueue starts at 20. Without the mark a message stored while start() ran cannot be
    # told from one stored after, so check holds and says the part of INV-LOSS-1 was not judged
    evs = _real("bug-9281-5.5.0.jsonl.gz")
    assert evs[0]["schema_version"] == 2 and not any(e["kind"] == "client_start_returned" for e in evs)
    start = next(e for e in evs if e["kind"] == "client_started")
    stored = [e for e in evs if e["kind"] == "message_stored" and e["topic"] == "Feed"]
    pq = next(e for e in evs if e["kind"] == "pq_created" and e["topic"] == "Feed")
    assert len(stored) == 20 and all(start["seq"] < e["seq"] < pq["seq"] for e in stored)
    assert pq["offset"] == 20 and pq["from_where"] == "CONSUME_FROM_LAST_OFFSET"
    assert not any(e["kind"] == "consume_started" and e["topic"] == "Feed" for e in evs)
    rep = _report(evs, "rocketmq-5.5.1")
    assert rep.ok
    assert [p["rule"] for p in rep.to_dict()["parts_not_judged"]] == ["INV-LOSS-1"]


@pytest.mark.parametrize("name", ["bug-9281-5.5.0-mark.jsonl.gz", "bug-9281-5.5.0-mark.min.jsonl.gz",
                                  "bug-9281-5.5.1.jsonl.gz", "bug-9281-5.5.1.min.jsonl.gz"])
def test_9281_reproduced_on_real_rocketmq(name):
    # the same scenario recorded on real 5.5.0 and 5.5.1 with the mark (schema 4): b1's start()
    # returned, then the 20 messages were stored (the whole run; 1 in the minimized trace), then its
    # first rebalance read maxOffset and started the ProcessQueue past them: none is ever consumed
    evs = _real(name)
    assert evs[0]["schema_version"] == 4 and _ran_on_its_release(name, evs)
    assert "min" in name or len([e for e in evs if e["kind"] == "message_stored" and e["topic"] == "Feed"]) == 20
    mark = next(e for e in evs if e["kind"] == "client_start_returned")
    stored = [e for e in evs if e["kind"] == "message_stored" and e["topic"] == "Feed"]
    pq = next(e for e in evs if e["kind"] == "pq_created" and e["topic"] == "Feed")
    assert stored and all(mark["seq"] < e["seq"] < pq["seq"] for e in stored) and pq["offset"] == len(stored)
    assert not any(e["kind"] == "consume_started" and e["topic"] == "Feed" for e in evs)
    # the release: INV-LOSS-1 naming #9281, a known upstream bug (conformance.real_random's reading)
    [f] = _report(evs, "rocketmq-5.5.1").findings.errors
    assert f.inv == "INV-LOSS-1" and f"{len(stored)} messages stored after" in f.message and "#9281" in f.message
    assert _known_bug_cause(f)
    # judged under the fix, the same run is a plain loss: the fixed client would have consumed them
    [g] = _report(evs, "fix-9281-rocketmq-5.5.1").findings.errors
    assert g.inv == "INV-LOSS-1" and not _known_bug_cause(g), g.message


# ---------------------------------------------------------------- seen on real runs, not modelled

@pytest.mark.parametrize("name", ["bug-9083-5.5.0.jsonl.gz", "bug-9083-5.5.1.jsonl.gz"])
def test_9083_real_5_5_x_a_new_group_at_last_replays_the_queue_from_0(name):
    # #9083 / #4909 on real 5.5.0 and 5.5.1: the broker answers a new group's offset query with 0
    # (offset 0 in memory, ConsumerManageProcessor.queryConsumerOffset, 5.5.0 line 337, 5.5.1 332;
    # the push consumer never sets setZeroIfNotFound), so c1 starts at 0 and consumes the 5 messages
    # stored before it started. Nothing is lost or consumed twice: the spec accepts the answer
    # (INV-START-1), check holds
    evs = _real(name)
    assert _ran_on_its_release(name, evs)
    assert [e["offset"] for e in evs if e["kind"] == "offset_read" and e["topic"] == "History"] == [0]
    start = next(e for e in evs if e["kind"] == "client_started")
    stored = [e for e in evs if e["kind"] == "message_stored" and e["topic"] == "History"]
    assert len(stored) == 5 and all(e["seq"] < start["seq"] for e in stored)
    pq = next(e for e in evs if e["kind"] == "pq_created" and e["topic"] == "History")
    assert pq["offset"] == 0 and pq["from_where"] == "CONSUME_FROM_LAST_OFFSET"
    consumed = {o for e in evs if e["kind"] == "consume_started" and e["topic"] == "History" for o in e["offsets"]}
    assert consumed == {0, 1, 2, 3, 4}
    assert _report(evs, "rocketmq-5.5.1").ok
