"""Store and pull: messages stored and deleted, queue snapshots, pulls issued, held, answered and
failed, and the judgement of what a pull answer hands the client (the broker's and the client's
filters)."""
from __future__ import annotations

from ..tag_rules import client_keeps
from ..filtering import DLQ_PREFIX, RETRY_PREFIX, decide, subscription
from .. import limits
from ..pop_state import SKIPPED, STORED
from ..state import M_CODE, M_ID, M_PROPS, M_TAGS, StoredQueue
from .common import _client, _end, _group_client, _q, _skip_to, reset_stray_cause
from .consume import commit_proven
from .retry import _count_lost_cause, _gc_chain


def pull_issued(st, ev, out):
    """RocketMQ: DefaultMQPushConsumerImpl.pullMessage.
    Actor: client."""
    qs = _q(st, ev)
    key = qs.key
    cid = ev["client"]
    c = st.dir.clients.get(cid)
    if c is None or c.status != "running":
        _client(st, ev, out, key)
    pq = qs.pqs.get(cid)
    off = ev["offset"]
    if ev["topic"].startswith(DLQ_PREFIX):
        out.report("INV-DLQ-1", "a pull from the DLQ topic", key)
    if pq is None:
        if not (cid in qs.reads and _polls_pqs(st, cid)):
            out.report("INV-PQ-1", f"{cid} pulls a queue it has no ProcessQueue for", key)
        # (else: the first pull of a ProcessQueue its recorder's poller never saw: created after
        # the store read and gone before the next poll; its answer is a gone ProcessQueue's)
        else:
            # its commit offset still reaches the broker: an orderly first pull re-reads the
            # store (computePullFromWhereWithException, READ_FROM_STORE puts the value back in
            # memory) after the rebalance removed the ProcessQueue, then sends what it read
            co = ev.get("commit_offset")
            if co is not None and co >= 0:
                qs.pull_commit[cid] = qs.pull_commit.get(cid, ())[-1:] + (co,)
        return
    if pq.status == "dropped" and not pq.sampled:
        out.report("INV-DROP-1", f"{cid} pulls from a dropped ProcessQueue", key)
    if pq.pull_id is not None:
        out.report("INV-PULL-1", f"second pull {ev['pull_id']} while pull {pq.pull_id} is in flight"
                   f"{reset_stray_cause(qs, cid)}", key)
    if off < 0 and pq.orderly and pq.pulls == 0:
        out.report("INV-START-1", f"orderly first pull at offset {off}; cause: the first pull re-reads the offset "
                   f"(computePullFromWhereWithException); a failed store read answers -2 "
                   f"(RemoteBrokerOffsetStore.readOffset, e.g. a query timed out across a pause), which that method "
                   f"turns into -1 instead of an error: the broker answers OFFSET_ILLEGAL and the client moves the "
                   f"queue to the broker's corrected offset, its min offset, consumed again from there", key)
    elif off < 0:
        out.report("INV-START-1", f"pull at negative offset {off}", key)
    elif off != pq.next_pull and off != pq.alt_pull:
        out.report("INV-PULL-1", f"pull at offset {off}, the ProcessQueue's next offset is {pq.next_pull}"
                   f"{reset_stray_cause(qs, cid)}", key)
    co = ev.get("commit_offset")
    if co is not None and co >= 0:
        commit_proven(st, qs, cid, co, f"pull {ev['pull_id']}'s commit offset", ev, out)
        s = qs.stores.get(cid)
        if s is not None and (key, cid) in st.sampled_stores:
            s[0] = max(s[0], co)
        elif s is not None and s[0] != co:
            out.report("INV-OFFSET-1", f"pull piggybacks commit offset {co}, the client store holds {s[0]}", key)
        # The broker commits a pull's offset after the call that may suspend it returns
        # (PullMessageProcessor.processRequest); a message arriving meanwhile wakes the held pull
        # on the hold service's thread, which answers it, and the client's next pull can be issued
        # before that commit is written: the previous pull's offset may still be committed.
        qs.pull_commit[cid] = qs.pull_commit.get(cid, ())[-1:] + (co,)
    if pq.status == "created":
        pq.status = "active"
    pq.pull_id = ev["pull_id"]
    pq.next_pull = off
    pq.alt_pull = None
    pq.pulls += 1
    qs.held.pop(cid, None)      # no store read of this client follows until its next allocation


