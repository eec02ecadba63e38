"""#7724 (open; PR #7739 closed unmerged): the POP revive puts back another message.

PopReviveService.reviveMsgFromCk reads a checkpoint's message with getBizMessage, which asks the
store for one message from the offset on (EscapeBridge.getMessageAsync -> getMessage, maxMsgNums
1), and revives whatever came back without checking its queue offset (5.5.0/5.5.1 lines 556-586).
DefaultMessageStore.getMessage passes over a consume-queue entry whose commit-log data is gone
(commitLog.getMessage returns null: MESSAGE_WAS_REMOVING, rollNextFile) and returns the next entry
whose data exists. Commit-log files are deleted by CleanCommitLogService (cleanFilesPeriodically)
and the consume queue's min offset is corrected on another executor (ConsumeQueueStore
.cleanQueueFilesPeriodically -> deleteExpiredFile -> correctMinOffset), both every 10 s: in between,
a read at the offset returns a later message, acked or not, and it is put back in its place.
"""
from __future__ import annotations

from rocketspec.model_checks.refexplore import RefExplorer
from rocketspec.model_checks.result import write_trace
from rocketspec.model_checks.scopes import BUG_SCOPES, DEFAULT_FAULT_KINDS, Scope, load_scope
from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import bug_scenario, load_scenario
from rocketspec.rocketmq import profiles
from rocketspec.spec.replay import check_events, check_trace

BUG, FIX = "bug-7724-rocketmq-5.5.1", "fix-7724-rocketmq-5.5.1"


def _scope():
    name, over = BUG_SCOPES["#7724"]
    return load_scope(name, **over)


def _report(events, profile):
    return check_events(enumerate(events, 1), profiles.get_profile(profile))


def _kinds(events, kind, **match):
    return [e for e in events if e["kind"] == kind and all(e.get(k) == v for k, v in match.items())]


def test_registered_as_an_open_bug_with_its_fix_scope_and_scenario():
    bug, fix = profiles.PROFILES[BUG], profiles.PROFILES[FIX]
    assert bug in profiles.POP_BUG_PROFILES and profiles.OPEN_BUG_FIXES["#7724"] is fix
    assert bug.known_bug == "#7724" and bug.expected_violation == "INV-POP-ACK-1" and fix.known_bug is None
    assert bug_scenario("#7724") == "bug-7724"
    # the bug is the release itself; the fix differs from it by the one switch
    rel = profiles.PROFILES["rocketmq-5.5.1"]
    assert not rel.revive_checks_read_offset and not profiles.PROFILES["rocketmq-5.3.3"].revive_checks_read_offset
    diff = {k for k, v in fix.switches().items() if v != rel.switches().get(k)}
    assert diff <= {"name", "description", "revive_checks_read_offset"} and fix.revive_checks_read_offset


def test_the_fault_is_offered_only_to_a_scope_that_names_it():
    # existing scopes (and their figures) are unchanged: a scope without fault_kinds has no expiry
    assert "commit_log_expired" not in DEFAULT_FAULT_KINDS and "commit_log_expired" not in Scope().fault_kinds
    assert list(_scope().fault_kinds) == ["commit_log_expired"]


def test_a_read_at_an_expired_offset_returns_the_next_message_until_the_queue_is_corrected():
    sc = load_scenario("bug-7724")
    evs = run_to_list(sc, 1, "rocketmq-5.5.1")
    [rev] = _kinds(evs, "message_revived", topic="Jobs")
    popped = {e["offset"]: e["msg_id"] for e in _kinds(evs, "message_popped", topic="Jobs")}
    # the checkpoint's offset 0, and the id of the message at offset 1 (acked), put back
    assert rev["offset"] == 0 and rev["outcome"] == "retry" and rev["msg_id"] == popped[1] != popped[0]
    [deleted] = _kinds(evs, "messages_deleted")
    # the consume queue's min offset moves only at the store's next clean, 10 s after the expiry
    assert deleted["ts"] == 3000 + 10_000 and deleted["min_offset"] == 1 and rev["ts"] < deleted["ts"]


