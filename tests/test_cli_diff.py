"""`rocketspec diff`: exit codes, bad input, and the report on the committed real fixture."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from rocketspec.cli import main
from rocketspec.traces.reports.diff_reports import END

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "fixtures" / "real" / "real-basic.jsonl"
SCENARIO = ROOT / "reference" / "scenarios" / "real-basic.toml"


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def bad_input(res, *needles):
    assert res.exit_code == 2, (res.exit_code, res.output, res.exception)
    err = res.stderr.strip()
    assert err.startswith("error: ") and "Traceback" not in res.output, err
    for n in needles:
        assert n in err, (n, err)


def test_a_trace_against_itself_has_no_difference_and_exits_0_even_when_asked_to_fail():
    res = cli("diff", REAL, REAL, "--json", "--fail-on-difference")
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    assert rep["differences"] == 0 and not [r for r in rep["rows"] if r["differs"]]
    g = rep["real"]["groups"]["GID_real_basic"]
    # the same figures counted here the plain way, from the fixture's events
    ev = [json.loads(ln) for ln in REAL.read_text().splitlines()]
    started = [e for e in ev if e["kind"] == "consume_started"]
    assert g["produced"] == sum(1 for e in ev if e["kind"] == "message_stored" and e["source"] == "producer") == 40
    assert g["deliveries"] == sum(len(e["msg_ids"]) for e in started)
    assert g["delivered"] == len({o for e in started for o in e["origin_msg_ids"]}) == 40
    assert g["retry_topic_deliveries"] == sum(len(e["msg_ids"]) for e in started if e["topic"].startswith("%RETRY%"))
    assert g["send_backs_requested"] == sum(1 for e in ev if e["kind"] == "send_back_requested")


def test_scenario_mode_simulates_the_reference_with_the_real_traces_profile(tmp_path):
    ref = tmp_path / "ref.jsonl"
    res = cli("diff", "--scenario", SCENARIO, "--real", REAL, "--json", "--keep-ref", ref)
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    assert rep["ref"]["profile"] == "rocketmq-4.9.8" == rep["real"]["profile"]
    assert ref.exists() and rep["verdicts"]["ref"]["verdict"] in ("holds", "violated")
    assert rep["differences"] > 0
    assert cli("diff", "--scenario", SCENARIO, "--real", REAL, "--fail-on-difference").exit_code == 1


def test_markdown_and_text_flag_the_differences(tmp_path):
    res = cli("diff", "--scenario", SCENARIO, "--real", REAL, "--markdown")
    assert res.exit_code == 0
    assert "| figure | reference | real | |" in res.stdout and "**differs**" in res.stdout
    res = cli("diff", "--scenario", SCENARIO, "--real", REAL)
    assert "<- differs" in res.stdout and "difference(s) flagged" in res.stdout


def test_bad_input(tmp_path):
    bad_input(cli("diff", tmp_path / "nope.jsonl", REAL), "nope.jsonl")
    broken = tmp_path / "broken.jsonl"
    broken.write_text(REAL.read_text().splitlines()[0] + "\n{not json\n")
    bad_input(cli("diff", broken, REAL), "broken.jsonl:2")
    headless = tmp_path / "headless.jsonl"
    headless.write_text("\n".join(REAL.read_text().splitlines()[1:]) + "\n")
    bad_input(cli("diff", REAL, headless), "headless.jsonl:1", "trace_started")
    lacking = tmp_path / "lacking.jsonl"
    lines = REAL.read_text().splitlines()
    i = next(n for n, ln in enumerate(lines) if '"consume_started"' in ln)
    ev = json.loads(lines[i])
    del ev["msg_ids"]
    lines[i] = json.dumps(ev)
    lacking.write_text("\n".join(lines) + "\n")
    bad_input(cli("diff", lacking, REAL), f"lacking.jsonl:{i + 1}", "msg_ids")
    bad_input(cli("diff", REAL), "two traces")
    bad_input(cli("diff", "--scenario", SCENARIO), "--real")
    bad_input(cli("diff", "--scenario", SCENARIO, "--real", REAL, REAL), "--real")
    bad_input(cli("diff", REAL, REAL, "--profile", "rocketmq-4.9.8"), "--scenario")
    res = cli("diff", REAL, REAL, "--json", "--markdown")
    assert res.exit_code == 2 and "exclude" in json.loads(res.stdout)["message"]
    bad_input(cli("diff", "--scenario", "no-such-scenario", "--real", REAL), "no-such-scenario")
    bad_input(cli("diff", "--scenario", "basic", "--real", REAL), "real-basic", "basic")


def test_bad_input_as_json():
    res = cli("diff", REAL, "--json")
    assert res.exit_code == 2
    assert json.loads(res.stdout)["verdict"] == "bad_input"


def test_a_trace_the_checker_refuses_still_gets_figures_and_its_verdict_says_why(tmp_path):
    """The checker's refusal is part of the report (a verdict), not bad input of `diff`."""
    lines = REAL.read_text().splitlines()
    odd = tmp_path / "odd.jsonl"
    i = next(n for n, ln in enumerate(lines) if '"pull_issued"' in ln)
    ev = json.loads(lines[i])
    del ev["pull_id"]
    lines[i] = json.dumps(ev)
    odd.write_text("\n".join(lines) + "\n")
    res = cli("diff", REAL, odd, "--json")
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    assert rep["verdicts"]["real"]["verdict"] == "refused"
    assert "pull_id" in rep["verdicts"]["real"]["message"]
    assert rep["real"]["groups"]["GID_real_basic"]["delivered"] == 40


