"""The reference's POP path (issue 45) against what RocketMQ 5.5.0's source does (5.5.0 stands in
for 5.5.1): the broker's pop, checkpoint, ack, changeInvisibleTime, revive and order info, and the
POP consumers (the push consumer in POP mode, the SimpleConsumer through the proxy), each asserted
with the class it follows. Every trace validates against the schema."""
from __future__ import annotations

import collections
from pathlib import Path

import pytest

from rocketspec.errors import UserError
from rocketspec.reference.broker.broker import Broker
from rocketspec.reference.broker.pop import PopRequest
from rocketspec.reference.message import Message
from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import load_scenario
from rocketspec.reference.sim import Simulator
from rocketspec.rocketmq.filter import build_subscription
from rocketspec.rocketmq.pop import REVIVE_INTERVAL, REVIVE_MARGIN, parse_handle, pop_retry_topic
from rocketspec.rocketmq.profiles import get_profile
from rocketspec.traces.schema import validate_event

P5 = "rocketmq-5.5.1"
ROOT = Path(__file__).resolve().parent.parent


def run(name, seed=1, profile=P5):
    evs = run_to_list(load_scenario(name), seed, profile)
    problems = [(e["seq"], validate_event(e)) for e in evs if validate_event(e)]
    assert problems == []
    return evs


def of(evs, kind, **match):
    return [e for e in evs if e["kind"] == kind and all(e.get(k) == v for k, v in match.items())]


# ------------------------------------------------------------------ the broker alone

class BrokerRig:
    """One 5.x broker on a simulator, a topic with one queue, and pops answered into a list."""

    def __init__(self, messages=3, queues=1):
        self.events = []
        self.sim = Simulator(1, self.events.append)
        self.b = Broker(self.sim, "broker-a", get_profile(P5))
        self.b.start()
        self.b.create_topic("T", queues)
        for i in range(messages):
            self.b.put_message(Message(topic="T", queue=i % queues, tags="x"), source="producer")
        self.answers = []

    def pop(self, orderly=False, attempt=None, invisible=5000, max_nums=32, queue=-1):
        req = PopRequest(client="c1", group="G", topic="T", queue=queue, max_nums=max_nums, invisible_ms=invisible,
                         orderly=orderly, attempt_id=attempt, subscription=build_subscription("*", "TAG"), sql=None,
                         expr_type="TAG", init_min=False, poll_ms=15000, pop_id=len(self.answers) + 1,
                         respond=lambda found, status: self.answers.append((found, status)))
        self.b.pop.pop(req, may_hold=False)
        return self.answers[-1]

    def advance(self, ms):
        self.sim.run_until(self.sim.now + ms)


def test_a_pop_hides_its_messages_until_revive_puts_them_in_the_pop_retry_topic():
    # PopMessageProcessor.popMsgFromQueue + appendCheckPoint: the pop offset moves past what was
    # popped at once; PopReviveService.mergeAndRevive: un-acked messages go to %RETRY%<group>_<topic>
    # once the scan is ackTimeInterval + 1 s past the deadline, reconsume times one more
    rig = BrokerRig(messages=3)
    found, status = rig.pop()
    assert status == "FOUND" and [m.offset for m, _ in found] == [0, 1, 2]
    assert rig.pop()[1] == "POLLING_NOT_FOUND"           # invisible to the next pop
    assert rig.b.pop.ack("G", "T", found[0][1], "c1") == "acked"
    rig.advance(5000 + REVIVE_MARGIN)                    # the deadline + margin: not revived yet
    assert of(rig.events, "message_revived") == []
    rig.advance(REVIVE_INTERVAL)
    revived = of(rig.events, "message_revived")
    assert [(e["offset"], e["target_topic"], e["reconsume_times"]) for e in revived] == [
        (1, pop_retry_topic("G", "T"), 1), (2, pop_retry_topic("G", "T"), 1)]
    again, _ = rig.pop()
    assert sorted((m.topic, m.reconsume_times) for m, _ in again) == [(pop_retry_topic("G", "T"), 1)] * 2


def test_an_ack_after_the_revive_changes_nothing():
    # AckMessageProcessor.appendAck writes an ack record; the revive scan matches it by topic, group,
    # queue, start offset and pop time: a checkpoint already revived is matched by nothing
    rig = BrokerRig(messages=1)
    (m, h), = rig.pop()[0]
    rig.advance(5000 + REVIVE_MARGIN + REVIVE_INTERVAL)
    assert len(of(rig.events, "message_revived")) == 1
    assert rig.b.pop.ack("G", "T", h, "c1") == "stale"