def test_scenario_puts_the_acked_message_back_and_the_fix_puts_nothing_back():
    sc = load_scenario("bug-7724")
    for prof in (BUG, "rocketmq-5.5.1", "rocketmq-5.3.3"):
        evs = run_to_list(sc, 1, prof)
        rep = _report(evs, prof)
        # the un-acked message's data is gone: the revive found nothing of it, as the fixed read
        # does, so its loss is retention's under the bug as under the fix; #7724's harm is the
        # acked message put back in its place
        assert rep.findings.counts == {"INV-POP-ACK-1": 1}, (prof, rep.findings.counts)
        [ack] = rep.findings.errors
        assert "#7724" in ack.message and "was acked" in ack.message, ack.message
        # the acked message is delivered again from the retry topic
        assert len(_kinds(evs, "pop_consume_started")) == 3
    evs = run_to_list(sc, 1, FIX)
    assert _report(evs, FIX).ok
    [rev] = _kinds(evs, "message_revived", topic="Jobs")
    assert rev["offset"] == 0 and rev["outcome"] == "skipped" and rev["msg_id"] == ""
    assert len(_kinds(evs, "pop_consume_started")) == 2


def test_found_in_its_scope_under_every_5x_release_with_a_trace_the_spec_rejects(tmp_path):
    for prof in (BUG, "rocketmq-5.5.1", "rocketmq-5.3.3"):
        r = RefExplorer(_scope(), prof, stop_at_first=True).run()
        assert [v.invariant for v in r.violations] == ["INV-POP-ACK-1"], (prof, r.violations)
        v = r.violations[0]
        [rev] = _kinds(v.events, "message_revived")
        popped = {e["offset"]: e["msg_id"] for e in _kinds(v.events, "message_popped")}
        assert rev["msg_id"] != popped[rev["offset"]] and rev["msg_id"] in popped.values()
        path = tmp_path / f"{prof}.jsonl"
        write_trace(path, v.events)
        rep = check_trace(str(path), prof)
        assert not rep.ok and "INV-POP-ACK-1" in rep.findings.counts, rep.findings.counts


def test_the_fix_takes_the_scope_clean():
    r = RefExplorer(_scope(), FIX).run()
    assert r.complete and r.violations == [] and r.quiescent > 0, r.violations


def test_a_scenario_that_expires_the_commit_log_is_refused_by_record():
    from rocketspec.commands.record import UNSUPPORTED_STEPS

    assert "expire_commit_log" in UNSUPPORTED_STEPS


def test_the_state_machine_finds_it_in_the_retention_environment(tmp_path):
    from rocketspec.conformance.statemachine import POP_RETENTION, check_reference

    res = check_reference(BUG, max_examples=100, scenario=POP_RETENTION, trace_path=str(tmp_path / "f.jsonl"),
                          shrink_budget_s=10)
    assert not res.ok and res.crash is None and res.finding == "INV-POP-ACK-1", res.summary()
    assert "expire_while_held" in res.falsifying_code and "scenario=POP_RETENTION" in res.falsifying_code
    rep = check_trace(res.trace_path, BUG)
    assert not rep.ok and any("#7724" in f.message for f in rep.findings.errors)
    fixed = check_reference(FIX, max_examples=100, scenario=POP_RETENTION)
    assert fixed.ok and fixed.crashes_ignored == 0, fixed.summary()


def test_retention_of_revived_copies_before_their_delivery_is_not_a_loss_of_revive():
    # the retry topic's copies are stored by revive (no message_stored): retention past them is no
    # GUARD, and a copy deleted before it was handed out is retention's, not INV-POP-LIVE-1's
    evs = run_to_list(load_scenario("bug-7724"), 1, BUG)
    [retry] = _kinds(evs, "message_revived", outcome="retry")
    [end] = _kinds(evs, "trace_ended")
    body = [e for e in evs if e["kind"] != "trace_ended" and e["ts"] <= retry["ts"]]
    deleted = {"kind": "messages_deleted", "ts": retry["ts"], "topic": retry["target_topic"],
               "broker": retry["broker"], "queue": retry["target_queue"], "min_offset": retry["target_offset"] + 1}
    rep = _report(body + [deleted, dict(end, ts=retry["ts"])], BUG)
    assert "GUARD" not in rep.findings.counts, rep.findings.counts
    assert not [f for f in rep.findings.errors if "never handed out again" in f.message], rep.findings.errors
