"""Narrated scripts in tests/testdata: each is a lesson and a regression test.

Run `pytest tests/test_scripts.py --rewrite` after an intended behaviour change, then read
the diff of tests/testdata: that diff is the review."""
from pathlib import Path

import pytest

from rocketspec.conformance.scripts import run_script

DATA = Path(__file__).parent / "testdata"
FILES = sorted(DATA.glob("*.txt"))


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_script(path, request):
    text = path.read_text()
    actual = run_script(text)
    if request.config.getoption("--rewrite"):
        path.write_text(actual)
        return
    assert actual == text, f"{path.name} differs; run pytest {__file__} --rewrite and review the diff"


def test_scripts_exist():
    assert len(FILES) >= 4
