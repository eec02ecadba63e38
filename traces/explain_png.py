"""The explain timeline as a PNG picture, drawn by matplotlib (Agg backend: offline, no display).
Same lanes, rows, bars and marks as the HTML page (traces/explain.py's style table); the
violations' invariants and statements are written under the plot."""
from __future__ import annotations

import textwrap

from .explain import BARS, FIXED_MARK_COLORS, MARKS, VIOLATION_COLOR, Explanation
from .narrate import secs

S = 1000.0
MAX_LABELS = 60       # marks with a label (lock holder, commit value) written out when this few


def figure(ex: Explanation):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.lines import Line2D

    tl = ex.timeline
    nrows = len(tl.rows)
    notes = _notes(ex)
    note_lines = sum(n.count("\n") + 1 for n in notes)
    plot_h = 1.2 + 0.55 * nrows + 0.2 * len(tl.lanes)
    fig_h = plot_h + 1.6 + 0.17 * note_lines
    fig = plt.figure(figsize=(15, fig_h), dpi=100)
    top = 1 - 0.55 / fig_h
    bottom = (1.4 + 0.17 * note_lines) / fig_h
    ax = fig.add_axes([0.17, bottom, 0.65, top - bottom])
    lo, hi = (tl.s_min, tl.s_max + 1) if tl.steps else (tl.t_min / S, max(tl.t_max, tl.t_min + 1) / S)
    span = hi - lo
    for j, ln in enumerate(tl.lanes):
        ys = [r.y for r in tl.rows if r.lane == ln]
        ax.axhspan(min(ys) - 0.5, max(ys) + 0.5, color="#f0f0f0" if j % 2 == 0 else "#ffffff", zorder=0)
    handles = []
    for z, (cat, (name, dy, height, opacity)) in enumerate(BARS.items()):
        bars = [b for b in tl.bars if b.cat == cat]
        if not bars:
            continue
        grey = cat in ("pause", "lock_expired")
        colors = ["#888888" if grey else ex.client_color(b.client) for b in bars]
        # one collection per row (broken_barh), not one artist per bar: 10^5 bars draw in seconds
        by_row: dict = {}
        for b in bars:
            by_row.setdefault(b.row, []).append(b)
        for row, bs in by_row.items():
            xs = [tl.bar_x(b) for b in bs]
            ax.broken_barh([(x0, max(x1 - x0, span / 2000)) for x0, x1 in xs],
                           (tl.rows[row].y + dy - height / 2, height),
                           facecolors=["#888888" if grey else ex.client_color(b.client) for b in bs], alpha=opacity,
                           hatch="//" if grey else None,
                           edgecolors=["#222222" if grey else VIOLATION_COLOR for b in bs],
                           linewidths=[0.6 if grey or b.open else 0 for b in bs], zorder=2 + z)
        handles.append(Patch(facecolor="#888888" if grey else "#1f77b4", alpha=opacity, hatch="//" if grey else None,
                             label=name))
    labels = [m for m in tl.marks if m.label]
    write_labels = len(labels) <= MAX_LABELS
    for cat, (name, _sym, marker, dy, size) in MARKS.items():
        marks = [m for m in tl.marks if m.cat == cat]
        if not marks:
            continue
        fixed = FIXED_MARK_COLORS.get(cat)
        colors = [fixed or ex.client_color(m.client) for m in marks]
        filled = not name.endswith("nothing new") and cat not in ("persist_lost", "drop")
        ax.scatter([tl.x(m.t, m.seq) for m in marks], [tl.rows[m.row].y + dy for m in marks], s=size * 4, marker=marker,
                   c=colors if filled or marker in "|_x+" else "none",
                   edgecolors=None if marker in "|_x+" else colors, linewidths=1, zorder=20)
        handles.append(Line2D([], [], marker=marker, linestyle="", color=fixed or "#1f77b4",
                              markerfacecolor=(fixed or "#1f77b4") if filled else "none", label=name))
        if write_labels:
            for m in marks:
                if m.label:
                    ax.annotate(m.label, (tl.x(m.t, m.seq), tl.rows[m.row].y + dy), xytext=(0, 6), textcoords="offset points",
                                ha="center", fontsize=7, color="#333333", zorder=25)
    # the violations and the events that matter
    from .explain_html import _event_row

    for v in tl.violations:
        for s in v.matters:
            ev = tl.by_seq.get(s)
            r = _event_row(tl, ev)
            if r is not None:
                ax.scatter([tl.x(ev["ts"], ev["seq"])], [tl.rows[r].y], s=220, facecolors="none", edgecolors=VIOLATION_COLOR,
                           linewidths=1.4, zorder=30)
    labelled = set()
    for i, v in enumerate(tl.violations):
        if v.lane is None or v.ts is None or v.lane not in tl.lanes:
            continue
        ys = [r.y for r in tl.rows if r.lane == v.lane]
        vx = tl.x(v.ts, v.seq)
        ax.plot([vx, vx], [min(ys) - 0.5, max(ys) + 0.5], color=VIOLATION_COLOR, linestyle=":",
                linewidth=2, zorder=31)
        if v.row is not None:
            y = tl.rows[v.row].y
            ax.scatter([vx], [y], s=420, marker="*", color=VIOLATION_COLOR, edgecolors="black", zorder=32)
            if (v.inv, v.lane) in labelled:
                continue
            labelled.add((v.inv, v.lane))
            ax.annotate(v.inv, (vx, y), xytext=(14, -16 - 12 * (len(labelled) % 3)), textcoords="offset points",
                        color=VIOLATION_COLOR, fontsize=10, fontweight="bold", zorder=33,
                        bbox=dict(boxstyle="round,pad=0.2", fc="white", ec=VIOLATION_COLOR, alpha=0.9),
                        arrowprops=dict(arrowstyle="-", color=VIOLATION_COLOR))
    if tl.violations:
        handles.append(Line2D([], [], marker="*", linestyle="", color=VIOLATION_COLOR, markersize=14,
                              markeredgecolor="black", label="the violation"))
        handles.append(Line2D([], [], marker="o", linestyle="", markerfacecolor="none", markersize=11,
                              markeredgecolor=VIOLATION_COLOR, label="an event that matters"))
    for c in tl.clients:
        handles.append(Patch(facecolor=ex.client_color(c), label=f"client {c}"))
    ax.set_yticks([r.y for r in tl.rows])
    ax.set_yticklabels([r.label for r in tl.rows], fontsize=8)
    ax.set_ylim(max(r.y for r in tl.rows) + 0.7 if tl.rows else 1, -0.7)
    pad = span * 0.02
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_xlabel(tl.x_label())
    ax.grid(axis="x", color="#dddddd", zorder=1)
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    verdict = "HOLDS" if tl.ok else "VIOLATED: " + ", ".join(dict.fromkeys(v.inv for v in tl.violations))
    fig.suptitle(f"{tl.path} - {verdict}   (profile {tl.profile}, {tl.n_events} events, "
                 f"{len(tl.lanes)} of {tl.all_lanes} lanes)", x=0.02, ha="left", fontsize=12,
                 color=VIOLATION_COLOR if not tl.ok else "#2ca02c", fontweight="bold")
    y = bottom - 0.75 / fig_h
    for n in notes:
        fig.text(0.02, y, n, fontsize=9, va="top", ha="left", family="DejaVu Sans",
                 color=VIOLATION_COLOR if n.startswith("INV") or n.startswith("GUARD") else "#222222")
        y -= (n.count("\n") + 1.4) * 0.17 / fig_h
    return fig


