"""`rocketspec check PATH [--profile P] [--json]`: validate a trace against the spec.

Exit codes: 0 the trace holds (warnings allowed), 1 a violation, 2 bad input (malformed line,
missing field, unknown event kind, events out of order, unknown profile, missing file).
"""
from __future__ import annotations

import sys

import click


def _fmt_state(state, indent="      ") -> str:
    import orjson

    if not state:
        return f"{indent}(no state for this key yet)"
    text = orjson.dumps(state, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
    lines = text.splitlines()
    if len(lines) > 40:
        lines = lines[:40] + ["..."]
    return "\n".join(indent + ln for ln in lines)


def render_text(rep) -> str:
    d = rep.to_dict()
    out = []
    verdict = "HOLDS" if rep.ok else "VIOLATED"
    out.append(f"{d['path']}: {verdict} under profile {d['profile']} ({d['events']} events, "
               f"ended {d['ended'] or 'without trace_ended'})")
    for v in d["violations"]:
        key = v["key"]
        keys = ", ".join(f"{k}={val}" for k, val in key.items()) if key else "-"
        out.append("")
        out.append(f"  {v['invariant']} {v['title']}")
        if v.get("guarantee"):
            out.append(f"    guarantee lost: {v['guarantee']}")
        out.append(f"    {v['message']}")
        out.append(f"    event: seq {v['seq']}, line {v['line']}, kind {v['event_kind']}"
                   f"{' (' + v['action'] + ')' if v['action'] else ''}")
        out.append(f"    key: {keys}")
        out.append("    last accepted state of the key:")
        out.append(_fmt_state(v["last_state"]))
    hidden = d["errors"] - len(d["violations"])
    if hidden > 0:
        out.append(f"\n  ... and {hidden} more errors")
    out.extend(_counts_with_examples(d))
    if not rep.ok:
        p = _shell_word(d["path"])
        out.append("")
        out.append("  next steps:")
        out.append(f"    rocketspec minimize {p} -o min.jsonl   # the shortest trace that still fails this way")
        out.append(f"    rocketspec explain {p} --html why.html  # the story and timeline of the violated queue")
    return "\n".join(out)


def _counts_with_examples(d) -> list:
    """Every counted finding with its invariant's title and an example (the first of each; the
    errors listed above are their own examples)."""
    from rocketspec.spec import invariants as inv

    counts = d["counts"]
    if not counts:
        return []
    examples: dict = {}
    for w in d["warnings"]:
        examples.setdefault(w["invariant"], []).append(w)
    listed = {v["invariant"] for v in d["violations"]}
    out = ["", "  counts:"]
    for k, n in counts.items():
        cat = inv.BY_ID.get(k)
        title = cat.title if cat else "guard of the action"
        out.append(f"    {k} {n}: {title}")
        exs = examples.get(k, [])
        for w in exs[:2]:
            key = ", ".join(f"{a}={b}" for a, b in (w["key"] or {}).items()) or "-"
            out.append(f"      e.g. seq {w['seq']} (line {w['line']}, {w['event_kind']}; {key}): {w['message']}")
        if not exs and k in listed:
            out.append("      (examples listed above)")
        elif not exs:
            out.append("      (no example kept)")
    return out


def _shell_word(path: str) -> str:
    import shlex

    return shlex.quote(path) if path != "<stdin>" else "TRACE"


def _check_run(run_dir, profile, max_listed):
    """One run of a dataset (its one trace file, as `simulate --events` writes it): a Report, or
    the bad input as an exception (reported with the run, not raised: the other runs go on)."""
    from pathlib import Path

    from rocketspec.errors import UserError
    from rocketspec.spec.replay import check_trace

    files = sorted(str(f) for f in Path(run_dir).rglob("*")
                   if f.is_file() and not any(p.startswith((".", "_")) for p in f.relative_to(run_dir).parts))
    if len(files) != 1:
        return UserError(f"{len(files)} files in this run; `check` reads one trace file per run (`replay` reads "
                         "runs of several files)", file=run_dir)
    try:
        return check_trace(files[0], profile, max_listed=max_listed)
    except UserError as exc:
        return exc


@click.command("check")
@click.argument("path")
@click.option("--profile", "profile", default=None,
              help="Version profile (default: the profile named by the trace's trace_started event).")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable JSON report.")
@click.option("--max-violations", default=50, show_default=True, type=click.IntRange(0, 1_000_000),
              help="List at most this many errors.")
@click.option("--quiet", is_flag=True, help="No progress display.")
def check(path, profile, as_json, max_violations, quiet):
    """Replay the trace at PATH through the spec: JSON Lines (- for standard input) or Parquet,
    gzip or zstd compressed or not (told by the file's first bytes). A directory of run=<id>
    partitions (what `simulate --events` writes) is a dataset of runs: each run is checked as its
    own trace, one line per run, then the reports of those that fail.

    Progress is shown on standard error when it is a terminal. Exit 0 when it holds, 1 on a
    violation, 2 on bad input."""
    import orjson

    from rocketspec.commands.options import progress_bar, progress_shown
    from rocketspec.spec.replay import check_trace
    from rocketspec.traces.datasets import dataset_runs
    from rocketspec.traces.io import input_size

    runs = dataset_runs(path) if path != "-" else None
    if runs:
        from rocketspec.commands.runs import report_runs

        sys.exit(report_runs(path, runs, [_check_run(d, profile, max_violations) for _, d in runs], None, as_json))

    # the total only for a bar that is shown: for Parquet it reads the footer a second time
    total, unit = input_size(path) if progress_shown(not quiet) else (None, "B")
    bar = progress_bar(enabled=not quiet, total=total, unit=unit, unit_scale=unit == "B")
    progress = None
    if bar is not None:
        def progress(done):
            bar.update(done - bar.n)
    try:
        # bad input raises TraceInputError / UnknownProfile: reported by the CLI's one error path
        rep = check_trace(path, profile, max_listed=max_violations, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    if as_json:
        sys.stdout.write(orjson.dumps(rep.to_dict(), option=orjson.OPT_NON_STR_KEYS).decode() + "\n")
    else:
        click.echo(render_text(rep))
    sys.exit(0 if rep.ok else 1)

