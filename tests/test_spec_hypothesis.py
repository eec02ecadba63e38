"""Properties that hold for all inputs, with Hypothesis.

A small, independent model of a *correct* concurrent push consumer (one client, a two-queue
topic, its retry topic, the schedule service) produces traces step by step from choices that
Hypothesis draws. Every such trace must validate clean; mutating one offset update so that it
passes a message still pending must be rejected with INV-OFFSET-1 or INV-OFFSET-3.
"""
import heapq

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.replay import check_events
from rocketspec.traces.schema import validate_event

G, B, C = "G", "broker-a", "c1"
RT = "%RETRY%G"
QUEUES = [("T", 0), ("T", 1), (RT, 0)]


class CorrectConsumer:
    def __init__(self):
        self.ev, self.ts = [], 0
        self.msgs = {q: [] for q in QUEUES}          # offset -> (msg_id, origin, r)
        self.tree = {q: set() for q in QUEUES}
        self.max_new = {q: 0 for q in QUEUES}
        self.next_pull = {q: 0 for q in QUEUES}
        self.store = {q: None for q in QUEUES}
        self.flight = {}                              # consume_id -> (q, offset)
        self.failed_ok = set()                        # (q, offset) failed and sent back
        self.sched = []                               # (deliver_ts, sched_id, origin, r)
        self.n_ids = 0
        self.n_cons = 0
        self.n_pull = 0
        self.committed = {q: None for q in QUEUES}
        self.pending_mutations = []                   # indexes of offset_updated with a pending min
        self.e("trace_started", schema_version=1, profile="rocketmq-5.3.3", scenario="hypothesis")
        self.e("broker_started", broker=B)
        self.e("topic_created", topic="T", broker=B, queue_count=2, perm=6)
        self.e("topic_created", topic=RT, broker=B, queue_count=1, perm=6)
        self.e("client_started", client=C, group=G, consume_mode="CONCURRENTLY", message_model="CLUSTERING",
               subscriptions={"T": {"type": "TAG", "expr": "*"}, RT: {"type": "TAG", "expr": "*"}},
               config={"consume_from_where": "CONSUME_FROM_FIRST_OFFSET", "max_reconsume_times": 2})
        for topic, n in (("T", 2), (RT, 1)):
            mq = [[topic, B, i] for i in range(n)]
            self.e("allocation_computed", client=C, group=G, topic=topic, strategy="AVG", mqs=mq, cids=[C],
                   allocated=mq, view=f"v{topic}")
        for q in QUEUES:
            self.e("offset_read", client=C, **self.k(q), offset=-1, source="store")
            self.e("pq_created", client=C, **self.k(q), offset=0, from_where="CONSUME_FROM_FIRST_OFFSET")

    def k(self, q):
        return {"group": G, "topic": q[0], "broker": B, "queue": q[1]}

    def e(self, kind, **f):
        d = {"seq": len(self.ev), "ts": self.ts, "kind": kind}
        d.update(f)
        self.ev.append(d)

    def new_id(self):
        self.n_ids += 1
        return f"m{self.n_ids}"

    def store_msg(self, q, origin=None, r=0, source="producer"):
        mid = self.new_id()
        off = len(self.msgs[q])
        self.msgs[q].append((mid, origin or mid, r))
        extra = {"retry_topic": "T"} if q[0] == RT else {}
        self.e("message_stored", topic=q[0], broker=B, queue=q[1], offset=off, msg_id=mid, origin_msg_id=origin or mid,
               source=source, tags="A", tags_code=65, reconsume_times=r, **extra)

    # ---- actions (each enabled in any state; does nothing when there is nothing to do)
    def produce(self, i):
        self.store_msg(QUEUES[i % 2])

    def pull(self, i, k):
        q = QUEUES[i % 3]
        off = self.next_pull[q]
        self.n_pull += 1
        self.e("pull_issued", client=C, **self.k(q), offset=off, pull_id=self.n_pull, max_nums=k, commit_offset=-1)
        avail = len(self.msgs[q])
        offs = list(range(off, min(avail, off + k)))
        if offs:
            self.e("pull_answered", client=C, **self.k(q), pull_id=self.n_pull, offset=off, get_status="FOUND",
                   status="FOUND", next_offset=offs[-1] + 1, min_offset=0, max_offset=avail, offsets=offs,
                   msg_ids=[self.msgs[q][o][0] for o in offs])
            for o in offs:
                self.tree[q].add(o)
                self.max_new[q] = o
            self.next_pull[q] = offs[-1] + 1
        else:
            self.e("pull_answered", client=C, **self.k(q), pull_id=self.n_pull, offset=off,
                   get_status="OFFSET_OVERFLOW_ONE", status="NO_NEW_MSG", next_offset=off, min_offset=0,
                   max_offset=avail)
            if not self.tree[q]:          # correctTagsOffset
                self.update(q, off)

    def start(self, i, j):
        q = QUEUES[i % 3]
        busy = {o for (qq, o) in self.flight.values() if qq == q}
        cand = sorted(self.tree[q] - busy)
        if not cand:
            return
        o = cand[j % len(cand)]
        self.n_cons += 1
        mid, origin, r = self.msgs[q][o]
        self.e("consume_started", client=C, **self.k(q), consume_id=self.n_cons, offsets=[o], msg_ids=[mid],
               origin_msg_ids=[origin], reconsume_list=[r])
        self.flight[self.n_cons] = (q, o)

    def finish(self, j, ok):
        if not self.flight:
            return
        cid = sorted(self.flight)[j % len(self.flight)]
        q, o = self.flight.pop(cid)
        mid, origin, r = self.msgs[q][o]
        self.ts += 1
        self.e("consume_finished", client=C, **self.k(q), consume_id=cid,
               status="CONSUME_SUCCESS" if ok else "RECONSUME_LATER", ack_index=0 if ok else -1, dropped=False,
               offsets=[o])
        if not ok:
            self.e("send_back_requested", client=C, group=G, msg_id=mid, origin_msg_id=origin, reconsume_times=r,
                   delay_level=0, topic=q[0], broker=B, queue=q[1], offset=o, via="consumer_send_back")
            if r >= 2:
                self.e("message_sent_back", broker=B, group=G, msg_id=mid, origin_msg_id=origin, reconsume_times=r,
                       outcome="dlq", via="consumer_send_back", client=C)
                did = self.new_id()
                self.e("message_dead_lettered", broker=B, group=G, msg_id=did, origin_msg_id=origin,
                       reconsume_times=r + 1)
            else:
                self.e("message_sent_back", broker=B, group=G, msg_id=mid, origin_msg_id=origin, reconsume_times=r,
                       outcome="retry", delay_level=3 + r, via="consumer_send_back", client=C)
                sid = self.new_id()
                delay = {3: 10000, 4: 30000}[3 + r]
                self.e("message_scheduled", broker=B, msg_id=sid, origin_msg_id=origin, delay_level=3 + r,
                       deliver_ts=self.ts + delay, real_topic=RT, real_queue=0, offset=len(self.sched), group=G,
                       reconsume_times=r + 1)
                heapq.heappush(self.sched, (self.ts + delay, sid, origin, r + 1))
        tree = self.tree[q]
        if not tree:
            res = -1
        else:
            tree.discard(o)
            res = min(tree) if tree else self.max_new[q] + 1
        self.e("pq_messages_removed", client=C, **self.k(q), offsets=[o], offset=res)
        if res >= 0:
            if tree:
                self.pending_mutations.append((len(self.ev), min(tree), self.max_new[q]))
            self.update(q, res)

    def update(self, q, off):
        prev = self.store[q]
        stored = off if prev is None else max(prev, off)
        self.e("offset_updated", client=C, **self.k(q), offset=off, increase_only=True, stored=stored, store="remote")
        self.store[q] = stored

    def persist(self, i):
        q = QUEUES[i % 3]
        v = self.store[q]
        if v is None:
            return
        self.e("offset_persisted", client=C, **self.k(q), offset=v, lost=False, reason="persist_all")
        self.ts += 1
        self.e("offset_committed", broker=B, group=G, topic=q[0], queue=q[1], offset=v, previous=self.committed[q],
               client=C, source="persist")
        self.committed[q] = v

    def tick(self, dt):
        self.ts += dt
        while self.sched and self.sched[0][0] <= self.ts:
            _, sid, origin, r = heapq.heappop(self.sched)
            self.e("schedule_delivered", broker=B, msg_id=sid, origin_msg_id=origin, delay_level=2 + r,
                   real_topic=RT, real_queue=0, reconsume_times=r)
            self.store_msg((RT, 0), origin=origin, r=r, source="schedule")

    def drain(self):
        for _ in range(200):
            self.tick(40000)
            for j in list(self.flight):
                self.finish(0, True)
            for i in range(3):
                self.pull(i, 32)
                while self.tree[QUEUES[i]]:
                    self.start(i, 0)
                    self.finish(0, True)
            if not self.sched and not self.flight and all(not t for t in self.tree.values()) and \
                    all(self.next_pull[q] == len(self.msgs[q]) for q in QUEUES):
                break
        self.e("trace_ended", reason="quiescent")


