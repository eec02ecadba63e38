"""Builds tests/traces/*.jsonl (run once; the files are committed and reviewed as text)."""
import json, os
OUT = os.path.dirname(os.path.abspath(__file__))
Q = dict(group="G", topic="T", broker="broker-a", queue=0)
RQ = dict(group="G", topic="%RETRY%G", broker="broker-a", queue=0)
SUB = {"T": {"type": "TAG", "expr": "*"}, "%RETRY%G": {"type": "TAG", "expr": "*"}}

class T:
    def __init__(self, profile="rocketmq-5.3.3"):
        self.ev = []; self.ts = 0
        self.e("trace_started", schema_version=1, profile=profile, scenario="hand-written")
    def e(self, kind, ts=None, **f):
        if ts is not None: self.ts = ts
        d = {"seq": len(self.ev), "ts": self.ts, "kind": kind}; d.update(f); self.ev.append(d); return self
    def write(self, name):
        with open(os.path.join(OUT, name), "w") as fh:
            for d in self.ev: fh.write(json.dumps(d, separators=(",", ":")) + "\n")

def setup(t, mode="CONCURRENTLY", clients=("c1",), msgs=2, tags="A"):
    t.e("broker_started", broker="broker-a")
    t.e("topic_created", topic="T", broker="broker-a", queue_count=1, perm=6)
    t.e("topic_created", topic="%RETRY%G", broker="broker-a", queue_count=1, perm=6)
    for c in clients:
        t.e("client_started", client=c, group="G", consume_mode=mode, message_model="CLUSTERING", subscriptions=SUB,
            config={"consume_from_where": "CONSUME_FROM_FIRST_OFFSET", "max_reconsume_times": -1})
    for i in range(msgs):
        t.e("message_stored", topic="T", broker="broker-a", queue=0, offset=i, msg_id=f"m{i}", origin_msg_id=f"m{i}",
            source="producer", tags=tags, tags_code=65, reconsume_times=0)

def own(t, c="c1", cids=("c1",), offset=0, read=-1, q=Q, locked=None):
    topic = q["topic"]
    t.e("allocation_computed", client=c, group="G", topic=topic, strategy="AVG", mqs=[[topic, "broker-a", 0]],
        cids=list(cids), allocated=[[topic, "broker-a", 0]] if cids.index(c) == 0 else [], view="v-" + topic)
    t.e("offset_read", client=c, **q, offset=read, source="store")
    kw = {} if locked is None else {"locked": locked}
    t.e("pq_created", client=c, **q, offset=offset, from_where="CONSUME_FROM_FIRST_OFFSET", **kw)

def pull(t, c, pid, off, offs, q=Q, ids=None, maxo=None):
    t.e("pull_issued", client=c, **q, offset=off, pull_id=pid, max_nums=32, commit_offset=-1)
    nxt = (offs[-1] + 1) if offs else off
    t.e("pull_answered", client=c, **q, pull_id=pid, offset=off, get_status="FOUND" if offs else "OFFSET_OVERFLOW_ONE",
        status="FOUND" if offs else "NO_NEW_MSG", next_offset=nxt, min_offset=0,
        max_offset=maxo if maxo is not None else nxt, offsets=offs, msg_ids=ids or [f"m{o}" for o in offs])

def consume_ok(t, c, cid, off, removed_result, stored=None, q=Q, mid=None, r=0):
    t.e("consume_started", client=c, **q, consume_id=cid, offsets=[off], msg_ids=[mid or f"m{off}"], reconsume_list=[r])
    t.e("consume_finished", client=c, **q, consume_id=cid, status="CONSUME_SUCCESS", ack_index=0, dropped=False, offsets=[off])
    t.e("pq_messages_removed", client=c, **q, offsets=[off], offset=removed_result)
    t.e("offset_updated", client=c, **q, offset=removed_result, increase_only=True,
        stored=removed_result if stored is None else stored, store="remote")

