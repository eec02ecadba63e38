"""The broker's RocksDB POP path on real RocketMQ 5.5.1 (popConsumerKVServiceInit and
popConsumerKVServiceEnable on): random POP run 27101 of `record --random --pop --pop-kv` (two push
consumers in POP mode on four queues, failed calls changed to a later invisible time, revives),
recorded with its store wrapped (docs/recorder.md, "The RocksDB POP path"). Beside check's verdict,
the facts the reference's KV model (reference/broker/pop_kv.py, rocketspec/rocketmq/pop_kv.py) was
written from, as the real run shows them."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from rocketspec.rocketmq.pop_kv import KV_REVIVE_INTERVAL, KV_REVIVE_LAG
from rocketspec.spec.replay import check_trace

TRACE = Path(__file__).parent / "fixtures" / "real" / "pop" / "random-27101-kv-5.5.1.jsonl.gz"
# the revive thread waits 500 ms after a scan that found little, then scans and reads: its own
# time comes on top of the interval
SCAN_SLACK_MS = 100


def _events() -> list[dict]:
    with gzip.open(TRACE, "rt") as f:
        return [json.loads(line) for line in f]


def test_the_real_kv_run_holds():
    res = check_trace(str(TRACE), "rocketmq-5.5.1")
    assert {f.inv: f.message for f in res.findings.errors} == {}
    assert res.ended == "quiescent"


def test_every_checkpoint_is_a_record_of_one_offset():
    ev = _events()
    started = [e for e in ev if e["kind"] == "broker_started"]
    assert started[0]["config"]["pop_consumer_kv_service"] is True
    cks = [e for e in ev if e["kind"] == "pop_checkpoint_written"]
    assert len(cks) > 40
    assert all(e["store"] == "kv" and e["offsets"] == [e["ck_offset"]] and e["revive_qid"] == 0 for e in cks)
    # a pop's records carry the pop's time: one per message it handed out
    popped = {(e["topic"], e["queue"], e["offset"], e["pop_time"]) for e in ev
              if e["kind"] == "message_popped" and not e["topic"].startswith("%")}
    written = {(e["topic"], e["queue"], e["ck_offset"], e["pop_time"]) for e in cks if e["cause"] == "pop"}
    assert popped <= written


def test_a_change_writes_a_record_under_the_new_deadline():
    """changeInvisibilityDuration: a new record popped now with the new invisible time; the
    answer's handle names it."""
    ev = _events()
    changes = [e for e in ev if e["kind"] == "invisible_time_changed" and e["result"] == "changed"]
    assert len(changes) >= 5
    cks = {(e["queue"], e["ck_offset"], e["pop_time"], e["invisible_time"]) for e in ev
           if e["kind"] == "pop_checkpoint_written" and e["cause"] == "change_invisible"}
    for c in changes:
        assert (c["queue"], c["offset"], c["new_pop_time"], c["invisible_time"]) in cks, c


def test_revive_puts_a_record_back_within_a_scan_of_its_deadline():
    """The revive scans every KV_REVIVE_INTERVAL the records whose deadline is KV_REVIVE_LAG
    behind: each retry copy comes that lag to one interval plus the lag after its record's
    deadline, with one more reconsumption."""
    ev = _events()
    records = {(e["topic"], e["queue"], e["ck_offset"], e["pop_time"]): e for e in ev
               if e["kind"] == "pop_checkpoint_written"}
    revived = [e for e in ev if e["kind"] == "message_revived" and e["outcome"] == "retry"]
    assert len(revived) >= 5
    popped = {(e["topic"], e["queue"], e["offset"], e["pop_time"]): e["reconsume_times"] for e in ev
              if e["kind"] == "message_popped"}
    for r in revived:
        rec = records[(r["topic"], r["queue"], r["offset"], r["pop_time"])]
        late = r["ts"] - (rec["pop_time"] + rec["invisible_time"])
        assert KV_REVIVE_LAG <= late <= KV_REVIVE_INTERVAL + KV_REVIVE_LAG + SCAN_SLACK_MS, (r, late)
        first = [t for (tp, q, o, _), t in popped.items() if (tp, q, o) == (r["topic"], r["queue"], r["offset"])]
        assert r["reconsume_times"] == min(first) + 1
