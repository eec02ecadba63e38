"""The explorer with broadcasting consumers: #4016 (persistAll rewriting the local offsets file
with the queues still held, a queue that leaves the route and comes back) is found with
INV-START-1 and a shortest trace that `rocketspec check` rejects too; the same scope exhausts
clean under the current profiles; the scope key is validated."""
from __future__ import annotations


import pytest

from rocketspec.model_checks.explorer import Explorer
from rocketspec.model_checks.scopes import ScopeError, load_scope, scope_from_dict
from rocketspec.spec.profiles import PROFILES

from counterexamples import assert_trace_file_rejected


def test_bug_4016_found_with_start_invariant(tmp_path):
    prof = PROFILES["bug-4016-rocketmq-4.9.7"]
    res = Explorer(load_scope("bugs-broadcast"), prof, stop_at_first=True).run()
    ids = [v.invariant for v in res.violations]
    assert prof.expected_violation == "INV-START-1" and "INV-START-1" in ids, [v.to_dict() for v in res.violations]
    v = next(v for v in res.violations if v.invariant == "INV-START-1")
    assert v.kind == "guard" and v.depth <= 9
    kinds = [e["kind"] for e in v.events]
    # the file entry was written, erased by persistAll, and the queue came back reading -1
    assert "offset_flushed" in kinds and "offset_erased" in kinds
    assert kinds[-1] == "offset_read" and v.events[-1]["offset"] == -1
    assert "offset_persisted" not in kinds and "offset_committed" not in kinds
    assert_trace_file_rejected(v.events, "INV-START-1", tmp_path)


@pytest.mark.parametrize("profile", ["rocketmq-4.9.8", "rocketmq-5.3.3"])
def test_broadcast_scope_exhausts_clean(profile):
    res = Explorer(load_scope("bugs-broadcast"), profile).run()
    assert res.complete and res.distinct > 1000 and res.quiescent > 0
    assert res.violations == [], [v.to_dict() for v in res.violations]


def test_message_model_is_validated(tmp_path):
    assert scope_from_dict({}).message_model == "CLUSTERING"
    with pytest.raises(ScopeError):
        scope_from_dict({"message_model": "BROADCAST"})
    with pytest.raises(ScopeError):
        scope_from_dict({"message_model": 1})
    with pytest.raises(ScopeError):
        scope_from_dict({"message_model": "BROADCASTING", "mode": "ORDERLY"})
    bad = tmp_path / "s.toml"
    bad.write_text('message_model = "clustering"\n')
    with pytest.raises(ScopeError):
        load_scope(str(bad))