action = hs.one_of(
    hs.tuples(hs.just("produce"), hs.integers(0, 1)),
    hs.tuples(hs.just("pull"), hs.integers(0, 2), hs.integers(1, 4)),
    hs.tuples(hs.just("start"), hs.integers(0, 2), hs.integers(0, 5)),
    hs.tuples(hs.just("finish"), hs.integers(0, 5), hs.booleans()),
    hs.tuples(hs.just("persist"), hs.integers(0, 2)),
    hs.tuples(hs.just("tick"), hs.integers(1, 15000)),
)


def build(actions):
    g = CorrectConsumer()
    for a in actions:
        getattr(g, a[0])(*a[1:])
    g.drain()
    return g


def check(evs):
    for e in evs:
        assert validate_event(e) is None, (e, validate_event(e))
    return check_events(enumerate(evs, 1), get_profile("rocketmq-5.3.3"))


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(hs.lists(action, max_size=60))
def test_correct_consumer_traces_validate_clean(actions):
    g = build(actions)
    rep = check(g.ev)
    assert rep.ok, [(v.inv, v.seq, v.message) for v in rep.findings.errors[:5]]
    assert rep.ended == "quiescent"


@SETTINGS
@given(hs.lists(action, min_size=5, max_size=60), hs.integers(0, 10 ** 6), hs.integers(1, 10))
def test_offset_update_past_a_pending_message_is_rejected(actions, pick, bump):
    g = build([("produce", 0), ("produce", 0), ("pull", 0, 4)] + list(actions)
              + [("start", 0, 0), ("start", 0, 1), ("finish", 1, True)])
    if not g.pending_mutations:
        return
    idx, pending_min, max_new = g.pending_mutations[pick % len(g.pending_mutations)]
    evs = [dict(e) for e in g.ev]
    ev = evs[idx]
    assert ev["kind"] == "offset_updated"
    bad = pending_min + bump
    ev["offset"] = ev["stored"] = bad
    rep = check(evs)
    ids = {v.inv for v in rep.findings.errors}
    assert not rep.ok
    assert ids & {"INV-OFFSET-1", "INV-OFFSET-3"}, ids
