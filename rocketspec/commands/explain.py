"""`rocketspec explain TRACE [--html OUT.html] [--png OUT.png] [--key KEY] [--json]`.

Tells what happened in a trace: a narrated story on standard output, and on request a
timeline picture, one lane per queue per group (who owns the queue, its broker lock and lease,
pulls, listener calls, commits and offsets, retries and the DLQ, pauses and crashes), with the
spec's violations highlighted and their invariants' statements.

Exit codes as `check`: 0 the trace holds, 1 a violation (explained), 2 bad input.
"""
from __future__ import annotations

import sys

import click


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
    not): the spec's verdict, the story of the violated queue told event by event, and, with
    --html / --png, its timeline. Exit 0 when it holds, 1 on a violation, 2 on bad input."""
    import orjson

    from rocketspec.traces.explain import explain as run
    from rocketspec.traces.timeline import parse_key

    k = parse_key(key) if key is not None else None
    ex = run(path, profile, k)
    files = {}
    if html_out:
        from rocketspec.traces.explain_html import write_html

        write_html(ex, html_out)
        files["html"] = html_out
    if png_out:
        from rocketspec.traces.explain_png import write_png

        write_png(ex, png_out)
        files["png"] = png_out
    if as_json:
        d = ex.to_dict()
        d["files"] = files
        sys.stdout.write(orjson.dumps(d, option=orjson.OPT_NON_STR_KEYS).decode() + "\n")
    else:
        click.echo(ex.text())
        for what, f in files.items():
            click.echo(f"wrote {what}: {f}")
    sys.exit(0 if ex.timeline.ok else 1)
