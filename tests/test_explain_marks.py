"""`rocketspec explain --html/--png` draws every lane mark: each mark of the timeline on a real
trace the reference writes (crashes, broker restarts, pauses, lock expiry, DLQ, resets, send-back
failures, OFFSET_ILLEGAL), as an HTML page and a PNG; every plotly symbol is one plotly has; the
story is out before any picture, and a picture that fails costs only itself."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from rocketspec.cli import main
from rocketspec.traces.explain.explain import BARS, MARKS

# (scenario, profile): the smallest built-in runs that between them hold every mark and bar
TRACES = [
    ("real-reset", "rocketmq-4.9.8"),                   # a reset: queues dropped, offsets moved back
    ("bug-2724", "bug-2724-rocketmq-4.9.1"),             # retries and the DLQ
    ("bug-4215", "rocketmq-4.9.8"),                      # a pull answered OFFSET_ILLEGAL
    ("orderly-dlq", "rocketmq-4.9.8"),                   # orderly locks, suspensions, DLQ
    ("restart-retention", "rocketmq-4.9.8"),             # a broker restart and a crash, retention
    ("rebalance", "rocketmq-4.9.8"),                     # crashes and stops while queues move
    ("sendback-fallback", "rocketmq-4.9.8"),             # failed send-backs and pulls
    ("faults", "rocketmq-4.9.8"),                        # lost one-way calls, a pause, a restart, a crash
    ("orderly-pause-broker-lock", "rocketmq-4.9.8"),     # pause past lease and lock: expiries, refusals
]


def run(*args):
    r = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return r.exit_code, r.output


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """Each trace explained through the CLI with both pictures, and the marks and bars it has."""
    from rocketspec.traces.explain.explain import explain

    d = tmp_path_factory.mktemp("marks")
    out = {}
    for scen, prof in TRACES:
        t = d / f"{scen}.jsonl"
        code, _ = run("simulate", "--scenario", scen, "--seed", "1", "--profile", prof, "--out", str(t))
        assert code == 0
        ex = explain(str(t))
        html, png = d / f"{scen}.html", d / f"{scen}.png"
        code, text = run("explain", str(t), "--html", str(html), "--png", str(png))
        out[scen] = {"ex": ex, "code": code, "text": text, "html": html, "png": png,
                     "cats": {m.cat for m in ex.timeline.marks} | {b.cat for b in ex.timeline.bars}}
    return out


def _plotly_symbols() -> set:
    import plotly.graph_objects as go

    return {s for s in go.scatter.Marker()._get_validator("symbol").values if isinstance(s, str)}


def test_every_mark_symbol_is_one_plotly_has():
    symbols = _plotly_symbols()
    bad = {cat: sym for cat, (_n, sym, *_r) in MARKS.items() if sym not in symbols}
    assert bad == {}


@pytest.mark.parametrize("cat", sorted(MARKS) + sorted(BARS))
def test_each_lane_mark_is_drawn_in_html_and_png(cat, drawn):
    have = [s for s, x in drawn.items() if cat in x["cats"]]
    assert have, f"no built-in trace of this test draws {cat}"
    x = drawn[have[0]]
    assert x["code"] in (0, 1), x["text"][-800:]
    # the story came out, and both pictures
    assert ("HOLDS" in x["text"] or "VIOLATED" in x["text"]) and "STORY of" in x["text"]
    page = x["html"].read_text().replace("\\u002f", "/")   # plotly escapes "/" in its JSON
    name = (MARKS.get(cat) or BARS[cat])[0]
    assert f'"name":"{name}"' in page, f"{cat} ({name}) is not a trace of the HTML figure"
    data = x["png"].read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_crash_and_restart_traces_of_the_issue_draw(tmp_path):
    """The README's #4016 example and the demo's faults and rebalance crashed --html (exit 3,
    no story, no PNG, an empty HTML file)."""
    for scen, prof in [("bug-4016", "bug-4016-rocketmq-4.9.7"), ("faults", "rocketmq-4.9.8"),
                       ("rebalance", "rocketmq-4.9.8")]:
        t = tmp_path / f"{scen}.jsonl"
        assert run("simulate", "--scenario", scen, "--seed", "1", "--profile", prof, "--out", str(t))[0] == 0
        html, png = tmp_path / f"{scen}.html", tmp_path / f"{scen}.png"
        code, out = run("explain", str(t), "--html", str(html), "--png", str(png))
        assert code == (1 if scen.startswith("bug") else 0), out[-600:]
        assert "STORY of" in out and f"wrote html: {html}" in out and f"wrote png: {png}" in out
        assert html.stat().st_size > 1_000_000 and png.stat().st_size > 10_000


def test_story_first_and_a_failed_picture_costs_only_itself(tmp_path, monkeypatch):
    from rocketspec.traces.explain import explain_html

    t = tmp_path / "t.jsonl"
    assert run("simulate", "--scenario", "real-reset", "--seed", "1", "--out", str(t))[0] == 0

    def broken(ex, path):
        raise RuntimeError("plotly refused")

    monkeypatch.setattr(explain_html, "write_html", broken)
    html, png = tmp_path / "t.html", tmp_path / "t.png"
    r = CliRunner().invoke(main, ["explain", str(t), "--html", str(html), "--png", str(png)])
    assert r.exit_code == 3            # a bug in rocketspec is still reported as one
    assert r.output.index("STORY of") < r.output.index("could not write html")
    assert f"wrote png: {png}" in r.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not html.exists()


def test_an_html_that_fails_to_draw_leaves_no_empty_file(tmp_path, monkeypatch):
    from rocketspec.traces.explain import explain_html

    t = tmp_path / "t.jsonl"
    assert run("simulate", "--scenario", "real-reset", "--seed", "1", "--out", str(t))[0] == 0

    def broken(ex):
        raise ValueError("no such symbol")

    monkeypatch.setattr(explain_html, "figure", broken)
    html = tmp_path / "t.html"
    r = CliRunner().invoke(main, ["explain", str(t), "--html", str(html)])
    assert r.exit_code == 3 and "STORY of" in r.output
    assert not html.exists()
