"""A real broker lock's update time is read from the lock entry (`lock_acquired.updated_at`,
RebalanceLockManager's LockEntry.lastUpdateTimestamp), not bounded by the recorder's own clock.

vol2 seed 15 (docs/notes/real-random.md): the broker set lastUpdate 1 ms before the recorder
stamped the event, no lock request of the client was known, and the spec's window for the
update was [ts, ts]: INV-LOCK-1 "must be its update time + 6000" on a correct entry."""
from __future__ import annotations

import pytest

from handtraces import REAL, check, load

LIFE = 6000   # real-orderly-takeover's broker lock lifetime


def _first_lock_without_its_request():
    """real-orderly-takeover with the first granted lock's client request unknown and the
    entry's update 1 ms before the event, as in seed 15."""
    evs = load(REAL / "real-orderly-takeover.jsonl")
    i = next(i for i, e in enumerate(evs) if e["kind"] == "lock_acquired" and e["reason"] != "snapshot")
    client = evs[i]["client"]
    evs = [e for j, e in enumerate(evs) if not (j < i and e["kind"] == "lock_requested" and e["client"] == client)]
    lock = next(e for e in evs if e["kind"] == "lock_acquired" and e["reason"] != "snapshot")
    lock["expires_at"] = lock["ts"] - 1 + LIFE
    return evs, lock


def lock_errors(evs):
    return [f for f in check(evs, "rocketmq-4.9.8").findings.errors if f.inv == "INV-LOCK-1"]


def test_the_recorders_own_clock_alone_cannot_place_the_update():
    evs, _ = _first_lock_without_its_request()
    errors = lock_errors(evs)
    assert len(errors) == 1 and "must be its update time + 6000" in errors[0].message


def test_the_entrys_own_update_time_makes_the_observation_exact():
    evs, lock = _first_lock_without_its_request()
    lock["updated_at"] = lock["ts"] - 1
    assert lock_errors(evs) == []


@pytest.mark.parametrize("shift", [-1, 1])
def test_an_entry_whose_expiry_is_not_its_update_plus_the_lifetime_is_reported(shift):
    evs, lock = _first_lock_without_its_request()
    lock["updated_at"] = lock["ts"] - 1 + shift
    errors = lock_errors(evs)
    assert errors and "must be its update time + 6000" in errors[0].message


def test_an_update_after_the_event_is_reported():
    evs, lock = _first_lock_without_its_request()
    lock["updated_at"] = lock["ts"] + 5
    lock["expires_at"] = lock["updated_at"] + LIFE
    errors = lock_errors(evs)
    assert errors and "at or before" in errors[0].message
