"""How long `rocketspec explain` takes and how much memory it needs, against `check`.

    python -m bench.explain_speed [--messages N ...] [--no-bug]

Each figure is one run of the command line in a child process (wall seconds and peak resident
memory of that child, from wait4): `check`, `explain` (text), `explain --png` and `explain
--html`, on
  - the bug-2449 scenario under its bug profile (28,767 events, about 6,000 violations), and
  - the `basic` scenario scaled to N messages (default 10,000: about 10^5 events; 100,000 gives
    about 10^6 events, a trace of several hundred MB).
The ratios to `check` are printed beside each figure. The issue's targets: text within about
3x check's time, a PNG of 10^5 events within about 10 s, memory of the order of check's.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

CLI = [sys.executable, "-c", "import sys; from rocketspec.cli import main; sys.argv[0] = 'rocketspec'; main()"]


def _run(args) -> tuple[float, float, int]:
    """(wall seconds, peak RSS in MB, exit code) of one command line."""
    t0 = time.perf_counter()
    p = subprocess.Popen(CLI + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - t0, ru.ru_maxrss / 1024.0, p.returncode


def _row(name, events, path, d):
    c_t, c_m, c_rc = _run(["check", path])
    out = []
    for label, extra in (("text", []), ("png", ["--png", os.path.join(d, "x.png")]),
                         ("html", ["--html", os.path.join(d, "x.html")])):
        t, m, rc = _run(["explain", path] + extra)
        if rc not in (0, 1) or rc != c_rc:
            raise SystemExit(f"explain {label} on {name} exited {rc} (check: {c_rc})")
        out.append((label, t, m))
    print(f"{name:<22} {events:>9} | check {c_t:6.2f} s {c_m:7.0f} MB | "
          + " | ".join(f"{lb} {t:6.2f} s ({t / c_t:4.1f}x) {m:6.0f} MB ({m / c_m:4.1f}x)" for lb, t, m in out),
          flush=True)


def _events(path) -> int:
    with open(path, "rb") as fh:
        return sum(1 for _ in fh)


def main(argv=None) -> int:
    from bench.check_speed import make_trace

    ap = argparse.ArgumentParser(prog="python -m bench.explain_speed")
    ap.add_argument("--messages", type=int, nargs="*", default=[10000])
    ap.add_argument("--no-bug", action="store_true", help="skip the bug-2449 trace")
    args = ap.parse_args(argv)
    print("one run each, wall seconds and peak RSS of the child process; ratios to check")
    with tempfile.TemporaryDirectory() as d:
        if not args.no_bug:
            path = os.path.join(d, "bug-2449.jsonl")
            subprocess.run(CLI + ["simulate", "--scenario", "bug-2449", "--profile", "bug-2449-rocketmq-4.8.0",
                                  "--seed", "1", "--out", path], check=True, stdout=subprocess.DEVNULL)
            _row("bug-2449 (4.8.0)", _events(path), path, d)
        for n in args.messages:
            path = os.path.join(d, f"basic-{n}.jsonl")
            make_trace(path, n)
            _row(f"basic x{n} messages", _events(path), path, d)
            os.remove(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
