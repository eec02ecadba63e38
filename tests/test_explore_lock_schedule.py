"""Orderly lockAll in the explorer follows lockMQPeriodically's schedule: scheduleAtFixedRate with
an initial delay of 1000 ms and the period REBALANCE_LOCK_INTERVAL (20000 ms), CLUSTERING only
(ConsumeMessageOrderlyService.start). Checked on every state of small explorations: lockAll runs
only when a run is owed, time never passes a run a running client owes, and so (20 s < the 30 s
lease) a running client's lease never lapses without a fault; after a pause past the lease the
client re-locks (lockAll owed since the pause, or lock(mq) on the consume path)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from rocketspec.model_checks.explorer import Explorer
from rocketspec.model_checks.generator import LOCK_DUE, Generator
from rocketspec.model_checks.scopes import load_scope
from rocketspec.spec import get_profile

PROFILES = ["rocketmq-5.3.3", "rocketmq-4.9.8"]


def _walk(scope, profile):
    """Explore, calling back on every expanded node with its moves."""
    ex = Explorer(scope, profile)
    seen = []
    gen_moves = ex.gen.moves

    def moves(st, now, aux, budget):
        out = gen_moves(st, now, aux, budget)
        seen.append((st, now, dict(aux), out))
        return out

    ex.gen.moves = moves
    res = ex.run()
    assert res.complete and res.violations == []
    return ex, seen


@pytest.mark.parametrize("now,nxt", [(0, 1000), (999, 1000), (1000, 21000), (20999, 21000), (21000, 41000),
                                     (40000, 41000)])
def test_runs_at_one_second_then_every_twenty(now, nxt):
    gen = Generator(load_scope("small-orderly"), get_profile("rocketmq-5.3.3"))
    assert gen.lock_period == 20000 and gen.periodic_lock
    assert gen.next_lock_run(now) == nxt


def test_concurrent_and_broadcast_groups_have_no_lock_schedule():
    p = get_profile("rocketmq-5.3.3")
    assert not Generator(load_scope("small"), p).periodic_lock
    assert not Generator(load_scope("bugs-broadcast"), p).periodic_lock


@pytest.mark.parametrize("profile", PROFILES)
def test_lockall_only_when_owed_and_time_waits_for_it(profile):
    scope = replace(load_scope("small-orderly"), consumers=1, faults=0, failures=1)
    ex, seen = _walk(scope, profile)
    lease = ex.profile.client_lock_max_live_ms
    owed_states = 0
    for st, now, aux, moves in seen:
        labels = [m.label for m in moves]
        for c in ex.gen.clients:
            owes = bool(aux.get((LOCK_DUE, c, 0)))
            has = any(lab.startswith(f"lockAll {c}") for lab in labels)
            assert has == owes, (now, c, labels)
            if owes:
                owed_states += 1
                assert not any(m.tick for m in moves), (now, labels)
        for m in moves:
            if m.tick:      # a tick never jumps past a scheduled run
                assert now + m.tick <= ex.gen.next_lock_run(now)
        # without faults the lease of a running client never lapses: renewed every 20 s < 30 s
        for key, qs in st.queues.items():
            for c, pq in qs.pqs.items():
                if pq.orderly and pq.live and pq.locked:
                    assert now - pq.last_lock_ts <= lease, (now, key, c, pq.last_lock_ts)
    assert owed_states > 0


def test_a_pause_past_the_lease_is_followed_by_a_relock():
    scope = replace(load_scope("small-orderly"), consumers=1, failures=0, faults=1, fault_kinds=("pause",),
                    pause_ms=(31000,))
    ex, seen = _walk(scope, "rocketmq-5.3.3")
    lease = ex.profile.client_lock_max_live_ms
    lapsed = 0
    for st, now, aux, moves in seen:
        cl = st.dir.clients["c0"]
        if cl.status != "running":
            continue
        held = [pq for qs in st.queues.values() for c, pq in qs.pqs.items()
                if c == "c0" and pq.orderly and pq.live and pq.locked and now - pq.last_lock_ts > lease]
        if held:
            lapsed += 1
            # the missed run is owed (time waits for it), or lock(mq) on the consume path is offered
            labels = [m.label for m in moves]
            assert aux.get((LOCK_DUE, "c0", 0)) or any("lockOneMQ" in lab for lab in labels), labels
            assert not any(m.tick for m in moves) or any("lockOneMQ" in lab for lab in labels)
    assert lapsed > 0