def _polls_pqs(st, cid) -> bool:
    """Whether the trace sees `cid`'s ProcessQueues by polling (obs sampled): a short-lived one
    may then never be seen at all."""
    return any((pq := qs.pqs.get(cid)) is not None and pq.sampled for qs in st.queues.values())


def pull_held(st, ev, out):
    """RocketMQ: PullRequestHoldService (long polling).
    Actor: broker."""
    pass


def _reset_reached(qs, pq, req, sq, out) -> None:
    """A pull at an operator's offset past the end (qs.reset_ahead) that found the queue grown
    that far: no OFFSET_ILLEGAL correction comes, and the messages stored meanwhile below it are
    skipped, by the operator's write (ANOM-RESET-SKIP)."""
    if pq.broadcast or qs.reset_ahead is None or req != qs.reset_ahead:
        return
    unit = qs.units.get("")
    n = _skip_to(unit, req, sq) if unit is not None else 0
    if n:
        out.report("ANOM-RESET-SKIP", f"the group's offset was reset to {req}, past the queue's end: "
                   f"{n} messages stored meanwhile below it are skipped", qs.key)


_ILLEGAL = {"OFFSET_TOO_SMALL", "OFFSET_OVERFLOW_BADLY", "NO_MESSAGE_IN_QUEUE", "NO_MATCHED_LOGIC_QUEUE"}


def _correction_scheduled(qs, cid, next_offset) -> None:
    """An OFFSET_ILLEGAL answer schedules the client's correction (DefaultMQPushConsumerImpl:
    10 s later updateOffset(mq, nextBeginOffset, false), persist, removeProcessQueue). The task
    is the client's, not the ProcessQueue's: it runs even if the queue was removed meanwhile."""
    qs.illegal.setdefault(cid, []).append(next_offset)


