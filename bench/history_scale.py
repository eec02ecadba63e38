"""How `rocketspec history` scales: events per second and peak memory, by history length.

Writes synthetic histories in the real formats, zstd-compressed, then streams each through the
judge (spec.history.check_path) in a fresh process and prints records/s and that process's
peak RSS (the interpreter and its imports included). The histories look like a long steady run, so a streaming judge holds about the same
number of live messages however long the history is, and its memory should stay flat:

- openchaos: four QueueClients enqueueing (one send per ms of record time, eight queues on two
  brokers) and a push consumer per client dequeuing each message 5 to 60 ms later; a
  `random-kill` fault every minute, after which a few recently consumed messages come back (an
  allowed duplicate);
- msgtrace: the same run as message-trace records (Pub, SubBefore, SubAfter), one message in
  fifty failing once and being retried ten seconds later with reconsume count 1;
- trace: the built-in `basic` scenario (two concurrent consumers, one listener call in ten asks
  for a retry) simulated by the reference with as many messages as give about that many events
  (about 10.6 events a message), at its own rate of 20 sends a second.

Each history is also checked to hold (the judge must find nothing in a clean run).

    python -m bench.history_scale                       # 1e5, 1e6, 1e7 records, both formats
    python -m bench.history_scale --sizes 1e5,1e6 --formats openchaos
    python -m bench.history_scale --sizes 2e5,2e6 --formats trace
"""
from __future__ import annotations

import argparse
import heapq
import os
import random
import resource
import subprocess
import sys
import tempfile
import time

S, F = "\x01", "\x02"
QUEUES = [("ChaosTopic", b, q) for b in ("broker-a", "broker-b") for q in range(4)]


def _events(n_records: int, fmt: str, seed: int = 7):
    """Yield (ts, text) lines of a steady run in time order, until about n_records records."""
    rnd = random.Random(seed)
    heap: list = []
    offsets = [0] * len(QUEUES)
    recent: list = []
    out = 0
    v = 0
    ts = 1_700_000_000_000
    next_fault = ts + 60_000
    while out < n_records:
        ts += 1
        client = v % 4
        qi = rnd.randrange(len(QUEUES))
        topic, broker, qid = QUEUES[qi]
        off = offsets[qi]
        offsets[qi] += 1
        value = str(v)
        v += 1
        if fmt == "openchaos":
            send = (f"SendResult [sendStatus=SEND_OK, msgId=MSG{value}, offsetMsgId=OFF{value}, messageQueue="
                    f"MessageQueue [topic={topic}, brokerName={broker}, queueId={qid}], queueOffset={off}]")
            heapq.heappush(heap, (ts, 0, f"{client}\tenqueue\tREQUEST\t{value}\tnull\t{ts}\tnull"))
            heapq.heappush(heap, (ts, 1, f"{client}\tenqueue\tRESPONSE\tSUCCESS\t{value}\tnull\t{ts}\t1\t{send}\t0"))
            at = ts + rnd.randint(5, 60)
            recv = (f"receive status [ msgId = MSG{value}, topic = {topic}, group = ChaosTest_ConsumerGroup, "
                    f"queueId = {qid}, queueOffset = {off}]")
            line = f"{(client + 1) % 4}\tdequeue\tRESPONSE\tSUCCESS\t{value}\tnull\t{at}\t0\t{recv}\t{at - ts}"
            heapq.heappush(heap, (at, 2, line))
            recent.append(line)
            if len(recent) > 200:
                recent.pop(0)
        else:
            pub = S.join(["Pub", str(ts), "DefaultRegion", "PID_chaos", topic, value, "TagA", "null",
                          "10.0.0.1:10911", "64", "1", "0", f"OFF{value}", "true"]) + F
            heapq.heappush(heap, (ts, 0, pub))
            at = ts + rnd.randint(5, 60)
            fail = rnd.randrange(50) == 0
            for rc, t0, ok in ([(0, at, False), (1, at + 10_000, True)] if fail else [(0, at, True)]):
                rid = f"R{value}.{rc}"
                heapq.heappush(heap, (t0, 1, S.join(["SubBefore", str(t0), "DefaultRegion", "GID_chaos", rid, value,
                                                     str(rc), "null"]) + F))
                heapq.heappush(heap, (t0 + 3, 2, S.join(["SubAfter", rid, value, "3", str(ok).lower(), "null", "0",
                                                         str(t0 + 3), "GID_chaos"]) + F))
        if fmt == "openchaos" and ts >= next_fault:
            heapq.heappush(heap, (ts, 3, f"fault\trandom-kill\tstart\t{ts}"))
            heapq.heappush(heap, (ts + 10_000, 3, f"fault\trandom-kill\tend\t{ts + 10_000}"))
            for line in recent[-5:]:        # consumed just before the kill: delivered again after it
                f = line.split("\t")
                f[6] = str(ts + 200)
                heapq.heappush(heap, (ts + 200, 2, "\t".join(f)))
            next_fault += 60_000
        while heap and heap[0][0] < ts - 100:
            yield heapq.heappop(heap)[2]
            out += 1
    while heap:
        yield heapq.heappop(heap)[2]