def test_change_invisible_time_issues_a_new_handle_and_the_old_one_goes_stale():
    # ChangeInvisibleTimeProcessor.appendCheckPointThenAckOrigin: a checkpoint for the one message
    # popped now, then an ack of the old checkpoint
    rig = BrokerRig(messages=1)
    (m, old), = rig.pop()[0]
    rig.advance(1000)
    new = rig.b.pop.change_invisible_time("G", "T", old, 20000, "c1")
    assert parse_handle(new)["pop_time"] == rig.sim.now and parse_handle(new)["invisible_time"] == 20000
    assert rig.b.pop.ack("G", "T", old, "c1") == "stale"
    rig.advance(5000 + REVIVE_MARGIN + REVIVE_INTERVAL)  # past the old deadline: no revive
    assert of(rig.events, "message_revived") == []
    assert rig.b.pop.ack("G", "T", new, "c1") == "acked"
    rig.advance(30000)
    assert of(rig.events, "message_revived") == []
    changed, = of(rig.events, "invisible_time_changed")
    assert changed["result"] == "changed" and changed["new_handle"] == new


def test_orderly_pop_blocks_the_queue_for_other_attempts_and_hands_out_again_in_order():
    # QueueLevelConsumerManager: needBlock while a popped offset is un-acked and invisible (not for
    # the same attempt id); a re-pop counts one more consumption (mergeOffsetConsumedCount);
    # commitAndNext moves the consume offset past the acked prefix; an older pop time gives -2
    rig = BrokerRig(messages=3)
    first, _ = rig.pop(orderly=True, attempt="a1", max_nums=2)
    assert [(m.offset, m.reconsume_times) for m, _ in first] == [(0, 0), (1, 0)]
    assert rig.pop(orderly=True, attempt="a2")[0] == []                     # blocked
    assert [m.offset for m, _ in rig.pop(orderly=True, attempt="a1", max_nums=2)[0]] == [0, 1]   # same attempt
    retried = rig.answers[-1][0]
    assert rig.b.pop.ack("G", "T", retried[0][1], "c1") == "acked"
    assert rig.b.offsets.query("G", "T", 0) == 1
    rig.advance(5001)                                                       # offset 1 visible again
    again, _ = rig.pop(orderly=True, attempt="a3")
    assert [(m.offset, m.reconsume_times) for m, _ in again] == [(1, 1), (2, 0)]
    assert rig.b.pop.ack("G", "T", retried[1][1], "c1") == "stale"          # the older pop time
    for _, h in again:
        assert rig.b.pop.ack("G", "T", h, "c1") == "acked"
    assert rig.b.offsets.query("G", "T", 0) == 3


# ------------------------------------------------------------------ the scenarios

def test_pop_basic_every_message_is_acked_and_failures_come_back_after_the_first_pop_delay_level():
    # ConsumeMessagePopConcurrentlyService.processConsumeResult: success acks each message; a
    # failure changes the invisible time to popDelayLevel[reconsumeTimes] (10 s), and the revive
    # puts it back with reconsume times 1
    evs = run("pop-basic")
    assert evs[-1]["reason"] == "quiescent"
    stored = {e["msg_id"] for e in of(evs, "message_stored", source="producer")}
    popped = {e["handle"]: e for e in of(evs, "message_popped")}
    acked = {popped[e["handle"]].get("origin_msg_id") for e in of(evs, "message_acked", result="acked")
             if e["handle"] in popped}
    assert stored and stored <= acked
    changes = of(evs, "invisible_time_changed")
    assert changes and all(c["result"] == "changed" and c["invisible_time"] == 10000 for c in changes)
    revived = of(evs, "message_revived", outcome="retry")
    assert len(revived) == len(changes) and all(r["reconsume_times"] == 1 for r in revived)
    # message-level load balancing: both clients pop every queue (queue -1)
    assert {e["client"] for e in of(evs, "pop_requested", queue=-1)} == {"c1", "c2"}
    assert all(a["allocated"] == [["TopicPop", "broker-a", -1]] for a in of(evs, "assignment_answered"))


def test_pop_retry_dlq_dead_letters_at_max_attempts_and_acks():
    # proxy PopMessageResultFilterImpl: reconsumeTimes >= maxAttempts (retryMaxTimes + 1) is TO_DLQ,
    # then the proxy acks the handle
    evs = run("pop-retry-dlq")
    dead = of(evs, "pop_dead_lettered")
    poison = {e["msg_id"] for e in of(evs, "message_stored", source="producer", tags="Poison")}
    assert {e["origin_msg_id"] for e in dead} == poison
    assert all(e["reconsume_times"] == 3 and e["max_attempts"] == 3 for e in dead)
    for e in dead:
        assert of(evs, "message_acked", handle=e["handle"], reason="dead_lettered", result="acked")
    calls = collections.Counter()
    by_id = {e["msg_id"]: e.get("origin_msg_id", e["msg_id"]) for e in of(evs, "message_popped")}
    for e in of(evs, "pop_consume_started"):
        calls[by_id[e["msg_ids"][0]]] += 1
    assert all(calls[m] == 3 for m in poison)            # the first delivery and two retries


