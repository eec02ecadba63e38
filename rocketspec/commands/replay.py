"""`rocketspec replay PATH... [--master URL] [--out DIR] [--json]`: check traces on Spark.

The same spec as `check`: for a trace of at most 2^20 events (each run of a dataset of runs),
whole in one task with `check`'s own replay (traces.spark.spark_whole); for a longer trace of many
deployments in Parquet as rocketspec writes it, whole deployments in a task per stretch of time
(traces.spark.spark_scoped); otherwise in partitions by key (traces.spark.spark_replay). The same verdict,
finding counts and report. Exit codes as `check`: 0 holds, 1 a violation, 2 bad input.
"""
from __future__ import annotations

import os
import sys

import click


@click.command("replay")
@click.argument("paths", nargs=-1, required=True)
@click.option("--master", default=None, help="Spark master URL: local[N], spark://HOST:PORT, yarn, k8s://... "
                                             "(default: the one spark-submit gives, else an embedded local[*]). "
                                             "Checked before Spark starts.")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Write violations.parquet (one row per invariant and key), report.txt and a witness trace "
                   "per listed violation into this directory.")
@click.option("--profile", "profile", default=None,
              help="Version profile (default: the profile named by the trace's trace_started event).")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable JSON report (check --json's fields).")
@click.option("--max-violations", default=50, show_default=True, type=click.IntRange(0, 1_000_000),
              help="List at most this many errors.")
@click.option("--partitions", default=None, type=click.IntRange(1, 100_000),
              help="Replay partitions (default: twice Spark's default parallelism). Given, every trace is "
                   "partitioned by key; by default a trace of at most 2^20 events is replayed whole in one "
                   "task, and a longer one in rocketspec's Parquet deployment by deployment.")
@click.option("--arrow", is_flag=True, help="Parquet traces as rocketspec writes them: let Spark read and shuffle "
                                           "them (Arrow batches to Python) instead of reading them in Python "
                                           "(docs/replay.md: not faster yet on 10^6 events).")
@click.option("--quiet", is_flag=True, help="No progress display.")
@click.option("--require-end", "end_required", is_flag=True,
              help="A trace with no trace_ended event is bad input (exit 2), instead of being judged for "
                   "safety only (as check --require-end).")
def replay_cmd(paths, master, out_dir, profile, as_json, max_violations, partitions, arrow, quiet, end_required):
    """Replay the trace given by PATHS through the spec on Spark: JSON Lines (gzip or zstd
    compressed or not), Parquet files, partitioned Parquet directories; several paths are
    parts of one trace. Paths are local (or file:///...): on a cluster, on a file system every
    executor mounts at the same path (docs/replay.md).

    Spark's progress bar and its UI address are shown on standard error when it is a
    terminal. Exit 0 when it holds, 1 on a violation, 2 on bad input."""
    from rocketspec import jsonout
    from rocketspec.traces.reports.verdict_text import render_text, require_end
    from rocketspec.commands.options import progress_bar
    from rocketspec.traces.spark.spark_replay import expand_paths, replay, spark_session, violations_table

    from rocketspec.errors import UserError
    from rocketspec.traces.datasets import dataset_runs

    from rocketspec.traces.spark.spark_preflight import local_path

    # bad paths fail before Spark starts (as do Java and the master: spark_session)
    paths = tuple(local_path(p) for p in paths)
    out_dir = None if out_dir is None else local_path(out_dir, "--out")
    expand_paths(paths)
    runs = [dataset_runs(p) for p in paths]
    if any(runs) and len(paths) > 1:
        given = next(p for p, r in zip(paths, runs) if r)
        raise UserError("a dataset of runs (run=<id> partitions, as `simulate --events` writes) is replayed alone: "
                        "each run is its own trace; give it as the only path", file=given)
    runs = runs[0]
    show = progress_bar(enabled=not quiet) is not None
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession() if master is None else None
    spark = active or spark_session(master, progress=show)     # (a session of the caller's: kept)
    try:
        if show:
            click.echo(f"Spark UI (stages, tasks, executors): {spark.sparkContext.uiWebUrl}", err=True)
        if runs:
            from rocketspec.traces.spark.spark_replay import replay_many

            wdirs = [None if out_dir is None else os.path.join(out_dir, "witnesses", f"run={r}") for r, _ in runs]
            reps = replay_many([[d] for _, d in runs], spark, profile=profile, max_listed=max_violations,
                               partitions=partitions, witness_dirs=wdirs, arrow=arrow)
        else:
            rep = replay(paths, spark, profile=profile, max_listed=max_violations, partitions=partitions,
                         witness_dir=None if out_dir is None else os.path.join(out_dir, "witnesses"), arrow=arrow)
    finally:
        if active is None:
            spark.stop()
    if runs:
        from rocketspec.commands.runs import report_runs

        if end_required:
            reps = [_ended_or_error(r, require_end) for r in reps]
        sys.exit(report_runs(paths[0], runs, reps, out_dir, as_json))
    if end_required:
        require_end(rep)
    text = render_text(rep)
    if out_dir is not None:
        import pyarrow.parquet as pq

        os.makedirs(out_dir, exist_ok=True)
        pq.write_table(violations_table(rep), os.path.join(out_dir, "violations.parquet"))
        with open(os.path.join(out_dir, "report.txt"), "w") as fh:
            fh.write(text + "\n")
    if as_json:
        d = rep.to_dict()
        d["spark"] = rep.spark
        d["witnesses"] = rep.witnesses
        sys.stdout.write(jsonout.dumps(d, non_str_keys=True) + "\n")
    else:
        click.echo(text)
        for w in rep.witnesses:
            click.echo(f"  witness of {w['invariant']} at seq {w['seq']}: {w['path']} ({w['events']} events)")
    sys.exit(0 if rep.ok else 1)



def _ended_or_error(rep, require_end):
    """A run's report, or the bad input --require-end makes of it (reported with the run, as check
    reports a run it could not read: the other runs go on)."""
    from rocketspec.errors import UserError

    try:
        return require_end(rep)
    except UserError as exc:
        return exc
