"""Random real 5.x runs where `check` took a race inside RocketMQ's client for a fault: what the
client really did, read from the release's source and the run's own log (beside each fixture in
tests/fixtures/real/random/), and that `check` still reports what the race cannot explain."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_events, check_trace

HERE = Path(__file__).parent / "fixtures" / "real" / "random"


def _check(events, profile):
    return check_events(list(enumerate(events, 1)), get_profile(profile), "synthetic", max_listed=100)


def _errors(res):
    out: dict[str, list[str]] = {}
    for f in res.findings.errors:
        out.setdefault(f.inv, []).append(f.message)
    return out


# ------------------------------------------------------------------ seed 18207: a persist read before an update

PERSIST = HERE / "seed-18207-persist-read-before-update"


def _persist_events():
    return [json.loads(line) for line in (PERSIST / "trace.min.jsonl").read_text().splitlines()]


def test_a_persist_whose_value_was_read_before_an_update_the_poller_saw_holds():
    """Seed 18207 (5.5.1 broker, 5.5.0 client), minimized: g0c1's first persist of TopicR queue 7
    sent 13 (seq 1792, 10 s after its start) 1 ms after the recorder's poll saw the client store
    at 14 (seq 1791). RemoteBrokerOffsetStore.persistAll (5.5.0 lines 128-139) reads the value
    for the RPC and again for its log line: the run's log prints 14 for that very persist, so the
    update landed between the read and the RPC the recorder hooks. The old spec took the persist
    for a value below the store (INV-OFFSET-1)."""
    res = check_trace(str(PERSIST / "trace.min.jsonl"), None, max_listed=100)
    assert not _errors(res), _errors(res)
    log = (PERSIST / "run" / "logs" / "rocketmqlogs" / "rocketmq_client.log").read_text()
    assert "g0c1 updateConsumeOffsetToBroker MessageQueue [topic=TopicR, brokerName=broker-a, queueId=7] 14" in log
    persisted = [e for e in _persist_events() if e["kind"] == "offset_persisted"]
    assert [e["offset"] for e in persisted] == [0]      # 13, renumbered by the minimizer; the poll saw 14 (1)


def test_a_persist_below_the_value_seen_at_the_previous_persist_still_fails():
    """The next persist's read follows the previous persist's RPC (one loop, one thread): it
    carries at least the value seen then. Below it is no race, and still INV-OFFSET-1."""
    evs = _persist_events()
    last = evs[-1]
    seq, ts = last["seq"], last["ts"]

    def ev(kind, **kw):
        nonlocal seq, ts
        seq += 1
        ts += 1000
        base = {k: last[k] for k in ("client", "group", "topic", "broker", "queue")}
        return {"seq": seq, "ts": ts, "kind": kind, **base, **kw}

    upd = {"increase_only": True, "store": "remote", "obs": "sampled"}
    tail = [ev("offset_updated", offset=2, stored=2, **upd), ev("offset_persisted", offset=2, lost=False),
            ev("offset_updated", offset=3, stored=3, **upd), ev("offset_persisted", offset=1, lost=False)]
    res = _check(evs + tail, "rocketmq-5.5.1")
    errs = _errors(res)
    assert list(errs) == ["INV-OFFSET-1"], errs
    assert errs["INV-OFFSET-1"] == ["persist sends 1, below the store's value 3 seen earlier and the value 2 seen "
                                    "at its previous persist"], errs
    # a persist between the value seen at the previous one and the polled store is the race: it holds
    tail[-1]["offset"] = 2
    assert not _errors(_check(evs + tail, "rocketmq-5.5.1"))


# ------------------------------------------------------------------ seed 16140: a send-back after the replacement

SENDBACK = HERE / "seed-16140-send-back-after-replacement"


def _sendback_events():
    with gzip.open(SENDBACK / "trace.jsonl.gz", "rt") as fh:
        return [json.loads(line) for line in fh]


def test_a_failed_batchs_send_back_after_its_processqueue_was_replaced_holds():
    """Seed 16140 (5.3.3). g0c1's listener call of TopicR queue 1 offsets 28 and 31 (consume 15)
    ran across its 4.6 s SIGSTOP and returned RECONSUME_LATER after it. Meanwhile the broker had
    closed its idle channel, reset the group's offsets and given the queue to g0c2: g0c1 dropped
    its ProcessQueue (OFFSET_ILLEGAL), removed it, and took the queue again with a new one at 57.
    processConsumeResult (5.5.0 lines 279-294; 5.3.3 the same, as the run's stack trace's line
    numbers show) sends the batch back one message at a time: offset 28's consumerSendMessageBack
    waited out its 5 s timeout on the dead channel (the log: 07:20:08,789), then offset 31's went
    (seq 551), asked of the old ProcessQueue, which still holds it (containsMessage; only
    resetOffset clears a ProcessQueue). The old spec looked for it in the new one (INV-RETRY-3)."""
    res = check_trace(str(SENDBACK / "trace.jsonl.gz"), None, max_listed=100)
    assert not _errors(res), _errors(res)
    log = (SENDBACK / "run" / "logs" / "rocketmqlogs" / "rocketmq_client.log").read_text()
    assert "Failed to send message back" in log and "queueOffset=28" in log and "timeout, 5000(ms)" in log
    late = [e for e in _sendback_events() if e["kind"] == "send_back_requested" and e.get("offset") == 31
            and e["client"] == "127.0.0.1@g0c1"]
    created = [e["seq"] for e in _sendback_events() if e["kind"] == "pq_created" and e["queue"] == 1
               and e["topic"] == "TopicR" and e["client"] == "127.0.0.1@g0c1"]
    assert [e["seq"] for e in late] == [551] and created[-1] < 551


def test_a_send_back_of_a_message_the_replaced_processqueue_did_not_fail_still_fails():
    """Only what the old ProcessQueue's calls failed and had not sent back is owed a late
    send-back: the same late send-back naming offset 32, which consume 17 of the old ProcessQueue
    acknowledged, is INV-RETRY-3."""
    evs = _sendback_events()
    late = next(e for e in evs if e["seq"] == 551)
    late.update(offset=32, msg_id="7F0000010000AF8D000000000000A336", origin_msg_id="7F0000010000AF8D000000000000A336")
    errs = _errors(_check(evs, "rocketmq-5.3.3"))
    assert "send-back of offset 32 that 127.0.0.1@g0c1 neither failed nor holds" in errs.get("INV-RETRY-3", []), errs
