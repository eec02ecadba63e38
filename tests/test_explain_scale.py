"""`rocketspec explain` on traces with many violations: its counts are `check`'s, it says
"showing N of M" whenever it lists fewer than there are, it tells the first violation of each
invariant in full, its picture's labels never cover one another, it shows progress only on a
terminal; and on a minimized trace the events that matter are marked and drawn."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from rocketspec.cli import main


def run(*args):
    r = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return r.exit_code, r.output


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("scale")
    out = {}
    for scen, prof in [("bug-2449", "bug-2449-rocketmq-4.8.0"), ("bug-4016", "bug-4016-rocketmq-4.9.7"),
                       ("bug-5481", "bug-5481-rocketmq-5.0.0"), ("faults", "rocketmq-4.9.8")]:
        t = d / f"{scen}.jsonl"
        assert run("simulate", "--scenario", scen, "--seed", "1", "--profile", prof, "--out", str(t))[0] == 0
        out[scen] = t
    return out


@pytest.mark.parametrize("scen", ["bug-2449", "bug-4016", "bug-5481", "faults"])
def test_counts_are_checks(scen, traces):
    code_c, out_c = run("check", "--json", str(traces[scen]))
    code_e, out_e = run("explain", "--json", str(traces[scen]))
    c, e = json.loads(out_c), json.loads(out_e)
    assert code_c == code_e
    assert e["errors"] == c["errors"] and e["counts"] == c["counts"]
    errs = {k: n for k, n in c["counts"].items() if not k.startswith("ANOM")}
    # one violation told in full per invariant, and the rest counted to the one
    assert sorted(v["invariant"] for v in e["violations"]) == sorted(k for k in errs if errs[k])
    for inv, more in e["more_violations"].items():
        assert more["count"] == errs[inv] - 1 and len(more["listed"]) <= more["count"]


def test_many_violations_say_showing_n_of_m(traces):
    code, out = run("explain", str(traces["bug-2449"]))
    assert code == 1
    _, cj = run("check", "--json", str(traces["bug-2449"]))
    counts = json.loads(cj)["counts"]
    errs = {k: n for k, n in counts.items() if not k.startswith("ANOM")}
    assert f"{sum(errs.values())} error(s) in the trace" in out
    assert "of 1000" not in out
    for inv, n in errs.items():
        assert f"the first of {n} {inv} violations, told in full" in out
        assert f"the next {inv} violations (showing 10 of {n - 1}):" in out
    assert f"VIOLATION {len(errs)} of {len(errs)}:" in out
    story = out.split("STORY of", 1)[1]
    assert "(showing " in story.splitlines()[0]
    assert len(out.splitlines()) < 400


def test_png_notes_count_as_check(traces):
    from rocketspec.traces.explain.explain import explain
    from rocketspec.traces.explain.explain_png import _notes

    ex = explain(str(traces["bug-2449"]))
    _, cj = run("check", "--json", str(traces["bug-2449"]))
    counts = json.loads(cj)["counts"]
    notes = "\n".join(_notes(ex))
    for inv, n in counts.items():
        if not inv.startswith("ANOM") and inv in [v.inv for v in ex.timeline.violations[:4]]:
            assert f"{inv} {n}" in notes and f"and {n - 1} more {inv} violation(s)" in notes


def _overlaps(boxes):
    bad = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if a.x0 < b.x1 - 0.5 and b.x0 < a.x1 - 0.5 and a.y0 < b.y1 - 0.5 and b.y0 < a.y1 - 0.5:
                bad.append((a, b))
    return bad


@pytest.mark.parametrize("scen", ["bug-2449", "faults"])
def test_png_labels_never_overlap(scen, traces):
    """The drawn texts' real extents, as matplotlib renders them."""
    import matplotlib.pyplot as plt

    from rocketspec.traces.explain.explain import explain
    from rocketspec.traces.explain.explain_png import figure

    fig = figure(explain(str(traces[scen])))
    try:
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        ax = fig.axes[0]
        texts = [t for t in ax.texts if t.get_gid() == "label"]
        assert len(texts) >= 10
        boxes = [t.get_window_extent(r) for t in texts]
        assert _overlaps(boxes) == []
        # and inside the plot, off the row names
        area = ax.get_window_extent(r)
        assert all(area.x0 - 1 <= b.x0 and b.x1 <= area.x1 + 1 for b in boxes)
    finally:
        plt.close(fig)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.floats(0, 100), st.integers(0, 8),
                          st.text("abcdef0123456789 ->", min_size=1, max_size=14)), max_size=120))
