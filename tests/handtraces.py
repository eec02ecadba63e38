"""Hand-written and committed traces for spec tests: read one, and replay events through the
spec without going through a file (one definition for the spec test modules)."""
from __future__ import annotations

import json
from pathlib import Path

from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_events

TRACES = Path(__file__).parent / "traces"
REAL = Path(__file__).parent / "fixtures" / "real"


def load(path: Path) -> list[dict]:
    """The events of a JSON Lines trace (blank lines skipped)."""
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def check(evs: list[dict], profile: str, renumber: bool = True):
    """Replay `evs` (line numbers from 1) under `profile`; `renumber` gives them seq 0, 1, ...
    as a test that edits a trace would otherwise have to."""
    if renumber:
        for i, e in enumerate(evs):
            e["seq"] = i
    return check_events(enumerate(evs, 1), get_profile(profile))
