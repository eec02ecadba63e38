"""An orderly listener call receives exactly what takeMessages just took (INV-ORDER-2).

ConsumeMessageOrderlyService.ConsumeRequest.run (4.9.8) calls `processQueue.takeMessages(n)` and
hands that very list to `messageListener.consumeMessage` in the same thread; the loop takes
again only after processConsumeResult committed or rolled the batch back (or breaks, when the
queue was dropped under the consume lock). So once an exact `messages_taken` is seen, the next
listener call on that ProcessQueue must carry those offsets. A recorder outside the client
sees no `messages_taken`; the spec then infers the take at the listener call (lowest offsets
of the tree), and that path must keep accepting what it accepted before."""
import handtraces
from handtraces import TRACES

Q = dict(client="c1", group="G", topic="T", broker="broker-a", queue=0)


def prefix():
    """valid_orderly.jsonl up to the answer of pull 1: c1 holds offsets 0 and 1, locked."""
    return handtraces.load(TRACES / "valid_orderly.jsonl")[:16]


def taken(offs, ts=1, **kw):
    return {"seq": 0, "ts": ts, "kind": "messages_taken", **Q, "offsets": offs, **kw}


def started(offs, cid=1, ts=1):
    return {"seq": 0, "ts": ts, "kind": "consume_started", **Q, "consume_id": cid, "offsets": offs,
            "msg_ids": [f"m{o}" for o in offs], "reconsume_list": [0] * len(offs)}


def finished(cid, ts=2):
    return {"seq": 0, "ts": ts, "kind": "consume_finished", **Q, "consume_id": cid, "status": "SUCCESS",
            "dropped": False}


def committed(offs, ts=2):
    return {"seq": 0, "ts": ts, "kind": "pq_committed", **Q, "offset": offs[-1] + 1, "offsets": offs}


def check(evs):
    return handtraces.check(evs, "rocketmq-4.9.8")


def errors(rep):
    return [(f.inv, f.message) for f in rep.findings.errors]


def test_the_listener_gets_what_was_taken():
    rep = check(prefix() + [taken([0, 1]), started([0, 1]), finished(1), committed([0, 1])])
    assert rep.ok, errors(rep)


def test_a_listener_call_on_other_offsets_than_the_take_is_rejected():
    """The catalogue's old INV-ORDER-1 counterexample had this shape: take [0], then a
    listener call on [1]. The inferred take of [1] (lowest of the tree once 0 left it) used
    to make it pass."""
    rep = check(prefix() + [taken([0]), started([1])])
    errs = errors(rep)
    assert [i for i, _ in errs] == ["INV-ORDER-2"], errs
    assert "receives [1]" in errs[0][1] and "just took [0]" in errs[0][1]


def test_a_listener_call_on_part_of_the_take_is_rejected():
    rep = check(prefix() + [taken([0, 1]), started([0])])
    assert [i for i, _ in errors(rep)] == ["INV-ORDER-2"]


def test_a_second_take_before_any_listener_call_is_rejected():
    rep = check(prefix() + [taken([0]), taken([1])])
    errs = errors(rep)
    assert [i for i, _ in errs] == ["INV-ORDER-2"], errs
    assert "never reached a listener call" in errs[0][1]


def test_the_take_is_forgotten_once_a_listener_received_it():
    """Take, consume, commit, take, consume: each listener call matches its own take."""
    evs = prefix() + [taken([0]), started([0]), finished(1), committed([0]),
                      taken([1], ts=3), started([1], cid=2, ts=3), finished(2, ts=4), committed([1], ts=4)]
    rep = check(evs)
    assert rep.ok, errors(rep)


def test_without_messages_taken_the_take_is_inferred():
    """A recorder outside the client: listener calls only; the first must be the lowest offset."""
    evs = prefix() + [started([0]), finished(1), committed([0]), started([1], cid=2, ts=3)]
    rep = check(evs)
    assert rep.ok, errors(rep)
    rep = check(prefix() + [started([1])])
    assert [i for i, _ in errors(rep)] == ["INV-ORDER-2"]


def test_a_take_not_observed_exactly_sets_no_expectation():
    """A sampled messages_taken says the take happened at or before ts, not which listener call
    got it: only an exact one binds the next call."""
    rep = check(prefix() + [taken([0], obs="sampled"), started([0, 1])])
    assert rep.ok, errors(rep)