def pull_answered(st, ev, out):
    """RocketMQ: DefaultMessageStore.getMessage + PullAPIWrapper.processPullResult + ProcessQueue.putMessage.
    Actor: broker."""
    qs = _q(st, ev)
    key = qs.key
    cid = ev["client"]
    pq = qs.pqs.get(cid)
    if pq is None or pq.pull_id != ev["pull_id"]:
        # the answer of a pull whose ProcessQueue is gone (removed, or replaced by a new one):
        # PullCallback.onSuccess still runs on the old PullRequest. Its messages go into the old
        # ProcessQueue, which nothing consumes, but an OFFSET_ILLEGAL answer still schedules the
        # correction, for a queue the client may no longer hold
        if ev["status"] == "OFFSET_ILLEGAL":
            _correction_scheduled(qs, cid, ev["next_offset"])
        elif ev["status"] in ("NO_NEW_MSG", "NO_MATCHED_MSG"):
            # correctTagsOffset has no dropped check either: when the old ProcessQueue holds no
            # message (removed empty, or cleared by a reset), updateOffset(mq, next, true) moves the
            # client's one store for the queue, under whatever the new ProcessQueue holds
            qs.stale_next[cid] = ev["next_offset"]
            _filtered_for_gone_pull(st, qs, cid, ev)
        return
    pq.pull_id = None
    offsets = ev.get("offsets") or ()
    if pq.status == "dropped":
        # PullCallback.onSuccess has no dropped check: FOUND messages are put into a dropped
        # ProcessQueue (nothing consumes them: ConsumeRequest checks dropped). Harmless. An
        # OFFSET_ILLEGAL answer still schedules its correction.
        for o in offsets:
            pq.put(o)
        if ev["status"] == "OFFSET_ILLEGAL":
            _correction_scheduled(qs, cid, ev["next_offset"])
        elif ev["status"] in ("NO_NEW_MSG", "NO_MATCHED_MSG"):
            # the broker filtered the range with the group's subscription all the same
            _filtered_for_gone_pull(st, qs, cid, ev)
        return
    req, nxt, gs, status = ev["offset"], ev["next_offset"], ev.get("get_status"), ev["status"]
    sq = st.stored.get((ev["topic"], ev["broker"], ev["queue"]))
    if sq is None and ev["broker"] not in st.dir.brokers:
        # the broker is not observed (yet): its store is unknown, its answer is taken as given
        pq.next_pull = nxt
        for o in offsets:
            pq.put(o)
        return
    smax = _end(sq)
    if req != pq.next_pull:
        out.report("INV-PULL-1", f"answer for offset {req}, the pull asked for {pq.next_pull}", key)
    mx = ev.get("max_offset")
    if mx is not None and mx > smax:
        out.report("INV-PULL-2", f"answer says maxOffset {mx}, only {smax} messages were stored", key)
    mn = ev.get("min_offset")
    if mn is not None and mn > (mx if mx is not None else smax):
        out.report("INV-PULL-2", f"answer says minOffset {mn} above maxOffset {mx if mx is not None else smax}", key)
    elif mn is not None and sq is not None and mn > sq.min:
        _retention(st, sq, key, mn, out)
    if status == "OFFSET_ILLEGAL":
        if mn is None:
            mn = sq.min if sq is not None else 0
        server_reset = st.profile.server_side_reset and bool(qs.resets) and nxt == qs.resets[-1]
        if gs is None and server_reset:
            # the broker's own reset (5.x PullMessageProcessor: queryThenEraseResetOffset answers
            # the queue's first pull after assignResetOffset OFFSET_RESET with the reset offset,
            # whatever the request offset and the queue's bounds)
            gs = "OFFSET_RESET"
        elif gs is None:
            # a client-side recorder sees no GetMessageStatus: DefaultMessageStore.getMessage's
            # order of cases decides it from the request and the queue's bounds
            top = mx if mx is not None else smax
            gs = ("NO_MESSAGE_IN_QUEUE" if top == 0 else "OFFSET_TOO_SMALL" if req < mn else
                  "OFFSET_OVERFLOW_BADLY" if req > top else "NO_MATCHED_LOGIC_QUEUE")
        if gs == "OFFSET_RESET":
            want = nxt if server_reset else (qs.resets[-1] if qs.resets else None)
        elif gs == "OFFSET_TOO_SMALL":
            want = mn
        elif gs == "OFFSET_OVERFLOW_BADLY":
            want = mx if mx is not None else smax
        else:
            want = 0
        if nxt != want:
            out.report("INV-PULL-2", f"{gs} at offset {req}: nextBeginOffset must be {want} "
                       f"(min {mn}, max {mx if mx is not None else smax}), answer gives {nxt}", key)
        elif qs.reset_ahead is not None and gs == "OFFSET_OVERFLOW_BADLY":
            unit = qs.units.get(pq.client if pq.broadcast else "")
            n = _skip_to(unit, nxt, sq) if unit is not None else 0
            if n:
                out.report("ANOM-RESET-SKIP", f"the reset past the end is corrected to maxOffset {nxt}: {n} messages "
                           f"stored meanwhile are skipped", key)
            # reset_ahead stays until a commit replaces the reset: the correction below is the
            # client's, 10 s later, and a crash before it leaves the broker at the reset's offset
        pq.next_pull = nxt
        # DefaultMQPushConsumerImpl (OFFSET_ILLEGAL): drop the ProcessQueue, and the correction
        _correction_scheduled(qs, pq.client, nxt)
        return
    if nxt < req:
        out.report("INV-PULL-2", f"nextBeginOffset {nxt} goes back from the request offset {req}", key)
    unit = qs.units.get(pq.client if pq.broadcast else "")
    _reset_reached(qs, pq, req, sq, out)
    bf = ev.get("broker_filtered") or ()
    cf = ev.get("client_filtered") or ()
    implied = ()
    if offsets or bf or cf or nxt > req:
        implied = _check_answer(st, qs, pq, ev, sq, offsets, bf, cf, req, nxt, out)
    if offsets:
        put = pq.put
        for o in offsets:
            put(o)
    if unit is not None:
        for o in bf:
            unit.handle(o)
        for o in cf:
            unit.handle(o)
        for o in implied:
            unit.handle(o)
    pq.next_pull = nxt
    if status != "FOUND" and not pq.tree and (not pq.consuming or pq.commit_due):
        # correctTagsOffset (msgCount == 0). msgCount counts an orderly consuming map until
        # ProcessQueue.commit: with the batch's commit due (processConsumeResult, right after the
        # hook) the correction happened only if that commit ran first
        pq.pending_upd.append(nxt)