def write_trace(path: str, n: int) -> None:
    """A `basic` run long enough for about n events, simulated, zstd-compressed."""
    import re
    import zstandard

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    text = open(os.path.join(here, "reference", "scenarios", "basic.toml")).read()
    msgs = max(200, n * 10 // 106)
    text = re.sub(r"count = \d+", f"count = {msgs}", text)
    text = re.sub(r"duration_ms = \d+", f"duration_ms = {msgs * 50 + 60_000}", text)
    sc, out = path + ".toml", path + ".jsonl"
    with open(sc, "w") as fh:
        fh.write(text)
    subprocess.run([os.path.join(os.path.dirname(sys.executable), "rocketspec"), "simulate", "--scenario", sc,
                    "--out", out, "--quiet"], check=True)
    with open(out, "rb") as i, open(path, "wb") as o:
        zstandard.ZstdCompressor(level=1).copy_stream(i, o)
    os.remove(out)


def write(path: str, n: int, fmt: str) -> int:
    import zstandard

    if fmt == "trace":
        return write_trace(path, n)
    lines = 0
    with open(path, "wb") as raw, zstandard.ZstdCompressor(level=1).stream_writer(raw) as w:
        buf = []
        for text in _events(n, fmt):
            buf.append(text)
            lines += 1
            if len(buf) >= 4096:
                w.write(("\n".join(buf) + "\n").encode())
                buf.clear()
        if buf:
            w.write(("\n".join(buf) + "\n").encode())
    return lines


def one(path: str, fmt: str) -> None:
    """In a child: stream one history, print records, seconds, verdict, peak live messages."""
    from rocketspec.spec.history import check_path

    t0, c0 = time.perf_counter(), time.process_time()
    rep = check_path(path, fmt)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    d = rep.to_dict(5)
    bad = [(v["id"], v["listed"][:1]) for v in d["guarantees"] if v["status"] == "violated"]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024      # KiB on Linux
    print(f"{d['records']} {dt:.3f} {cpu:.3f} {rss:.1f} {d['verdict']} {d['peak_live_messages']} {d['unparseable']} {bad!r}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e5,1e6,1e7", help="history lengths, in records")
    ap.add_argument("--formats", default="openchaos,msgtrace")
    ap.add_argument("--dir", default=None, help="where to write the histories (default: a temporary directory)")
    ap.add_argument("--one", nargs=2, metavar=("PATH", "FORMAT"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one:
        one(*a.one)
        return 0
    sizes = [int(float(x)) for x in a.sizes.split(",")]
    d = a.dir or tempfile.mkdtemp(prefix="history_scale.")
    print(f"{'format':<10} {'records':>11} {'file MB':>8} {'seconds':>8} {'CPU s':>8} {'records/CPU s':>13} {'peak RSS MiB':>13} "
          f"{'peak live msgs':>14}  verdict")
    worst = 0
    for fmt in a.formats.split(","):
        for n in sizes:
            path = os.path.join(d, f"{fmt}-{n}.zst")
            if not os.path.exists(path):
                write(path, n, fmt)
            proc = subprocess.run([sys.executable, "-m", "bench.history_scale", "--one", path, fmt],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return 3
            recs, secs, cpu, rss, verdict, live, unparseable, bad = proc.stdout.split(" ", 7)
            rss = float(rss)
            print(f"{fmt:<10} {int(recs):>11,} {os.path.getsize(path) / 1e6:>8.1f} {float(secs):>8.1f} {float(cpu):>8.1f} "
                  f"{int(recs) / float(cpu):>13,.0f} {rss:>13.0f} {int(live):>14,}  {verdict}"
                  + ("" if verdict == "holds" else f" {bad.strip()}") + (f" ({unparseable} unparseable)"
                                                                          if int(unparseable) else ""))
            worst = max(worst, verdict != "holds")
    return worst


if __name__ == "__main__":
    sys.exit(main())
