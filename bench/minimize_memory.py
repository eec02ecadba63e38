"""What minimize's memory costs per byte of trace, against check's: the figure behind
traces.minimize.minimize.MemoryBound (minimize holds the whole trace; check streams it).

    python -m bench.minimize_memory [--scenario bug-2449] [--profile bug-2449-rocketmq-4.8.0]

Simulates the scenario's trace, then in fresh processes measures the peak resident memory of
(a) reading it as minimize does (traces.minimize.minimize.validate_events) and (b) `rocketspec check`,
each less the memory of a process that imported the same modules. Prints both, per MB of JSON
Lines, and the ratio.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

PROBE = r"""
import resource, sys
from rocketspec.traces.io import read_events
from rocketspec.traces.minimize.minimize import validate_events
from rocketspec.spec.replay import check_trace
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if sys.argv[1] == "minimize":
    events = validate_events(read_events(sys.argv[2], validate=False), sys.argv[2], numbered=True)
else:
    check_trace(sys.argv[2], None)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024)
"""


def peak(kind: str, path: str) -> int:
    out = subprocess.run([sys.executable, "-c", PROBE, kind, path], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="bug-2449")
    ap.add_argument("--profile", default="bug-2449-rocketmq-4.8.0")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.jsonl")
        subprocess.run([os.path.join(os.path.dirname(sys.executable), "rocketspec"), "simulate", "--scenario", a.scenario, "--profile",
                        a.profile, "--out", path, "--quiet"], check=True)
        size = os.path.getsize(path)
        m, c = peak("minimize", path), peak("check", path)
    mb = size / 2**20
    print(f"trace: {a.scenario} under {a.profile}, {mb:.1f} MB of JSON Lines")
    print(f"minimize's reading: {m / 2**20:.0f} MB peak over the imports = {m / size:.1f} bytes per byte of trace")
    print(f"check:              {c / 2**20:.0f} MB peak over the imports = {c / size:.1f} bytes per byte of trace")
    print(f"ratio minimize/check: {m / max(c, 1):.1f}x; a 1 GB trace: minimize about {m / size:.1f} GB to read")
    return 0


if __name__ == "__main__":
    sys.exit(main())