def _filtered_for_gone_pull(st, qs, cid, ev) -> None:
    """The range a gone or dropped ProcessQueue's empty answer skipped was scanned and filtered by the
    broker with the group's subscription, not the ProcessQueue's: the messages in it that the
    group's filter rejects are owed to no one, whichever ProcessQueue asked. The store this answer
    moves (correctTagsOffset) may be committed before the new ProcessQueue's own pull scans the
    range. Only messages the filter surely rejects are credited."""
    c = st.dir.clients.get(cid)
    sq = st.stored.get((ev["topic"], ev["broker"], ev["queue"]))
    if c is None or sq is None:
        return
    unit = qs.units.get(cid if c.broadcast else "")
    if unit is None:
        return
    lo, hi = ev["offset"], min(ev["next_offset"], _end(sq))
    for o in sorted(o for o in sq.msgs if lo <= o < hi):
        if _broker_rejects(st, cid, qs.key[1], sq.msgs[o]) is True:
            unit.handle(o)


def _retention(st, sq, key, mn, out):
    """The broker's minOffset moved up: messages below it were deleted by retention. Units that
    had not consumed them lose them (ANOM-RETENTION), and nothing below is expected any more."""
    sq.min = mn
    tkey = (key[1], key[2], key[3])
    for k, qs in st.queues.items():
        if (k[1], k[2], k[3]) != tkey:
            continue
        for u, p in qs.units.items():
            lost = p.skip_to(mn, sq.next)     # only stored messages can be lost
            if lost:
                out.report("ANOM-RETENTION", f"{lost} messages below minOffset {mn} were deleted before "
                           f"{'client ' + u if u else 'group ' + k[0]} consumed them", k)
    for o in [o for o in sq.msgs if o < mn]:
        del sq.msgs[o]


def _check_answer(st, qs, pq, ev, sq, offsets, bf, cf, req, nxt, out):
    key = qs.key
    msgs = sq.msgs if sq is not None else {}
    smax = _end(sq)
    prev = req - 1
    for o in offsets:
        if o <= prev:
            out.report("INV-PULL-2", f"answer offsets not ascending/unique or before the request: {list(offsets)[:8]}", key)
            break
        prev = o
    if offsets and (offsets[-1] >= nxt or offsets[-1] >= smax):
        out.report("INV-PULL-2", f"answer lists offset {offsets[-1]} beyond nextBeginOffset {nxt} or never stored "
                   f"(max {smax})", key)
    ids = ev.get("msg_ids")
    if ids is not None:
        for o, mid in zip(offsets, ids):
            m = msgs.get(o)
            if m is not None and m[M_ID] != mid:
                out.report("INV-PULL-2", f"offset {o} is {m[M_ID]} in the store, the answer says {mid}", key)
                break
    scanned = len(offsets) + len(bf) + len(cf)
    expect = max(0, min(nxt, smax) - req)
    implied = []
    if scanned != expect:
        # offsets the answer skipped without listing them: the broker filtered them (a recorder
        # on the client sees only what the broker returned). Allowed for messages the group's
        # subscription rejects at the broker (or unknown to the trace); a matching one skipped
        # is unfaithful. Walks the stored messages, not the offset range.
        acc = set(offsets) | set(bf) | set(cf)
        hi = min(nxt, smax)
        if hi - req <= 4 * len(msgs) + 64:
            cand = (o for o in range(req, hi) if o not in acc)
        else:
            cand = sorted(o for o in msgs if req <= o < hi and o not in acc)
        missing = []
        for o in cand:
            m = msgs.get(o)
            if m is None or _broker_rejects(st, pq.client, key[1], m) is not False:
                implied.append(o)
            elif len(missing) < 8:
                missing.append(o)
        if missing:
            out.report("INV-PULL-2", f"offsets {missing[:8]} in [{req}, {nxt}) neither returned nor filtered, and the "
                       f"group's subscription matches them at the broker", key)
    # INV-FILTER-1
    topic = key[1]
    if topic.startswith(RETRY_PREFIX):
        if bf or cf:
            out.report("INV-FILTER-1", "retry-topic subscription is '*': nothing may be filtered", key)
        return implied
    c = st.dir.clients.get(pq.client)
    s = c.subs.get(topic) if c is not None else None
    if s is None:
        return implied
    others = _other_subscriptions(st, c, topic, s)
    if others:
        # the offsets the answer skipped unlisted were filtered by the broker too (seen from the client)
        _check_answer_inconsistent(qs, c, s, others, msgs, offsets, tuple(bf) + tuple(implied), cf, out)
        return implied
    sub = subscription(s.get("type"), s.get("expr"))
    if sub is None or (sub[0] == "TAG" and sub[1].every):
        if bf or cf:
            out.report("INV-FILTER-1", f"subscription '*' but offsets were filtered: {list(bf or cf)[:8]}", key)
        return implied
    for offs, wrong, what in _filter_judgements(offsets, bf, cf):
        for o in offs:
            m = msgs.get(o)
            if m is not None and wrong(*decide(sub, m[M_TAGS], m[M_CODE], m[M_PROPS])):
                out.report("INV-FILTER-1", f"offset {o} (tags {m[M_TAGS]!r}) "
                           + what.format(expr=repr(s.get("expr"))), key)
                break
    return implied


