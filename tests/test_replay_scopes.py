"""The partitioned replay forgets deployments whose events are over (traces.scopes, spec.evict):
on a trace of many deployments one after the other, a partition holds the deployments alive at
once, not every deployment seen, and the results stay `check`'s, including the end-of-trace
rule (INV-LIVE-1) on deployments dropped long before the trace ended."""
from __future__ import annotations

import pytest

from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import load_scenario
from rocketspec.traces.kinds import names
from rocketspec.spec.replay import check_trace
from rocketspec.traces.io import write_trace

ALL = 10 ** 6
SPAN = 240_000              # one generation of deployments (the basic run takes 230 s)
TIME_FIELDS = ("ts", "deliver_ts", "last_lock_ts", "expires_at")
NAME_FIELDS = ("group", "topic", "client", "broker", "msg_id", "origin_msg_id", "view", "real_topic")


def _rename(v, known, suffix):
    if isinstance(v, str):
        return v + suffix if v in known else v
    if isinstance(v, list):
        return [_rename(x, known, suffix) for x in v]
    if isinstance(v, dict):
        return {_rename(k, known, suffix): _rename(x, known, suffix) for k, x in v.items()}
    return v


def deployments(copies: int, alive: int, pending=(), end: str = "quiescent") -> list[dict]:
    """One trace of `copies` copies of the basic deployment (each with its own names), `alive`
    at a time, one generation after the other. A copy in `pending` gets one more message after
    its last event, which nobody consumes: its clients stay alive, so a quiescent end owes it."""
    base = run_to_list(load_scenario("basic"), 1, "rocketmq-5.3.3")
    known = {e[f] for e in base for f in NAME_FIELDS if isinstance(e.get(f), str)}
    rows = []
    for k in range(copies):
        g, sfx = k // alive, f"-{k}"
        evs = []
        for e in base[1:-1]:
            d = {f: _rename(v, known, sfx) for f, v in e.items()}
            for f in TIME_FIELDS:
                if d.get(f) is not None:
                    d[f] += g * SPAN
            evs.append(d)
        if k in pending:
            last = max((e for e in evs if e["kind"] == "message_stored" and e["queue"] == 0
                        and e["topic"] == "TopicTest" + sfx), key=lambda e: e["offset"])
            evs.append({**last, "ts": evs[-1]["ts"], "offset": last["offset"] + 1, "msg_id": f"extra{sfx}",
                        "origin_msg_id": f"extra{sfx}"})
        rows.extend(((e["ts"], k, j), e) for j, e in enumerate(evs))
    rows.sort(key=lambda r: r[0])
    out = [dict(base[0])] + [e for _, e in rows]
    out.append({"kind": "trace_ended", "ts": out[-1]["ts"], "reason": end})
    for i, e in enumerate(out):
        e["seq"] = i
    return out


def _same(c, r):
    f = lambda rep: sorted((x.inv, repr(x.key), x.seq) for x in rep.findings.errors)  # noqa: E731
    return (c.ok, dict(c.findings.counts), c.findings.error_count, f(c), c.events, c.ended) == \
        (r.ok, dict(r.findings.counts), r.findings.error_count, f(r), r.events, r.ended)


COPIES, ALIVE = 16, 1
PER_COPY = {"queues": 5, "stored_queues": 5}    # basic: TopicTest's 4 queues and the retry queue


def _bounded(r):
    """A partition holds (at its peak) the live deployment and those ended since its last sweep
    (at most SWEEP_EVENTS of its events ago: up to four generations here), never all the copies."""
    assert r.scopes_dropped >= COPIES - 3     # (the last few end with the trace)
    for fam, per in PER_COPY.items():
        assert r.live_keys_peak[fam] <= (ALIVE + 4) * per, (fam, r.live_keys_peak)
    assert COPIES > 3 * (ALIVE + 4)


@pytest.mark.parametrize("pending,end", [((), "quiescent"), ((0, 3, 7, 15), "quiescent"), ((0, 3), "duration")],
                         ids=["all-consumed", "pending-at-the-end", "not-quiescent"])
def test_a_partition_holds_the_live_deployments_and_results_stay_checks(tmp_path, pending, end):
    from rocketspec.traces.spark.spark_replay import replay_local

    path = str(tmp_path / "t.jsonl")
    write_trace(path, deployments(COPIES, ALIVE, pending, end))
    c = check_trace(path, max_listed=ALL)
    # the unconsumed messages of dropped deployments are still owed at the quiescent end
    assert c.findings.counts.get("INV-LIVE-1", 0) == (len(pending) if end == "quiescent" else 0)
    for n in (1, 3):
        r = replay_local([path], max_listed=ALL, partitions=n)
        assert _same(c, r), (n, dict(c.findings.counts), dict(r.findings.counts))
        _bounded(r)
    # the findings listed keep their state snapshot (taken when the deployment was dropped)
    # (within the seq of trace_ended the order may differ)
    live = lambda rep: sorted((repr(f.key), repr(f.state)) for f in rep.findings.errors  # noqa: E731
                              if f.inv == "INV-LIVE-1")
    assert live(r) == live(c)


def test_names_join_what_one_event_reads():
    evs = run_to_list(load_scenario("basic"), 1, "rocketmq-5.3.3")
    start = next(e for e in evs if e["kind"] == "client_started")
    assert {("c", start["client"]), ("g", start["group"])} <= set(names(start))
    # a subscribed topic, and the group's retry topic with its group
    assert all(("t", t) in names(start) for t in start["subscriptions"])
    sched = next(e for e in evs if e["kind"] == "message_scheduled")
    assert ("t", sched["topic"]) not in names(sched) and ("g", sched["group"]) in names(sched)
    assert names(evs[0]) == () and names(evs[-1]) == ()


@pytest.mark.spark
def test_spark_replay_drops_ended_deployments_with_checks_results(spark, tmp_path):
    from rocketspec.traces.spark.spark_replay import replay_many

    paths = []
    for pending in ((), (0, 3, 7, 15)):
        p = str(tmp_path / f"t{len(pending)}.jsonl")
        write_trace(p, deployments(COPIES, ALIVE, pending))
        paths.append([p])
    for p, r in zip(paths, replay_many(paths, spark, max_listed=ALL, partitions=3)):
        assert _same(check_trace(p[0], max_listed=ALL), r)
        assert r.spark["path"] == "exact"
        _bounded(r)
