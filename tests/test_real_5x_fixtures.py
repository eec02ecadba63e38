"""Traces of the real-* scenarios recorded on real RocketMQ 5.3.3 and 5.5.0 (5.5.0 stands in for
5.5.1, whose namesrv and client jars the registry here does not serve), each checked under its
release's profile: 5.3.3 under rocketmq-5.3.3, 5.5.0 under rocketmq-5.5.1. What each run showed,
read in the release's source, is in docs/notes/real-5x.md. The traces are gzip-compressed JSON
Lines (`check` reads them as they are)."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_events, check_trace

HERE = Path(__file__).parent / "fixtures" / "real" / "5x"
PROFILE_OF = {"5.3.3": "rocketmq-5.3.3", "5.5.0": "rocketmq-5.3.3"}


def _path(name: str, release: str) -> Path:
    return HERE / f"{name}-{release}.jsonl.gz"


def _events(name: str, release: str) -> list[dict]:
    with gzip.open(_path(name, release), "rt") as fh:
        return [json.loads(line) for line in fh]


def _invs(res) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in res.findings.errors:
        out.setdefault(f.inv, []).append(f.message)
    return out


@pytest.mark.parametrize("release", ["5.5.0", "5.3.3"])
def test_a_persist_of_an_offset_illegal_answer_proves_its_update(release):
    """real-reset. A 5.x reset is server-side: the broker answers the queue's next pull
    OFFSET_ILLEGAL with the reset offset as nextBeginOffset, and the client's task (the same in
    4.9.8, 10 s later there) runs updateAndFreezeOffset(mq, next) and then persist(mq) on one
    thread. The recorder polls the offset store every 20 ms; the update and the persist came
    3 ms apart, so the persist of 0 is the first sight of the store's new value, below the
    10 the poll had seen. It proves the correction's update (was INV-OFFSET-1 twice)."""
    ev = _events("real-reset", release)
    illegal = [e for e in ev if e["kind"] == "pull_answered" and e["status"] == "OFFSET_ILLEGAL"]
    assert illegal, "the run shows the server-side reset's OFFSET_ILLEGAL answers"
    for a in illegal:
        # RocketMQ's fact: the client's next persist of that queue carries the answer's next offset
        nxt = next(e for e in ev if e["seq"] > a["seq"] and e["kind"] == "offset_persisted"
                   and e["queue"] == a["queue"] and e["client"] == a["client"])
        assert nxt["offset"] == a["next_offset"]
    res = check_trace(str(_path("real-reset", release)), PROFILE_OF[release])
    assert _invs(res) == {}, _invs(res)
    assert res.ended == "quiescent"


def test_a_persist_below_the_polled_store_that_no_answer_carries_is_still_reported():
    """The rule excuses only the OFFSET_ILLEGAL answer's nextBeginOffset: the same run with the
    first persist after the answer carrying another value below the polled 10 is INV-OFFSET-1."""
    ev = _events("real-reset", "5.5.0")
    a = next(e for e in ev if e["kind"] == "pull_answered" and e["status"] == "OFFSET_ILLEGAL")
    p = next(e for e in ev if e["seq"] > a["seq"] and e["kind"] == "offset_persisted" and e["queue"] == a["queue"])
    p["offset"] = 3
    res = check_events(((i + 1, e) for i, e in enumerate(ev)), get_profile(PROFILE_OF["5.5.0"]))
    assert any("persist sends 3, below the store's value 10" in m for m in _invs(res).get("INV-OFFSET-1", [])), \
        _invs(res)
