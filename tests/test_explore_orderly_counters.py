"""The orderly client's local reconsume counter lives on the message object in its ProcessQueue
(ConsumeMessageOrderlyService.checkReconsumeTimes: msg.setReconsumeTimes(r + 1) on the object a
rollback puts back into msgTreeMap). The explorer keeps it as an explorer-side variable per
(client, queue, offset); it must vanish with the object: when the message is committed, or its
ProcessQueue dropped. A counter that outlived its message would make a later copy of the message
start from a dead object's count, and split states RocketMQ cannot tell apart."""
from __future__ import annotations

from dataclasses import replace

import pytest

from rocketspec.model_checks.explorer import Explorer
from rocketspec.model_checks.generator import is_reconsume_counter
from rocketspec.model_checks.scopes import load_scope


def _counters(aux):
    return {k: v for k, v in aux.items() if is_reconsume_counter(k)}


@pytest.mark.parametrize("profile", ["rocketmq-5.3.3", "rocketmq-4.9.8"])
def test_counters_live_only_while_the_message_is_held(profile):
    # one orderly consumer, maxReconsumeTimes 1, two failures: the first rolls back (counter 1),
    # the second exceeds it (sendMessageBack); a crash drops every ProcessQueue
    scope = replace(load_scope("small-orderly"), consumers=1, queues=1, messages=1, faults=1,
                    fault_kinds=("crash",))
    ex = Explorer(scope, profile)
    nodes = []
    apply = ex.apply_move

    def record(node, move):
        nxt, bad = apply(node, move)
        if nxt is not None:
            nodes.append((node, move, nxt))
        return nxt, bad

    ex.apply_move = record
    res = ex.run()
    assert res.complete and res.violations == []
    counted = committed_after_count = 0
    for parent, move, node in nodes:
        for (c, key, off), r in _counters(node.aux).items():
            pq = node.st.queues[key].pqs.get(c)
            assert pq is not None and pq.live and (off in pq.tree or off in pq.consuming), (move.label, c, key, off)
            assert r >= 1
            counted += 1
        gone = set(_counters(parent.aux)) - set(_counters(node.aux))
        if gone and any(e["kind"] == "pq_committed" for e in move.events):
            committed_after_count += 1
    # not vacuous: counters exist, and a commit after a rollback drops one
    assert counted > 0 and committed_after_count > 0
