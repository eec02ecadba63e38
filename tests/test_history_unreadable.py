"""A history that could not be read is bad input (exit 2), never a verdict.

A file with no readable record, or with more unreadable records than readable ones, is refused
naming the file, the first bad line and what was expected; so is a file read without one send,
delivery or dead letter (`--complete` never passes on nothing). The minimizer reads its input
the same way. OpenChaos's older Recorder layouts (6-field REQUEST, 8- or 9-field RESPONSE) are
read, not refused.
"""
import os

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketspec.cli import main
from rocketspec.spec.history import check_history, load_history
from rocketspec.traces.history import openchaos
from rocketspec.traces.io import iter_trace

reference = pytest.importorskip("rocketspec.reference.runner")
from rocketspec.reference.scenario import load_scenario  # noqa: E402

HERE = os.path.dirname(__file__)
REAL = os.path.join(HERE, "fixtures", "real")
TRACE = os.path.join(REAL, "real-basic.jsonl")
S, F = "\x01", "\x02"


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def bad_input(res, path, line=None):
    assert res.exit_code == 2, (res.exit_code, res.output)
    d = orjson.loads(res.stdout)
    assert d["verdict"] == "bad_input" and d["file"] == str(path), d
    if line is not None:
        assert d["line"] == line, d
    return d


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=3000), fmt=st.sampled_from([None, "msgtrace", "openchaos", "trace"]),
       complete=st.booleans())
def test_random_bytes_never_hold(tmp_path, raw, fmt, complete):
    p = tmp_path / "random.bin"
    p.write_bytes(raw)
    args = ["history", p, "--json", "--quiet"] + (["--format", fmt] if fmt else [])
    args += ["--complete"] if complete else []
    res = cli(*args)
    assert res.exit_code == 2, (res.exit_code, res.output)
    assert str(p) in orjson.loads(res.stdout)["message"] or orjson.loads(res.stdout)["file"] == str(p)


@pytest.mark.parametrize("complete", [[], ["--complete"]])
def test_a_trace_read_as_openchaos_is_refused_at_its_first_line(complete):
    d = bad_input(cli("history", TRACE, "--format", "openchaos", "--json", *complete), TRACE, 1)
    assert "no record could be read as openchaos" in d["message"] and "expected an OpenChaos history" in d["message"]


def test_a_json_lines_trace_read_as_msgtrace_is_refused():
    d = bad_input(cli("history", TRACE, "--format", "msgtrace", "--json"), TRACE, 1)
    assert "no record could be read as msgtrace" in d["message"] and "RMQ_SYS_TRACE_TOPIC" in d["message"]


def test_unreadable_records_that_dominate_are_refused_with_the_first(tmp_path):
    good = [S.join(["Pub", str(1000 + i), "R", "PID", "T", f"m{i}", "a", "k", "b", "5", "2", "0", "O", "true"]) + F
            for i in range(2)]
    bad = S.join(["Pub", "soon", "R", "PID", "T", "x", "a", "k", "b", "5", "2", "0", "O", "true"]) + F
    p = tmp_path / "mostly-bad.msgtrace"
    p.write_text("\n".join([good[0], bad, bad]) + "\n")
    d = bad_input(cli("history", p, "--json"), p, 2)
    assert "2 of 3 records could not be read" in d["message"] and "timestamp 'soon'" in d["message"]
    # read mostly: judged, the unreadable one counted (two sends and no group: nothing a guarantee
    # could judge, so incomplete, exit 4, never a pass on nothing)
    p.write_text("\n".join([*good, bad]) + "\n")
    res = cli("history", p, "--json")
    d = orjson.loads(res.stdout)
    assert res.exit_code == 4 and d["unparseable"] == 1 and d["verdict"] == "incomplete"


@pytest.mark.parametrize("complete", [[], ["--complete"]])
def test_nothing_to_judge_never_passes(tmp_path, complete):
    # readable, but not one send or delivery: only requests and faults
    p = tmp_path / "x-chaos-history-file"
    p.write_text("0\tenqueue\tREQUEST\t0\tnull\t100\tnull\nfault\trandom-kill\tstart\t150\n")
    d = bad_input(cli("history", p, "--json", *complete), p)
    assert "nothing to judge" in d["message"]


def test_minimize_refuses_an_unreadable_history(tmp_path):
    out = tmp_path / "min.history"
    res = cli("minimize", TRACE, "--format", "openchaos", "-o", out, "--json")
    bad_input(res, TRACE, 1)
    assert not out.exists()


# ------------------------------------------------------------------ OpenChaos's older Recorders

def older(line: str, fields: int) -> str:
    """A line of the current Recorder as an older one wrote it: REQUEST without extraInfo (6),
    RESPONSE without endToEndLatency (9) or without extraInfo either (8)."""
    f = line.split("\t")
    if f[0] == "fault":
        return line
    if f[2] == "REQUEST":
        return "\t".join(f[:6])
    return "\t".join(f[:9] if fields == 9 else f[:8])


@pytest.mark.parametrize("fields", [8, 9])
@pytest.mark.parametrize("fixture", ["real-basic", "real-kill"])
def test_older_openchaos_layouts_are_read(tmp_path, fixture, fields):
    lines = openchaos.encode_trace(iter_trace(os.path.join(REAL, fixture + ".jsonl")))
    p = tmp_path / f"{fields}-chaos-history-file"
    p.write_text("\n".join(older(ln, fields) for ln in lines) + "\n")
    h = load_history(p, "openchaos")
    assert not h.problems, [str(x) for x in h.problems[:3]]
    new = tmp_path / "new-chaos-history-file"
    new.write_text("\n".join(lines) + "\n")
    h_new = load_history(new, "openchaos")
    assert [(c.id, c.client, c.ts) for c in h.consumes] == [(c.id, c.client, c.ts) for c in h_new.consumes]
    assert len(h.produces) == len(h_new.produces) and all(x.topic for x in h.produces)
    rep = check_history(h)
    st_ = {v.id: v.status for v in rep.verdicts}
    assert rep.ok and st_["H-DELIVER-1"] == "holds" and st_["H-DUP-1"] == "holds", st_
    if fields == 8:
        assert h.produces[0].topic == openchaos.UNNAMED_TOPIC and h.produces[0].queue is None


def test_the_oldest_openchaos_layout_still_shows_a_lost_message(tmp_path):
    evs = reference.run_to_list(load_scenario("bug-2708"), 1, "bug-2708-rocketmq-4.9.0")
    p = tmp_path / "lost-chaos-history-file"
    p.write_text("\n".join(older(ln, 8) for ln in openchaos.encode_trace(evs)) + "\n")
    res = cli("history", p, "--json")
    assert res.exit_code == 1
    d = orjson.loads(res.stdout)
    assert {v["id"]: v["status"] for v in d["guarantees"]}["H-DELIVER-1"] == "violated" and d["unparseable"] == 0
