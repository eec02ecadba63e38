"""The candidate generator: from an explorer node, every step the deployment of the scope can
take next, as the profile's broker and client would take it.

A step ("move") is a short list of trace events that RocketMQ runs in one thread without
yielding to the others (a rebalance of one topic, a pull answer and what the client does with
it, a listener's return and the result processing, ...). The explorer applies the events
through the spec (`step`), one by one.

Two kinds of moves:

- **implementation moves** (``env=False``): what the profile's client and broker do. Their
  parameters that RocketMQ computes (the broker's pull answer, ``removeMessage``'s result, the
  offset store's value, the DLQ decision, the delay level, the allocation) are computed here
  from the state, *as the profile's code computes them*, known-bug switches included (#4215's
  OFFSET_OVERFLOW_BADLY -> minOffset, #2708's failed query read as -1, ...). The spec states the
  intended behaviour, so if it rejects such a move, the profile violates an invariant: the
  explorer reports the rejected event, with the invariant id of the failing guard.
- **adversary moves** (``env=True``, scope option ``adversary``): wrong values a faulty client
  or broker could produce (a ProcessQueue starting elsewhere, an offset update that jumps, a
  pull answer that skips an offset, an orderly batch without a valid lease). The spec's guard
  is their enabling condition: a rejected adversary move is simply not taken. Accepted ones are
  explored, so a guard that is too weak shows up as a state or end invariant violation.

Broadcasting groups (scope ``message_model = "BROADCASTING"``): every client takes every queue
of the route (no allocation, no broker view), keeps its offsets in its LocalFileOffsetStore
file (``offset_flushed`` / ``offset_erased`` / reads from the file, never a broker commit), and
drops failed messages instead of sending them back. The route itself is explorer-side state
(``aux``): the fault ``route_lost`` takes a queue out of the name server's route and a later
move brings it back, each taken with the first rebalance that sees it (#4016).

Orderly clustering groups renew their locks on the schedule of ``lockMQPeriodically``
(``scheduleAtFixedRate``, first run 1 s after start, then every ``REBALANCE_LOCK_INTERVAL``,
20 s): when time reaches a run, every client with queues to lock owes one ``lockAll``
(explorer-side flag ``(LOCK_DUE, client, 0)`` in ``aux``), and time does not move on while a
running client owes it; a paused client runs the missed one when it resumes (a fixed-rate
executor runs late executions at once). Between runs a client locks one queue only on the
consume path: ``tryLockLaterAndReconsume`` calls ``lock(mq)`` when a ConsumeRequest finds the
ProcessQueue unlocked or its lease expired. Renewals at arbitrary moments (a lock thread late
while the rest of the client runs) are not modelled: the lock RPC is bounded by its timeout
(well below the time grid), and lateness comes from pauses, which are faults.

Nothing here imports the reference implementation's behaviour; only the pure allocation
strategies (`rocketspec.reference.allocation.allocate`) are used.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from rocketspec.reference.allocation import allocate
from rocketspec.reference.message_queue import MessageQueue
from rocketspec.spec.pending import retries_in_flight
from rocketspec.spec.state import M_ID, M_ORIGIN, M_R

GROUP = "G"
TOPIC = "T"
BROKER = "b"
RETRY = "%RETRY%" + GROUP
DLQ = "%DLQ%" + GROUP
FROM_WHERE = "CONSUME_FROM_FIRST_OFFSET"
# faults that exist for a broadcasting consumer: no broker offsets (no lost persist, no failed
# offset query, no admin reset) and no send-back (no failed send-back; cleanExpiredMsg is left
# out: it would send back, see docs/model-checking.md)
BROADCAST_FAULTS = {"crash", "pause", "route_lost"}
ROUTE = "route"     # aux key (ROUTE, queue key, 0) -> 1 while the queue is out of the route
LOCK_DUE = "lockdue"   # aux key (LOCK_DUE, client, 0) -> 1 while the client owes a scheduled lockAll
LOCK_FIRST_MS = 1000   # lockMQPeriodically's initial delay


@dataclass
class Move:
    label: str
    events: list
    env: bool = False                 # adversary move: guard-filtered, never a violation itself
    cost: dict = field(default_factory=dict)   # budget use: {"faults": 1} / {"failures": 1}
    aux: dict | None = None           # explorer-side variables set by the move (orderly counters)
    tick: int = 0                     # time advance before the events (ms)


def client_id(i: int) -> str:
    return f"c{i}"


def msg_id(q: int, off: int) -> str:
    return f"m{q}.{off}"


def view_id(cids) -> str:
    return "v:" + "+".join(cids)


def is_reconsume_counter(k) -> bool:
    """Whether an explorer variable (an `aux` key) is an orderly client's local retry count
    (client, queue key, offset), as opposed to a lockAll or route flag."""
    return k[0] not in (LOCK_DUE, ROUTE)


def delay_table(profile) -> list[int]:
    units = {"s": 1000, "m": 60000, "h": 3600000, "d": 86400000}
    return [0] + [int(t[:-1]) * units[t[-1]] for t in profile.delay_levels.split()]


def _mqf(key):
    return {"group": key[0], "topic": key[1], "broker": key[2], "queue": key[3]}


def E(kind, **fields):
    fields["kind"] = kind
    return fields


class Generator:
    def __init__(self, scope, profile):
        self.scope, self.p = scope, profile
        self.orderly = scope.mode == "ORDERLY"
        self.broadcast = scope.message_model == "BROADCASTING"
        self.clients = [client_id(i) for i in range(scope.consumers)]
        self.topics = {TOPIC: scope.queues}
        # a broadcasting consumer subscribes no %RETRY% topic and never sends a message back
        self.retry = scope.retry and not self.broadcast
        if self.retry:
            self.topics[RETRY] = 1
        self.delays = delay_table(profile)
        self.lease = profile.client_lock_max_live_ms
        self.block = profile.broker_lock_max_live_ms
        faults = set(scope.fault_kinds) if scope.faults else set()
        if self.broadcast:
            faults &= BROADCAST_FAULTS
        else:
            faults.discard("route_lost")     # clustering views would need the route in their id
        faults.discard("reset_by_time")      # the reference engine's only: the clients' resetOffset
        self.faults = faults
        self._alloc_cache: dict = {}
        # Time moves on a grid: every constant the model compares ages with (lease, broker lock,
        # unlock delay, pauses, retry delays) is a multiple of it, so with every event on the grid
        # "expired 1 ms after the deadline" and "expired one granule after" are the same state,
        # and deadlines rounded up to the grid keep relative timestamps from drifting by a
        # millisecond per renewal (which made orderly scopes infinite).
        # orderly clustering: lockAll on its fixed-rate schedule (see the module docstring)
        self.periodic_lock = self.orderly and not self.broadcast
        self.lock_period = profile.client_lock_interval_ms
        consts = [self.lease, self.block, profile.unlock_delay_ms, *scope.pause_ms, *self.retry_delays()]
        if self.periodic_lock:
            consts += [LOCK_FIRST_MS, self.lock_period]
        self.granule = math.gcd(*consts)
        self.store_kind = {"store": "local"} if self.broadcast else {}

    def retry_delays(self) -> list[int]:
        """The delays of the levels a send-back can reach in this scope: 3 + reconsumeTimes for
        reconsumeTimes 0..maxReconsumeTimes (the broker's level when the client asks for 0, the
        orderly client's own level, cleanExpiredMsg's 3), capped at the table's last level."""
        if not self.retry:
            return []
        top = len(self.delays) - 1
        return sorted({self.delays[min(3 + r, top)] for r in range(self.scope.max_reconsume_times + 2)})

    def initial_aux(self) -> dict:
        return {(LOCK_DUE, c, 0): 0 for c in self.clients} if self.periodic_lock else {}

    def held_counters(self, st, aux) -> dict:
        """`aux` without the orderly reconsume counters of messages their client no longer holds.

        An orderly client counts local retries on the message object in its ProcessQueue
        (``checkReconsumeTimes``: ``msg.setReconsumeTimes(r + 1)``; a rollback puts the same
        objects back). Once the message is committed, or its ProcessQueue dropped, that object is
        gone: a later pull brings a fresh copy with the broker's count. Keeping the counter would
        reuse a dead object's count and split states that RocketMQ cannot tell apart."""
        drop = None
        for k in aux:
            if not is_reconsume_counter(k):
                continue
            c, key, o = k
            qs = st.queues.get(key)
            pq = qs.pqs.get(c) if qs is not None else None
            if pq is None or not pq.live or (o not in pq.tree and o not in pq.consuming):
                drop = drop or []
                drop.append(k)
        if not drop:
            return aux
        aux = dict(aux)
        for k in drop:
            del aux[k]
        return aux

    @staticmethod
    def copy_in_schedule(st) -> bool:
        """Whether a retry copy waits in the broker's schedule (it will be delivered later, whether
        or not anyone consumes the group: spec.pending, not only what is owed)."""
        return any(state == "delayed" for _, state in retries_in_flight(st, live_only=False))

    def next_lock_run(self, now: int) -> int:
        """The first scheduled lockAll run strictly after `now` (all clients start at 0)."""
        f, p = LOCK_FIRST_MS, self.lock_period
        return f if now < f else f + ((now - f) // p + 1) * p

    # ------------------------------------------------------------------ the fixed prefix
    def setup_events(self) -> list[dict]:
        s = self.scope
        subs = {t: {"type": "TAG", "expr": "*"} for t in self.topics}
        cfg = {"max_reconsume_times": s.max_reconsume_times, "consume_from_where": FROM_WHERE,
               "consume_message_batch_max_size": 1, "strategy": s.strategy, "message_model": s.message_model}
        evs = [E("trace_started", schema_version=1, profile=self.p.name, scenario=f"explore:{s.name}",
                 config={"scope": s.to_dict()}),
               E("broker_started", broker=BROKER)]
        for t, n in self.topics.items():
            evs.append(E("topic_created", topic=t, broker=BROKER, queue_count=n))
        if self.retry:
            evs.append(E("topic_created", topic=DLQ, broker=BROKER, queue_count=1))
        for i in range(s.messages):
            q = i % s.queues
            off = i // s.queues
            mid = msg_id(q, off)
            evs.append(E("message_stored", topic=TOPIC, broker=BROKER, queue=q, offset=off, msg_id=mid,
                         origin_msg_id=mid, source="producer", reconsume_times=0))
        for c in self.clients:
            evs.append(E("client_started", client=c, group=GROUP, consume_mode=s.mode, message_model=s.message_model,
                         subscriptions=subs, config=cfg))
            evs.append(E("consumer_registered", broker=BROKER, group=GROUP, client=c))
        return evs

    # ------------------------------------------------------------------ helpers
    def _running(self, st, c) -> bool:
        cl = st.dir.clients.get(c)
        return cl is not None and cl.status == "running"

    def _pqs(self, st, c):
        """(key, qs, pq) for every ProcessQueue of client c, in key order."""
        out = []
        for key in sorted(st.queues):
            qs = st.queues[key]
            pq = qs.pqs.get(c)
            if pq is not None:
                out.append((key, qs, pq))
        return out

    def _msg(self, st, key, off):
        sq = st.stored.get((key[1], key[2], key[3]))
        return sq.msgs.get(off) if sq is not None else None

    def _store_val(self, qs, c):
        s = qs.stores.get(c)
        return None if s is None else s[0]

    def _offset_update(self, key, qs, c, off, inc):
        s = qs.stores.get(c)
        prev = None if s is None else s[0]
        if s is not None and s[1]:
            stored = prev
        elif inc and prev is not None:
            stored = max(prev, off)
        else:
            stored = off
        return E("offset_updated", client=c, **_mqf(key), offset=off, increase_only=inc, stored=stored,
                 **self.store_kind)

    def _queue(self, st, key):
        from rocketspec.spec.state import QueueState
        qs = st.queues.get(key)
        return qs if qs is not None else QueueState(key)

    def _lock(self, st, qs, key, c, now, evs) -> bool:
        """RebalanceLockManager.tryLock for one queue: append the broker's events; True if c holds it."""
        h = qs.holder
        f = dict(broker=key[2], group=key[0], topic=key[1], queue=key[3], client=c)
        if h is None or qs.lock_state == "unlocked":
            evs.append(E("lock_acquired", **f, reason="new", expires_at=now + self.block))
            return True
        if h == c and now <= qs.lock_exp:
            evs.append(E("lock_acquired", **f, reason="renewed", expires_at=now + self.block))
            return True
        if now > qs.lock_exp:
            if qs.lock_state != "expired":
                evs.append(E("lock_expired", broker=key[2], group=key[0], topic=key[1], queue=key[3], holder=h))
            evs.append(E("lock_acquired", **f, reason="takeover", expires_at=now + self.block, previous_holder=h))
            return True
        evs.append(E("lock_rejected", **f, holder=h))
        return False

    # ------------------------------------------------------------------ all moves
    def moves(self, st, now, aux, budget):
        faults_left, fails_left = budget
        out: list[Move] = []
        for c in self.clients:
            cl = st.dir.clients.get(c)
            if cl is None:
                continue
            if cl.status == "paused":
                if now >= cl.paused_until:
                    out.append(Move(f"resume {c}", [E("client_resumed", client=c, group=GROUP)]))
                continue
            if cl.status != "running":
                if cl.status == "crashed" and c in st.dir.registered.get((BROKER, GROUP), ()):
                    out.append(Move(f"channel of {c} expires", [E("consumer_unregistered", broker=BROKER,
                                                                      group=GROUP, client=c,
                                                                      reason="channel_expired")]))
                continue
            for t in self.topics:
                if self.broadcast:
                    out.extend(self._rebalance_broadcast(st, now, c, t, aux))
                else:
                    out.extend(self._rebalance(st, now, c, t, faults_left))
            if self.orderly:
                out.extend(self._lock_all(st, now, c, aux))
            for key, qs, pq in self._pqs(st, c):
                out.extend(self._pull(st, now, c, key, qs, pq, faults_left))
                out.extend(self._answer(st, now, c, key, qs, pq))
                if self.orderly:
                    out.extend(self._lock_one(st, now, c, key, qs, pq))
                    out.extend(self._orderly_consume(st, now, c, key, qs, pq, aux, fails_left))
                else:
                    out.extend(self._consume(st, now, c, key, qs, pq, fails_left, faults_left))
                if self.broadcast:
                    out.extend(self._jump_adversary(st, c, key, qs))
                else:
                    out.extend(self._persist(st, c, key, qs, faults_left))
            if self.broadcast:
                out.extend(self._persist_all_local(st, c))
            for key in sorted(st.queues):
                qs = st.queues[key]
                if qs.orphans:
                    for (oc, k) in sorted(qs.orphans):
                        if oc == c:
                            out.append(Move(f"{c} finishes orphan batch {k} on q{key[3]}", [
                                E("consume_finished", client=c, **_mqf(key), consume_id=k,
                                  status="CONSUME_SUCCESS" if not self.orderly else "SUCCESS", dropped=True)]))
            if faults_left:
                if "crash" in self.faults:
                    out.append(Move(f"crash {c}", [E("client_crashed", client=c, group=GROUP)], cost={"faults": 1}))
                if "pause" in self.faults:
                    for d in self.scope.pause_ms:
                        out.append(Move(f"pause {c} {d} ms", [E("client_paused", client=c, group=GROUP, duration=d)],
                                        cost={"faults": 1}))
        # the broker
        for key in sorted(st.queues):
            qs = st.queues[key]
            for (pc, off), n in sorted(qs.persists.items(), key=repr):
                out.append(Move(f"broker commits {off} from {pc} on q{key[3]}", [
                    E("offset_committed", broker=key[2], group=key[0], topic=key[1], queue=key[3], offset=off,
                      client=pc, source="persist", previous=qs.committed)]))
        out.extend(self._deliver(st, now))
        if faults_left and "reset" in self.faults:
            out.extend(self._reset(st, now))
        if self.broadcast:
            out.extend(self._route_moves(st, now, aux, faults_left))
        dl = self.next_deadline(st, now)
        if self.periodic_lock and dl is not None:
            if any(aux.get((LOCK_DUE, c, 0)) and self._running(st, c) for c in self.clients):
                dl = None          # a due lockAll runs before time moves on
            else:
                nxt = self.next_lock_run(now)
                # the scheduled run: every client with queues to lock owes a lockAll (a run with
                # nothing to lock changes nothing, and time passes it like any other moment)
                owe = {(LOCK_DUE, c, 0): 1 for c in self._lock_schedule_clients(st)} if nxt <= dl else None
                if owe:
                    out.append(Move(f"time +{nxt - now} ms (lockAll due)", [], tick=nxt - now, aux=owe))
                    dl = None
        if dl is not None:
            out.append(Move(f"time +{dl - now} ms", [], tick=dl - now))
        if not self.scope.oneway_delay:
            for m in out:
                self._attach_commits(st, m)
        return out

    def _attach_commits(self, st, move):
        """Without `oneway_delay`, a one-way persist that is not lost reaches the broker at once:
        its commit follows in the same move (no reordering of persists in the network)."""
        evs = move.events
        if not any(e["kind"] == "offset_persisted" and not e["lost"] for e in evs):
            return
        out = []
        committed = {}
        for e in evs:
            out.append(e)
            if e["kind"] == "offset_committed":
                committed[(e["topic"], e["queue"])] = e["offset"]
            elif e["kind"] == "offset_persisted" and not e["lost"]:
                tq = (e["topic"], e["queue"])
                if tq not in committed:
                    qs = st.queues.get((e["group"], e["topic"], e["broker"], e["queue"]))
                    committed[tq] = qs.committed if qs is not None else None
                out.append(E("offset_committed", broker=e["broker"], group=e["group"], topic=e["topic"],
                             queue=e["queue"], offset=e["offset"], client=e["client"], source="persist",
                             previous=committed[tq]))
                committed[tq] = e["offset"]
        move.events = out

    # ------------------------------------------------------------------ time
    def next_deadline(self, st, now):
        """The next moment time changes anything, rounded up to the time grid (None: never)."""
        d = self._next_deadline(st, now)
        if d is None:
            return None
        g = self.granule
        return -(-d // g) * g

    def _next_deadline(self, st, now):
        ds = []
        if self.periodic_lock and self._lock_schedule_clients(st):
            ds.append(self.next_lock_run(now))
        for cl in st.dir.clients.values():
            if cl.status == "paused" and cl.paused_until > now:
                ds.append(cl.paused_until)
        for qs in st.queues.values():
            if qs.holder is not None and qs.lock_exp + 1 > now:
                ds.append(qs.lock_exp + 1)
            for pq in qs.pqs.values():
                if pq.orderly:
                    for w in (self.lease, self.p.unlock_delay_ms):
                        t = pq.last_lock_ts + w + 1
                        if t > now:
                            ds.append(t)
        for ch in st.chains.values():
            for e in ch.entries:
                if e[0] == "delayed" and e[3] is not None and e[3] > now:
                    ds.append(e[3])
        return min(ds) if ds else None

    # ------------------------------------------------------------------ rebalance
    def _rebalance(self, st, now, c, topic, faults_left):
        reg = st.dir.registered.get((BROKER, GROUP), set())
        cids = sorted(reg)
        nq = self.topics[topic]
        mqs = [(topic, BROKER, q) for q in range(nq)]
        if cids and c in cids:
            akey = (topic, nq, c, tuple(cids))
            alloc = self._alloc_cache.get(akey)
            if alloc is None:      # the strategies are pure: computed once per view
                res = allocate(self.scope.strategy, c, [MessageQueue(*m) for m in mqs], cids)
                alloc = self._alloc_cache[akey] = frozenset((m.topic, m.broker_name, m.queue_id) for m in (res or ()))
        else:
            alloc = set()
        vid = view_id(cids)
        mine = [(key, qs, pq) for key, qs, pq in self._pqs(st, c) if key[1] == topic]
        live = {(k[1], k[2], k[3]) for k, qs, pq in mine if pq.live}
        stuck = [(k, qs, pq) for k, qs, pq in mine if not pq.live]
        v = st.views.get((GROUP, topic, vid))
        if alloc == live and not stuck and v is not None and c in v.alloc:
            return []
        if not cids:
            return []
        head = [E("allocation_computed", client=c, group=GROUP, topic=topic, strategy=self.scope.strategy,
                  mqs=[list(m) for m in mqs], cids=cids, allocated=[list(m) for m in sorted(alloc)], view=vid, ok=True)]
        drops, new = self._reconcile(st, now, c, mine, alloc)
        evs = head + drops
        moves = [Move(f"rebalance {c} {topic} view {vid}", evs + self._create_pqs(st, now, c, new, False))]
        if faults_left and "query_failure" in self.faults:
            # the offset query of a new queue fails (broker unreachable, timeout)
            withc = [m for m in new if self._queue(st, (GROUP,) + m).committed is not None]
            if withc:
                moves.append(Move(f"rebalance {c} {topic} view {vid}, offset query fails",
                                  evs + self._create_pqs(st, now, c, new, True), cost={"faults": 1}))
        if self.scope.adversary and new:
            for alt in self._create_pqs_adversary(st, now, c, new):
                moves.append(Move(f"rebalance {c} {topic} (adversary start)", evs + alt, env=True))
        return moves

    def _reconcile(self, st, now, c, mine, target):
        """updateProcessQueueTableInRebalance: the events dropping client c's ProcessQueues
        (`mine`) of queues not in `target` (with their persist and unlock), and the queues of
        `target` that need a new ProcessQueue."""
        drops = []
        for key, qs, pq in mine:
            if pq.live and (key[1], key[2], key[3]) in target:
                continue
            if pq.live:
                drops.append(E("pq_dropped", client=c, **_mqf(key), reason="reassigned"))
            drops.extend(self._remove_pq(st, now, c, key, qs, pq))
        new = [m for m in sorted(target) if (GROUP,) + m not in st.queues or c not in st.queues[(GROUP,) + m].pqs]
        return drops, new

    def _remove_pq(self, st, now, c, key, qs, pq):
        """removeUnnecessaryMessageQueue; [] if the ProcessQueue must stay (orderly, consume lock busy)."""
        evs = []
        sv = self._store_val(qs, c)
        if self.broadcast:
            # persist(mq) (the local file), then removeOffset
            if sv is not None:
                evs = self._local_persist(c, key, qs, sv) + [E("offset_removed", client=c, **_mqf(key), store="local")]
            return evs + [E("pq_removed", client=c, **_mqf(key))]
        persist = []
        if sv is not None:
            persist = [E("offset_persisted", client=c, **_mqf(key), offset=sv, lost=False, reason="remove"),
                       E("offset_removed", client=c, **_mqf(key))]
            if (c, sv) in qs.persists:
                persist = persist[1:]     # the same one-way persist is already in flight: coalesced
        if not pq.orderly:
            return persist + [E("pq_removed", client=c, **_mqf(key))]
        busy = c in qs.busy
        if self.p.orderly_remove_style == "5x":
            force = now > pq.last_lock_ts + self.p.unlock_delay_ms
            if busy and not force:
                return []
            evs = persist
        else:
            evs = persist
            if busy:
                return evs
        evs.append(E("pq_lock_changed", client=c, **_mqf(key), locked=False, last_lock_ts=pq.last_lock_ts))
        f = dict(broker=key[2], group=key[0], topic=key[1], queue=key[3], client=c)
        if qs.holder == c:
            evs.append(E("lock_released", **f))
        else:
            evs.append(E("lock_release_ignored", **f, holder=qs.holder))
        evs.append(E("pq_removed", client=c, **_mqf(key)))
        return evs

    def _read(self, qs, fail):
        if fail and qs.committed is not None:
            return -1 if self.p.offset_query_failure_as_not_found else -2
        return qs.committed if qs.committed is not None else -1

    def _pull_from_where(self, read):
        if read >= 0:
            return read
        if read == -1:
            return 0    # CONSUME_FROM_FIRST_OFFSET (and a retry topic under LAST) -> 0
        return -1

    def _create_pqs(self, st, now, c, new, fail):
        evs = []
        for mq in new:
            key = (GROUP,) + mq
            qs = self._queue(st, key)
            if self.orderly:
                evs.append(E("lock_requested", client=c, group=GROUP, broker=BROKER, queues=[list(mq)]))
                if not self._lock(st, qs, key, c, now, evs):
                    continue
            if qs.stores.get(c) is not None:
                evs.append(E("offset_removed", client=c, **_mqf(key), **self.store_kind))   # removeDirtyOffset
            if self.broadcast:
                rev, read = self._local_read(c, key, qs)
                evs.extend(rev)
            else:
                read = self._read(qs, fail)
                evs.append(E("offset_read", client=c, **_mqf(key), offset=read, source="store"))
            off = self._pull_from_where(read)
            if off < 0:
                continue
            if self.orderly:
                evs.append(E("pq_created", client=c, **_mqf(key), offset=off, from_where=FROM_WHERE,
                             locked=self.p.pq_locked_on_create))
            else:
                evs.append(E("pq_created", client=c, **_mqf(key), offset=off, from_where=FROM_WHERE))
        return evs

    def _create_pqs_adversary(self, st, now, c, new):
        """A ProcessQueue that starts somewhere else than computePullFromWhere says."""
        out = []
        for mq in new:
            key = (GROUP,) + mq
            qs = self._queue(st, key)
            if self.orderly:
                continue
            if self.broadcast:
                rev, read = self._local_read(c, key, qs)
            else:
                read = self._read(qs, False)
                rev = [E("offset_read", client=c, **_mqf(key), offset=read, source="store")]
            good = self._pull_from_where(read)
            sq = st.stored.get(mq)
            mx = sq.next if sq is not None else 0
            for off in sorted({0, mx, good + 1} - {good}):
                if off < 0:
                    continue
                out.append(rev + [E("pq_created", client=c, **_mqf(key), offset=off, from_where=FROM_WHERE)])
        return out

    # ------------------------------------------------------------------ broadcasting
    def _route(self, topic, aux):
        """The topic's queues in the name server's route, as the client's topicSubscribeInfoTable
        holds them (a queue lost by `route_lost` is out until it comes back)."""
        return [(topic, BROKER, q) for q in range(self.topics[topic])
                if not aux.get((ROUTE, (GROUP, topic, BROKER, q), 0))]

    def _route_moves(self, st, now, aux, faults_left):
        """A queue leaves the route (its broker down longer than the name server's 120 s expiry,
        or its read queues cut by an admin) and, any time later, comes back. Only rebalances read
        the route, so each change is taken together with the first rebalance that sees it (one
        move per running client whose rebalance then does something): steps between the change
        and that rebalance could as well run before the change. The last queue never leaves: a
        topic without route is not found, and the client keeps its old route."""
        out = []
        held = len(self._route(TOPIC, aux))
        running = [c for c in self.clients if self._running(st, c)]
        for q in range(self.topics[TOPIC]):
            k = (ROUTE, (GROUP, TOPIC, BROKER, q), 0)
            lost = bool(aux.get(k))
            if not lost and not (faults_left and "route_lost" in self.faults and held > 1):
                continue
            after = dict(aux)
            after[k] = 0 if lost else 1
            for c in running:
                evs = self._broadcast_rebalance_events(st, now, c, TOPIC, after)
                if not evs:
                    continue
                if lost:
                    out.append(Move(f"q{q} is back in the route; rebalance {c}", evs, aux={k: 0}))
                else:
                    out.append(Move(f"q{q} leaves the route; rebalance {c}", evs, aux={k: 1}, cost={"faults": 1}))
        return out

    def _rebalance_broadcast(self, st, now, c, topic, aux):
        plan = self._broadcast_plan(st, now, c, topic, aux)
        if plan is None:
            return []
        drops, new = plan
        evs = drops + self._create_pqs(st, now, c, new, False)
        # aux={} (no change): the move reads the explorer-side route, for independence footprints
        moves = [Move(f"rebalance {c} {topic} (broadcast)", evs, aux={})] if evs else []
        if self.scope.adversary and new:
            for alt in self._create_pqs_adversary(st, now, c, new):
                moves.append(Move(f"rebalance {c} {topic} (broadcast, adversary start)", drops + alt, env=True,
                                  aux={}))
        return moves

    def _broadcast_rebalance_events(self, st, now, c, topic, aux):
        plan = self._broadcast_plan(st, now, c, topic, aux)
        return [] if plan is None else plan[0] + self._create_pqs(st, now, c, plan[1], False)

    def _broadcast_plan(self, st, now, c, topic, aux):
        """rebalanceByTopic, BROADCASTING: the client takes every queue of the route; it computes
        no allocation (no allocation_computed event) and takes no lock. (drop events, queues to
        create), or None when the ProcessQueue table already matches the route."""
        mqset = set(self._route(topic, aux))
        mine = [(key, qs, pq) for key, qs, pq in self._pqs(st, c) if key[1] == topic]
        live = {(k[1], k[2], k[3]) for k, qs, pq in mine if pq.live}
        if mqset == live and all(pq.live for _, _, pq in mine):
            return None
        return self._reconcile(st, now, c, mine, mqset)

    def _file(self, qs, c):
        """The queue's entry in c's offsets file as the profile's code left it: None if never
        written or erased (the spec keeps an erased value, flagged, to judge later reads)."""
        loc = qs.local.get(c)
        return None if loc is None or loc[1] else loc[0]

    def _local_write(self, c, key, qs, value):
        """LocalFileOffsetStore writes the queue's entry (an event only if the file changes)."""
        if self._file(qs, c) == value:
            return []
        return [E("offset_flushed", group=key[0], topic=key[1], broker=key[2], queue=key[3], offset=value,
                  store="local", client=c)]

    def _local_persist(self, c, key, qs, value):
        """LocalFileOffsetStore.persist(mq): an empty method before #7740 (only persistAll wrote the
        file); since, it merges the queue's entry into the file."""
        if not self.p.local_offset_persist_merges:
            return []
        return self._local_write(c, key, qs, value)

    def _local_read(self, c, key, qs):
        """readOffset(READ_FROM_STORE) on the local file: (events, value); a value found is adopted
        with updateOffset(mq, v, false) before the read returns, -1 when the file has no entry."""
        v = self._file(qs, c)
        f = _mqf(key)
        if v is None:
            return [E("offset_read", client=c, **f, offset=-1, source="store")], -1
        return [E("offset_updated", client=c, **f, offset=v, increase_only=False, stored=v, store="local"),
                E("offset_read", client=c, **f, offset=v, source="store")], v

    def _persist_all_local(self, st, c):
        """The periodic persistAll (every 5 s) of LocalFileOffsetStore over the ProcessQueue table's
        queues. Before #7740 (profile switch local_offset_persist_merges off) the file is rewritten
        with those queues only: entries of queues that left erased; since, merged into the file."""
        mine = self._pqs(st, c)
        if not mine:
            return []       # persistAll of an empty set returns at once
        evs = []
        for key, qs, pq in mine:
            sv = self._store_val(qs, c)
            if sv is not None:
                evs.extend(self._local_write(c, key, qs, sv))
        if not self.p.local_offset_persist_merges:
            held = {key for key, _, _ in mine}
            for key in sorted(st.queues):
                if key[0] == GROUP and key not in held and self._file(st.queues[key], c) is not None:
                    evs.append(E("offset_erased", group=key[0], topic=key[1], broker=key[2], queue=key[3],
                                 store="local", client=c))
        return [Move(f"{c} persistAll to its offsets file", evs)] if evs else []

    # ------------------------------------------------------------------ locks
    def _lock_pqs(self, st, c):
        """The ProcessQueues lockAll sends to the broker."""
        return [(k, qs, pq) for k, qs, pq in self._pqs(st, c) if pq.live or not self.p.lock_all_skips_dropped]

    def _lock_schedule_clients(self, st) -> list:
        """The clients a scheduled lockAll run concerns: alive (running or paused) with queues to lock."""
        return [c for c in self.clients
                if st.dir.clients[c].status in ("running", "paused") and self._lock_pqs(st, c)]

    def _lock_all(self, st, now, c, aux):
        due = (LOCK_DUE, c, 0)
        if self.periodic_lock and not aux.get(due):
            return []
        pqs = self._lock_pqs(st, c)
        clear = {due: 0} if self.periodic_lock else None
        if not pqs:
            # owed, but the queues left since the run was due: the run locks nothing
            return [Move(f"lockAll {c} (no queue to lock)", [], aux=clear)] if clear else []
        evs = [E("lock_requested", client=c, group=GROUP, broker=BROKER,
                 queues=[[k[1], k[2], k[3]] for k, _, _ in pqs])]
        for key, qs, pq in pqs:
            ok = self._lock(st, qs, key, c, now, evs)
            if ok:
                evs.append(E("pq_lock_changed", client=c, **_mqf(key), locked=True, last_lock_ts=now))
            elif pq.locked:
                evs.append(E("pq_lock_changed", client=c, **_mqf(key), locked=False, last_lock_ts=pq.last_lock_ts))
        return [Move(f"lockAll {c}", evs, aux=clear)]

    def _lock_one(self, st, now, c, key, qs, pq):
        """tryLockLaterAndReconsume: a ConsumeRequest with messages finds the ProcessQueue unlocked or
        its lease expired and calls lock(mq); on success the ProcessQueue is locked, on failure
        nothing changes (the request retries later)."""
        if not self.periodic_lock or not pq.live or not pq.tree or pq.consuming or c in qs.busy:
            return []
        if pq.locked and now - pq.last_lock_ts <= self.lease:
            return []
        evs = [E("lock_requested", client=c, group=GROUP, broker=BROKER, queues=[[key[1], key[2], key[3]]])]
        if self._lock(st, qs, key, c, now, evs):
            evs.append(E("pq_lock_changed", client=c, **_mqf(key), locked=True, last_lock_ts=now))
        return [Move(f"{c} lockOneMQ q{key[1][:1]}{key[3]} (consume path)", evs)]

    # ------------------------------------------------------------------ pull
    def _pull(self, st, now, c, key, qs, pq, faults_left):
        if not pq.live or pq.pull_id is not None:
            return []
        f = _mqf(key)
        if pq.orderly:
            if not pq.locked:
                return []
            if pq.pulls == 0:
                # first pull after locking: computePullFromWhere again, from the store
                moves = []
                read = self._read(qs, False)
                off = self._pull_from_where(read)
                moves.append(Move(f"{c} first pull q{key[3]}@{off}", [
                    E("offset_read", client=c, **f, offset=read, source="store"),
                    E("pull_issued", client=c, **f, offset=off, pull_id=1)]))
                if faults_left and "query_failure" in self.faults and qs.committed is not None:
                    read = self._read(qs, True)
                    off = self._pull_from_where(read)
                    evs = [E("offset_read", client=c, **f, offset=read, source="store")]
                    if off < 0 and self.p.orderly_first_pull_recompute_bug:
                        evs.append(E("pull_issued", client=c, **f, offset=off, pull_id=1))   # #1825
                    elif off >= 0:
                        evs.append(E("pull_issued", client=c, **f, offset=off, pull_id=1))
                    else:
                        evs.append(E("pull_flow_controlled", client=c, **f, reason="exception",
                                      delay=self.p.pull_delay_when_exception_ms))
                    moves.append(Move(f"{c} first pull q{key[3]}, offset query fails", evs, cost={"faults": 1}))
                return moves
        return [Move(f"{c} pulls q{key[1][:1]}{key[3]}@{pq.next_pull}", [
            E("pull_issued", client=c, **f, offset=pq.next_pull, pull_id=1)])]

    def _answer(self, st, now, c, key, qs, pq):
        if pq.pull_id is None or pq.status == "dropped":
            return []
        sq = st.stored.get((key[1], key[2], key[3]))
        mx = sq.next if sq is not None else 0
        mn = sq.min if sq is not None else 0
        off = pq.next_pull
        f = _mqf(key)
        base = dict(client=c, **f, pull_id=pq.pull_id, offset=off, min_offset=mn, max_offset=mx)
        if mx == 0 or off == mx:
            return []      # long polling: held until a message arrives
        if off > mx or off < mn:
            gs = "OFFSET_OVERFLOW_BADLY" if off > mx else "OFFSET_TOO_SMALL"
            if off > mx:
                nxt = mn if (self.p.overflow_badly_min_if_zero and mn == 0) else mx
            else:
                nxt = mn
            evs = [E("pull_answered", **base, get_status=gs, status="OFFSET_ILLEGAL", next_offset=nxt),
                   E("pq_dropped", client=c, **f, reason="offset_illegal")]
            if self.p.controllable_offset:
                evs.append(E("offset_updated", client=c, **f, offset=nxt, increase_only=False, stored=nxt, frozen=True))
            else:
                evs.append(self._offset_update(key, qs, c, nxt, False))
            if self.broadcast:
                evs.extend(self._local_persist(c, key, qs, nxt))
            elif (c, nxt) not in qs.persists:     # an identical one-way persist in flight is coalesced
                evs.append(E("offset_persisted", client=c, **f, offset=nxt, lost=False, reason="offset_illegal"))
            evs += [E("offset_removed", client=c, **f, **self.store_kind),
                    E("pq_removed", client=c, **f)]
            return [Move(f"{c} pull q{key[3]}@{off}: {gs} -> {nxt}", evs)]
        hi = min(mx, off + self.scope.pull_batch)
        offs = list(range(off, hi))
        ids = [sq.msgs[o][M_ID] for o in offs]
        moves = [Move(f"{c} pull q{key[1][:1]}{key[3]}@{off}: FOUND {offs}", [
            E("pull_answered", **base, get_status="FOUND", status="FOUND", next_offset=hi, offsets=offs, msg_ids=ids)])]
        if self.scope.adversary and len(offs) >= 2:
            # an answer that leaves an offset out
            moves.append(Move(f"{c} pull q{key[3]}@{off}: FOUND skipping {offs[0]} (adversary)", [
                E("pull_answered", **base, get_status="FOUND", status="FOUND", next_offset=hi, offsets=offs[1:],
                  msg_ids=ids[1:])], env=True))
        return moves

    # ------------------------------------------------------------------ concurrent consumption
    def _consume(self, st, now, c, key, qs, pq, fails_left, faults_left):
        out = []
        f = _mqf(key)
        if pq.live and len(pq.batches) < self.scope.threads:
            busy = set()
            for b in pq.batches.values():
                busy.update(b)
            avail = [o for o in sorted(pq.tree) if o not in busy and pq.failed.get(o) in (None, "resubmit")]
            used = set(pq.batches) | {k for (oc, k) in qs.orphans if oc == c}
            k = 1
            while k in used:
                k += 1
            for o in avail[: self.scope.threads]:
                m = self._msg(st, key, o)
                out.append(Move(f"{c} consumes q{key[1][:1]}{key[3]}@{o}", [
                    E("consume_started", client=c, **f, consume_id=k, offsets=[o], msg_ids=[m[M_ID]])]))
        for k, batch in sorted(pq.batches.items()):
            if pq.status == "dropped":
                out.append(Move(f"{c} batch {k} returns on dropped q{key[3]}", [
                    E("consume_finished", client=c, **f, consume_id=k, status="CONSUME_SUCCESS", dropped=True,
                      offsets=list(batch))]))
                continue
            fin = E("consume_finished", client=c, **f, consume_id=k, status="CONSUME_SUCCESS", ack_index=0,
                    dropped=False, offsets=list(batch))
            out.append(Move(f"{c} batch {k} {list(batch)} q{key[1][:1]}{key[3]} CONSUME_SUCCESS",
                            [fin] + self._removed(key, qs, pq, c, list(batch))))
            if fails_left and self.broadcast:
                # broadcasting logs and drops the failed messages: no send-back, no local retry
                fin = E("consume_finished", client=c, **f, consume_id=k, status="RECONSUME_LATER", ack_index=-1,
                        dropped=False, offsets=list(batch))
                out.append(Move(f"{c} batch {k} {list(batch)} q{key[3]} RECONSUME_LATER (broadcast: dropped)",
                                [fin] + self._removed(key, qs, pq, c, list(batch)), cost={"failures": 1}))
            elif fails_left:
                fin = E("consume_finished", client=c, **f, consume_id=k, status="RECONSUME_LATER", ack_index=-1,
                        dropped=False, offsets=list(batch))
                for sb_fail in ((False, True) if faults_left and "send_back_failed" in self.faults else (False,)):
                    evs = [fin]
                    remaining = []
                    for o in batch:
                        if self.p.sendback_skips_not_contained and o not in pq.tree:
                            remaining.append(o)
                            continue    # already sent back by cleanExpiredMsg (#5481 fix)
                        m = self._msg(st, key, o)
                        evs.append(self._sb_request(c, key, o, m, 0, "consumer_send_back"))
                        if sb_fail:
                            evs.append(E("send_back_failed", client=c, group=GROUP, msg_id=m[M_ID],
                                         origin_msg_id=m[M_ORIGIN], reason="broker_unavailable"))
                            evs.append(E("consume_resubmitted", client=c, **f, offsets=[o],
                                         delay=self.p.consume_failed_resubmit_ms))
                        else:
                            if self.scope.adversary and m[M_R] >= self.scope.max_reconsume_times:
                                # a broker that retries a copy whose count reached the maximum
                                out.append(Move(f"{c} batch {k}: broker retries instead of the DLQ (adversary)",
                                                evs + self._broker_send_back(st, now, c, m, 0, adversary=True),
                                                env=True, cost={"failures": 1}))
                            evs.extend(self._broker_send_back(st, now, c, m, 0))
                            remaining.append(o)
                    if sb_fail and self.scope.adversary:
                        # a client that forgets the failed send-back and removes the message anyway
                        out.append(Move(f"{c} batch {k} RECONSUME_LATER, send-back fails, removed anyway (adversary)",
                                        evs + self._removed(key, qs, pq, c, list(batch)), env=True,
                                        cost={"failures": 1, "faults": 1}))
                    evs.extend(self._removed(key, qs, pq, c, remaining))
                    cost = {"failures": 1}
                    if sb_fail:
                        cost["faults"] = 1
                    out.append(Move(f"{c} batch {k} {list(batch)} q{key[1][:1]}{key[3]} RECONSUME_LATER"
                                    + (" (send-back fails)" if sb_fail else ""), evs, cost=cost))
        if faults_left and "clean_expired" in self.faults and pq.live and pq.tree:
            first = pq.tree_min()
            if any(first in b for b in pq.batches.values()):
                m = self._msg(st, key, first)
                evs = [self._sb_request(c, key, first, m, 3, "consumer_send_back")]
                evs.extend(self._broker_send_back(st, now, c, m, 3))
                t2 = set(pq.tree)
                t2.discard(first)
                res = min(t2) if t2 else pq.max_new + 1
                evs.append(E("pq_messages_removed", client=c, **f, offsets=[first], offset=res))
                out.append(Move(f"{c} cleanExpiredMsg q{key[3]}@{first} (listener slower than consumeTimeout)", evs,
                                cost={"faults": 1}))
        return out

    def _removed(self, key, qs, pq, c, remaining):
        tree = pq.tree
        if not tree:
            res = -1
        else:
            t2 = tree.difference(remaining)
            res = min(t2) if t2 else pq.max_new + 1
        evs = [E("pq_messages_removed", client=c, **_mqf(key), offsets=list(remaining), offset=res)]
        if res >= 0 and pq.status != "dropped":
            evs.append(self._offset_update(key, qs, c, res, True))
        return evs

    def _sb_request(self, c, key, off, m, level, via, r=None):
        return E("send_back_requested", client=c, group=GROUP, msg_id=m[M_ID], origin_msg_id=m[M_ORIGIN],
                 reconsume_times=m[M_R] if r is None else r, delay_level=level, topic=key[1], broker=key[2],
                 queue=key[3], offset=off, via=via)

    def _broker_send_back(self, st, now, c, m, level, adversary=False):
        """consumerSendMsgBack: the stored copy's count decides."""
        r = m[M_R]
        mx = self.scope.max_reconsume_times
        base = dict(broker=BROKER, group=GROUP, msg_id=m[M_ID], origin_msg_id=m[M_ORIGIN], reconsume_times=r,
                    via="consumer_send_back", client=c)
        if (r >= mx or level < 0) and not adversary:
            return [E("message_sent_back", **base, outcome="dlq", delay_level=level)] + \
                self._dlq(st, m, r + 1, 3 + r)
        lvl = min(3 + r if level == 0 else level, len(self.delays) - 1)
        return [E("message_sent_back", **base, outcome="retry", delay_level=lvl),
                self._scheduled(now, m, lvl, r + 1)]

    def _scheduled(self, now, m, lvl, r_next):
        return E("message_scheduled", broker=BROKER, msg_id=f"{m[M_ORIGIN]}~s{r_next}", origin_msg_id=m[M_ORIGIN],
                 delay_level=lvl, deliver_ts=now + self.delays[lvl], real_topic=RETRY, real_queue=0, offset=r_next,
                 group=GROUP, reconsume_times=r_next)

    def _dlq(self, st, m, r_next, kept_level):
        sq = st.stored.get((DLQ, BROKER, 0))
        off = sq.next if sq is not None else 0
        mid = f"{m[M_ORIGIN]}~d"
        lvl = 0 if self.p.dlq_clears_delay else kept_level     # #2724: the DLQ copy keeps its DELAY
        return [E("message_stored", topic=DLQ, broker=BROKER, queue=0, offset=off, msg_id=mid,
                  origin_msg_id=m[M_ORIGIN], source="dlq", reconsume_times=r_next, delay_level=lvl, group=GROUP),
                E("message_dead_lettered", broker=BROKER, group=GROUP, msg_id=mid, origin_msg_id=m[M_ORIGIN],
                  reconsume_times=r_next, offset=off)]

    def _deliver(self, st, now):
        out = []
        for ckey in sorted(st.chains):
            ch = st.chains[ckey]
            for e in ch.entries:
                if e[0] == "delayed" and e[3] is not None and e[3] <= now:
                    sq = st.stored.get((RETRY, BROKER, 0))
                    off = sq.next if sq is not None else 0
                    origin = ckey[1]
                    mid = f"{origin}~{e[1]}"
                    out.append(Move(f"schedule delivers {e[4]}", [
                        E("schedule_delivered", broker=BROKER, msg_id=e[4], origin_msg_id=origin, delay_level=e[2],
                          real_topic=RETRY, real_queue=0, group=GROUP, reconsume_times=e[1]),
                        E("message_stored", topic=RETRY, broker=BROKER, queue=0, offset=off, msg_id=mid,
                          origin_msg_id=origin, source="schedule", reconsume_times=e[1], retry_topic=TOPIC)]))
                    break
        return out

    # ------------------------------------------------------------------ offsets
    def _persist(self, st, c, key, qs, faults_left):
        sv = self._store_val(qs, c)
        if sv is None or any(pc == c for (pc, _) in qs.persists):
            return []
        f = _mqf(key)
        out = []
        if sv != qs.committed:
            out.append(Move(f"{c} persists q{key[1][:1]}{key[3]}={sv}", [
                E("offset_persisted", client=c, **f, offset=sv, lost=False, reason="periodic")]))
            if faults_left and "persist_lost" in self.faults:
                out.append(Move(f"{c} persists q{key[1][:1]}{key[3]}={sv}, lost", [
                    E("offset_persisted", client=c, **f, offset=sv, lost=True, reason="periodic"),
                    E("oneway_lost", call="persist_offset", client=c, broker=key[2], group=key[0], topic=key[1],
                      queue=key[3])], cost={"faults": 1}))
        out.extend(self._jump_adversary(st, c, key, qs))
        return out

    def _jump_adversary(self, st, c, key, qs):
        """An offset update that jumps ahead of what the ProcessQueue gives (adversary)."""
        sv = self._store_val(qs, c)
        if not self.scope.adversary or sv is None:
            return []
        out = []
        pq = qs.pqs.get(c)
        if pq is not None and pq.live:
            sq = st.stored.get((key[1], key[2], key[3]))
            mx = sq.next if sq is not None else 0
            for off in sorted({sv + 1, mx} - {sv}):
                out.append(Move(f"{c} offset jumps to {off} on q{key[3]} (adversary)", [
                    E("offset_updated", client=c, **_mqf(key), offset=off, increase_only=True, stored=max(off, sv),
                      **self.store_kind)], env=True))
        return out

    def _reset(self, st, now):
        """Admin resetOffset past maxOffset (the way a consumer's offset ends up beyond maxOffset in
        #4215; the spec counts the skip as ANOM-RESET-SKIP), and #2449's second PullRequest."""
        out = []
        for q in range(self.scope.queues):
            key = (GROUP, TOPIC, BROKER, q)
            qs = st.queues.get(key)
            sq = st.stored.get((TOPIC, BROKER, q))
            mx = sq.next if sq is not None else 0
            if mx == 0:
                continue
            v = mx + 1
            if qs is not None and qs.committed == v:
                continue
            evs = [E("offset_committed", broker=BROKER, group=GROUP, topic=TOPIC, queue=q, offset=v, source="reset",
                     previous=qs.committed if qs is not None else None)]
            if self.p.reset_offset_duplicates_pull and qs is not None:
                for c, pq in sorted(qs.pqs.items()):
                    if pq.live and pq.pull_id is not None:
                        evs.append(E("pull_issued", client=c, **_mqf(key), offset=v, pull_id=pq.pull_id + 1))
            out.append(Move(f"admin resets q{q} to {v}", evs, cost={"faults": 1}))
        return out

    # ------------------------------------------------------------------ orderly consumption
    def _orderly_consume(self, st, now, c, key, qs, pq, aux, fails_left):
        out = []
        f = _mqf(key)
        busy = qs.busy.get(c)
        if busy is None and pq.live and pq.tree and not pq.consuming:
            o = pq.tree_min()
            m = self._msg(st, key, o)
            evs = [E("messages_taken", client=c, **f, offsets=[o]),
                   E("consume_started", client=c, **f, consume_id=1, offsets=[o], msg_ids=[m[M_ID]])]
            valid = pq.locked and now - pq.last_lock_ts <= self.lease
            if valid:
                out.append(Move(f"{c} consumes q{key[1][:1]}{key[3]}@{o} (orderly)", evs))
            elif self.scope.adversary:
                out.append(Move(f"{c} consumes q{key[3]}@{o} without a valid lease (adversary)", evs, env=True))
        if busy is not None and pq.batches.get(busy[0]) is not None:
            k = busy[0]
            batch = list(pq.batches[k])
            if pq.status == "dropped":
                out.append(Move(f"{c} orderly batch {k} returns on dropped q{key[3]}", [
                    E("consume_finished", client=c, **f, consume_id=k, status="SUCCESS", dropped=True,
                      offsets=batch)]))
                return out
            fin = E("consume_finished", client=c, **f, consume_id=k, status="SUCCESS", dropped=False, offsets=batch)
            commit = self._orderly_commit(key, qs, pq, c)
            out.append(Move(f"{c} orderly batch {batch} q{key[1][:1]}{key[3]} SUCCESS", [fin] + commit))
            if fails_left:
                fin = E("consume_finished", client=c, **f, consume_id=k, status="SUSPEND_CURRENT_QUEUE_A_MOMENT",
                        dropped=False, offsets=batch)
                mx = self.scope.max_reconsume_times
                evs = [fin]
                new_aux = {}
                exceeded = True
                for o in batch:
                    m = self._msg(st, key, o)
                    r = aux.get((c, key, o), m[M_R])
                    if mx >= 0 and r >= mx:
                        rt = r + 1 if self.p.orderly_reconsume_time_plus_one else r
                        evs.append(self._sb_request(c, key, o, m, 3 + r, "orderly_producer", r=rt))
                        evs.extend(self._orderly_producer_send(st, now, c, m, rt, 3 + r))
                    else:
                        exceeded = False
                        new_aux[(c, key, o)] = r + 1
                if exceeded:
                    evs.extend(commit)
                else:
                    evs.append(E("pq_rolled_back", client=c, **f, offsets=batch))
                    evs.append(E("consume_suspended", client=c, **f, delay=self.p.pull_delay_when_suspend_ms,
                                 reason="suspend"))
                out.append(Move(f"{c} orderly batch {batch} q{key[1][:1]}{key[3]} SUSPEND", evs,
                                cost={"failures": 1}, aux=new_aux))
        return out

    def _orderly_commit(self, key, qs, pq, c):
        offs = list(pq.consuming)
        if not offs:
            return []
        nxt = offs[-1] + 1
        return [E("pq_committed", client=c, **_mqf(key), offset=nxt, offsets=offs),
                self._offset_update(key, qs, c, nxt, False)]

    def _orderly_producer_send(self, st, now, c, m, rt, lvl):
        """sendMessageBack as a producer send to %RETRY%: handleRetryAndDLQ by the header count."""
        mx = self.scope.max_reconsume_times
        mode = self.p.retry_dlq_compare
        if mode == "ge":
            to_dlq = rt >= mx
        elif mode == "gt":
            to_dlq = rt > mx
        else:
            locked = any(qs.holder is not None and now <= qs.lock_exp for k, qs in st.queues.items()
                         if k[0] == GROUP)
            to_dlq = rt > mx or locked
        base = dict(broker=BROKER, group=GROUP, msg_id=m[M_ID], origin_msg_id=m[M_ORIGIN], reconsume_times=rt,
                    via="orderly_producer", client=c)
        if to_dlq:
            return [E("message_sent_back", **base, outcome="dlq")] + self._dlq(st, m, rt, lvl)
        lvl = min(lvl, len(self.delays) - 1)
        return [E("message_sent_back", **base, outcome="retry", delay_level=lvl), self._scheduled(now, m, lvl, rt)]