def _broker_rejects(st, cid, topic, m):
    """Whether the broker's filter rejects stored message m for client cid's group: True (some
    subscription of the group rejects it: the broker filters with one of them), False (every
    one passes it), None (unknown: no subscription, SQL92 not evaluable)."""
    if topic.startswith(RETRY_PREFIX):
        return False
    c = st.dir.clients.get(cid)
    s = c.subs.get(topic) if c is not None else None
    if s is None:
        return None
    subs = [s] + [{"type": k[0], "expr": k[1]} for k in _other_subscriptions(st, c, topic, s)]
    seen_unknown = False
    for x in subs:
        b = decide(subscription(x.get("type"), x.get("expr")), m[M_TAGS], m[M_CODE], m[M_PROPS])[0]
        if b is False:
            return True
        if b is None:
            seen_unknown = True
    return None if seen_unknown else False


def _other_subscriptions(st, c, topic, own):
    """The subscriptions of `topic` by the group's other live consumers that differ from `own`:
    {(type, expr): client}. Empty when the group subscribes alike (the broker filters with the
    same subscription the client re-checks)."""
    g = st.dir.groups.get(c.group)
    if g is None or len(g["clients"]) < 2:
        return {}
    mine = (own.get("type") or "TAG", own.get("expr"))
    out = {}
    for cid in g["clients"]:
        o = st.dir.clients.get(cid)
        if o is None or o is c or o.status not in ("running", "paused"):
            continue
        s = o.subs.get(topic)
        if s is not None:
            k = (s.get("type") or "TAG", s.get("expr"))
            if k != mine:
                out.setdefault(k, cid)
    return out


