"""How long `rocketspec explain` takes: replay and timeline, narrated text, HTML and PNG.

    python -m bench.explain_speed [--messages N ...]

The reference simulates the `basic` scenario scaled to N messages (default 2,000, 20,000 and
100,000: roughly 2*10^4, 2*10^5 and 10^6 events), written to a temporary JSON Lines file; each
step is timed in CPU seconds of this process (best of one run: the pictures dominate and are
steady). The HTML and PNG are drawn for one lane (`--key queue=0`) and for every lane.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time


def _cpu(f):
    t0 = time.process_time()
    r = f()
    return r, time.process_time() - t0


def main(argv=None) -> int:
    from bench.check_speed import make_trace
    from rocketspec.traces.explain import explain_events, load
    from rocketspec.traces.explain_html import page
    from rocketspec.traces.explain_png import write_png

    ap = argparse.ArgumentParser(prog="python -m bench.explain_speed")
    ap.add_argument("--messages", type=int, nargs="*", default=[2000, 20000, 100000])
    args = ap.parse_args(argv)
    print(f"{'events':>9} {'load+replay':>12} {'timeline':>9} {'text':>6} {'html 1 lane':>12} "
          f"{'png 1 lane':>11} {'html all':>9} {'png all':>8}   (CPU seconds)")
    with tempfile.TemporaryDirectory() as d:
        for n in args.messages:
            path = os.path.join(d, f"basic-{n}.jsonl")
            make_trace(path, n)
            (evs, rep), t_load = _cpu(lambda: load(path))
            one, t_tl = _cpu(lambda: explain_events(evs, rep, {"queue": 0}))
            _, t_text = _cpu(one.text)
            html_len, t_html = _cpu(lambda: len(page(one)))
            _, t_png = _cpu(lambda: write_png(one, os.path.join(d, "one.png")))
            every = explain_events(evs, rep)
            _, t_html_all = _cpu(lambda: len(page(every)))
            _, t_png_all = _cpu(lambda: write_png(every, os.path.join(d, "all.png")))
            print(f"{len(evs):>9} {t_load:>12.2f} {t_tl:>9.2f} {t_text:>6.2f} {t_html:>12.2f} {t_png:>11.2f} "
                  f"{t_html_all:>9.2f} {t_png_all:>8.2f}", flush=True)
            del evs, rep, one, every
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
