"""An operator reset 4.9.8 refuses is a step that did not happen.

Broker2Client.resetOffset answers SYSTEM_ERROR "THe consumer group <G> not exist" while a queue
of the topic has no committed offset of the group, before it builds the request to the clients
or changes any offset. The driver records such a step in run/refused-steps.json and goes on;
the real-run oracle then counts no reset for it (a reset would excuse redeliveries).

tests/fixtures/real/random/seed-427-refused-reset is random real run 427 (--small) on real
4.9.8: 15 messages by 16 random sharding keys over 4 queues, a reset of GID_r0 at 3.4 s that the
broker refused; its scenario, message traces, refused-steps.json, client log and the used part
of its commit log. check and the oracle both hold on it (agreed).
"""
import json
import shutil
from pathlib import Path

import pytest

from rocketspec.conformance.real_random import oracle_dict, oracle_report, refused_steps
from rocketspec.conformance.store_contents import StoreReadError

SEED_427 = Path(__file__).parent / "fixtures" / "real" / "random" / "seed-427-refused-reset"
T0 = 1796605155204      # the run's trace_started


def judge(folder):
    sc = json.loads((folder / "scenario.json").read_text())
    rep = oracle_report(sc, folder / "msgtrace.txt", folder / "run" / "store", T0, True)
    return rep, oracle_dict(rep)


def test_the_driver_recorded_the_refusal_as_4_9_8_words_it():
    rows = json.loads((SEED_427 / "run" / "refused-steps.json").read_text())
    assert rows == [{"at_ms": 3400, "action": "reset_offset", "group": "GID_r0", "topic": "TopicR",
                     "remark": "THe consumer group <GID_r0> not exist"}]
    assert refused_steps(SEED_427 / "run") == {(3400, "GID_r0", "TopicR")}


def test_the_oracle_counts_no_reset_the_broker_refused(tmp_path):
    rep, o = judge(SEED_427)
    assert o["ok"]
    assert any("0 operator reset(s) from the scenario's steps (1 refused by the broker, not counted)" in n
               for n in o["notes"])
    # the same run had the broker accepted it: one reset
    accepted = tmp_path / "seed-427"
    shutil.copytree(SEED_427, accepted)
    (accepted / "run" / "refused-steps.json").unlink()
    _, o2 = judge(accepted)
    assert any("1 operator reset(s) from the scenario's steps" in n and "refused" not in n for n in o2["notes"])


def test_a_refused_steps_file_that_is_not_the_drivers_is_not_read(tmp_path):
    (tmp_path / "refused-steps.json").write_text('{"at_ms": 1}')
    with pytest.raises(StoreReadError, match="refused-steps.json: not the driver's list"):
        refused_steps(tmp_path)