def _check_answer_inconsistent(qs, c, own, others, msgs, offsets, bf, cf, out):
    """A pull answer for a group whose consumers subscribe the topic differently. The broker
    filters with one subscription per group and topic, the last heartbeat's
    (ConsumerGroupInfo.updateSubscription keeps the newest subVersion): any member's. The client
    re-checks tags with its own (PullAPIWrapper.processPullResult) and moves past what it drops.
    What one member wants and this pull drops is lost for the group: INV-SUB-1."""
    key = qs.key
    mine = subscription(own.get("type"), own.get("expr"))
    subs = [(own.get("expr"), mine)] + [(k[1], subscription(*k)) for k in others]

    def wants(sub, m):
        return decide(sub, m[M_TAGS], m[M_CODE], m[M_PROPS])[1]

    def broker_passes(sub, m):
        return decide(sub, m[M_TAGS], m[M_CODE], m[M_PROPS])[0]

    def rechecks(m):    # the client's own re-check: tags only, SQL92 and '*' keep everything
        return mine is None or mine[0] != "TAG" or client_keeps(mine[1], m[M_TAGS])

    lost_cf, lost_bf = [], []
    for o in offsets:
        m = msgs.get(o)
        if m is not None and (not rechecks(m) or not any(broker_passes(sb, m) is not False for _, sb in subs)):
            out.report("INV-FILTER-1", f"offset {o} (tags {m[M_TAGS]!r}) was handed to the ProcessQueue but neither "
                       f"{c.cid}'s re-check of {own.get('expr')!r} nor any subscription of the group passes it", key)
            break
    for o in cf:
        m = msgs.get(o)
        if m is None:
            continue
        if rechecks(m):
            out.report("INV-FILTER-1", f"offset {o} (tags {m[M_TAGS]!r}) wrongly dropped by the client's re-check of "
                       f"{own.get('expr')!r}", key)
            break
        wanted_by = [e for e, sb in subs[1:] if wants(sb, m)]
        if wanted_by:
            lost_cf.append((o, m[M_TAGS], wanted_by[0]))
    for o in bf:
        m = msgs.get(o)
        if m is None:
            continue
        if all(broker_passes(sb, m) is True for _, sb in subs):
            out.report("INV-FILTER-1", f"offset {o} (tags {m[M_TAGS]!r}) matches every subscription of the group at "
                       f"the broker but was filtered", key)
            break
        if wants(mine, m):
            lost_bf.append((o, m[M_TAGS]))
        else:
            wanted_by = [e for e, sb in subs[1:] if wants(sb, m)]
            if wanted_by:
                lost_cf.append((o, m[M_TAGS], wanted_by[0]))
    who = ", ".join(f"{cid}: {k[1]!r}" for k, cid in others.items())
    if lost_cf:
        o, tags, want = lost_cf[0]
        out.report("INV-SUB-1", f"the group's consumers subscribe {key[1]} differently ({c.cid}: {own.get('expr')!r}; "
                   f"{who}): {len(lost_cf)} messages another member subscribes were filtered out of {c.cid}'s "
                   f"pulls (by the broker, or by {c.cid}'s own re-check), e.g. offset {o} (tags {tags!r}, subscribed "
                   f"by {want!r}); the queue is {c.cid}'s, so no consumer of the group gets them: lost", key)
    if lost_bf:
        o, tags = lost_bf[0]
        out.report("INV-SUB-1", f"the group's consumers subscribe {key[1]} differently ({c.cid}: {own.get('expr')!r}; "
                   f"{who}): the broker filtered with another member's subscription (the last heartbeat's) and "
                   f"dropped {len(lost_bf)} messages {c.cid} subscribes, e.g. offset {o} (tags {tags!r}): lost", key)


def _filter_judgements(offsets, bf, cf):
    """(offsets, wrong given (broker decision, client decision), what went wrong) for one answer."""
    return (
        (offsets, _handed_wrongly, "does not match {expr} but was handed to the ProcessQueue"),
        (bf, _broker_dropped_wrongly, "matches {expr} at the broker but was filtered"),
        (cf, _client_dropped_wrongly, "wrongly dropped by the client's re-check of {expr}"),
    )


def _handed_wrongly(b, cl):
    return b is False or cl is False


def _broker_dropped_wrongly(b, cl):
    return b is True


def _client_dropped_wrongly(b, cl):
    return b is False or cl is True


def messages_deleted(st, ev, out):
    """RocketMQ: commit-log retention (DefaultMessageStore clean expired files).
    Actor: broker."""
    tkey = (ev["topic"], ev["broker"], ev["queue"])
    sq = st.stored.get(tkey)
    if sq is None:
        sq = st.stored[tkey] = StoredQueue()
    mn = ev["min_offset"]
    # a POP retry topic's copies are stored by revive (message_revived names them), not by a send
    pops = [pq for k, pq in st.pop.items() if k[1:] == tkey]
    end = max([sq.next] + [o + 1 for pq in pops for o in pq.copies])
    if mn > end:
        out.report("GUARD", f"retention to minOffset {mn} beyond maxOffset {end}", tkey)
    if mn > sq.min:
        _retention(st, sq, (None,) + tkey, mn, out)
    for pq in pops:
        for o, cp in pq.copies.items():
            if o < mn and cp.status == STORED and cp.popped == 0:
                # a revived copy deleted before it was handed out: retention's, not a loss of revive
                cp.status, cp.since = SKIPPED, ev["ts"]


