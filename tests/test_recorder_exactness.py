"""The recorder's observation contract (issue 42), on committed real 4.9.8 traces: each event is
exact or says its precision, and the spec judges what it records. The fixtures and their
scenarios are in tests/fixtures/real/exact/ (recorded with `rocketspec record --scenario
FILE`); tests/test_real_runs.py records the same scenarios again on real RocketMQ."""
from __future__ import annotations

import json
from pathlib import Path

import realfacts as f
from test_real_runs import ack_index_facts
from rocketspec.spec.replay import check_trace

EXACT = Path(__file__).parent / "fixtures" / "real" / "exact"


def _errors(events, tmp_path, name="t.jsonl"):
    p = tmp_path / name
    p.write_text("".join(json.dumps(e) + "\n" for e in events))
    rep = check_trace(p)
    return rep, [(x.inv, x.message) for x in rep.findings.errors]


# ---------------------------------------------------------------------- ackIndex
def test_ack_index_fixture_records_ack_index_and_names_every_send_back():
    ack_index_facts(f.load(EXACT / "ack-index.jsonl"))


def test_ack_index_fixture_holds_and_the_spec_judges_ack_index(tmp_path):
    ev = f.load(EXACT / "ack-index.jsonl")
    rep, errors = _errors(ev, tmp_path)
    assert rep.ok and not errors, errors[:5]
    # Without ackIndex the whole batch counts as acknowledged: the send-backs that follow are of
    # messages the client did not fail.
    stripped = [{k: v for k, v in e.items() if k != "ack_index"} for e in ev]
    rep, errors = _errors(stripped, tmp_path, "stripped.jsonl")
    assert {i for i, _ in errors} == {"INV-RETRY-3"}, errors[:5]
    assert any("did not fail" in m for _, m in errors)
    # An ackIndex that acknowledged a message later sent back is wrong the same way.
    wide = [dict(e, ack_index=len(e["offsets"]) - 1) if e["kind"] == "consume_finished" and e["group"] == "GID_ack"
            and e["status"] == "CONSUME_SUCCESS" else e for e in ev]
    rep, errors = _errors(wide, tmp_path, "wide.jsonl")
    assert not rep.ok and "INV-RETRY-3" in {i for i, _ in errors}


# ---------------------------------------------------------------------- client identity across reconnects
def test_idle_reconnect_fixture_names_the_client_of_requests_before_its_heartbeat(tmp_path):
    from test_real_runs import idle_reconnect_facts

    ev = f.load(EXACT / "idle-reconnect.jsonl")
    idle_reconnect_facts(ev)
    rep, errors = _errors(ev, tmp_path)
    assert rep.ok and not errors, errors[:5]


def test_a_commit_named_by_a_socket_address_is_what_the_spec_cannot_judge(tmp_path):
    """What the old broker recorder wrote for the same requests (the connection's address, the
    heartbeat not yet seen on it): the spec, knowing no such client, reported INV-OFFSET-1."""
    ev = f.load(EXACT / "idle-reconnect.jsonl")
    resumed = f.by_kind(ev, "client_resumed")[0]
    back = min([e["seq"] for e in f.by_kind(ev, "consumer_registered") if e["client"] == resumed["client"]
                and e["seq"] > resumed["seq"]] + [ev[-1]["seq"]])
    addr = [dict(e, client="127.0.0.1:36614") if resumed["seq"] < e["seq"] < back and e["kind"] == "offset_committed"
            and e["client"] == resumed["client"] else e for e in ev]
    assert addr != ev
    rep, errors = _errors(addr, tmp_path, "addr.jsonl")
    assert "INV-OFFSET-1" in {i for i, _ in errors}
