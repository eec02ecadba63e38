"""The explain HTML in a real headless browser (Debian's chromium over the DevTools pipe,
tests/headless.py): it renders the timeline, shows the violation, logs no console error and
loads nothing from the network. `make test` installs chromium (Makefile: browser); without it
these tests skip, and fail under ROCKETSPEC_REQUIRE_REAL=1 (CI)."""
from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from handtraces import TRACES
from headless import chromium, open_page
from rocketspec.cli import main

PROBE = """JSON.stringify({
  verdict: document.getElementById('verdict').dataset.verdict,
  violations: Array.from(document.querySelectorAll('.violation')).map(d => d.dataset.invariant),
  svgs: document.querySelectorAll('#timeline .main-svg').length,
  traces: (document.getElementById('timeline').data || []).length,
  bars: document.querySelectorAll('#timeline .barlayer .point').length,
  markers: document.querySelectorAll('#timeline .scatterlayer .point').length,
  ticks: Array.from(document.querySelectorAll('#timeline .ytick text')).map(t => t.textContent),
  annotations: Array.from(document.querySelectorAll('#timeline .annotation-text')).map(t => t.textContent),
  title: (document.querySelector('#timeline .gtitle') || {}).textContent || '',
  width: document.getElementById('timeline').getBoundingClientRect().width
})"""
READY = "document.querySelector('#timeline .main-svg') && document.querySelector('#timeline .barlayer, " \
        "#timeline .scatterlayer')"


@pytest.fixture(scope="module")
def browser():
    if chromium() is None:
        msg = "chromium is not installed (make test installs it: apt-get install chromium)"
        if os.environ.get("ROCKETSPEC_REQUIRE_REAL") == "1":
            pytest.fail(f"ROCKETSPEC_REQUIRE_REAL=1 but {msg}")
        pytest.skip(msg)
    return open_page


def _page(tmp_path, trace, name="t.html"):
    out = tmp_path / name
    r = CliRunner().invoke(main, ["explain", "--html", str(out), str(trace)], catch_exceptions=False)
    assert r.exit_code in (0, 1), r.output
    return out


def _offline(requests):
    return [u for u in requests if not (u.startswith("file://") or u.startswith("data:") or u.startswith("about:"))]


def test_failing_trace_renders_and_shows_the_violation(browser, tmp_path):
    import json

    res = browser(_page(tmp_path, TRACES / "wrong_two_lock_holders.jsonl"), PROBE, READY)
    assert res.errors() == []
    assert _offline(res.requests) == []
    v = json.loads(res.value)
    assert v["verdict"] == "violated"
    assert v["violations"] == ["INV-LOCK-1"]
    assert v["svgs"] >= 1 and v["traces"] >= 3 and v["bars"] >= 2 and v["markers"] >= 2
    assert "INV-LOCK-1" in v["annotations"] and "INV-LOCK-1" in v["title"]
    assert "c1" in v["ticks"] and "c2" in v["ticks"]
    assert v["width"] > 300


def test_clean_trace_renders_without_violation(browser, tmp_path):
    import json

    res = browser(_page(tmp_path, TRACES / "valid_orderly.jsonl"), PROBE, READY)
    assert res.errors() == []
    assert _offline(res.requests) == []
    v = json.loads(res.value)
    assert v["verdict"] == "holds" and v["violations"] == [] and v["annotations"] == []
    assert v["bars"] >= 3 and "HOLDS" in v["title"]


def test_a_simulated_orderly_pause_renders(browser, tmp_path):
    """A reference trace with thousands of events: c2 frozen while c3 takes its queue over."""
    import json

    t = tmp_path / "p.jsonl"
    r = CliRunner().invoke(main, ["simulate", "--scenario", "orderly-pause-broker-lock", "--seed", "1",
                                  "--profile", "rocketmq-4.9.8", "--out", str(t)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    out = tmp_path / "p.html"
    r = CliRunner().invoke(main, ["explain", "--key", "queue=3,topic=TopicOrder", "--html", str(out), str(t)],
                           catch_exceptions=False)
    assert r.exit_code == 1
    res = browser(out, PROBE, READY)
    assert res.errors() == []
    v = json.loads(res.value)
    assert v["violations"][:2] == ["INV-ORDER-1", "INV-ORDER-3"]
    assert {"c2", "c3"} <= set(v["ticks"]) and v["bars"] > 100


def test_the_harness_sees_console_errors(browser, tmp_path):
    """The check can fail: a page that logs an error and throws is reported."""
    p = tmp_path / "bad.html"
    p.write_text("<html><body><script>console.error('boom'); setTimeout(() => missing(), 0);</script></body></html>")
    res = browser(p, "1")
    assert any("boom" in e for e in res.errors())
    assert any("missing is not defined" in e for e in res.errors())