def pull_failed(st, ev, out):
    """RocketMQ: PullCallback.onException (broker error response or failed call).
    Actor: client.

    The broker rejected the pull (e.g. SUBSCRIPTION_NOT_LATEST) or the call failed: the
    PullCallback's onException ends it and re-queues the same PullRequest later, so the next
    pull asks for the same offset. Only a pull still in flight ends: a second pull while one is
    really in flight stays INV-PULL-1 (#2449)."""
    qs = _q(st, ev)
    pq = qs.pqs.get(ev["client"])
    if pq is None or pq.pull_id != ev["pull_id"]:
        return      # the ProcessQueue is gone or was replaced: nothing was in flight for it
    pq.pull_id = None
    if ev["reason"] not in ("rejected", "exception"):
        out.report("GUARD", f"pull_failed reason {ev['reason']!r}: expected rejected or exception", qs.key)


def queue_snapshot(st, ev, out):
    """RocketMQ: the queue's min/max offset when observation began (or after a gap).
    Actor: recorder.

    The queue holds [min_offset, max_offset) whose messages were not observed (observation
    began on a running broker, or a gap in observation). Below min_offset is retention; the
    next message_stored continues at max_offset."""
    tkey = (ev["topic"], ev["broker"], ev["queue"])
    sq = st.stored.get(tkey)
    if sq is None:
        sq = st.stored[tkey] = StoredQueue()
    mn, mx = ev["min_offset"], ev["max_offset"]
    if not 0 <= mn <= mx:
        out.report("GUARD", f"queue snapshot with min_offset {mn} and max_offset {mx}", tkey)
        return
    if mx < sq.next:
        out.report("GUARD", f"queue snapshot says max_offset {mx}, {sq.next} messages were stored already", tkey)
        return
    sq.next = mx
    if mn > sq.min:
        _retention(st, sq, (None,) + tkey, mn, out)


def pull_flow_controlled(st, ev, out):
    """RocketMQ: pullMessage flow control.
    Actor: client."""
    qs = _q(st, ev)
    _client(st, ev, out, qs.key)


def message_stored(st, ev, out):
    """RocketMQ: CommitLog append + ConsumeQueue dispatch.
    Actor: broker."""
    tkey = (ev["topic"], ev["broker"], ev["queue"])
    sq = st.stored.get(tkey)
    if sq is None:
        sq = st.stored[tkey] = StoredQueue()
    off = ev["offset"]
    if off != sq.next:
        out.report("GUARD", f"message stored at offset {off}, the queue's next offset is {sq.next}", tkey)
        if off > sq.next:
            sq.next = off
    sq.next = max(sq.next, off + 1)
    r = ev.get("reconsume_times", 0) or 0
    topic = ev["topic"]
    if topic[0] == "%":
        if topic.startswith(RETRY_PREFIX):
            group = topic[len(RETRY_PREFIX):]
            ckey = (group, ev["origin_msg_id"])
            mx = limits.max_reconsume(st, _group_client(st, group))
            if mx is not None and r > mx:
                out.report("INV-RETRY-1", f"retry copy {ev['msg_id']} stored with reconsume_times {r} > "
                           f"maxReconsumeTimes {mx}", ckey)
            if ev.get("source") == "schedule":
                ch = st.chains.get(ckey)
                entry = next((e for e in ch.entries if e.state == "redelivered"), None) if ch else None
                if entry is None:
                    out.report("GUARD", f"retry copy {ev['msg_id']} stored without a schedule delivery", ckey)
                else:
                    if r != entry.r_next:
                        out.report("INV-RETRY-2", f"retry copy stored with reconsume_times {r}, "
                                   f"expected {entry.r_next}{_count_lost_cause(entry, {'reconsume_times': r})}",
                                   ckey)
                    ch.entries.remove(entry)
                    _gc_chain(st, ckey, ch)
        elif topic.startswith(DLQ_PREFIX):
            if (ev.get("delay_level") or 0) > 0:
                out.report("INV-DLQ-1", f"dead-lettered copy {ev['msg_id']} keeps delay level {ev['delay_level']} "
                           f"(#2724)", (topic[len(DLQ_PREFIX):], ev["origin_msg_id"]))
            return      # DLQ copies are never consumed: nothing else to keep
    sq.msgs[off] = (ev["msg_id"], ev["origin_msg_id"], ev.get("tags"), ev.get("tags_code"), ev.get("props"), r)
    if st.profile.pop_revive_skips_last_epoch:
        if sq.stored_at is None:
            sq.stored_at = {}
        sq.stored_at[off] = ev["ts"]
