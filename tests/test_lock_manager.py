"""The broker's RebalanceLockManager (digest section 4, broker RebalanceLockManagerTest).

A lock entry names a client and the time it was last locked or renewed. It is expired when
now - last_update > 60000: strictly greater, so at exactly 60000 ms the holder still has it
and nobody else can take it; one millisecond later anyone may.
"""
import pytest

from rocketspec.reference.broker.lock_manager import RebalanceLockManager
from rocketspec.reference.sim import Simulator

G = "GID"
Q0, Q1, Q2 = ("T", 0), ("T", 1), ("T", 2)


class FakeBroker:
    name = "broker-a"

    def __init__(self):
        self.events = []
        self.sim = Simulator(0, self.events.append)


@pytest.fixture
def lm():
    b = FakeBroker()
    m = RebalanceLockManager(b, 60000)
    m.events = b.events
    return m


def at(lm, t):
    lm.broker.sim.now = t


def kinds(lm):
    out = [(e["kind"], e["queue"], e.get("client") or e.get("holder"), e.get("reason")) for e in lm.events]
    lm.events.clear()
    return out


def test_unlocked_queue_is_locked_new_and_expires_strictly_after_60000(lm):
    # Nobody holds Q0: c1 creates the entry.
    assert lm.try_lock(G, Q0, "c1")
    assert kinds(lm) == [("lock_acquired", 0, "c1", "new")]
    # 60000 ms later the entry is exactly at its lifetime: not expired, c2 is refused.
    at(lm, 60000)
    assert not lm.try_lock(G, Q0, "c2")
    assert kinds(lm) == [("lock_rejected", 0, "c2", None)]
    assert lm.holder(G, Q0) == "c1"
    # One millisecond more and it is expired: c2 takes it over, the broker records the expiry first.
    at(lm, 60001)
    assert lm.try_lock(G, Q0, "c2")
    assert kinds(lm) == [("lock_expired", 0, "c1", None), ("lock_acquired", 0, "c2", "takeover")]


def test_same_client_renews_and_the_renewal_restarts_the_lifetime(lm):
    lm.try_lock(G, Q0, "c1")
    at(lm, 59000)
    assert lm.try_lock(G, Q0, "c1")
    assert kinds(lm)[-1] == ("lock_acquired", 0, "c1", "renewed")
    at(lm, 59000 + 60000)          # 60000 after the renewal: still held
    assert not lm.try_lock(G, Q0, "c2")
    at(lm, 59000 + 60001)
    assert lm.try_lock(G, Q0, "c2")


def test_is_locked_refreshes_the_entry(lm):
    lm.try_lock(G, Q0, "c1")
    at(lm, 50000)
    assert lm.is_locked(G, Q0, "c1")   # the fast path of tryLock renews
    at(lm, 100000)                     # 50000 after the refresh
    assert not lm.try_lock(G, Q0, "c2")
    assert not lm.is_locked(G, Q0, "c2")


def test_the_holder_relocks_its_own_expired_entry(lm):
    lm.try_lock(G, Q0, "c1")
    kinds(lm)
    at(lm, 70000)
    assert lm.try_lock(G, Q0, "c1")
    assert kinds(lm) == [("lock_expired", 0, "c1", None), ("lock_acquired", 0, "c1", "renewed")]


def test_batch_returns_only_the_queues_the_caller_now_holds(lm):
    lm.try_lock(G, Q1, "c2")
    kinds(lm)
    # Q0 is free, Q1 is c2's, Q2 is free: c1 gets Q0 and Q2; Q1 is silently left out.
    assert lm.try_lock_batch(G, [Q0, Q1, Q2], "c1") == {Q0, Q2}
    assert sorted(kinds(lm)) == [("lock_acquired", 0, "c1", "new"), ("lock_acquired", 2, "c1", "new"),
                                 ("lock_rejected", 1, "c1", None)]
    # All held by the caller: all renewed; all held by someone else: empty set.
    assert lm.try_lock_batch(G, [Q0, Q2], "c1") == {Q0, Q2}
    assert lm.try_lock_batch(G, [Q0, Q2], "c3") == set()


def test_unlock_by_a_non_owner_is_ignored_and_the_owner_unlocks_even_an_expired_entry(lm):
    lm.try_lock(G, Q0, "c1")
    kinds(lm)
    lm.unlock_batch(G, [Q0], "c2")
    assert kinds(lm) == [("lock_release_ignored", 0, "c2", None)]
    assert lm.holder(G, Q0) == "c1"
    at(lm, 90000)                      # expired, but unlock never looks at expiry
    lm.unlock_batch(G, [Q0], "c1")
    assert kinds(lm) == [("lock_released", 0, "c1", None)]
    assert G in lm.table and Q0 not in lm.table[G]
    lm.unlock_batch(G, [Q0], "c1")     # no entry any more: nothing to release
    assert kinds(lm) == [("lock_release_ignored", 0, "c1", None)]


def test_is_lock_all_expired(lm):
    assert lm.is_lock_all_expired(G)   # group unknown
    lm.try_lock(G, Q0, "c1")
    at(lm, 30000)
    lm.try_lock(G, Q1, "c1")
    at(lm, 60001)                      # Q0 expired, Q1 not yet
    assert not lm.is_lock_all_expired(G)
    at(lm, 90001)
    assert lm.is_lock_all_expired(G)
    assert lm.holder(G, Q0) is None    # the query did not refresh anything


def test_groups_are_independent(lm):
    assert lm.try_lock("A", Q0, "c1")
    assert lm.try_lock("B", Q0, "c2")
