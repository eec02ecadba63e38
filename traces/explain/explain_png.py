"""The explain timeline as a PNG picture, drawn by matplotlib (Agg backend: offline, no display).
Same lanes, rows, bars and marks as the HTML page (traces/explain/explain.py's style table); the
violations' invariants and statements are written under the plot."""
from __future__ import annotations

import textwrap

from .explain import BARS, FIXED_MARK_COLORS, MARKS, VIOLATION_COLOR, Explanation
from .narrate import secs

S = 1000.0
MAX_LABELS = 200      # labels written at most; the rest are counted under the plot (hover them in the HTML)
LABEL_PT = 7          # mark labels' font size (points)
INV_PT = 10           # violation labels' font size


def figure(ex: Explanation):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.lines import Line2D

    tl = ex.timeline
    nrows = len(tl.rows)
    notes = _notes(ex)
    note_lines = sum(n.count("\n") + 1 for n in notes) + 1      # + 1: the line of labels left out
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
    pending = []          # (priority, x, y, text, points, style): laid out once the axes' limits are set
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
        for m in marks:
            if m.label:
                pending.append((1, tl.x(m.t, m.seq), tl.rows[m.row].y + dy, m.label, LABEL_PT, "mark"))
    # the violations and the events that matter
    from .explain_html import _event_row

    mark_y = {m.seq: tl.rows[m.row].y + MARKS[m.cat][3] for m in tl.marks}     # a ring goes round its mark
    for v in tl.violations:
        for s in v.matters:
            ev = tl.by_seq.get(s)
            r = _event_row(tl, ev)
            if r is not None:
                ax.scatter([tl.x(ev["ts"], ev["seq"])], [mark_y.get(s, tl.rows[r].y)], s=220, facecolors="none", edgecolors=VIOLATION_COLOR,
                           linewidths=1.4, zorder=30)
    stars = {}            # (lane, x) -> the invariants violated there: one label for them all
    for i, v in enumerate(tl.listed()):
        if v.lane is None or v.ts is None or v.lane not in tl.lanes:
            continue
        ys = [r.y for r in tl.rows if r.lane == v.lane]
        vx = tl.x(v.ts, v.seq)
        ax.plot([vx, vx], [min(ys) - 0.5, max(ys) + 0.5], color=VIOLATION_COLOR, linestyle=":",
                linewidth=2, zorder=31)
        if v.row is not None:
            y = tl.rows[v.row].y
            ax.scatter([vx], [y], s=420, marker="*", color=VIOLATION_COLOR, edgecolors="black", zorder=32)
            stars.setdefault(v.lane, []).append((vx, y, v.inv))
    for lane_stars in stars.values():
        # the stars of a lane close in time share one label naming their invariants
        group: list = []
        for vx, y, inv in sorted(lane_stars) + [(None, None, None)]:
            if group and (vx is None or vx - group[0][0] > span * 0.04):
                invs = list(dict.fromkeys(g[2] for g in group))
                pending.append((0, group[0][0], group[0][1], ", ".join(invs), INV_PT, "violation"))
                group = []
            if vx is not None:
                group.append((vx, y, inv))
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
    placed, left_out = layout_labels(ax, pending)
    for x, y, text, pt, style, (dx, dy) in placed:
        if style == "violation":
            ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", ha="left", va="center",
                        color=VIOLATION_COLOR, fontsize=pt, fontweight="bold", zorder=33, gid="label",
                        bbox=dict(boxstyle="square,pad=0", fc="white", ec="none", alpha=0.9),
                        arrowprops=dict(arrowstyle="-", color=VIOLATION_COLOR))
        else:
            ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", ha="left", va="center",
                        fontsize=pt, color="#333333", zorder=25, gid="label")
    if left_out:
        notes.insert(0, f"{left_out} label(s) of marks not written where they would cover others "
                        "(the HTML page shows each on hover)")
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
    """The text under the plot: each violated invariant's statement and its first violation
    (wrapped), with the number of its violations as `check` counts them."""
    tl = ex.timeline
    out = []
    w = 170
    counts = tl.error_counts()
    if tl.violations:
        out.append(f"{tl.errors} error(s), as `rocketspec check` counts them: "
                   + ", ".join(f"{v.inv} {counts.get(v.inv, 0)}" for v in tl.violations))
    for v in tl.violations[:4]:
        head = f"{v.inv} {v.title}" + (f"  (guarantee lost: {v.guarantee})" if v.guarantee else "")
        out.append(head)
        out.append(textwrap.fill("The rule: " + v.statement, w))
        out.append(textwrap.fill(f"What broke it first (seq {v.seq} at {secs(v.ts) if v.ts is not None else '?'}): "
                                 f"{v.message}", w))
        n = counts.get(v.inv, 1) - 1
        if n > 0:
            out.append(f"... and {n} more {v.inv} violation(s) (rocketspec explain lists them)")
    if len(tl.violations) > 4:
        out.append(f"... and {len(tl.violations) - 4} more invariants violated (rocketspec explain tells them all)")
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


def _box(px, py, text, pt, dx, dy, dpi):
    """The box (x0, y0, x1, y1, in pixels) a label takes, written from (px, py) shifted by (dx,
    dy) points: a generous estimate of DejaVu Sans (bold), so that estimated boxes that do not
    overlap are drawn as texts that do not either."""
    scale = dpi / 72.0
    w = (0.68 * pt * len(text) + 2) * scale
    h = 1.45 * pt * scale
    x0 = px + dx * scale
    yc = py + dy * scale
    return (x0, yc - h / 2, x0 + w, yc + h / 2)


# where a label may go, in points from its point: right of it, then above, below, further out
SLOTS = [(6, 0), (6, 9), (6, -9), (6, 18), (6, -18), (-60, 9), (-60, -9), (6, 27), (6, -27)]


def layout_labels(ax, pending, max_labels: int = MAX_LABELS):
    """Place the labels so that none covers another: the violations' first, then the marks' in
    time order, each in the first free slot around its point; a label with no free slot (or past
    `max_labels`) is left out and counted. Returns ([(x, y, text, pt, style, (dx, dy))], left out)."""
    fig = ax.figure
    dpi = fig.dpi
    trans = ax.transData
    boxes: list = []
    placed = []
    area = ax.get_window_extent()           # labels stay inside the plot: off it they would cover the row names
    left_out = 0
    # a grid of buckets of 64 px, so that a label is compared with its neighbours only
    grid: dict = {}

    def free(b):
        if b[0] < area.x0 or b[2] > area.x1 or b[1] < area.y0 or b[3] > area.y1:
            return False
        for gx in range(int(b[0]) // 64, int(b[2]) // 64 + 1):
            for gy in range(int(b[1]) // 64, int(b[3]) // 64 + 1):
                for o in grid.get((gx, gy), ()):
                    if b[0] < o[2] and o[0] < b[2] and b[1] < o[3] and o[1] < b[3]:
                        return False
        return True

    def take(b):
        boxes.append(b)
        for gx in range(int(b[0]) // 64, int(b[2]) // 64 + 1):
            for gy in range(int(b[1]) // 64, int(b[3]) // 64 + 1):
                grid.setdefault((gx, gy), []).append(b)

    for prio, x, y, text, pt, style in sorted(pending, key=lambda p: (p[0], p[1])):
        if len(placed) >= max_labels:
            left_out += 1
            continue
        px, py = trans.transform((x, y))
        for dx, dy in SLOTS:
            b = _box(px, py, text, pt, dx, dy, dpi)
            if free(b):
                take(b)
                placed.append((x, y, text, pt, style, (dx, dy)))
                break
        else:
            left_out += 1
    return placed, left_out