# 1. valid concurrent
t = T(); setup(t); own(t); pull(t, "c1", 1, 0, [0, 1])
t.e("consume_started", ts=10, client="c1", **Q, consume_id=1, offsets=[0], msg_ids=["m0"], reconsume_list=[0])
consume_ok(t, "c1", 2, 1, 0)
t.e("consume_finished", ts=20, client="c1", **Q, consume_id=1, status="CONSUME_SUCCESS", ack_index=0, dropped=False, offsets=[0])
t.e("pq_messages_removed", client="c1", **Q, offsets=[0], offset=2)
t.e("offset_updated", client="c1", **Q, offset=2, increase_only=True, stored=2, store="remote")
t.e("pull_issued", client="c1", **Q, offset=2, pull_id=2, max_nums=32, commit_offset=2)
t.e("offset_committed", ts=21, broker="broker-a", group="G", topic="T", queue=0, offset=2, client="c1", source="pull")
t.e("offset_persisted", ts=5000, client="c1", **Q, offset=2, lost=False, reason="persist_all")
t.e("offset_committed", ts=5001, broker="broker-a", group="G", topic="T", queue=0, offset=2, previous=2, client="c1", source="persist")
t.e("trace_ended", reason="quiescent")
valid = list(t.ev)
t.write("valid_concurrent.jsonl")

# 2. offset past an unconsumed message: offset 1 done first, removeMessage claims 2 while 0 is in flight
t = T(); setup(t); own(t); pull(t, "c1", 1, 0, [0, 1])
t.e("consume_started", ts=10, client="c1", **Q, consume_id=1, offsets=[0], msg_ids=["m0"], reconsume_list=[0])
consume_ok(t, "c1", 2, 1, 2)
t.e("trace_ended", reason="duration")
t.write("wrong_offset_past_unconsumed.jsonl")

# 2b. the broker commits past an unconsumed message (a persist of an offset the group never reached)
t = T(); setup(t); own(t); pull(t, "c1", 1, 0, [0, 1])
t.e("consume_started", ts=10, client="c1", **Q, consume_id=1, offsets=[1], msg_ids=["m1"], reconsume_list=[0])
t.e("offset_committed", ts=12, broker="broker-a", group="G", topic="T", queue=0, offset=2, client="c1", source="persist")
t.e("trace_ended", reason="duration")
t.write("wrong_broker_commit_past_unconsumed.jsonl")

# 3. two lock holders
t = T(); setup(t, mode="ORDERLY", clients=("c1", "c2"), msgs=0)
t.e("lock_requested", client="c1", group="G", broker="broker-a", queues=[["T", "broker-a", 0]])
t.e("lock_acquired", broker="broker-a", group="G", topic="T", queue=0, client="c1", reason="new", expires_at=60000)
t.e("lock_requested", ts=1000, client="c2", group="G", broker="broker-a", queues=[["T", "broker-a", 0]])
t.e("lock_acquired", broker="broker-a", group="G", topic="T", queue=0, client="c2", reason="takeover", expires_at=61000, previous_holder="c1")
t.e("trace_ended", reason="duration")
t.write("wrong_two_lock_holders.jsonl")

# 3b. valid orderly: lock, take, consume, commit; lock expiry boundary (60000 is not expired, 60001 is)
t = T(); setup(t, mode="ORDERLY", clients=("c1", "c2"), msgs=2)
t.e("lock_requested", client="c1", group="G", broker="broker-a", queues=[["T", "broker-a", 0]])
t.e("lock_acquired", broker="broker-a", group="G", topic="T", queue=0, client="c1", reason="new", expires_at=60000)
own(t, "c1", ("c1", "c2"), locked=True)
t.e("allocation_computed", client="c2", group="G", topic="T", strategy="AVG", mqs=[["T", "broker-a", 0]], cids=["c1", "c2"], allocated=[], view="v-T")
pull(t, "c1", 1, 0, [0, 1])
t.e("messages_taken", client="c1", **Q, offsets=[0])
t.e("consume_started", client="c1", **Q, consume_id=1, offsets=[0], msg_ids=["m0"], reconsume_list=[0])
t.e("consume_finished", ts=5, client="c1", **Q, consume_id=1, status="SUCCESS", dropped=False)
t.e("pq_committed", client="c1", **Q, offset=1, offsets=[0])
t.e("offset_updated", client="c1", **Q, offset=1, increase_only=False, stored=1, store="remote")
t.e("messages_taken", client="c1", **Q, offsets=[1])
t.e("consume_started", client="c1", **Q, consume_id=2, offsets=[1], msg_ids=["m1"], reconsume_list=[0])
t.e("consume_finished", ts=6, client="c1", **Q, consume_id=2, status="SUSPEND_CURRENT_QUEUE_A_MOMENT", dropped=False)
t.e("pq_rolled_back", client="c1", **Q, offsets=[1])
t.e("consume_suspended", client="c1", **Q, delay=1000, reason="suspend")
t.e("messages_taken", ts=1006, client="c1", **Q, offsets=[1])
t.e("consume_started", client="c1", **Q, consume_id=3, offsets=[1], msg_ids=["m1"], reconsume_list=[1])
t.e("consume_finished", ts=1010, client="c1", **Q, consume_id=3, status="SUCCESS", dropped=False)
t.e("pq_committed", client="c1", **Q, offset=2, offsets=[1])
t.e("offset_updated", client="c1", **Q, offset=2, increase_only=False, stored=2, store="remote")
t.e("lock_requested", ts=60000, client="c2", group="G", broker="broker-a", queues=[["T", "broker-a", 0]])
t.e("lock_rejected", broker="broker-a", group="G", topic="T", queue=0, client="c2", holder="c1")
t.e("lock_requested", ts=60001, client="c2", group="G", broker="broker-a", queues=[["T", "broker-a", 0]])
t.e("lock_expired", broker="broker-a", group="G", topic="T", queue=0, holder="c1")
t.e("lock_acquired", broker="broker-a", group="G", topic="T", queue=0, client="c2", reason="takeover", expires_at=120001, previous_holder="c1")
t.e("trace_ended", reason="duration")
t.write("valid_orderly.jsonl")

