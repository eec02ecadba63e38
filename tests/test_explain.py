"""`rocketspec explain`: the story, the timeline read off the events, the pictures, the error path;
and `check`'s report pointing to minimize/explain with an example of every counted anomaly."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from handtraces import TRACES
from rocketspec.cli import main
from rocketspec.traces.explain.explain import explain
from rocketspec.traces.explain.timeline import parse_key


def run(*args):
    r = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return r.exit_code, r.output


def test_text_tells_the_violation_with_its_rule_and_story():
    code, out = run("explain", str(TRACES / "wrong_two_lock_holders.jsonl"))
    assert code == 1
    assert "VIOLATION 1 of 1: INV-LOCK-1 At most one broker lock holder per queue" in out
    # the invariant's statement from the catalogue, not a paraphrase
    assert "names at most one client" in out
    assert "c2 acquires the lock (takeover) while c1 holds it" in out
    story = [ln for ln in out.splitlines() if ln.startswith("  !") or ln.startswith("  *")]
    assert any("now names c2 (takeover, after c1" in ln and ln.startswith("  !") for ln in story)
    assert any("now names c1 (new" in ln and ln.startswith("  *") for ln in story)
    assert "rocketspec minimize" in out


def test_clean_trace_exit_0_and_lane_summary():
    code, out = run("explain", str(TRACES / "valid_concurrent.jsonl"))
    assert code == 0
    assert "HOLDS" in out and "VIOLATION" not in out
    assert "G · T/broker-a/0: owned by c1 0.000s-end; 2 listener call(s)" in out


def test_json_lists_violations_and_the_events_that_matter():
    code, out = run("explain", "--json", str(TRACES / "wrong_consume_after_drop.jsonl"))
    assert code == 1
    d = json.loads(out)
    assert d["verdict"] == "violated"
    v = d["violations"][0]
    assert v["invariant"] == "INV-DROP-1"
    assert v["lane"] == {"group": "G", "topic": "T", "broker": "broker-a", "queue": 0}
    # the rejected event and the drop before it both matter
    kinds = {s["seq"]: s for s in d["story"]}
    drop = [s for s in d["story"] if "drops" in s["text"]]
    assert drop and drop[0]["seq"] in v["matters"]
    assert v["seq"] in v["matters"] and kinds[v["seq"]]["tag"] == "!"


def test_timeline_is_read_off_the_events():
    ex = explain(str(TRACES / "wrong_two_lock_holders.jsonl"))
    tl = ex.timeline
    locks = sorted((b.client, b.t0, b.t1, b.open) for b in tl.bars if b.cat == "lock")
    # c1's entry from 0 until c2's (illegal) takeover at 1000; c2's still open at the end
    assert locks == [("c1", 0, 1000, False), ("c2", 1000, 1000, True)]
    ex = explain(str(TRACES / "valid_orderly.jsonl"))
    calls = [b for b in ex.timeline.bars if b.cat == "call"]
    evs = [json.loads(x) for x in (TRACES / "valid_orderly.jsonl").read_text().splitlines()]
    started = [e for e in evs if e["kind"] == "consume_started"]
    assert len(calls) == len(started)
    assert sorted(b.t0 for b in calls) == sorted(e["ts"] for e in started)


def test_pause_and_open_listener_call():
    evs = [json.loads(x) for x in (TRACES / "valid_orderly.jsonl").read_text().splitlines()]
    # freeze c1 in the middle of its first call and end the trace there
    i = next(i for i, e in enumerate(evs) if e["kind"] == "consume_started")
    head = evs[: i + 1]
    ts = head[-1]["ts"]
    head.append({"seq": 0, "ts": ts + 5, "kind": "client_paused", "client": head[-1]["client"], "group": "G",
                 "duration": 1000})
    head.append({"seq": 0, "ts": ts + 1005, "kind": "client_resumed", "client": head[-1]["client"], "group": "G"})
    head.append({"seq": 0, "ts": ts + 1005, "kind": "trace_ended", "reason": "duration"})
    for k, e in enumerate(head):
        e["seq"] = k
    from rocketspec.rocketmq.profiles import get_profile
    from rocketspec.spec.replay import check_events
    from rocketspec.traces.explain.explain import explain_events

    rep = check_events(enumerate(head, 1), get_profile(head[0]["profile"]))
    ex = explain_events(head, rep)
    pauses = [b for b in ex.timeline.bars if b.cat == "pause"]
    assert [(b.t0, b.t1) for b in pauses] == [(ts + 5, ts + 1005)]
    call = [b for b in ex.timeline.bars if b.cat == "call"]
    assert len(call) == 1 and call[0].open and call[0].t1 == ts + 1005


def test_key_filters_lanes_and_bad_keys_exit_2(tmp_path):
    code, out = run("explain", "--key", "G/T/broker-a/0", str(TRACES / "wrong_two_lock_holders.jsonl"))
    assert code == 1
    code, out = run("explain", "--key", "queue=7", str(TRACES / "wrong_two_lock_holders.jsonl"))
    assert code == 2 and "--key" in out and "no lane of the trace matches" in out
    code, out = run("explain", "--key", "colour=red", str(TRACES / "wrong_two_lock_holders.jsonl"))
    assert code == 2 and "unknown key field 'colour'" in out
    code, out = run("explain", "--json", "--key", "queue=x", str(TRACES / "wrong_two_lock_holders.jsonl"))
    assert code == 2 and json.loads(out)["verdict"] == "bad_input"
    assert parse_key("G/%RETRY%G/b/1") == {"group": "G", "topic": "%RETRY%G", "broker": "b", "queue": 1}


def test_bad_trace_is_bad_input():
    code, out = run("explain", str(TRACES / "bad_out_of_order.jsonl"))
    assert code == 2 and "bad_out_of_order.jsonl:" in out and "out of order" in out
    code, out = run("explain", "/nonexistent/trace.jsonl")
    assert code == 2


def test_png_is_a_picture_and_deterministic(tmp_path):
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    for p in (a, b):
        code, _ = run("explain", "--png", str(p), str(TRACES / "wrong_two_lock_holders.jsonl"))
        assert code == 1
    data = a.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert data == b.read_bytes()


def test_html_is_self_contained(tmp_path):
    out = tmp_path / "t.html"
    code, _ = run("explain", "--html", str(out), str(TRACES / "wrong_two_lock_holders.jsonl"))
    assert code == 1
    page = out.read_text()
    assert "data-invariant='INV-LOCK-1'" in page
    # plotly.js inlined: no script, style or image is loaded from elsewhere (the browser test
    # watches the network too)
    from html.parser import HTMLParser

    refs = []

    class P(HTMLParser):
        def handle_starttag(self, tag, attrs):
            refs.extend((tag, k, v) for k, v in attrs if k in ("src", "href") and v and not v.startswith("#"))

    P().feed(page)
    assert refs == []
    assert len(page) > 1_000_000


@pytest.mark.parametrize("trace", ["wrong_17th_retry.jsonl", "wrong_dlq_consume.jsonl",
                                   "wrong_loss_at_quiescence.jsonl", "valid_dlq.jsonl"])
def test_every_hand_trace_explains(trace, tmp_path):
    code, out = run("explain", "--png", str(tmp_path / "x.png"), str(TRACES / trace))
    assert code == (0 if trace.startswith("valid") else 1)
    assert (tmp_path / "x.png").stat().st_size > 10_000


# ------------------------------------------------------------------ check's report


def test_check_points_to_minimize_and_explain_when_it_fails():
    code, out = run("check", str(TRACES / "wrong_two_lock_holders.jsonl"))
    assert code == 1
    assert "rocketspec minimize" in out and "rocketspec explain" in out
    code, out = run("check", str(TRACES / "valid_concurrent.jsonl"))
    assert code == 0 and "rocketspec minimize" not in out


def test_check_shows_an_example_for_each_counted_anomaly(tmp_path):
    t = tmp_path / "faults.jsonl"
    code, _ = run("simulate", "--scenario", "faults", "--seed", "7", "--profile", "rocketmq-4.9.8", "--out", str(t))
    assert code == 0
    code, out = run("check", str(t))
    assert code == 0
    lines = out.splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.strip().startswith("ANOM-DUP-1 "))
    assert "Duplicate consumption" in lines[i]
    # the count is followed by an example naming its event, key and what was repeated
    assert lines[i + 1].strip().startswith("e.g. seq ") and "again" in lines[i + 1]