def _notes(ex: Explanation) -> list:
    """The text under the plot: each violation's invariant, statement and message (wrapped)."""
    tl = ex.timeline
    out = []
    w = 170
    by_inv: dict = {}
    for v in tl.violations:
        by_inv.setdefault(v.inv, []).append(v)
    for inv_id, vs in list(by_inv.items())[:4]:
        v = vs[0]
        head = f"{v.inv} {v.title}" + (f"  (guarantee lost: {v.guarantee})" if v.guarantee else "")
        out.append(head)
        out.append(textwrap.fill("The rule: " + v.statement, w))
        for x in vs[:3]:
            out.append(textwrap.fill(f"What broke it (seq {x.seq} at {secs(x.ts) if x.ts is not None else '?'}): "
                                     f"{x.message}", w))
        if len(vs) > 3:
            out.append(f"... and {len(vs) - 3} more {inv_id} violations")
    if len(by_inv) > 4:
        out.append(f"... and {len(by_inv) - 4} more invariants violated (rocketspec explain prints them all)")
    if not tl.violations:
        out.append("The trace holds: every invariant of the spec is kept.")
        out.extend(textwrap.fill(s, w) for s in ex.lanes_summary[:6])
    return out


def write_png(ex: Explanation, path) -> None:
    import matplotlib.pyplot as plt

    fig = figure(ex)
    try:
        # metadata without the matplotlib version and date: the same trace gives the same bytes
        fig.savefig(path, format="png", metadata={"Software": None})
    finally:
        plt.close(fig)