# 4. consumed after the queue was dropped, and its offset committed
t = T(); setup(t); own(t); pull(t, "c1", 1, 0, [0, 1])
consume_ok(t, "c1", 1, 0, 1)
t.e("pq_dropped", ts=100, client="c1", **Q, reason="reassigned")
t.e("consume_started", client="c1", **Q, consume_id=2, offsets=[1], msg_ids=["m1"], reconsume_list=[0])
t.e("consume_finished", ts=101, client="c1", **Q, consume_id=2, status="CONSUME_SUCCESS", ack_index=0, dropped=False, offsets=[1])
t.e("pq_messages_removed", client="c1", **Q, offsets=[1], offset=2)
t.e("offset_updated", client="c1", **Q, offset=2, increase_only=True, stored=2, store="remote")
t.e("trace_ended", reason="duration")
t.write("wrong_consume_after_drop.jsonl")

# 5. a 17th retry: the copy with reconsume_times 16 fails and goes to %RETRY% again instead of the DLQ
t = T(); setup(t, msgs=0)
levels = [0, 1000, 5000, 10000, 30000, 60000, 120000, 180000, 240000, 300000, 360000, 420000, 480000, 540000,
          600000, 1200000, 1800000, 3600000, 7200000]
t.e("message_stored", topic="%RETRY%G", broker="broker-a", queue=0, offset=0, msg_id="r16", origin_msg_id="m0",
    source="send_back_fallback", tags="A", tags_code=65, reconsume_times=16, retry_topic="T")
own(t, q=RQ, offset=0)
pull(t, "c1", 1, 0, [0], q=RQ, ids=["r16"])
t.e("consume_started", client="c1", **RQ, consume_id=1, offsets=[0], msg_ids=["r16"], origin_msg_ids=["m0"], reconsume_list=[16])
t.e("consume_finished", ts=10, client="c1", **RQ, consume_id=1, status="RECONSUME_LATER", ack_index=-1, dropped=False, offsets=[0])
t.e("send_back_requested", client="c1", group="G", msg_id="r16", origin_msg_id="m0", reconsume_times=16, delay_level=0,
    topic="%RETRY%G", broker="broker-a", queue=0, offset=0, via="consumer_send_back")
t.e("message_sent_back", broker="broker-a", group="G", msg_id="r16", origin_msg_id="m0", reconsume_times=16, outcome="retry",
    delay_level=18, via="consumer_send_back", client="c1")
t.e("message_scheduled", broker="broker-a", msg_id="s17", origin_msg_id="m0", delay_level=18, deliver_ts=10 + levels[18],
    real_topic="%RETRY%G", real_queue=0, offset=0, group="G", reconsume_times=17, topic="SCHEDULE_TOPIC_XXXX", queue=17)
t.e("pq_messages_removed", client="c1", **RQ, offsets=[0], offset=1)
t.e("offset_updated", client="c1", **RQ, offset=1, increase_only=True, stored=1, store="remote")
t.e("schedule_delivered", ts=10 + levels[18], broker="broker-a", msg_id="s17", origin_msg_id="m0", delay_level=18,
    real_topic="%RETRY%G", real_queue=0, reconsume_times=17)
