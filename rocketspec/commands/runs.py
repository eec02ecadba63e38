"""A dataset of runs judged run by run (`check DIR` and `replay DIR`, traces/datasets.py): one
line per run, the reports of the runs that fail, the verdict, and the exit code."""
from __future__ import annotations

import os
import sys

import click


def report_runs(dataset, runs, reps, out_dir, as_json) -> int:
    """The verdict of every run of a dataset, then the reports of the runs that fail. Exit code:
    2 when a run is bad input (each such run named with its file and line), else 1 when a run
    violates the spec, else 0."""
    from rocketspec import jsonout
    from rocketspec.traces.reports.verdict_text import render_text
    from rocketspec.errors import UserError

    bad = [(r, rep) for (r, _), rep in zip(runs, reps) if isinstance(rep, Exception)]
    good = [(r, rep) for (r, _), rep in zip(runs, reps) if not isinstance(rep, Exception)]
    violated = [(r, rep) for r, rep in good if not rep.ok]
    events = sum(rep.events for _, rep in good)
    verdict = "bad input" if bad else "violated" if violated else "holds"
    if out_dir is not None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        os.makedirs(out_dir, exist_ok=True)
        from rocketspec.traces.spark.spark_replay import violations_table

        tables = []
        for r, rep in good:
            t = violations_table(rep)
            tables.append(t.append_column("run", pa.array([r] * t.num_rows, pa.string())))
        from rocketspec.outputs import atomic_path, write_bytes

        # each file whole or not at all
        if tables:
            with atomic_path(os.path.join(out_dir, "violations.parquet")) as tmp:
                pq.write_table(pa.concat_tables(tables), tmp)
        write_bytes(os.path.join(out_dir, "report.txt"),
                    "".join(f"run={r}: " + render_text(rep) + "\n\n" for r, rep in good).encode("utf-8"))
    if as_json:
        out = []
        for (r, d), rep in zip(runs, reps):
            if isinstance(rep, Exception):
                err = rep.to_json() if isinstance(rep, UserError) else {"error": str(rep)}
                out.append({"run": r, "path": d, "bad_input": err})
            else:
                rd = rep.to_dict()
                if hasattr(rep, "spark"):           # replay's reports
                    rd["spark"] = rep.spark
                    rd["witnesses"] = rep.witnesses
                out.append({"run": r, "path": d, "report": rd})
        sys.stdout.write(jsonout.dumps({"dataset": str(dataset), "runs": out, "verdict": verdict, "events": events,
                                        "runs_violated": len(violated), "runs_bad_input": len(bad)},
                                       non_str_keys=True) + "\n")
    else:
        click.echo(f"{dataset}: a dataset of {len(runs)} runs, each its own trace ({events:,} events in the runs read)")
        for (r, _), rep in zip(runs, reps):
            if isinstance(rep, Exception):
                click.echo(f"  run={r}: BAD INPUT: {rep}")
            else:
                failing = sorted({f.inv for f in rep.findings.errors})
                counts = ", ".join(f"{inv} {rep.findings.counts.get(inv, 0)}" for inv in failing)
                click.echo(f"  run={r}: {'HOLDS' if rep.ok else 'VIOLATED'} ({rep.events:,} events)"
                           + (f": {counts}" if counts else ""))
        for r, rep in violated:
            click.echo("")
            click.echo(f"run={r}: " + render_text(rep))
            for w in getattr(rep, "witnesses", ()):
                click.echo(f"  witness of {w['invariant']} at seq {w['seq']}: {w['path']} ({w['events']} events)")
        click.echo("")
        click.echo(f"verdict: {verdict}: {len(violated)} of {len(runs)} runs violated"
                   + (f", {len(bad)} bad input" if bad else ""))
    if bad:
        for r, rep in bad:
            click.echo(f"error: run={r}: {rep}", err=True)
        return 2
    return 1 if violated else 0
