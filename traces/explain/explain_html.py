"""The explain timeline as one self-contained HTML page: plotly, with plotly.js inlined, so the
page works offline and from a file:// URL. The page states the verdict and each violation with
its invariant's statement; the figure highlights the violating event and the events that matter.
"""
from __future__ import annotations

import html

from .explain import BARS, FIXED_MARK_COLORS, MARKS, VIOLATION_COLOR, Explanation
from .narrate import secs


def _row_y(tl, row):
    return tl.rows[row].y


def _event_row(tl, ev):
    """The row an event is drawn on: its client's row in its lane, else the lane's broker row."""
    from .timeline import lane_of

    if ev is None:
        return None
    ln = lane_of(ev)
    if ln is None:
        return None
    c = ev.get("client")
    for i, r in enumerate(tl.rows):
        if r.lane == ln and r.who == c:
            return i
    for i, r in enumerate(tl.rows):
        if r.lane == ln and r.who == "broker":
            return i
    return None


def figure(ex: Explanation):
    """The plotly Figure of the timeline."""
    import plotly.graph_objects as go

    tl = ex.timeline
    fig = go.Figure()
    for cat, (name, dy, height, opacity) in BARS.items():
        bars = [b for b in tl.bars if b.cat == cat]
        if not bars:
            continue
        colors = ["#888888" if cat in ("pause", "lock_expired") else ex.client_color(b.client) for b in bars]
        fig.add_trace(go.Bar(
            name=name, orientation="h", base=[tl.bar_x(b)[0] for b in bars],
            x=[max(tl.bar_x(b)[1] - tl.bar_x(b)[0], 0.001 if not tl.steps else 0.05) for b in bars], y=[_row_y(tl, b.row) + dy for b in bars], width=height,
            marker=dict(color=colors, opacity=opacity,
                        line=dict(width=[1.5 if b.open else 0 for b in bars], color=VIOLATION_COLOR),
                        pattern=dict(shape="/" if cat in ("pause", "lock_expired") else "", fgcolor="#222222",
                                     fgopacity=0.6)),
            hovertext=[b.text for b in bars], hoverinfo="text", legendgroup=cat))
    written = _spaced_labels(tl)
    for cat, (name, symbol, _mpl, dy, size) in MARKS.items():
        marks = [m for m in tl.marks if m.cat == cat]
        if not marks:
            continue
        color = FIXED_MARK_COLORS.get(cat)
        colors = [color or ex.client_color(m.client) for m in marks]
        labels = [m.label if id(m) in written else "" for m in marks]
        show_text = any(labels)
        fig.add_trace(go.Scatter(
            name=name, x=[tl.x(m.t, m.seq) for m in marks], y=[_row_y(tl, m.row) + dy for m in marks],
            mode="markers+text" if show_text else "markers", text=labels if show_text else None,
            textposition="top center", textfont=dict(size=9),
            marker=dict(symbol=symbol, size=size, color=colors, line=dict(width=1, color=colors)),
            hovertext=[m.text for m in marks], hoverinfo="text", legendgroup=cat))
    shapes, annotations = [], []
    stars: dict = {}
    for v in tl.listed():
        if v.lane is None or v.ts is None or v.lane not in tl.lanes:
            continue
        ys = [r.y for r in tl.rows if r.lane == v.lane]
        vxx = tl.x(v.ts, v.seq)
        shapes.append(dict(type="line", x0=vxx, x1=vxx, y0=min(ys) - 0.5, y1=max(ys) + 0.5,
                           line=dict(color=VIOLATION_COLOR, width=2, dash="dot")))
        stars.setdefault(v.lane, []).append((vxx, tl.rows[v.row].y if v.row is not None else min(ys), v.inv))
    for lane_stars in stars.values():
        # the violations of a lane close in time share one label naming their invariants
        for x0, y0, invs in _clusters(sorted(lane_stars), _span(tl) * 0.04):
            annotations.append(dict(x=x0, y=y0, text=f"<b>{html.escape(', '.join(invs))}</b>", showarrow=True,
                                    arrowcolor=VIOLATION_COLOR, font=dict(color=VIOLATION_COLOR, size=12),
                                    ax=30, ay=-30, xanchor="left", bgcolor="rgba(255,255,255,0.85)"))
    # the events that matter: red rings on their rows
    mx, my, mt = [], [], []
    mark_y = {m.seq: tl.rows[m.row].y + MARKS[m.cat][3] for m in tl.marks}     # a ring goes round its mark
    for v in tl.violations:
        for s in v.matters:
            ev = tl.by_seq.get(s)
            r = _event_row(tl, ev)
            if r is None:
                continue
            mx.append(tl.x(ev["ts"], ev["seq"]))
            my.append(mark_y.get(s, tl.rows[r].y))
            mt.append(f"matters for {v.inv}: seq {s} · {secs(ev['ts'])}<br>{html.escape(_describe(ev))}")
    if mx:
        fig.add_trace(go.Scatter(name="an event that matters", x=mx, y=my, mode="markers", hovertext=mt,
                                 hoverinfo="text", marker=dict(symbol="circle-open", size=16,
                                                               color=VIOLATION_COLOR, line=dict(width=2))))
    vx = [tl.x(v.ts, v.seq) for v in tl.violations if v.row is not None and v.ts is not None]
    vy = [tl.rows[v.row].y for v in tl.violations if v.row is not None and v.ts is not None]
    vt = [f"<b>{html.escape(v.inv)}</b> {html.escape(v.title)}<br>{html.escape(v.message[:300])}"
          for v in tl.violations if v.row is not None and v.ts is not None]
    if vx:
        fig.add_trace(go.Scatter(name="the violation", x=vx, y=vy, mode="markers", hovertext=vt, hoverinfo="text",
                                 marker=dict(symbol="star", size=20, color=VIOLATION_COLOR,
                                             line=dict(width=1, color="#000000"))))
    # lane bands, to tell the lanes apart
    for j, ln in enumerate(tl.lanes):
        ys = [r.y for r in tl.rows if r.lane == ln]
        shapes.append(dict(type="rect", xref="paper", x0=0, x1=1, y0=min(ys) - 0.5, y1=max(ys) + 0.5,
                           fillcolor="#f3f3f3" if j % 2 == 0 else "#ffffff", line=dict(width=0), layer="below"))
    height = max(380, 200 + 56 * len(tl.rows) + 20 * len(tl.lanes))
    fig.update_layout(
        barmode="overlay", height=height, margin=dict(l=10, r=10, t=40, b=40), hovermode="closest",
        plot_bgcolor="white", shapes=shapes, annotations=annotations,
        legend=dict(orientation="h", yanchor="top", y=-0.08 if len(tl.rows) > 6 else -0.2, xanchor="left", x=0,
                    font=dict(size=10)),
        xaxis=dict(title=tl.x_label(), showgrid=True, gridcolor="#e5e5e5", zeroline=False),
        yaxis=dict(tickvals=[r.y for r in tl.rows], ticktext=[html.escape(r.label).replace("\n", "<br>") for r in tl.rows], autorange="reversed",
                   showgrid=False, zeroline=False, automargin=True),
        title=dict(text=("VIOLATED: " + ", ".join(dict.fromkeys(v.inv for v in tl.violations))) if not tl.ok
                   else "HOLDS", font=dict(color=VIOLATION_COLOR if not tl.ok else "#2ca02c")))
    return fig


