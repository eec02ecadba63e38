"""Random real 4.9.8 run 19039: a polled offset-store value written after an exact event that had
already seen a newer value of the store. What RocketMQ did, read from 4.9.8's source and the
run's own log (beside the fixture), and that `check` still reports a sample the race cannot
explain."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_events, check_trace

FIX = Path(__file__).parent / "fixtures" / "real" / "random" / "seed-19039-sample-read-before-persist"
KEY = {"client": "127.0.0.1@g1c1", "group": "GID_r1", "topic": "%RETRY%GID_r1", "broker": "broker-a", "queue": 0}


def _events():
    with gzip.open(FIX / "trace.jsonl.gz", "rt") as fh:
        return [json.loads(line) for line in fh]


def _check(events):
    return check_events(list(enumerate(events, 1)), get_profile("rocketmq-4.9.8"), "synthetic", max_listed=100)


def _errors(res):
    out: dict[str, list[str]] = {}
    for f in res.findings.errors:
        out.setdefault(f.inv, []).append(f.message)
    return out


def _mine(e):
    return all(e.get(k) == v for k, v in KEY.items())


def test_a_sample_read_before_the_update_a_persist_carried_holds():
    """Seed 19039 (4.9.8, concurrent clustering GID_r1, batches of 2, every call RECONSUME_LATER).
    Two calls of %RETRY%GID_r1 queue 0 ended together: [2468, 2469] (consume 1665, seq 29258) and
    [2478, 2479] (consume 1668, seq 29262). processConsumeResult (ConsumeMessageConcurrentlyService
    4.9.8 lines 281-300) sends each batch back, then removeMessage and updateOffset(..., true):
    1665's removal found 2478 first in the tree, 1668's then 2480, and compareAndIncreaseOnly
    (MixAll 432-442) took the store 2468 -> 2478 -> 2480. persistAll (RemoteBrokerOffsetStore
    115-132) sent 2480 (seq 29274; RocketMQ's log line at 12:20:56,179 re-reads 2480). The
    recorder's poller had read the table (Release.offsets) between the two updates and wrote
    2478 after that persist (seq 29278). The old spec read the sample as the store moving back
    (INV-OFFSET-2). The fixture is the run's trace cut at that sample."""
    res = check_trace(str(FIX / "trace.jsonl.gz"), None, max_listed=100)
    assert not _errors(res), _errors(res)
    log = (FIX / "run" / "logs" / "rocketmqlogs" / "rocketmq_client.log").read_text()
    assert ("12:20:56,179 INFO RocketmqClient - [persistAll] Group: GID_r1 ClientId: 127.0.0.1@g1c1 "
            "updateConsumeOffsetToBroker MessageQueue [topic=%RETRY%GID_r1, brokerName=broker-a, queueId=0] 2480") in log
    evs = [e for e in _events() if _mine(e) and e["kind"] in ("offset_updated", "offset_persisted")]
    last = evs[-1]
    assert last["kind"] == "offset_updated" and last["obs"] == "sampled"
    persisted = [e["offset"] for e in evs if e["kind"] == "offset_persisted"]
    sampled = [e["stored"] for e in evs if e["kind"] == "offset_updated"]
    # the sample is below the persist written before it, and not below the sample before it
    assert persisted and persisted[-1] > last["stored"] >= sampled[-2]


def test_a_sample_below_the_value_held_after_the_previous_poll_still_fails():
    """The next poll reads the table after the stale sample was written, hence after the persist
    that carried the newer value: below that value the store did go back (INV-OFFSET-2)."""
    evs = _events()
    last = evs[-1]
    seq, ts = last["seq"], last["ts"]

    def ev(kind, **kw):
        nonlocal seq, ts
        seq += 1
        ts += 20
        return {"seq": seq, "ts": ts, "kind": kind, **KEY, **kw}

    stale = last["stored"]
    persisted = max(e["offset"] for e in evs if _mine(e) and e["kind"] == "offset_persisted")
    upd = {"increase_only": True, "store": "remote", "obs": "sampled"}
    # a poll after the stale sample that still reads below the persisted value
    tail = [ev("offset_updated", offset=stale - 1, stored=stale - 1, **upd)]
    errs = _errors(_check(evs + tail))
    assert errs == {"INV-OFFSET-2": [f"client offset moves back from {persisted} to {stale - 1} in a live "
                                     f"ProcessQueue (sampled)"]}, errs
    # reading the stale value again is no race either: the next poll reads after the persist
    tail[0].update(offset=stale, stored=stale)
    assert list(_errors(_check(evs + tail))) == ["INV-OFFSET-2"]
