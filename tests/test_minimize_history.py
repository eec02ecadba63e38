"""`rocketspec minimize` on histories: the black-box guarantees (`rocketspec history`) are the
oracle. A failing history from each adapter (message-trace bodies, OpenChaos, a trace; from the
reference's known-bug runs and from a real RocketMQ recording) shrinks to a few records, written
in the input's own format, that `rocketspec history` still rejects with the same guarantee and
the same kind of finding; every remaining record is needed; the search is deterministic; a
history that holds is bad input (exit 2)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import orjson
import pytest
from click.testing import CliRunner

from rocketspec.cli import main
from rocketspec.spec.history import check_history, load_history
from rocketspec.traces.history import msgtrace, openchaos
from rocketspec.traces.io import write_trace
from rocketspec.traces.minimize.minimize_history import NotMinimizable, finding_kind, minimize_history, write_history

reference = pytest.importorskip("rocketspec.reference.runner")
from rocketspec.reference.scenario import load_scenario  # noqa: E402

HERE = os.path.dirname(__file__)
HIST = os.path.join(HERE, "fixtures", "history")
G6163 = {"GID_dlq": {"consume_mode": "ORDERLY", "message_model": "CLUSTERING", "max_reconsume_times": 2}}
# the real run retried each poison message twice (maxReconsumeTimes 2): declared as 1, it breaks the limit
G_REAL_STRICT = {"GID_real_retry": {"consume_mode": "CONCURRENTLY", "message_model": "CLUSTERING",
                                    "max_reconsume_times": 1}}

_RUNS: dict = {}


def run(scenario, profile):
    if (scenario, profile) not in _RUNS:
        _RUNS[(scenario, profile)] = reference.run_to_list(load_scenario(scenario), 1, profile)
    return _RUNS[(scenario, profile)]


def source(tmp_path, case):
    """(path, format, groups, the guarantee it violates)."""
    if case == "msgtrace-6163":
        p = tmp_path / "b6163.msgtrace"
        p.write_text("\n".join(msgtrace.encode_trace(run("orderly-dlq", "bug-6163-rocketmq-5.0.0"))) + "\n")
        return p, "msgtrace", G6163, "H-RETRY-1"
    if case == "openchaos-6163":
        p = tmp_path / "b6163.history"
        p.write_text("\n".join(openchaos.encode_trace(run("orderly-dlq", "bug-6163-rocketmq-5.0.0"))) + "\n")
        return p, "openchaos", None, "H-DELIVER-1"
    if case == "trace-2724":
        p = tmp_path / "b2724.jsonl"
        write_trace(p, run("bug-2724", "bug-2724-rocketmq-4.9.1"))
        return p, "trace", None, "H-RETRY-3"
    if case == "real-msgtrace":
        p = tmp_path / "real-retry-dlq.msgtrace"
        shutil.copy(os.path.join(HIST, "real-retry-dlq.msgtrace"), p)
        return p, "msgtrace", G_REAL_STRICT, "H-RETRY-1"
    if case == "real-trace":
        p = tmp_path / "real-retry-dlq.trace.jsonl"
        shutil.copy(os.path.join(HIST, "real-retry-dlq.trace.jsonl"), p)
        return p, "trace", G_REAL_STRICT, "H-RETRY-1"
    raise AssertionError(case)


def records_of(path, fmt):
    from rocketspec.traces.minimize.minimize_history import read_records, render

    return [render(fmt, r.raw) for r in read_records(path, fmt)]


def verdict(path, fmt, groups, gid):
    rep = check_history(load_history(path, fmt, None, groups))
    return next(v for v in rep.verdicts if v.id == gid), rep


CASES = ["msgtrace-6163", "openchaos-6163", "trace-2724", "real-msgtrace", "real-trace"]


@pytest.mark.parametrize("case", CASES)
def test_a_failing_history_minimizes_to_a_few_needed_records_in_its_own_format(tmp_path, case):
    path, fmt, groups, gid = source(tmp_path, case)
    before, _ = verdict(path, fmt, groups, gid)
    assert before.status == "violated"
    res = minimize_history(path, fmt, groups=groups)
    assert res.guarantee == gid and res.format == fmt
    n0 = len(records_of(path, fmt))
    assert res.original_records == n0 and len(res.records) <= 12 and len(res.records) * 10 < n0
    out = tmp_path / ("min." + path.name)
    write_history(out, res)
    # read back by the same adapter: the same guarantee fails the same way
    after, rep = verdict(out, fmt, groups, gid)
    assert after.status == "violated"
    assert finding_kind(after.findings[0]) == finding_kind(before.findings[0])
    assert set(rep.violated()) - {gid} == set(res.others)
    # every record is needed: without any one, the target holds (or is skipped, or fails
    # another way) or another guarantee breaks; only a trace's trace_started is kept as its header
    lines = out.read_text().splitlines()
    assert len(lines) == len(res.records)
    for i in range(len(lines)):
        if fmt == "trace" and i == 0:
            continue
        cut = tmp_path / f"cut{i}.{fmt}"
        cut.write_text("\n".join(lines[:i] + lines[i + 1:]) + "\n")
        try:
            v, rep = verdict(cut, fmt, groups, gid)
        except Exception as exc:    # noqa: BLE001 - the adapter reads nothing: needed too
            assert "empty" in str(exc) or "no " in str(exc), exc
            continue
        same = v.status == "violated" and any(finding_kind(f) == finding_kind(before.findings[0]) for f in v.findings)
        assert not same or set(rep.violated()) - {gid} - set(res.others), (case, i, lines[i])
    assert [r.role for r in res.reasons].count("needed") == len(lines) - (fmt == "trace")


def test_units_go_before_single_records(tmp_path):
    path, fmt, groups, _ = source(tmp_path, "openchaos-6163")
    res = minimize_history(path, fmt, groups=groups)
    kinds = res.removed_by_kind()
    gone = sum(k["records"] for k in kinds.values())
    assert gone == res.original_records - len(res.records)
    # whole units (a client, queues and sharding keys, messages' whole lives) took nearly all
    assert kinds["message"]["units"] >= 10 and kinds.get("record", {"records": 0})["records"] * 20 < gone


def test_the_search_is_deterministic_across_processes(tmp_path):
    path, fmt, groups, _ = source(tmp_path, "msgtrace-6163")
    g = tmp_path / "g.json"
    g.write_bytes(orjson.dumps(groups))
    outs = []
    for seed in ("1", "2"):
        out = tmp_path / f"m{seed}.msgtrace"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        p = subprocess.run([sys.executable, "-c", "from rocketspec.cli import main; main()", "minimize", str(path), "--groups", str(g), "-o",
                            str(out), "--json", "--quiet"], capture_output=True, env=env)
        assert p.returncode == 1, p.stderr.decode()
        d = orjson.loads(p.stdout)
        assert d["level"] == "history" and d["format"] == "msgtrace" and d["guarantee"] == "H-RETRY-1"
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_cli_writes_the_input_format_and_history_rejects_it(tmp_path):
    path, fmt, _, _ = source(tmp_path, "openchaos-6163")
    res = cli("minimize", path, "--quiet")       # the format is told by the file
    assert res.exit_code == 1, res.output
    out = tmp_path / "b6163.min.history"
    assert "H-DELIVER-1 kept" in res.output and str(out) in res.output
    back = cli("history", out, "--json")
    assert back.exit_code == 1
    d = orjson.loads(back.stdout)
    assert d["format"] == "openchaos" and "H-DELIVER-1" in [v["id"] for v in d["guarantees"]
                                                            if v["status"] == "violated"]


def test_a_history_that_holds_is_bad_input(tmp_path):
    p = tmp_path / "basic.msgtrace"
    shutil.copy(os.path.join(HIST, "real-basic.msgtrace"), p)
    res = cli("minimize", p, "--json", "--quiet")
    assert res.exit_code == 2
    d = orjson.loads(res.stdout)
    assert d["verdict"] == "bad_input" and "holds" in d["message"] and d["file"] == str(p)
    with pytest.raises(NotMinimizable):
        minimize_history(p, "msgtrace")


def test_another_guarantee_or_an_unknown_one_is_bad_input(tmp_path):
    path, fmt, _, _ = source(tmp_path, "openchaos-6163")
    res = cli("minimize", path, "--invariant", "H-DUP-1", "--json", "--quiet")
    assert res.exit_code == 2
    d = orjson.loads(res.stdout)
    assert "does not violate H-DUP-1" in d["message"] and "H-DELIVER-1" in d["message"]
    res = cli("minimize", path, "--invariant", "H-NOPE-1", "--json", "--quiet")
    assert res.exit_code == 2 and orjson.loads(res.stdout)["field"] == "--invariant"


def test_trace_options_stay_trace_level(tmp_path):
    path, _, _, _ = source(tmp_path, "trace-2724")
    res = cli("minimize", path, "--quiet", "-o", tmp_path / "t.min.jsonl")
    assert res.exit_code == 1 and "INV-" in res.output.splitlines()[0]     # the white-box spec, as before
    res = cli("minimize", path, "--quiet", "--format", "trace", "-o", tmp_path / "h.min.jsonl")
    assert res.exit_code == 1 and res.output.startswith("H-RETRY-3 kept")
    res = cli("minimize", path, "--quiet", "--lossy")
    assert res.exit_code == 2 and "for histories" in res.output


# ------------------------------------------------------------------ Hypothesis-built histories

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as hs  # noqa: E402

SEND = ("SendResult [sendStatus=SEND_OK, msgId={m}, offsetMsgId={m}, messageQueue=MessageQueue [topic=T, "
        "brokerName=b, queueId={q}], queueOffset={o}]")
RECV = "receive status [ msgId = {m}, topic = T, group = G, queueId = {q}, queueOffset = {o}]"


@hs.composite
def chaos_history(draw):
    """An OpenChaos history: sends, deliveries of messages sent (some never, some twice) and
    client kills, interleaved, 20 s apart so that a fault explains only what follows it closely."""
    lines, ts, sent = [], 1_000, 0

    def send():
        nonlocal sent
        i = sent
        lines.append(f"0\tenqueue\tREQUEST\tv{i}\tk{i % 2}\t{ts}\tnull")
        lines.append(f"0\tenqueue\tRESPONSE\tSUCCESS\tv{i}\tk{i % 2}\t{ts + 1}\t1\t"
                     f"{SEND.format(m=f'v{i}', q=i % 2, o=i // 2)}\t0")
        sent += 1

    send()
    for op in draw(hs.lists(hs.sampled_from(["send", "deliver", "deliver", "kill"]), min_size=1, max_size=12)):
        ts += 20_000
        if op == "send":
            send()
        elif op == "kill":
            lines.append(f"fault\tkill\tstart\t{ts}")
        else:
            i = draw(hs.integers(0, sent - 1))
            c = draw(hs.integers(1, 2))
            lines.append(f"{c}\tdequeue\tRESPONSE\tSUCCESS\tv{i}\tk{i % 2}\t{ts}\t0\t"
                         f"{RECV.format(m=f'v{i}', q=i % 2, o=i // 2)}\t5")
    return lines


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=chaos_history())
def test_any_failing_hypothesis_history_minimizes_to_needed_records(tmp_path, lines):
    p = tmp_path / "h.history"
    p.write_text("\n".join(lines) + "\n")
    rep = check_history(load_history(p, "openchaos"))
    if rep.ok:
        with pytest.raises(NotMinimizable):
            minimize_history(p, "openchaos")
        return
    gid = rep.violated()[0]
    first = next(v for v in rep.verdicts if v.id == gid).findings[0]
    res = minimize_history(p, "openchaos")
    assert res.guarantee == gid and len(res.records) <= 4
    out = tmp_path / "m.history"
    write_history(out, res)
    v, rep2 = verdict(out, "openchaos", None, gid)
    assert v.status == "violated" and finding_kind(v.findings[0]) == finding_kind(first)
    kept = out.read_text().splitlines()
    assert all(line in lines for line in kept) and [lines.index(x) for x in kept] == sorted(lines.index(x) for x in kept)
    for i in range(len(kept)):
        cut = tmp_path / "c.history"
        cut.write_text("\n".join(kept[:i] + kept[i + 1:]) + "\n")
        if len(kept) == 1:
            break
        v, rep3 = verdict(cut, "openchaos", None, gid)
        same = v.status == "violated" and any(finding_kind(f) == finding_kind(first) for f in v.findings)
        assert not same or set(rep3.violated()) - {gid} - set(res.others)
