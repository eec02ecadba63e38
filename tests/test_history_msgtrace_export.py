"""Message traces keep the consumer: an export of RMQ_SYS_TRACE_TOPIC that carries each trace
message's bornHost (JSON lines, or `mqadmin printMsg -d true` output) names the consumer of
every delivery by its host, as RocketMQ's TraceView does; bodies alone name none.

Exports are encoded from recorded real-RocketMQ traces (tests/fixtures/real): each client's
trace messages carry its own host, the port changing from message to message as a trace
producer's connections to several brokers do.
"""
import os
from collections import defaultdict

import orjson
import pytest
from click.testing import CliRunner

from rocketspec.cli import main
from rocketspec.spec.history import check_history, load_history
from rocketspec.traces.history import msgtrace
from rocketspec.traces.history.msgtrace import CONTENT, FIELD, client_host
from rocketspec.traces.io import iter_trace

HERE = os.path.dirname(__file__)
REAL = os.path.join(HERE, "fixtures", "real")


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def events(fixture):
    return list(iter_trace(os.path.join(REAL, fixture + ".jsonl")))


def write(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


def consumers_of(evs):
    """(msg id, start ts) -> the trace's client of that delivery."""
    stored = {e["msg_id"]: e for e in evs if e["kind"] == "message_stored"}
    out = {}
    for e in evs:
        if e["kind"] == "consume_started":
            origins = e.get("origin_msg_ids") or [stored.get(m, {}).get("origin_msg_id", m) for m in e["msg_ids"]]
            for oid in origins:
                out[(oid, e["ts"])] = e["client"]
    return out


@pytest.mark.parametrize("layout", ["json", "printmsg"])
@pytest.mark.parametrize("fixture", ["real-basic", "real-kill", "real-rebalance"])
def test_an_export_names_each_delivery_s_consumer_by_its_host(tmp_path, fixture, layout):
    evs = events(fixture)
    p = write(tmp_path / f"{fixture}.{layout}", msgtrace.encode_export(evs, layout))
    h = load_history(p)                     # told by its first bytes
    assert h.format == "msgtrace" and not h.problems, [str(x) for x in h.problems[:3]]
    bodies = load_history(write(tmp_path / "bodies.msgtrace", msgtrace.encode_trace(evs)))
    # the same deliveries as the bodies alone, now each with its consumer
    assert [(c.id, c.ts, c.success, c.reconsume_times) for c in h.consumes] == \
        [(c.id, c.ts, c.success, c.reconsume_times) for c in bodies.consumes]
    assert all(c.client is None for c in bodies.consumes) and all(c.client for c in h.consumes)
    # one host per consumer of the trace, whatever port each trace message came from
    truth = consumers_of(evs)
    pairs = {(truth[(c.id, c.ts)], c.client) for c in h.consumes}
    assert len(pairs) == len({a for a, _ in pairs}) == len({b for _, b in pairs}) >= 2, pairs
    skipped = {v.id: v.missing for v in check_history(h).verdicts if v.status == "skipped"}
    assert "consume.client" not in skipped["H-DUP-1"]
    assert any("bornHost" in n for n in h.notes)


def drop_delivery(lines, host, msg_id):
    """The export without the records of `msg_id` in the trace messages `host` sent."""
    out = []
    for ln in lines:
        d = orjson.loads(ln)
        if client_host(d["bornHost"]) == host:
            recs = [r for r in d["body"].split(FIELD) if r]
            keep = [r for r in recs if not ((r.startswith("SubBefore") and r.split(CONTENT)[5] == msg_id) or
                                             (r.startswith("SubAfter") and r.split(CONTENT)[2] == msg_id))]
            if not keep:
                continue
            d["body"] = "".join(r + FIELD for r in keep)
        out.append(orjson.dumps(d).decode())
    return out


def test_broadcasting_delivery_is_judged_per_consumer(tmp_path):
    evs = events("real-broadcast")
    group = next(e["group"] for e in evs if e["kind"] == "client_started")
    topic = next(e["topic"] for e in evs if e["kind"] == "message_stored")
    g = tmp_path / "groups.json"
    g.write_bytes(orjson.dumps({group: {"message_model": "BROADCASTING", "subscriptions": {topic: "*"}}}))
    bodies = write(tmp_path / "b.msgtrace", msgtrace.encode_trace(evs))
    export = msgtrace.encode_export(evs)
    full = write(tmp_path / "e.jsonl", export)

    def deliver(p):
        res = cli("history", p, "--format", "msgtrace", "--groups", g, "--complete", "--json")
        d = orjson.loads(res.stdout)
        return res.exit_code, {v["id"]: v for v in d["guarantees"]}["H-DELIVER-1"]

    # bodies alone: no consumer, so the broadcasting group is not judged, and nothing else is:
    # incomplete (exit 4), the group named with the reason, never a pass on nothing
    code, v = deliver(bodies)
    assert code == 4 and v["status"] == "skipped" and group in v["not_judged"]
    code, v = deliver(full)
    assert code == 0 and v["status"] == "holds" and v["counts"] == {"consumed (broadcasting drops a failure)": 80}
    # one consumer never got one message: a loss, named with its consumer
    # a message sent well after both consumers started
    victim = [e for e in evs if e["kind"] == "message_stored" and e["source"] == "producer"][20]["msg_id"]
    cut = write(tmp_path / "cut.jsonl", drop_delivery(export, "10.0.0.2", victim))
    code, v = deliver(cut)
    assert code == 1 and v["status"] == "violated" and v["findings"] == 1, v
    assert victim in v["listed"][0]["message"] and v["listed"][0]["key"]["client"] == "10.0.0.2"


@pytest.mark.parametrize("born, host", [
    ("/10.0.0.5:53122", "10.0.0.5"), ("client-1/10.0.0.5:53122", "10.0.0.5"), ("10.0.0.5", "10.0.0.5"),
    ("/0:0:0:0:0:0:0:1:53122", "0:0:0:0:0:0:0:1"), ("/[0:0:0:0:0:0:0:1]:53122", "0:0:0:0:0:0:0:1"), (None, None),
])
def test_the_consumer_is_the_host_of_its_born_host(born, host):
    assert client_host(born) == host


def test_printmsg_output_with_the_tools_own_lines(tmp_path):
    evs = events("real-basic")
    lines = msgtrace.encode_export(evs, "printmsg")
    mq = "MessageQueue [topic=RMQ_SYS_TRACE_TOPIC, brokerName=broker-a, queueId={}]"
    text = [f"minOffset=0, maxOffset={len(lines)}, {mq.format(0)}", *lines,
            f"{mq.format(0)} print msg finished. status=NO_NEW_MSG, offset={len(lines)}", "-" * 56,
            f"minOffset=0, maxOffset=0, {mq.format(1)}", "-" * 56]
    res = cli("history", write(tmp_path / "printed.txt", text), "--json")
    d = orjson.loads(res.stdout)
    assert res.exit_code == 0 and d["format"] == "msgtrace" and d["unparseable"] == 0 and d["consumed"] == 69


def test_printmsg_without_bodies_is_refused(tmp_path):
    lines = [ln[:ln.index(" BODY: ")] + " BODY: NOT PRINT BODY" for ln in
             msgtrace.encode_export(events("real-basic"), "printmsg")]
    p = write(tmp_path / "nobody.txt", lines)
    res = cli("history", p, "--json")
    d = orjson.loads(res.stdout)
    assert res.exit_code == 2 and d["file"] == str(p) and d["line"] == 1 and "-d true" in d["message"]


def test_unreadable_export_lines_are_reported_at_their_line(tmp_path):
    lines = msgtrace.encode_export(events("real-basic"))
    lines[3:3] = ['{"bornHost": "/10.0.0.9:1"}', '{"body": "Pub\\u0001x\\u0002", "bornHost": 7}', "not json"]
    h = load_history(write(tmp_path / "e.jsonl", lines), "msgtrace")
    got = [(p.line, p.message.split(":")[0]) for p in h.problems]
    assert got == [(4, 'a JSON line without a "body" string'), (5, "bornHost 7"),
                   (6, "not JSON (invalid literal, expected 'null'")]


def test_a_trace_is_not_taken_for_an_export(tmp_path):
    res = cli("history", os.path.join(REAL, "real-basic.jsonl"), "--json")
    assert res.exit_code == 0 and orjson.loads(res.stdout)["format"] == "trace"
    by = defaultdict(int)
    for c in load_history(os.path.join(REAL, "real-basic.jsonl")).consumes:
        by[c.client] += 1
    assert len(by) >= 2


def test_a_minimized_export_keeps_its_consumers(tmp_path):
    evs = events("real-broadcast")
    group = next(e["group"] for e in evs if e["kind"] == "client_started")
    topic = next(e["topic"] for e in evs if e["kind"] == "message_stored")
    g = tmp_path / "groups.json"
    g.write_bytes(orjson.dumps({group: {"message_model": "BROADCASTING", "subscriptions": {topic: "*"}}}))
    victim = [e for e in evs if e["kind"] == "message_stored" and e["source"] == "producer"][20]["msg_id"]
    cut = write(tmp_path / "cut.jsonl", drop_delivery(msgtrace.encode_export(evs), "10.0.0.2", victim))
    out = tmp_path / "min.jsonl"
    res = cli("minimize", cut, "--format", "msgtrace", "--groups", g, "--complete", "-o", out, "--quiet")
    assert res.exit_code == 1 and out.exists(), res.output      # minimize exits 1: the result still fails
    # read back as the minimizer says: the same loss, of the same consumer
    res = cli("history", out, "--groups", g, "--complete", "--json")
    d = orjson.loads(res.stdout)
    v = {v["id"]: v for v in d["guarantees"]}["H-DELIVER-1"]
    assert res.exit_code == 1 and v["status"] == "violated" and v["listed"][0]["key"]["client"] == "10.0.0.2"
