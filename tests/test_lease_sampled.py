"""A lease renewed that the poller had not shown yet (make test-real, handwritten scenario
h08-orderly-pause-5s on real 4.9.8, 2026-12-07): p2 was SIGSTOPped for 5 s, 48 ms after its last
lock (client lease 3 s, broker lock 6 s). After the thaw its consume thread found the lease
expired and asked for the lock again; the broker granted it (lock_acquired renewed, 628219 and
628224) and the client called the listener at 628226. The recorder sees the ProcessQueue's
lastLockTimestamp by polling: it showed the renewal only at 628236. check took the last lock it
had seen (623161) and reported INV-OWNER-2, a false alarm: RebalanceImpl.lockAll sets locked and
lastLockTimestamp when the grant's answer arrives, at or after the grant."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_events

TRACE = Path(__file__).parent / "fixtures" / "real" / "handwritten" / "h08-orderly-pause-5s-relock.jsonl.gz"
P2 = "127.0.0.1@p2"


def _events() -> list[dict]:
    with gzip.open(TRACE, "rt") as f:
        return [json.loads(line) for line in f]


def _errors(events) -> dict:
    d = check_events(enumerate(events, 1), get_profile("rocketmq-4.9.8")).to_dict()
    return {v["invariant"]: v["message"] for v in d["violations"]}


def test_a_call_after_a_grant_the_poller_has_not_shown_holds():
    events = _events()
    assert events[-1]["reason"] == "quiescent"
    assert _errors(events) == {}


def test_without_the_grant_the_expired_lease_is_still_found():
    """The grants after the thaw are what made the lease possibly live: without them the call
    began 5065 ms after the last lock the client could have had, past its 3 s lease."""
    events = _events()
    thaw = next(e["ts"] for e in events if e["kind"] == "client_resumed" and e["client"] == P2)
    first_call = next(e for e in events if e["kind"] == "consume_started" and e["client"] == P2 and e["ts"] > thaw)
    cut = [e for e in events if not (e["kind"] == "lock_acquired" and e["client"] == P2
                                     and thaw - 10 <= e["ts"] <= first_call["ts"])]
    errors = _errors(cut)
    assert "INV-OWNER-2" in errors and "without a valid lease" in errors["INV-OWNER-2"]
