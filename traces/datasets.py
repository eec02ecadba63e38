"""Datasets of runs: what `rocketspec simulate --events N --out DIR` writes.

One run is one trace (its own trace_started), so large data is many runs, each in a Hive-style
partition `DIR/run=<id>/` (reference/bulk.py). A path is a dataset of runs when it is a directory
whose trace files all sit in `run=<id>` subdirectories: each run is then replayed as its own
trace (`rocketspec replay DIR`), not as parts of one. Anything else under such a directory is bad
input, named, rather than silently left out.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import UserError

PARTITION = "run"
_TRACE_SUFFIXES = (".parquet", ".jsonl", ".jsonl.gz", ".jsonl.zst", ".ndjson")


def _run_key(name: str):
    v = name.split("=", 1)[1]
    return (0, int(v), v) if v.lstrip("-").isdigit() else (1, 0, v)


def dataset_runs(path) -> list[tuple[str, str]] | None:
    """[(run id, run directory)] in run order when `path` is a dataset of runs, else None."""
    p = Path(str(path))
    if not p.is_dir():
        return None
    runs = sorted((d for d in p.iterdir() if d.is_dir() and d.name.startswith(PARTITION + "=")),
                  key=lambda d: _run_key(d.name))
    if not runs:
        return None
    for f in p.rglob("*"):
        rel = f.relative_to(p).parts
        if any(part.startswith((".", "_")) for part in rel) or not f.is_file():
            continue
        if not rel[0].startswith(PARTITION + "=") and f.name.endswith(_TRACE_SUFFIXES):
            raise UserError(f"a trace file beside the {PARTITION}=<id> partitions of a dataset of runs; expected "
                            f"every trace file inside one {PARTITION}=<id> directory", file=str(f))
    return [(d.name.split("=", 1)[1], str(d)) for d in runs]


def run_label(run_id: str) -> str:
    return f"{PARTITION}={run_id}"


__all__ = ["dataset_runs", "run_label", "PARTITION"]