def test_layout_places_labels_apart(points):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rocketspec.traces.explain.explain_png import _box, layout_labels

    fig = plt.figure(figsize=(8, 4), dpi=100)
    ax = fig.add_axes([0.1, 0.1, 0.8, 0.8])
    ax.set_xlim(0, 100)
    ax.set_ylim(9, -1)
    try:
        pending = [(p, x, y, t, 7 + 3 * (1 - p), "mark") for p, x, y, t in points]
        placed, left = layout_labels(ax, pending)
        assert len(placed) + left == len(pending)
        boxes = []
        for x, y, text, pt, _s, (dx, dy) in placed:
            px, py = ax.transData.transform((x, y))
            boxes.append(_box(px, py, text, pt, dx, dy, fig.dpi))
        for i, a in enumerate(boxes):
            for b in boxes[i + 1:]:
                assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3])
    finally:
        plt.close(fig)


def test_html_labels_one_per_cluster(traces):
    from rocketspec.traces.explain.explain import explain
    from rocketspec.traces.explain.explain_html import _span, figure

    ex = explain(str(traces["bug-2449"]))
    fig = figure(ex)
    anns = [(a.x, a.y) for a in fig.layout.annotations]
    # the four invariants violated within 0.35 s on lane 0 share one label
    assert len(anns) == len(set(anns)) and len(anns) <= 4
    tl = ex.timeline
    gap = _span(tl) * 0.06
    by_row: dict = {}
    for tr in fig.data:
        if getattr(tr, "text", None) is not None and tr.mode == "markers+text":
            for x, y, t in zip(tr.x, tr.y, tr.text):
                if t:
                    by_row.setdefault(round(y), []).append(x)
    for xs in by_row.values():
        xs.sort()
        assert all(b - a >= gap - 1e-9 for a, b in zip(xs, xs[1:]))


def test_progress_only_on_a_terminal(traces, monkeypatch):
    r = CliRunner().invoke(main, ["explain", str(traces["bug-5481"])])
    assert "explain: replaying" not in r.output
    from rocketspec.commands import options

    monkeypatch.setattr(options, "_stderr_is_terminal", lambda: True)
    monkeypatch.delenv("CI", raising=False)
    r = CliRunner().invoke(main, ["explain", str(traces["bug-5481"])])
    assert r.exit_code == 1
    assert "explain: replaying" in r.stderr and "explain: telling the story" in r.stderr
    assert "STORY of" in r.stdout and "explain:" not in r.stdout


def test_minimized_trace_marks_and_draws_what_matters(traces, tmp_path):
    """#4016 minimized: the local store's flush is what the read should have returned; it is
    marked * in the story and drawn (a mark with a red ring) on the timeline."""
    from rocketspec.traces.explain.explain import explain

    m = tmp_path / "min.jsonl"
    code, _ = run("minimize", str(traces["bug-4016"]), "-o", str(m))
    assert code == 1
    code, out = run("explain", str(m))
    assert code == 1
    starred = [ln for ln in out.splitlines() if ln.startswith("  *")]
    assert any("writes offset" in ln and "to disk" in ln for ln in starred), out
    claimed = [ln for ln in out.splitlines() if "marked *" in ln]
    assert claimed and starred
    ex = explain(str(m))
    v = ex.timeline.violations[0]
    flush = [e for s, e in ex.by_seq.items() if e["kind"] == "offset_flushed"]
    assert flush and flush[0]["seq"] in v.matters
    assert any(mk.seq == flush[0]["seq"] and mk.cat == "flushed" for mk in ex.timeline.marks)


def test_no_star_promised_when_only_the_violation_matters(tmp_path):
    """A violation whose only event that matters is itself does not send the reader to look for *."""
    from handtraces import TRACES

    code, out = run("explain", str(TRACES / "wrong_dlq_consume.jsonl"))
    assert code == 1
    stars = [ln for ln in out.splitlines() if ln.startswith("  *")]
    for ln in out.splitlines():
        if ln.strip().startswith("events that matter") and "marked *" in ln:
            assert stars
