"""Checking cost against offset values: the same trace at offset 0 and at 10^12 with gaps.

    python -m bench.offset_scale [--runs R] [--per-run M] [--queues Q] [--base B] [--gap G]

Builds two traces with the same events: one whose queues start at offset 0 and run
contiguously, and one whose queues start at `--base` (10^12) with `--gap` (10^9) offsets
between runs of M messages. A gap is what a recorder sees when it was detached for a while:
the client persists and drops its ProcessQueues, then the trace states the broker's committed
offset (`offset_committed` source snapshot) and the queue's new bounds (`queue_snapshot`,
retention below), and the client resumes from the store. Both traces are written to JSON Lines
and checked with `check_trace` (reading, schema validation, replay). Prints events/s (CPU
time) and peak memory (tracemalloc) for both and the ratios. Target: the same events/s and at
most 2x the memory.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
import tracemalloc

G, T, B, C = "GID_scale", "Scale", "broker-a", "c1"


def events(base: int, gap: int, runs: int, per_run: int, queues: int):
    """The trace's events (dicts, seq/ts filled in), streaming."""
    seq = 0
    ts = 0

    def e(kind, **f):
        nonlocal seq
        d = {"seq": seq, "ts": ts, "kind": kind, **f}
        seq += 1
        return d

    qk = [dict(group=G, topic=T, broker=B, queue=q) for q in range(queues)]
    ck = [dict(client=C, **k) for k in qk]
    yield e("trace_started", schema_version=2, profile="rocketmq-4.9.8", scenario="bench-offset-scale")
    yield e("broker_started", broker=B, config={"broker_lock_max_live_ms": 60000})
    yield e("topic_created", topic=T, broker=B, queue_count=queues, perm=6)
    mqs = [[T, B, q] for q in range(queues)]
    yield e("client_started", client=C, group=G, consume_mode="CONCURRENTLY", message_model="CLUSTERING",
            subscriptions={T: {"type": "TAG", "expr": "*"}}, config={"consume_from_where": "CONSUME_FROM_LAST_OFFSET"})
    yield e("allocation_computed", client=C, group=G, topic=T, strategy="AVG", mqs=mqs, cids=[C], allocated=mqs,
            view="v1")
    pull_id = cons_id = 0
    for r in range(runs):
        start = base + r * (per_run + gap)
        # observation (re)starts: the broker's committed offset and the queue's bounds
        for q in range(queues):
            yield e("offset_committed", **qk[q], offset=start, source="snapshot")
            yield e("queue_snapshot", topic=T, broker=B, queue=q, min_offset=start, max_offset=start)
            yield e("offset_read", **ck[q], offset=start, source="store")
            yield e("pq_created", **ck[q], offset=start, from_where="CONSUME_FROM_LAST_OFFSET")
        end = start + per_run
        for q in range(queues):
            for o in range(start, end):
                ts += 1
                yield e("message_stored", topic=T, broker=B, queue=q, offset=o, msg_id=f"m{q}-{o}",
                        origin_msg_id=f"m{q}-{o}", source="producer", tags="A", tags_code=65)
        for q in range(queues):
            nxt = start
            while nxt < end:
                pull_id += 1
                batch = list(range(nxt, min(nxt + 32, end)))
                yield e("pull_issued", **ck[q], offset=nxt, pull_id=pull_id, max_nums=32)
                ts += 1
                yield e("pull_answered", **ck[q], pull_id=pull_id, offset=nxt, get_status="FOUND", status="FOUND",
                        next_offset=batch[-1] + 1, min_offset=start, max_offset=end, offsets=batch,
                        msg_ids=[f"m{q}-{o}" for o in batch])
                for o in batch:
                    cons_id += 1
                    yield e("consume_started", **ck[q], consume_id=cons_id, offsets=[o], msg_ids=[f"m{q}-{o}"])
                    yield e("consume_finished", **ck[q], consume_id=cons_id, status="CONSUME_SUCCESS", ack_index=0)
                    yield e("pq_messages_removed", **ck[q], offsets=[o], offset=o + 1)
                    yield e("offset_updated", **ck[q], offset=o + 1, increase_only=True, stored=o + 1)
                nxt = batch[-1] + 1
        # observation pauses: the client persists and lets its ProcessQueues go
        ts += 1000
        for q in range(queues):
            yield e("offset_persisted", **ck[q], offset=end, lost=False)
            yield e("offset_committed", **qk[q], offset=end, client=C, source="persist")
            yield e("pq_dropped", **ck[q], reason="reassigned")
            yield e("pq_removed", **ck[q])
        ts += 1000
    yield e("trace_ended", reason="quiescent")


def write(path, evs) -> int:
    from rocketspec.traces.io import open_writer

    w = open_writer(path)
    n = 0
    try:
        for ev in evs:
            w.write(ev)
            n += 1
    finally:
        w.close()
    return n


def measure(path) -> dict:
    from rocketspec.spec.replay import check_trace

    c0 = time.process_time()
    rep = check_trace(path)
    cpu = time.process_time() - c0
    tracemalloc.start()
    check_trace(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    bad = [f"{f.inv}: {f.message}" for f in rep.findings.errors[:3]]
    return {"events": rep.events, "verdict": "holds" if rep.ok else "violated", "errors": bad, "cpu_s": cpu,
            "events_per_s": rep.events / max(cpu, 1e-9), "peak_bytes": peak}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench.offset_scale", description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--per-run", type=int, default=250)
    ap.add_argument("--queues", type=int, default=4)
    ap.add_argument("--base", type=int, default=10 ** 12)
    ap.add_argument("--gap", type=int, default=10 ** 9)
    args = ap.parse_args(argv)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, base, gap in (("offset 0, contiguous", 0, 0),
                                 (f"offset {args.base:.0e}, gaps {args.gap:.0e}", args.base, args.gap)):
            path = os.path.join(tmp, f"{base}.jsonl")
            n = write(path, events(base, gap, args.runs, args.per_run, args.queues))
            r = measure(path)
            out[label] = r
            print(f"{label:32s} {n:8d} events  {r['verdict']:8s} {r['events_per_s']:>10,.0f} events/s (CPU)  "
                  f"peak {r['peak_bytes'] / 2**20:7.2f} MiB (tracemalloc)")
            for line in r["errors"]:
                print(f"    {line}")
    (a, ra), (b, rb) = out.items()
    speed = rb["events_per_s"] / ra["events_per_s"]
    mem = rb["peak_bytes"] / max(ra["peak_bytes"], 1)
    print(f"ratios (large / zero): events/s {speed:.2f} (target ~1), peak memory {mem:.2f} (target <= 2)")
    return {"speed_ratio": speed, "memory_ratio": mem, "runs": out}


if __name__ == "__main__":
    main()
