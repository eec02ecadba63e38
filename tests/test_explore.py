"""The explorer of the reference: `tiny` (every fault kind) exhausts clean under both release
profiles, a bounded search checks exactly the nodes within its bound, and scopes are validated."""
from __future__ import annotations

import pytest

from rocketspec.model_checks import world as W
from rocketspec.model_checks.refexplore import RefExplorer
from rocketspec.model_checks.scopes import RETIRED, ScopeError, load_scope, named_scopes


@pytest.mark.parametrize("profile", ["rocketmq-4.9.8", "rocketmq-5.3.3"])
def test_tiny_exhausts_clean(profile):
    r = RefExplorer(load_scope("tiny"), profile).run()
    assert r.complete and not r.bounded and r.violations == []
    # each of tiny's fault kinds is searched, and its runs end: most quiesce and are judged
    assert set(r.kinds) == set(W.fault_kinds(load_scope("tiny")))
    assert r.quiescent > r.horizon > 0


def test_bounded_search_checks_exactly_the_nodes_within_the_bound():
    scope = load_scope("tiny", fault_kinds=["reset"])
    full = RefExplorer(scope, "rocketmq-4.9.8")
    res = full.run()
    assert not res.bounded and res.depth > 6
    near = sum(1 for d in full._depths if d <= 6)
    b = RefExplorer(scope, "rocketmq-4.9.8", max_depth=6).run()
    assert b.bounded and b.complete and b.depth == 6 and b.distinct == near


def test_named_scopes_and_bad_scope(tmp_path):
    assert {"tiny", "small", "medium"} <= set(named_scopes())
    for name in named_scopes():
        load_scope(name)
    with pytest.raises(ScopeError):
        load_scope("nope")
    bad = tmp_path / "s.toml"
    for text in ("consumers = 'two'\n", "colour = 1\n", "queues = 600\n", "fault_kinds = ['meteor']\n"):
        bad.write_text(text)
        with pytest.raises(ScopeError):
            load_scope(str(bad))
    for key in RETIRED:
        bad.write_text(f"{key} = true\n")
        with pytest.raises(ScopeError, match="retired"):
            load_scope(str(bad))


def test_the_scope_keys_of_filters_and_offsets_are_validated(tmp_path):
    bad = tmp_path / "s.toml"
    for text, key in (("consume_from_where = 'CONSUME_FROM_MIDDLE'\n", "consume_from_where"),
                      ("subscription_type = 'REGEX'\n", "subscription_type"), ("tags = [1, 2]\n", "tags"),
                      ("props = [{ a = 1 }]\n", "props"), ("props = [{ a = '1' }, { b = '2' }]\n", "props"),
                      ("broker_downtime_ms = -1\n", "broker_downtime_ms")):
        bad.write_text(text)
        with pytest.raises(ScopeError) as exc:
            load_scope(str(bad))
        assert key in str(exc.value)


def test_a_tag_scope_stores_its_tags_round_robin_and_only_the_exact_tag_is_consumed():
    # Java's "Aa".hashCode() == "BB".hashCode() == 2112: the broker's tags-code filter passes both,
    # the client's exact re-check (PullAPIWrapper.processPullResult) drops BB
    from rocketspec.reference.runner import run_to_list

    scope = load_scope("tiny", subscription="Aa", tags=["Aa", "BB"], faults=0, failures=0)
    evs = run_to_list(W.scenario(scope), 1, "rocketmq-4.9.8")
    stored = {(e["queue"], e["tags"], e["tags_code"]) for e in evs if e["kind"] == "message_stored"}
    assert stored == {(0, "Aa", 2112), (1, "BB", 2112)}
    consumed = [e["queue"] for e in evs if e["kind"] == "consume_started"]
    assert consumed == [0]


def test_a_sql92_scope_turns_the_broker_filter_on_and_gives_each_message_its_properties():
    scope = load_scope("tiny", subscription="a = 1", subscription_type="SQL92", props=[{"a": "1"}, {"a": "2"}],
                       faults=0, failures=0)
    sc = W.scenario(scope)
    assert sc["broker_config"]["enable_property_filter"] is True
    from rocketspec.reference.runner import run_to_list

    evs = run_to_list(sc, 1, "rocketmq-5.3.3")
    assert [e["queue"] for e in evs if e["kind"] == "consume_started"] == [0]


def test_a_scope_of_two_brokers_hosts_the_topic_on_both_and_may_restart_each(tmp_path):
    # the fallback send-back (a failed message's broker down: a producer send of %RETRY%G to
    # another broker) needs a second broker; fallback-send-wrong-delay is killed in such a scope
    # (tests/test_mutants.py, slow)
    from rocketspec.reference.runner import run_to_list

    scope = load_scope("tiny", brokers=2, queues=1, messages=2, faults=0, failures=0)
    sc = W.scenario(scope)
    assert sc["brokers"] == ["broker-a", "broker-b"]
    evs = run_to_list(sc, 1, "rocketmq-4.9.8")
    stored = {(e["broker"], e["queue"]) for e in evs if e["kind"] == "message_stored"}
    assert stored == {("broker-a", 0), ("broker-b", 0)}
    assert {(e["broker"], e["queue"]) for e in evs if e["kind"] == "consume_started"} == stored
    w = W.build(load_scope("tiny", brokers=2, fault_kinds=["broker_restart"]), "rocketmq-4.9.8", lambda ev: None)
    assert [name for name, _ in w.run.sim.armed] == ["broker_restart broker-a", "broker_restart broker-b"]
    bad = tmp_path / "s.toml"
    for n in (0, 4):
        bad.write_text(f"brokers = {n}\n")
        with pytest.raises(ScopeError, match="from 1 to 3"):
            load_scope(str(bad))


@pytest.mark.parametrize("kind", ["shutdown", "broker_restart"])
def test_a_shutdown_and_a_broker_restart_are_faults_the_search_strikes_and_the_reference_survives(kind):
    # (that they strike where they matter: shutdown-keeps-running and unlock-by-anyone are killed
    # in their scopes, tests/test_mutants.py)
    scope = load_scope("tiny", fault_kinds=[kind], queues=1, messages=1, failures=0)
    r = RefExplorer(scope, "rocketmq-4.9.8").run()
    quiet = RefExplorer(load_scope("tiny", faults=0, queues=1, messages=1, failures=0), "rocketmq-4.9.8").run()
    assert r.complete and r.violations == []
    assert r.quiescent + r.horizon > quiet.quiescent + quiet.horizon     # runs the fault ended otherwise
