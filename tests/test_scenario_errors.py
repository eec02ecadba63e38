"""A mistake in a scenario file is reported with the file and the field path, before any run."""
import pytest

from rocketspec.reference.scenario import ScenarioError, builtin_names, load_scenario, validate

BASE = {
    "topics": [{"name": "T", "queues": 2}],
    "groups": [{"name": "G", "subscriptions": {"T": "*"}}],
    "producers": [{"topic": "T", "count": 5}],
    "steps": [{"at_ms": 0, "action": "start", "client": "c", "group": "G"}],
}


def with_(path, value):
    import copy

    sc = copy.deepcopy(BASE)
    *head, last = path
    node = sc
    for k in head:
        node = node[k]
    node[last] = value
    return sc


@pytest.mark.parametrize("path,value,where,needle", [
    (("groups", 0, "strategy"), "NOPE", "groups[0].strategy", "expected one of"),
    (("groups", 0, "consume_mode"), "SIDEWAYS", "groups[0].consume_mode", "CONCURRENTLY"),
    (("groups", 0, "pull_batch_size"), 0, "groups[0].pull_batch_size", "in [1, 1024]"),
    (("groups", 0, "listener"), {"duration_ms": "abc"}, "groups[0].listener.duration_ms", "milliseconds"),
    (("groups", 0, "listener"), {"fail_rate": 2}, "groups[0].listener.fail_rate", "<= 1"),
    (("groups", 0, "listener"), {"rules": [{"status": "SUCCESS"}]}, "groups[0].listener.rules[0].status",
     "RECONSUME_LATER"),
    (("groups", 0, "subscriptions"), {"T": {"type": "SQL92", "expr": "a >"}}, "groups[0].subscriptions.T",
     "rejected"),
    (("groups", 0, "subscriptions"), {"T": "||"}, "groups[0].subscriptions.T", "split error"),
    (("groups", 0, "subscriptions"), {"Nope": "*"}, "groups[0].subscriptions.Nope", "not declared"),
    (("producers", 0, "rate_per_s"), 0, "producers[0].rate_per_s", ">= 0.001"),
    (("steps",), [{"at_ms": 0, "action": "produce", "topic": "T", "count": 2, "tags": ["a", 3]}], "steps[0].tags[1]",
     "expected a string"),
    (("steps",), [{"at_ms": 0, "action": "produce", "topic": "T", "count": 2, "tags": []}], "steps[0].tags",
     "at least 1"),
    (("producers", 0, "props"), {"a": []}, "producers[0].props.a", "non-empty list"),
    (("producers", 0, "props"), {"MAX_OFFSET": "1"}, "producers[0].props.MAX_OFFSET", "system property"),
    (("producers", 0, "props"), {"a": ["x", " "]}, "producers[0].props.a", "blank"),
    (("steps", 0, "client"), 5, "steps[0].client", "expected a string"),
    (("steps", 0, "action"), "explode", "steps[0].action", "unknown action"),
])
def test_bad_field_is_named(path, value, where, needle):
    with pytest.raises(ScenarioError) as ei:
        validate(with_(path, value), "my.toml")
    assert ei.value.path == where and needle in str(ei.value) and "my.toml" in str(ei.value)


def test_steps_need_their_fields_and_known_clients():
    sc = with_(("steps",), BASE["steps"] + [{"at_ms": 5, "action": "pause", "client": "c"}])
    with pytest.raises(ScenarioError, match="pause needs"):
        validate(sc, "s")
    sc = with_(("steps",), BASE["steps"] + [{"at_ms": 5, "action": "crash", "client": "ghost"}])
    with pytest.raises(ScenarioError, match="not started by an earlier step"):
        validate(sc, "s")


def test_every_builtin_scenario_validates():
    for name in builtin_names():
        assert load_scenario(name)["name"] == name
