"""The recorder's view of the broker's offset table under ConsumerOffsetManager's first-commit race.

commitOffset (4.9.8 and 5.x) reads a key's map and, when there is none, puts a new map under the key.
When two threads make a group's first commits at once, a third thread can hold the map the second
replaced and put into it: that commit never reaches the table (random real run 13062, 5.3.3, whose
GUARD it caused). The view must report what the table holds, not every put.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [ROOT / "traces/recorder/src/rocketspec/recorder/ObservedOffsetTable.java",
           ROOT / "tests/java/rocketspec/recorder/OffsetTableRace.java"]


def _run_race(tmp_path: Path) -> list[str]:
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.fail("javac and java (JDK 17) are needed: the recorder is Java")
    out = tmp_path / "classes"
    subprocess.run(["javac", "-d", str(out), *map(str, SOURCES)], check=True, capture_output=True, text=True)
    r = subprocess.run(["java", "-cp", str(out), "rocketspec.recorder.OffsetTableRace"],
                       check=True, capture_output=True, text=True)
    return r.stdout.splitlines()


def test_a_put_into_a_replaced_map_is_not_a_commit(tmp_path):
    lines = _run_race(tmp_path)
    assert lines == [
        "committed TopicR@GID_r0 3 21 null",
        "erased TopicR@GID_r0 3 21",          # the second map replaced the first: queue 3 is gone
        "committed TopicR@GID_r0 0 19 null",
        # the puts of queue 2 and 1 into the replaced map are not reported: the table never held them
        "committed TopicR@GID_r0 2 29 null",  # so queue 2's next commit finds no previous value
        "table {0=19, 2=29}",
    ]