def _span(tl) -> float:
    return max((tl.s_max - tl.s_min) if tl.steps else (tl.t_max - tl.t_min) / 1000.0, 1e-9)


def _clusters(points, gap):
    """(x, y, [invariants]) of sorted (x, y, invariant) points, a cluster per run closer than gap."""
    out: list = []
    for x, y, inv in points:
        if out and x - out[-1][0] <= gap:
            if inv not in out[-1][2]:
                out[-1][2].append(inv)
        else:
            out.append((x, y, [inv]))
    return out


def _spaced_labels(tl, per_row_gap: float = 0.06) -> set:
    """The marks whose label is written: on each row, one every `per_row_gap` of the time span
    at most, so labels never pile on each other (the rest show on hover)."""
    gap = _span(tl) * per_row_gap
    last: dict = {}
    out = set()
    for m in sorted((m for m in tl.marks if m.label), key=lambda m: (m.row, m.seq)):
        x = tl.x(m.t, m.seq)
        if m.row in last and x - last[m.row] < gap:
            continue
        last[m.row] = x
        out.add(id(m))
    return out


def _describe(ev):
    from .narrate import describe

    return describe(ev)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.2em;color:#222;max-width:1500px}
h1{font-size:1.3em;margin:0 0 .3em} .holds{color:#2ca02c} .violated{color:#d62728}
.violation{border-left:5px solid #d62728;background:#fff5f5;padding:.5em 1em;margin:.6em 0}
.violation h2{font-size:1.05em;margin:.2em 0;color:#d62728} .statement{font-style:italic}
table{border-collapse:collapse;font-size:.85em} td,th{padding:2px 8px;text-align:left;vertical-align:top}
tr.bad td{color:#d62728;font-weight:bold} tr.matters td:first-child::before{content:"* "}
pre{font-size:.8em;background:#fafafa;padding:.6em;overflow-x:auto} .muted{color:#666;font-size:.9em}
"""


def page(ex: Explanation) -> str:
    """The whole HTML page as a string."""
    tl = ex.timeline
    fig = figure(ex)
    plot = fig.to_html(full_html=False, include_plotlyjs=True, div_id="timeline",
                       config={"displaylogo": False, "responsive": True})
    e = html.escape
    verdict = "HOLDS" if tl.ok else "VIOLATED"
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>rocketspec explain: "
             f"{e(tl.path)}</title><style>{_CSS}</style></head><body>",
             f"<h1 id='verdict' data-verdict='{verdict.lower()}'>{e(tl.path)}: "
             f"<span class='{verdict.lower()}'>{verdict}</span></h1>",
             f"<p class='muted'>profile {e(tl.profile)} · {tl.n_events} events · {secs(tl.t_min)} - "
             f"{secs(tl.t_max)} · ended {e(tl.ended or 'without trace_ended')} · "
             f"{len(tl.lanes)} of {tl.all_lanes} lane(s), one per queue per group</p>"]
    for i, v in enumerate(tl.violations, 1):
        parts.append(f"<p class='violated'><b>{e(v.inv)}</b> {e(v.title)} - at {secs(v.ts) if v.ts is not None else '?'}"
                     f" (seq {v.seq}; details below the timeline)</p>")
    cards = []
    for i, v in enumerate(tl.violations, 1):
        where = tl.lane_name(v.lane) if v.lane else ", ".join(f"{k}={x}" for k, x in (v.key or {}).items())
        cards.append(f"<div class='violation' id='violation-{i}' data-invariant='{e(v.inv)}'>"
                     f"<h2>{e(v.inv)} {e(v.title)}</h2>"
                     + (f"<p><b>Guarantee lost:</b> {e(v.guarantee)}</p>" if v.guarantee else "")
                     + f"<p class='statement'><b>The rule:</b> {e(v.statement)}</p>"
                     f"<p><b>What broke it:</b> {e(v.message)}</p>"
                     f"<p class='muted'>where: {e(where or '-')} · event seq {v.seq} at "
                     f"{secs(v.ts) if v.ts is not None else '?'}</p>")
        rows = []
        for s in v.matters:
            ev = tl.by_seq.get(s)
            if ev is None:
                continue
            cls = "bad" if s == v.seq else "matters"
            rows.append(f"<tr class='{cls}'><td>{secs(ev['ts'])}</td><td>{s}</td><td>{e(_describe(ev))}</td></tr>")
        if rows:
            cards.append("<details open><summary>The events that matter</summary><table><tr><th>time</th><th>seq</th>"
                         "<th>what happened</th></tr>" + "".join(rows) + "</table></details>")
        cards.append("</div>")
    parts.append("<p class='muted'>How to read it: each lane is one queue of one group. Its first row is the "
                 "broker (lock entry by holder colour, committed offsets as diamonds, stored messages as ticks, "
                 "retries and the DLQ); each further row is a client: the pale band is its ownership of the queue "
                 "(ProcessQueue), the thin line above it its lease, solid bars its listener calls, the thin line "
                 "below its pulls, grey hatching a freeze. A red star marks the violation and red rings the events "
                 "that matter; hover for details, drag to zoom.</p>")
    parts.append(plot)
    parts.extend(cards)
    story = "\n".join((f"  {tag or ' '} {secs(ts):>10} {seq:>7}  {txt}" if seq is not None else f"        {txt}")
                      for seq, ts, txt, tag in ex.story)
    parts.append(f"<details{' open' if not tl.ok else ''}><summary>{e(ex.story_title)}</summary>"
                 f"<pre id='story'>{e(story)}</pre></details>")
    parts.append("<details><summary>Lanes</summary><pre>" + e("\n".join(ex.lanes_summary)) + "</pre></details>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_html(ex: Explanation, path) -> None:
    text = page(ex)     # drawn whole before the file is opened: a failure leaves no empty page
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