def test_pop_orderly_hands_each_queue_out_in_order_one_attempt_at_a_time():
    evs = run("pop-orderly")
    assert evs[-1]["reason"] == "quiescent"
    held = {}           # queue -> (attempt, un-acked offsets)
    acked_next = collections.defaultdict(int)
    for e in evs:
        if e["kind"] == "message_popped":
            q = e["queue"]
            att, open_ = held.get(q, (None, set()))
            if att != e["attempt_id"]:
                # another attempt only once the last one's messages are acked or visible again
                assert not open_ or all(o >= acked_next[q] for o in open_)
                assert e["offset"] == acked_next[q] or not open_
                held[q] = (e["attempt_id"], {e["offset"]})
            else:
                open_.add(e["offset"])
        elif e["kind"] == "message_acked" and e["result"] == "acked":
            assert e["offset"] == acked_next[e["queue"]]        # acks in queue order
            acked_next[e["queue"]] = e["offset"] + 1
            held.get(e["queue"], (None, set()))[1].discard(e["offset"])
    assert of(evs, "pop_checkpoint_written") == []          # orderly POP writes no checkpoint


def test_pop_invisible_expiry_a_call_past_the_invisible_time_is_delivered_twice():
    # #8332: the broker revives at the deadline + 2 s (PopReviveService) while the call still runs;
    # the late ack matches no waiting checkpoint
    evs = run("pop-invisible-expiry")
    slow = of(evs, "message_stored", source="producer", tags="Slow")[0]["msg_id"]
    first = [e for e in of(evs, "message_popped") if e["msg_id"] == slow][0]
    revived, = of(evs, "message_revived", msg_id=slow)
    assert first["pop_time"] + first["invisible_time"] + REVIVE_MARGIN < revived["ts"] <= (
        first["pop_time"] + first["invisible_time"] + REVIVE_MARGIN + REVIVE_INTERVAL)
    second = of(evs, "message_popped", msg_id=revived["target_msg_id"])[0]
    finished_first = [e for e in of(evs, "pop_consume_finished", client=first["client"]) if e["timed_out"]][0]
    assert second["client"] != first["client"] and second["ts"] < finished_first["ts"]
    assert of(evs, "message_acked", handle=first["handle"])[0]["result"] == "stale"
    assert of(evs, "message_acked", handle=second["handle"])[0]["result"] == "acked"


@pytest.mark.parametrize("name", ["pop-basic", "pop-retry-dlq", "pop-orderly", "pop-invisible-expiry"])
def test_pop_scenarios_are_refused_under_a_release_without_pop(name):
    with pytest.raises(UserError, match="client_type .* POP consumption exists only in RocketMQ 5.x"):
        run_to_list(load_scenario(name), 1, "rocketmq-4.9.8")


@pytest.mark.parametrize("invisible", [3000, 4999, 300001])
def test_a_push_consumer_in_pop_mode_refuses_an_invisible_time_out_of_range(invisible, tmp_path):
    # DefaultMQPushConsumerImpl.checkConfig (5.5.0 line 1195): start() throws for a popInvisibleTime
    # outside [5 s, 300 s] (a real random run, POP seed 21009 on 5.5.1, failed so at start)
    text = (ROOT / "reference/scenarios/pop-basic.toml").read_text()
    assert "pop_invisible_time = 20000" in text
    path = tmp_path / "pop-bad.toml"
    path.write_text(text.replace("pop_invisible_time = 20000", f"pop_invisible_time = {invisible}"))
    with pytest.raises(UserError, match=r"pop_invisible_time.*refuses to start outside \[5000, 300000\]"):
        load_scenario(str(path))


def test_a_push_group_trace_carries_no_pop_setting():
    evs = run_to_list(load_scenario("basic"), 1, P5)
    assert all("client_type" not in e["config"] for e in of(evs, "client_started"))


def test_pop_runs_are_deterministic():
    assert run("pop-basic", seed=7) == run("pop-basic", seed=7)


# ------------------------------------------------------------------ the explorer's POP scope

def test_tiny_pop_scope_with_a_failure_and_a_crash_is_exhausted_and_holds():
    # every interleaving of two SimpleConsumers on one queue, a listener failure (the revive brings
    # the message back), a crash anywhere: the spec's POP rules hold in every run
    from rocketspec.model_checks.refexplore import RefExplorer
    from rocketspec.model_checks.scopes import load_scope

    r = RefExplorer(load_scope("tiny-pop", messages=1, fault_kinds=["crash"]), P5).run()
    assert r.complete and not r.stopped and r.violations == []
    assert r.quiescent > 0 and r.distinct > 100


def test_tiny_pop_scope_is_refused_under_4_9_8():
    from click.testing import CliRunner

    from rocketspec.cli import main

    res = CliRunner().invoke(main, ["explore", "--scope", "tiny-pop", "--profile", "rocketmq-4.9.8"])
    assert res.exit_code == 2 and "POP consumption exists only in RocketMQ 5.x" in res.output, res.output