t.e("message_stored", topic="%RETRY%G", broker="broker-a", queue=0, offset=1, msg_id="r17", origin_msg_id="m0",
    source="schedule", tags="A", tags_code=65, reconsume_times=17, retry_topic="T")
t.e("trace_ended", reason="duration")
t.write("wrong_17th_retry.jsonl")

# 5b. the same copy dead-lettered correctly (valid)
ok = [e for e in t.ev if e["kind"] not in ("message_scheduled", "schedule_delivered") and not (e["kind"] == "message_stored" and e.get("offset") == 1)]
t2 = T(); t2.ev = []
for e in ok:
    e = dict(e)
    if e["kind"] == "message_sent_back":
        e.update(outcome="dlq"); e.pop("delay_level")
    if e["kind"] == "trace_ended":
        t2.ev.append({"seq": 0, "ts": e["ts"], "kind": "message_dead_lettered", "broker": "broker-a", "group": "G",
                      "msg_id": "d0", "origin_msg_id": "m0", "reconsume_times": 17, "offset": 0})
        t2.ev.append({"seq": 0, "ts": e["ts"], "kind": "message_stored", "topic": "%DLQ%G", "broker": "broker-a", "queue": 0,
                      "offset": 0, "msg_id": "d0", "origin_msg_id": "m0", "source": "dlq", "reconsume_times": 17, "group": "G"})
        e["reason"] = "quiescent"
    t2.ev.append(e)
for i, e in enumerate(t2.ev): e["seq"] = i
t2.write("valid_dlq.jsonl")

# 6. consuming from the DLQ
t = T(); setup(t, msgs=0)
DQ = dict(group="G", topic="%DLQ%G", broker="broker-a", queue=0)
t.e("message_stored", topic="%DLQ%G", broker="broker-a", queue=0, offset=0, msg_id="d0", origin_msg_id="m0", source="dlq",
    reconsume_times=17, group="G")
t.e("pq_created", client="c1", **DQ, offset=0)
t.e("pull_issued", client="c1", **DQ, offset=0, pull_id=1, max_nums=32, commit_offset=-1)
t.e("pull_answered", client="c1", **DQ, pull_id=1, offset=0, get_status="FOUND", status="FOUND", next_offset=1, max_offset=1, offsets=[0], msg_ids=["d0"])
t.e("consume_started", client="c1", **DQ, consume_id=1, offsets=[0], msg_ids=["d0"], reconsume_list=[17])
t.e("trace_ended", reason="duration")
t.write("wrong_dlq_consume.jsonl")

# 7. a message never consumed at quiescence
t = T(); setup(t); own(t); pull(t, "c1", 1, 0, [0, 1])
consume_ok(t, "c1", 1, 0, 1)
t.e("trace_ended", reason="quiescent")
t.write("wrong_loss_at_quiescence.jsonl")

# 8. two pulls in flight for one ProcessQueue (#2449: a second PullRequest for the queue)
t = T(); setup(t); own(t)
t.e("pull_issued", client="c1", **Q, offset=0, pull_id=1, max_nums=32, commit_offset=-1)
t.e("pull_issued", client="c1", **Q, offset=0, pull_id=2, max_nums=32, commit_offset=-1)
t.e("trace_ended", reason="duration")
t.write("wrong_two_pullers.jsonl")

# bad input
lines = [json.dumps(e, separators=(",", ":")) for e in valid]
def bad(name, ls):
    with open(os.path.join(OUT, name), "w") as fh: fh.write("\n".join(ls) + "\n")
bad("bad_malformed.jsonl", lines[:5] + ['{"seq":5,"ts":0,"kind":"message_stored",'] + lines[6:])
m = json.loads(lines[5]); del m["offset"]
bad("bad_missing_field.jsonl", lines[:5] + [json.dumps(m)] + lines[6:])
m = json.loads(lines[5]); m["kind"] = "message_teleported"
bad("bad_unknown_kind.jsonl", lines[:5] + [json.dumps(m)] + lines[6:])
a, b = json.loads(lines[6]), json.loads(lines[7]); a["seq"], b["seq"] = b["seq"], a["seq"]
bad("bad_out_of_order.jsonl", lines[:6] + [json.dumps(a), json.dumps(b)] + lines[8:])
m = json.loads(lines[0]); m["profile"] = "rocketmq-0.0.1"
bad("bad_unknown_profile.jsonl", [json.dumps(m)] + lines[1:])
