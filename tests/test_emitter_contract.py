"""docs/emitter.md, held to the real 4.9.8 recordings: a client-only trace (what a client's own
emitter can see: the broker recorder's kinds left out) marked as the page prescribes holds on
every recording; unmarked, the page's warning is true (false INV-OFFSET-1 and -3); each event
the page calls required gives false alarms when it is left out, and each it calls optional
does not."""
from __future__ import annotations

import glob
import os

import orjson
import pytest

from rocketspec.spec.replay import check_trace

REAL = os.path.join(os.path.dirname(__file__), "fixtures", "real")
FIXTURES = sorted(glob.glob(os.path.join(REAL, "*.jsonl")))

# What only the broker sees (docs/emitter.md, "What a client emitter can see")
BROKER_SIDE = {"broker_started", "topic_created", "consumer_registered", "consumer_unregistered", "message_stored",
               "message_scheduled", "schedule_delivered", "message_sent_back", "message_dead_lettered",
               "offset_committed", "offset_erased", "lock_acquired", "lock_rejected", "lock_released",
               "lock_release_ignored", "pull_held", "queue_snapshot"}
# The page's marks: what a polling emitter writes "obs": "sampled" on
SAMPLED = {"offset_updated", "pq_created", "pq_dropped", "pq_removed", "pq_lock_changed", "offset_removed"}
REQUIRED = ["client_started", "pq_created", "pq_dropped", "pull_issued", "pull_answered", "pull_failed",
            "consume_started", "consume_finished", "send_back_requested", "pq_lock_changed"]
OPTIONAL = ["allocation_computed", "lock_requested", "offset_updated", "offset_persisted", "offset_removed",
            "pq_removed", "client_stopped", "trace_ended"]


def client_only(path: str, marks=SAMPLED, store_reads: bool = False, drop: str | None = None) -> list[dict]:
    """The recording as a client's own emitter would write it: no broker-side kind, no `obs`
    but the page's marks, store reads left out unless `store_reads`, `drop` left out too."""
    out = []
    with open(path, "rb") as fh:
        for raw in fh:
            if not raw.strip():
                continue
            e = orjson.loads(raw)
            k = e["kind"]
            if k in BROKER_SIDE or k == drop:
                continue
            if k == "offset_read" and e.get("source") == "store" and not store_reads:
                continue
            e.pop("obs", None)
            if k in marks:
                e["obs"] = "sampled"
            out.append(e)
    for i, e in enumerate(out):
        e["seq"] = i
    return out


def errors(tmp_path, events, name="t.jsonl") -> dict:
    p = tmp_path / name
    p.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    rep = check_trace(str(p))
    out: dict = {}
    for f in rep.findings.errors:
        out[f.inv] = out.get(f.inv, 0) + 1
    return out


def test_the_recordings_are_there():
    assert len(FIXTURES) >= 14


@pytest.mark.parametrize("path", FIXTURES, ids=os.path.basename)
def test_a_client_only_trace_marked_as_the_page_says_holds(tmp_path, path):
    evs = client_only(path)
    assert not any(e["kind"] in BROKER_SIDE for e in evs)
    assert errors(tmp_path, evs) == {}


@pytest.mark.parametrize("name", ["real-basic.jsonl", "real-orderly-dlq.jsonl", "real-rebalance.jsonl"])
def test_unmarked_offset_updates_give_the_false_alarms_the_page_warns_of(tmp_path, name):
    path = os.path.join(REAL, name)
    got = errors(tmp_path, client_only(path, marks=SAMPLED - {"offset_updated"}))
    assert got.get("INV-OFFSET-1", 0) > 0, got
    assert set(got) <= {"INV-OFFSET-1", "INV-OFFSET-3", "INV-START-1"}, got


def test_the_numbers_on_the_page(tmp_path):
    """real-orderly-dlq unmarked: 10 INV-OFFSET-1 and 4 INV-OFFSET-3 (docs/emitter.md)."""
    got = errors(tmp_path, client_only(os.path.join(REAL, "real-orderly-dlq.jsonl"), marks=set()))
    assert got == {"INV-OFFSET-1": 10, "INV-OFFSET-3": 4}


def test_an_unmarked_polled_process_queue_gives_a_guard(tmp_path):
    got = errors(tmp_path, client_only(os.path.join(REAL, "real-kill.jsonl"), marks=SAMPLED - {"pq_created"}))
    assert got == {"GUARD": 1}, got


@pytest.mark.parametrize("kind", REQUIRED)
def test_a_required_event_left_out_gives_false_alarms(tmp_path, kind):
    total: dict = {}
    for path in FIXTURES:
        for inv, n in errors(tmp_path, client_only(path, drop=kind)).items():
            total[inv] = total.get(inv, 0) + n
    assert total, f"leaving out {kind} changed nothing: the page should not call it required"


@pytest.mark.parametrize("kind", OPTIONAL)
def test_an_optional_event_left_out_gives_none(tmp_path, kind):
    for path in FIXTURES:
        assert errors(tmp_path, client_only(path, drop=kind)) == {}, (kind, path)


@pytest.mark.xfail(strict=True, reason="the spec judges a store read against the broker's offset table even in a "
                                       "trace that holds none (docs/emitter.md: leave store reads out)")
def test_store_reads_in_a_client_only_trace(tmp_path):
    got = errors(tmp_path, client_only(os.path.join(REAL, "real-kill.jsonl"), store_reads=True))
    assert "INV-START-1" not in got, got