# ---------------------------------------------------------------------- docs/differential
def test_committed_reports_are_up_to_date():
    """Each report whose real fixture is committed matches what `make diff-reports` writes now;
    after a change of the reference, regenerate (and explain any new difference)."""
    from rocketspec.traces.reports.diff_reports import main as reports

    names = [p.stem for p in (ROOT / "tests" / "fixtures" / "real").glob("real-*.jsonl")
             if (ROOT / "docs" / "differential" / f"{p.stem}.md").exists()
             and (ROOT / "reference" / "scenarios" / f"{p.stem}.toml").exists()]
    assert "real-basic" in names
    assert reports(["--only", *names, "--check"]) == 0, "docs/differential is out of date: run make diff-reports"


def _flagged_topics(text: str) -> set:
    """What each flagged row of a report's table is about, as its explanation must name it: the
    topic of a committed-offset row, the cause of a duplicate row, the tag of a workload row,
    'verdict' for the checker rows, else the figure's first word."""
    import re

    keys = set()
    for line in text.split(END)[0].splitlines():
        if not line.endswith("| **differs** |"):
            continue
        fig = re.sub(r"\s*\(.*?\)", "", line.split("|")[1].replace("&nbsp;", "")).strip()
        words = fig.split()
        if words[0] == "committed":
            keys.add("%RETRY%" if "%RETRY%" in fig else words[1].split("/")[0])
        elif fig.startswith(("of which ", "with tag ")):
            keys.add(words[2])
        elif words[0] in ("verdict", "errors"):
            keys.add("verdict")
        else:
            keys.add(words[0])
    return keys


def test_every_flagged_difference_is_explained():
    """Each report's hand-written part is written (no placeholder) and names every kind of
    difference its table flags."""
    for path in sorted((ROOT / "docs" / "differential").glob("real-*.md")):
        text = path.read_text()
        assert "(to be written" not in text, path.name
        explained = text.split("## Differences explained", 1)[1].lower()
        missing = sorted(k for k in _flagged_topics(text) if k.lower() not in explained)
        assert not missing, (path.name, missing)


def test_regenerating_keeps_the_hand_written_explanations(tmp_path):
    from rocketspec.traces.reports.diff_reports import BEGIN, END, update

    path = tmp_path / "x.md"
    path.write_text(f"# title\n\nintro\n\n{BEGIN}\nold table\n{END}\n\n## Differences explained\n\nmine\n")
    new = update(path, "x", f"{BEGIN}\nnew table\n{END}")
    assert "new table" in new and "old table" not in new
    assert new.startswith("# title\n\nintro") and new.endswith("## Differences explained\n\nmine\n")
    fresh = update(tmp_path / "y.md", "y", f"{BEGIN}\nt\n{END}")
    assert fresh.startswith("# Differential report: y") and "## Differences explained" in fresh


def test_the_same_trace_as_parquet_has_the_same_figures(tmp_path):
    from rocketspec.traces.io import iter_trace, write_trace

    pq = tmp_path / "real-basic.parquet"
    write_trace(pq, iter_trace(REAL, validate=False))
    res = cli("diff", REAL, pq, "--json")
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    assert rep["differences"] == 0
    assert rep["real"]["groups"] == rep["ref"]["groups"]
