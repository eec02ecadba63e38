"""History minimization (`rocketspec minimize --format ...`): how short, how fast.

    python -m bench.minimize_histories

For each known-bug profile whose scenario breaks a guarantee (spec/history/guarantees.py
KNOWN_BUG_SYMPTOMS), the reference runs the bug's scenario and its history is written in each
source's format (the trace itself, RocketMQ message-trace bodies, an OpenChaos history); every
one that `rocketspec history` rejects is minimized. Also the real recording
tests/fixtures/history/real-retry-dlq.msgtrace, judged with maxReconsumeTimes declared 1 (the run
used 2), so that it breaks H-RETRY-1. Printed: the guarantee kept, records before and after,
the share, the checks made and CPU seconds.
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _cases(tmp: Path):
    from rocketspec.reference.runner import run_to_list
    from rocketspec.reference.scenario import builtin_names, load_scenario
    from rocketspec.traces.history import msgtrace, openchaos
    from rocketspec.spec.history.guarantees import KNOWN_BUG_SYMPTOMS
    from rocketspec.rocketmq.profiles import PROFILES
    from rocketspec.traces.io import write_trace

    for pname, (gid, _) in sorted(KNOWN_BUG_SYMPTOMS.items()):
        if gid is None:
            continue
        num = PROFILES[pname].known_bug.lstrip("#")
        named = [n for n in builtin_names() if num in n]
        scen = named[0] if named else "orderly-dlq"
        evs = run_to_list(load_scenario(scen), 1, pname)
        base = tmp / num
        write_trace(f"{base}.jsonl", evs)
        Path(f"{base}.msgtrace").write_text("\n".join(msgtrace.encode_trace(evs)) + "\n")
        Path(f"{base}.history").write_text("\n".join(openchaos.encode_trace(evs)) + "\n")
        groups = {}
        for ev in evs:
            if ev["kind"] == "client_started":
                groups[ev["group"]] = {"consume_mode": ev["consume_mode"], "message_model": ev["message_model"],
                                       "max_reconsume_times": (ev.get("config") or {}).get("max_reconsume_times", -1)}
        yield f"#{num}", f"{base}.jsonl", "trace", None
        yield f"#{num}", f"{base}.msgtrace", "msgtrace", groups
        yield f"#{num}", f"{base}.history", "openchaos", None
    strict = {"GID_real_retry": {"consume_mode": "CONCURRENTLY", "message_model": "CLUSTERING",
                                 "max_reconsume_times": 1}}
    yield "real", str(ROOT / "tests" / "fixtures" / "history" / "real-retry-dlq.msgtrace"), "msgtrace", strict


def main(argv=None):
    from rocketspec.spec.history import check_history, load_history
    from rocketspec.traces.minimize.minimize_history import minimize_history

    print(f"{'case':<7} {'format':<10} {'guarantee':<12} {'records':>8} {'min':>4} {'share':>7} {'checks':>7} "
          f"{'cpu s':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, path, fmt, groups in _cases(Path(tmp)):
            if check_history(load_history(path, fmt, None, groups)).ok:
                print(f"{name:<7} {fmt:<10} {'-':<12} (holds in this source: nothing to minimize)")
                continue
            t0 = time.process_time()
            res = minimize_history(path, fmt, groups=groups)
            dt = time.process_time() - t0
            print(f"{name:<7} {fmt:<10} {res.guarantee:<12} {res.original_records:>8} {len(res.records):>4} "
                  f"{100 * len(res.records) / res.original_records:>6.2f}% {res.tests:>7} {dt:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
