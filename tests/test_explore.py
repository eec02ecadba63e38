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
