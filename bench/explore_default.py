"""Bare `rocketspec explore`: wall and CPU time of the command as a user runs it (issue 14:
it must answer in under a minute on the project's machine).

    python -m bench.explore_default [--args "--scope small --workers 2"]

Runs the installed command in a child process (`--quiet --json`, counterexamples to a temporary
directory) and prints its wall time, its CPU time and peak memory (from the child's rusage).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.explore_default")
    ap.add_argument("--args", default="", help="extra arguments for rocketspec explore")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-c", "from rocketspec.cli import main; main()", "explore", "--quiet", "--json",
               "--out-dir", out, *shlex.split(args.args)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, PYTHONWARNINGS="ignore"))
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    try:
        d = json.loads(r.stdout)
        what = f"scope {d['scope']}: {d['states_distinct']:,} distinct states, verdict {d['verdict']}"
    except (ValueError, KeyError):
        what = f"exit {r.returncode}: {r.stderr.strip()[:200]}"
    print(f"rocketspec explore {args.args}".rstrip() + f": {wall:.1f} s wall, {cpu:.1f} s CPU, "
          f"peak {after.ru_maxrss / 1024:.0f} MB, exit {r.returncode}; {what}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
