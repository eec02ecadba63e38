"""The reference ends a run as quiescent only when a real run would (docs/recorder.md): every
message consumed and, in clustering mode, the broker's committed offset of every queue at its
max offset (the consumer persisted it). Before, the reference stopped with the last batch's
offset still in the client's memory, so its final committed offsets lagged a real run's by one
batch per queue (docs/differential/real-basic.md)."""
from __future__ import annotations

import pytest

from rocketspec.reference.runner import run_to_list
from rocketspec.reference.scenario import load_scenario
from rocketspec.rocketmq.profiles import get_profile


@pytest.mark.parametrize("name", ["real-basic", "basic", "orderly", "retry-dlq"])
def test_a_quiescent_clustering_run_has_its_offsets_committed(name):
    sc = load_scenario(name)
    ev = run_to_list(sc, 1, get_profile("rocketmq-4.9.8"))
    assert ev[-1]["reason"] == "quiescent"
    models = {e["group"]: e["message_model"] for e in ev if e["kind"] == "client_started"}
    subs = {}
    for e in ev:
        if e["kind"] == "client_started":
            subs.setdefault(e["group"], set()).update(e["subscriptions"])
    max_off, committed = {}, {}
    for e in ev:
        if e["kind"] == "message_stored":
            key = (e["topic"], e["broker"], e["queue"])
            max_off[key] = max(max_off.get(key, 0), e["offset"] + 1)
        elif e["kind"] == "offset_committed":
            committed[(e["group"], e["topic"], e["broker"], e["queue"])] = e["offset"]
    checked = 0
    for group, model in models.items():
        if model != "CLUSTERING":
            continue
        for (topic, broker, queue), m in max_off.items():
            if topic in subs[group]:
                assert committed.get((group, topic, broker, queue)) == m, (group, topic, queue)
                checked += 1
    assert checked
