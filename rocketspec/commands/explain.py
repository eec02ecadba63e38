"""`rocketspec explain TRACE [--html OUT.html] [--png OUT.png] [--key KEY] [--json]`.

Tells what happened in a trace: a narrated story on standard output, and on request a
timeline picture, one lane per queue per group (who owns the queue, its broker lock and lease,
pulls, listener calls, commits and offsets, retries and the DLQ, pauses and crashes), with the
spec's violations highlighted and their invariants' statements.

The story is printed before any picture is drawn, and each picture is drawn whatever became of
the other: a failure costs only its own output (and still sets the exit code).

Exit codes as `check`: 0 the trace holds, 1 a violation (explained), 2 bad input.
"""
from __future__ import annotations

import sys

import click

from rocketspec import jsonout


def _progress_factory():
    """Progress bars on standard error, one per phase, only when it is a terminal (not in CI)."""
    from rocketspec.commands.options import progress_bar, progress_shown

    if not progress_shown():
        return None, lambda: None
    bars = []

    def phase(name, total):
        for b in bars:
            b.close()
        bars.clear()
        unit = "B" if name == "replaying" else "ev"
        bar = progress_bar(total=total, unit=unit, unit_scale=True, desc=f"explain: {name}")
        if bar is None:
            return None
        bars.append(bar)
        return lambda done: bar.update(done - bar.n)

    def close():
        for b in bars:
            b.close()
        bars.clear()

    return phase, close


@click.command("explain")
@click.argument("path")
@click.option("--html", "html_out", default=None, metavar="OUT.html",
              help="Write the timeline as one self-contained HTML page (works offline).")
@click.option("--png", "png_out", default=None, metavar="OUT.png", help="Write the timeline as a PNG picture.")
@click.option("--key", "key", default=None, metavar="KEY",
              help="Only the lanes of this key: GROUP/TOPIC/BROKER/QUEUE (trailing parts optional) or "
                   "field=value,... over group, topic, broker, queue, client, origin_msg_id.")
@click.option("--profile", "profile", default=None,
              help="Version profile (default: the profile named by the trace's trace_started event).")
@click.option("--json", "as_json", is_flag=True, help="Print the explanation as JSON.")
def explain(path, html_out, png_out, key, profile, as_json):
    """Explain the trace at PATH (JSON Lines, - for standard input, or Parquet; compressed or
    not): the spec's verdict with `check`'s counts, the first violation of each invariant told
    in full and the next ones in brief, the story of the violated queue event by event, and,
    with --html / --png, its timeline. Progress goes to standard error when it is a terminal.
    Exit 0 when it holds, 1 on a violation, 2 on bad input."""

    from rocketspec.traces.explain.explain import explain as run
    from rocketspec.traces.explain.timeline import parse_key

    from rocketspec.outputs import refuse_input_as_output

    refuse_input_as_output(html_out, "--html", [("the trace", path)])
    refuse_input_as_output(png_out, "--png", [("the trace", path)])
    k = parse_key(key) if key is not None else None
    phase, close = _progress_factory()
    try:
        ex = run(path, profile, k, pictures=bool(html_out or png_out), progress=phase)
    finally:
        close()
    if not as_json:
        # the story first: whatever happens to the pictures, it is out
        click.echo(ex.text())
        sys.stdout.flush()
    files, failed = {}, []
    for what, out in (("html", html_out), ("png", png_out)):
        if not out:
            continue
        try:
            _draw(what, ex, out)
        except Exception as exc:    # the other picture is still drawn; the first failure is raised below
            failed.append(exc)
            if not as_json:
                click.echo(f"could not write {what}: {out} ({type(exc).__name__})", err=True)
            continue
        files[what] = out
        if not as_json:
            click.echo(f"wrote {what}: {out}")
    if failed:
        raise failed[0]
    if as_json:
        d = ex.to_dict()
        d["files"] = files
        sys.stdout.write(jsonout.dumps(d, non_str_keys=True) + "\n")
    sys.exit(0 if ex.timeline.ok else 1)


def _draw(what, ex, out):
    from rocketspec.outputs import atomic_path

    with atomic_path(out) as tmp:       # the file appears only whole: never empty or cut short
        if what == "html":
            from rocketspec.traces.explain.explain_html import write_html

            write_html(ex, tmp)
        else:
            from rocketspec.traces.explain.explain_png import write_png

            write_png(ex, tmp)
