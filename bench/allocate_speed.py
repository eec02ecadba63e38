"""`rocketspec allocate` with "all": true: time per request against the number of client ids.

    python -m bench.allocate_speed [--ids 1000,5000,20000] [--queues 1000] [--strategies AVG,...]

One request per line through the command's own answer path (`answer_line`: JSON decode,
validation, allocation, answer), CPU time (time.process_time), best of --repeat. A cost that
is linear in the ids shows as a flat "us per id" column.
"""
from __future__ import annotations

import argparse
import time


def request(strategy: str, n_ids: int, n_queues: int) -> bytes:
    import orjson

    return orjson.dumps({"id": 1, "strategy": strategy, "all": True, "sort": True,
                         "mqs": [["T", f"broker-{q % 4}", q // 4] for q in range(n_queues)],
                         "cids": [f"10.0.{i // 250}.{i % 250}@{i}" for i in range(n_ids)]})


def measure(strategy: str, n_ids: int, n_queues: int, repeat: int) -> float:
    from rocketspec.commands.allocate import answer_line

    line = request(strategy, n_ids, n_queues)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        ans = answer_line(line, 1)
        best = min(best, time.process_time() - t0)
        assert ans["ok"] and len(ans["allocation"]) == n_ids, ans.get("error")
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.allocate_speed")
    ap.add_argument("--ids", default="1000,5000,20000")
    ap.add_argument("--queues", type=int, default=1000)
    ap.add_argument("--strategies", default="AVG,AVG_BY_CIRCLE,CONSISTENT_HASH")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    print(f"allocate, all: true, {args.queues} queues, CPU seconds per request (best of {args.repeat})")
    print(f"{'strategy':16} {'ids':>7} {'seconds':>9} {'us per id':>10}")
    for strategy in args.strategies.split(","):
        for n in map(int, args.ids.split(",")):
            s = measure(strategy, n, args.queues, args.repeat)
            print(f"{strategy:16} {n:7d} {s:9.3f} {s / n * 1e6:10.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
