"""The spec's state variables, decomposed by key.

TLA-style: the state is a record of variables; here each variable family is a dict keyed the
way trace events are keyed (docs/trace-conventions.md), so that one key's state can be replayed
and inspected on its own:

- ``queues[(group, topic, broker, queue)]`` -> QueueState: the broker's committed offset and its
  last flush, the broker lock entry, each client's ProcessQueue view and offset store entry for
  that queue, the one-way persists in flight, and the group's progress over the queue's
  messages (per client in broadcasting mode).
- ``stored[(topic, broker, queue)]`` -> StoredQueue: the queue's messages (max offset and the
  messages still needed to judge pulls and filters).
- ``chains[(group, origin_msg_id)]`` -> Chain: send-back requests and retry copies in flight.
- ``views[(group, topic, view)]`` -> View: allocations computed from one view.
- ``dir`` -> Directory: clients, groups, brokers, topics (bounded by the deployment).

Values are plain Python objects with ``__slots__`` (fast to mutate during trace replay).
``copy_state`` deep-copies, ``freeze`` turns any state into a hashable canonical value (for the
model checker's visited set), ``compact`` gives a short JSON-able summary for reports.
"""
from __future__ import annotations

import copy as _copy
import heapq
from dataclasses import dataclass
from typing import NamedTuple

from rocketspec.rocketmq.profiles import Profile


class Client:
    __slots__ = ("cid", "group", "mode", "model", "subs", "config", "status", "paused_until",
                 "from_where", "max_reconsume", "limits", "pauses", "lock_req_ts", "returned_ends")

    def __init__(self, cid, group, mode, model, subs, config):
        self.cid, self.group, self.mode, self.model = cid, group, mode, model
        self.subs = subs or {}
        self.config = config or {}
        self.status = "running"           # running | paused | stopped | crashed
        self.paused_until = 0
        from .limits import BadConfig

        fw = _cfg(self.config, "from_where", "consume_from_where", "consumeFromWhere")
        if fw is not None and type(fw) is not str:
            key = next(k for k in ("from_where", "consume_from_where", "consumeFromWhere")
                       if self.config.get(k) is not None)
            raise BadConfig(f"{key}: expected a ConsumeFromWhere name, e.g. 'CONSUME_FROM_LAST_OFFSET', "
                            f"got {fw!r}"[:200])
        self.from_where = fw or "CONSUME_FROM_LAST_OFFSET"
        mr = _cfg(self.config, "max_reconsume_times", "maxReconsumeTimes")
        if mr is not None and type(mr) is not int:
            raise BadConfig(f"max_reconsume_times: expected an integer, got {mr!r}"[:200])
        self.max_reconsume = -1 if mr is None else mr
        self.limits = None                # spec.limits.ClientLimits (set by client_started)
        self.pauses: tuple = ()           # the last few (start ts, duration) pauses, to name causes
        self.lock_req_ts = None           # ts of its last lock request (bounds the broker's lock update time)
        # each stored queue's end when its start() returned (client_start_returned, schema v4); None
        # until then: what a first start at LAST may skip by design (#9281)
        self.returned_ends: dict | None = None

    @property
    def orderly(self) -> bool:
        return self.mode == "ORDERLY"

    @property
    def broadcast(self) -> bool:
        return self.model == "BROADCASTING"


def _cfg(config, *names):
    if not isinstance(config, dict):
        return None
    for n in names:
        if n in config and config[n] is not None:
            return config[n]
    return None


class Directory:
    __slots__ = ("brokers", "topics", "clients", "groups", "registered", "alloc", "alloc_prev", "started",
                 "profile_name", "scenario", "seed", "broker_limits", "client_default", "queue_keys", "marks")

    def __init__(self):
        self.brokers: dict[str, int] = {}                 # broker -> restart count
        self.topics: dict[tuple, tuple] = {}              # (topic, broker) -> (queue_count, perm)
        self.clients: dict[str, Client] = {}
        self.groups: dict[str, dict] = {}                 # group -> {"mode", "model", "clients": set}
        self.registered: dict[tuple, set] = {}            # (broker, group) -> client ids
        self.alloc: dict[tuple, frozenset] = {}           # (client, topic) -> allocated queues (latest)
        self.alloc_prev: dict[tuple, frozenset] = {}      # (client, topic) -> the allocation before it
        # (group, topic) -> the keys of SpecState.queues of that group and topic: an index, so that
        # an allocation visits its own queues, not every queue of the deployment
        self.queue_keys: dict[tuple, set] = {}
        self.started = False
        self.profile_name = None
        self.scenario = None
        self.seed = None
        self.broker_limits: dict = {}                     # broker -> spec.limits.BrokerLimits
        self.client_default = None                        # ClientLimits of the profile (unknown clients)
        self.marks = False                                # schema v4: client_start_returned is written


class PQ:
    """One client's ProcessQueue for one queue, as the spec sees it."""

    __slots__ = ("client", "status", "gen", "tree", "heap", "consuming", "max_new", "next_pull", "alt_pull",
                 "pull_id", "pulls", "locked", "last_lock_ts", "batches", "failed", "pending_upd",
                 "created_ts", "orderly", "broadcast", "retry_topic", "expired", "dup_seen", "commit_due", "sampled",
                 "unheard", "commit_proof", "dead", "removed_ts")

    def __init__(self, client, gen, offset, ts, orderly, broadcast, retry_topic):
        self.client = client
        self.status = "created"
        self.gen = gen
        self.tree: set[int] = set()       # msgTreeMap keys
        self.heap: list[int] = []         # lazy min-heap over tree
        self.consuming: list[int] = []    # orderly consumingMsgOrderlyTreeMap keys, ascending
        self.max_new = 0                  # queueOffsetMax: last *new* offset put
        self.next_pull = offset           # offset the next pull must ask for
        self.alt_pull = None              # orderly first-pull recompute (store re-read)
        self.pull_id = None               # pull in flight
        self.pulls = 0
        self.locked = False
        self.last_lock_ts = 0
        self.batches: dict[int, tuple] = {}   # consume_id -> offsets in flight
        self.failed: dict[int, str] = {}      # concurrent: offset -> failed | requested | resubmit
        self.pending_upd: list = []           # offsets an offset_updated may carry next
        self.created_ts = ts
        self.orderly = orderly
        self.broadcast = broadcast
        self.retry_topic = retry_topic
        self.expired: set[int] = set()        # in flight, but sent back by cleanExpiredMsg (handled)
        self.dup_seen: set[int] = set()       # orderly: taken offsets already counted as duplicates when consumed
        self.dead: set[int] = set()           # orderly: offsets this ProcessQueue sent to the DLQ (checkReconsumeTimes)
        self.removed_ts = None                # seen leaving the table by polling, at this ts
        self.commit_due = False               # orderly: the listener returned SUCCESS/COMMIT; commit() follows
        self.sampled = False                  # its table entry and flags are seen by polling (a recorder)
        # orderly: what an exact messages_taken took that no listener call has received yet
        # (ConsumeRequest.run hands the listener exactly that list, before any other take)
        self.unheard: tuple | None = None
        # orderly: (committed offsets, value, what carried it, its seq) when a pull or persist of
        # a polled store proved a due commit (consume.commit_proven), until the next batch
        self.commit_proof: tuple | None = None

    def tree_min(self):
        h, t = self.heap, self.tree
        while h and h[0] not in t:
            heapq.heappop(h)
        return h[0] if h else None

    def put(self, off):
        if off in self.tree:
            return False
        self.tree.add(off)
        heapq.heappush(self.heap, off)
        self.max_new = off
        return True

    def pending_min(self, taken=True):
        """Lowest offset still pending in this ProcessQueue (tree, taken unless not asked, in flight)."""
        m = self.tree_min()
        if taken and self.consuming and (m is None or self.consuming[0] < m):
            m = self.consuming[0]
        ex = self.expired
        for offs in self.batches.values():
            for x in offs:
                if (m is None or x < m) and x not in ex:
                    m = x
        return m

    @property
    def live(self) -> bool:
        return self.status == "created" or self.status == "active"


class Progress:
    """A consumer unit's progress over one queue: the group (clustering) or one client
    (broadcasting). Offsets below `wm` are handled; `done` holds handled offsets >= wm."""

    __slots__ = ("start", "wm", "done", "skipped", "had_offset")

    def __init__(self, start):
        self.start = start
        self.wm = start
        self.done: set[int] = set()
        self.skipped = 0
        # a client of the unit had an offset for the queue in its offset table (updateOffset ran);
        # names the cause when a later start finds none (INV-LOSS-1)
        self.had_offset = False

    def handle(self, off) -> bool:
        """Mark off handled; False if it already was (a duplicate)."""
        if off < self.wm or off in self.done:
            return False
        if off == self.wm:
            wm = off + 1
            d = self.done
            while wm in d:
                d.discard(wm)
                wm += 1
            self.wm = wm
        else:
            self.done.add(off)
        return True

    def handled(self, off) -> bool:
        return off < self.wm or off in self.done

    def unhandled_count(self, lo: int, hi: int) -> int:
        """How many offsets in [lo, hi) are not handled (without walking the range)."""
        lo = max(lo, self.wm)
        if hi <= lo:
            return 0
        return (hi - lo) - sum(1 for o in self.done if lo <= o < hi)

    def unhandled_first(self, lo: int, hi: int, limit: int = 8) -> list:
        """The first `limit` unhandled offsets in [lo, hi): steps over handled ones only."""
        o = max(lo, self.wm)
        d = self.done
        out = []
        while o < hi and len(out) < limit:
            if o not in d:
                out.append(o)
            o += 1
        return out

    def skip_to(self, top: int, count_below: int | None = None) -> int:
        """Treat every offset below `top` as handled (skipped: retention, an operator reset, a
        start past them). Returns how many of those below `count_below` (default `top`: offsets
        that exist) were not handled yet. Offsets handled out of order at or above `top` stay."""
        if top <= self.wm:
            return 0
        d = self.done
        hi = top if count_below is None else min(top, count_below)
        left = self.unhandled_count(self.wm, hi)
        self.skipped += left
        self.done = d = {o for o in d if o >= top}
        wm = top
        while wm in d:
            d.discard(wm)
            wm += 1
        self.wm = wm
        return left

    def first_unhandled(self):
        return self.wm


class QueueState:
    __slots__ = ("key", "committed", "flushed", "lock_state", "holder", "lock_exp", "lock_ts", "lock_epoch",
                 "pqs", "stores", "local", "persists", "units", "busy", "reads", "pull_commit", "orphans",
                 "orphan_outcome", "reset_drops", "illegal", "resets", "written_ahead", "reset_ahead", "overlaps", "batch_max", "held",
                 "lost_entry", "released", "stale_next", "granted", "reset_strays", "listed", "persist_floor", "sample_floor", "due_sendbacks", "said", "said_calls",
                 "said_floor")

    def __init__(self, key):
        self.key = key
        self.committed = None           # broker ConsumerOffsetManager value (None: no entry)
        self.flushed = None             # broker's last flushed value
        self.lock_state = "unlocked"    # QueueLockLifecycle state
        self.holder = None
        self.lock_exp = 0               # entry expired at any ts > lock_exp
        self.lock_ts = 0
        self.lock_epoch = 0             # broker restart count when the entry was made
        self.pqs: dict[str, PQ] = {}
        self.stores: dict[str, list] = {}       # client -> [value, frozen]
        self.local: dict[str, list] = {}        # client -> [flushed value, erased] (LocalFileOffsetStore file)
        self.persists: dict[tuple, int] = {}    # (client, offset) -> one-way persists in flight
        self.units: dict[str, Progress] = {}    # "" (clustering group) or client id (broadcast)
        self.busy: dict[str, Busy] = {}         # orderly: client -> its listener call in progress
        self.granted: dict[str, int] = {}       # client -> when the broker last granted it the lock
        # client -> when its lockAll last named the queue while it held the live lock: lockAll names
        # only the queues of its ProcessQueue table, so its ProcessQueue was there by then
        self.listed: dict[str, int] = {}
        self.reads: dict[str, tuple] = {}       # client -> (last store read (READ_FROM_STORE), queue end then)
        self.pull_commit: dict[str, tuple] = {}  # client -> commit offsets piggybacked on its last pulls, not yet committed
        self.orphans: dict[tuple, tuple] = {}   # (client, consume_id) -> offsets: batches of removed pqs
        self.orphan_outcome: dict[str, OrphanOutcome] = {}  # orderly: client -> orphan batch whose commit/rollback may follow
        self.resets: list[int] = []             # recent operator resets of the group's offset (newest last)
        self.written_ahead: set = set()         # those of them written past the queue's end at the time
        self.reset_drops: dict = {}             # client whose ProcessQueue an operator's reset dropped (until removed) -> when its update may come
        # client -> the offsets of its illegal-offset corrections still to run: the pull answer's
        # task (executeTaskLater, 10 s) runs updateOffset whether or not the ProcessQueue is still there
        self.illegal: dict[str, list] = {}
        self.reset_ahead = None                 # a reset past the queue's end, not yet corrected
        self.overlaps: frozenset = frozenset()  # orderly: (client, consume_id) batches already reported overlapped
        self.batch_max = 1                      # orderly: the largest batch committed on the queue
        # client -> the values the broker table held for the queue, replaced since that client's
        # store read could have been issued (its allocation of the topic), oldest first (None: no
        # entry); at most HELD_MAX. A remote read answers any of them or the current value.
        self.held: dict[str, tuple] = {}
        self.lost_entry = None                  # the committed offset the broker's table lost (offset_erased)
        self.released: Released | None = None  # the last unlock of the broker's lock entry
        # client -> next offset of the last NO_NEW_MSG/NO_MATCHED_MSG answer to a pull of a gone
        # ProcessQueue: correctTagsOffset on that old PullRequest may set the store to it
        self.stale_next: dict[str, int] = {}
        # client -> when an operator's reset removes, without dropping, the ProcessQueue its
        # rebalance added during the reset's wait: that PullRequest pulls and consumes on
        self.reset_strays: dict[str, int] = {}
        # client -> (its ProcessQueue's gen, the store's value at its last persist of the queue):
        # RemoteBrokerOffsetStore.persistAll reads a value after the RPC before it, so a persist
        # carries at least the value seen at the previous one (spec.actions.offsets.offset_persisted)
        self.persist_floor: dict[str, tuple] = {}
        # client -> (its ProcessQueue's gen, the store's value the spec held after the client's last
        # poll of it): the next poll reads the table after that event, so (increaseOnly) at least this
        # (spec.actions.offsets._sampled_store)
        self.sample_floor: dict[str, tuple] = {}
        # client -> offsets its replaced or removed ProcessQueue's listener calls failed and did not
        # send back yet: processConsumeResult's send-back loop goes on with the ProcessQueue its
        # ConsumeRequest holds (spec.actions.retry.send_back_requested)
        self.due_sendbacks: dict[str, set] = {}
        # judged at a level without the client's internals (spec/actions/listener_results.py):
        # offset -> what the listener calls said of its message; (client, consume_id) -> a call
        self.said: dict[int, list] = {}
        self.said_calls: dict[tuple, tuple] = {}
        self.said_floor = -1        # the highest offset the broker committed: below it the group moved on


# A remote store read is a round trip: another client's commit may land between the broker's
# answer and its arrival. Only the newest replaced values are kept (a read is answered within
# milliseconds of its allocation; more than this many commits of one queue in between would be
# a read outliving the commits of a whole pull cycle).
HELD_MAX = 8


class StoredQueue:
    __slots__ = ("next", "min", "msgs", "stored_at")

    def __init__(self):
        self.next = 0                   # maxOffset: the next offset to be written
        self.min = 0
        self.msgs: dict[int, tuple] = {}   # offset -> Msg
        # offset -> store time, kept only under a profile whose revive skips a message stored
        # after its checkpoint's pop time (#7914), to name that cause
        self.stored_at: dict[int, int] | None = None


# Msg fields (a tuple, cheap to store): msg_id, origin, tags, tags_code, props, reconsume_times
M_ID, M_ORIGIN, M_TAGS, M_CODE, M_PROPS, M_R = range(6)


class Busy(NamedTuple):
    """An orderly client's listener call in progress on a queue (one consume thread per queue)."""
    consume_id: object
    start_ts: int


class Released(NamedTuple):
    """The last unlock of a queue's broker lock entry."""
    client: str
    ts: int


class OrphanOutcome(NamedTuple):
    """An orderly batch of a removed ProcessQueue whose commit or rollback may follow at `ts`."""
    offsets: tuple
    ts: int


class ScheduleDone(NamedTuple):
    """A schedule copy delivered: the copy's reconsume count, and the broker's restarts then."""
    reconsume_times: int
    restarts: int


class SendBack(NamedTuple):
    """A consumer's send-back request (sendMessageBack) waiting for the broker's outcome."""
    reconsume_times: int
    delay_level: int
    via: str | None
    queue_key: tuple | None     # the queue the message was consumed from (None: not known)
    offset: int | None
    ts: int


@dataclass(slots=True)
class RetryCopy:
    """One %RETRY% copy of a message on its way: sent back, delayed, redelivered."""
    state: str                  # "sent_back" | "delayed" | "redelivered"
    r_next: int                 # the reconsume count the copy carries
    level: int                  # its delay level
    deliver_ts: int | None      # when the schedule delivers it
    sched_id: str | None        # the schedule copy's msg_id
    from_msg: str | None        # the msg_id it was sent back from
    sent_ts: int | None = None  # when the send-back was requested (None: not seen)

    def frozen(self) -> tuple:
        # the send time is left out when unknown: one canonical form per copy
        f = (self.state, self.r_next, self.level, self.deliver_ts, self.sched_id, self.from_msg)
        return f if self.sent_ts is None else f + (self.sent_ts,)


class Chain:
    __slots__ = ("requests", "entries", "accepted", "levels")

    def __init__(self):
        self.requests: dict[tuple, SendBack] = {}   # (client, msg_id) -> its send-back request
        self.entries: list[RetryCopy] = []
        self.accepted: set[tuple] = set()        # (client, msg_id) send-backs accepted
        self.levels: dict[tuple, int] = {}       # (client, msg_id) -> its last consumer send-back's delay level


class View:
    __slots__ = ("mqs", "cids", "strategy", "alloc", "owner")

    def __init__(self, mqs, cids, strategy):
        self.mqs, self.cids, self.strategy = mqs, cids, strategy
        self.alloc: dict[str, frozenset] = {}
        self.owner: dict[tuple, str] = {}


class SpecState:
    """The whole spec state. Mutated in place by `spec.actions.step`; copy with `copy_state`."""

    __slots__ = ("profile", "dir", "queues", "stored", "chains", "views", "ended", "counts", "sched_done",
                 "sampled_stores", "pop", "pop_origin", "pop_called", "pop_asked", "said_ids", "said_lost")

    def __init__(self, profile: Profile):
        self.profile = profile
        self.dir = Directory()
        self.queues: dict[tuple, QueueState] = {}
        self.stored: dict[tuple, StoredQueue] = {}
        self.chains: dict[tuple, Chain] = {}
        self.views: dict[tuple, View] = {}
        self.ended = None
        self.counts: dict[str, int] = {}
        self.sched_done: dict[str, ScheduleDone] = {}   # schedule copy id -> its delivery
        self.sampled_stores: set = set()         # (queue key, client) whose offset store a recorder polls
        self.pop: dict = {}                      # (group, stored topic, broker, queue) -> spec.pop_state.PopQueue
        self.pop_origin: dict = {}               # a popped copy's msg_id -> its message's first id
        self.pop_called: dict = {}               # group -> the messages (first ids) a POP listener call received
        # (client, pop id) -> spec.pop_state.Asked: an orderly pop with an attempt id, until its answer
        self.pop_asked: dict = {}
        self.said_ids: dict = {}                 # (group, msg id or origin id) -> (queue key, offset) of QueueState.said
        # (group, msg id or origin id) -> [queue key, the loss's words]: a declared-unconsumed message a
        # commit passed, lost unless a listener call of the group receives it again before the end
        self.said_lost: dict = {}
        # a popped copy's msg_id -> (its checkpoint's pop time, the id revive put back in its place):
        # the revive's read at its offset returned another message (#7724)


def copy_state(state: SpecState) -> SpecState:
    """A deep copy (the profile is shared: it is immutable)."""
    memo = {id(state.profile): state.profile}
    return _copy.deepcopy(state, memo)


def freeze(obj):
    """A hashable, canonical value of any spec state (dicts and sets sorted; heaps normalised)."""
    if isinstance(obj, (int, str, float, bool, type(None))):
        return obj
    if isinstance(obj, Profile):
        return obj.name
    if isinstance(obj, dict):
        return tuple(sorted(((freeze(k), freeze(v)) for k, v in obj.items()), key=repr))
    if isinstance(obj, (set, frozenset)):
        return tuple(sorted((freeze(v) for v in obj), key=repr))
    if isinstance(obj, (list, tuple)):
        return tuple(freeze(v) for v in obj)
    if isinstance(obj, RetryCopy):
        return tuple(freeze(v) for v in obj.frozen())
    if isinstance(obj, PQ):
        return ("PQ",) + tuple(freeze(getattr(obj, n)) for n in PQ.__slots__ if n not in ("heap", "pulls"))
    if hasattr(obj, "__slots__"):
        return (type(obj).__name__,) + tuple(freeze(getattr(obj, n)) for n in obj.__slots__)
    return repr(obj)


def _short(offs, limit=12):
    offs = sorted(offs)
    return offs if len(offs) <= limit else offs[:limit] + [f"... {len(offs)} in all"]


def compact_queue(qs: QueueState | None, now: int | None = None) -> dict:
    """A short summary of one queue key's state, for violation reports."""
    if qs is None:
        return {}
    out = {
        "broker_committed": qs.committed,
        "lock": None if qs.holder is None else {"holder": qs.holder, "state": qs.lock_state,
                                                 "expires_at": qs.lock_exp},
        "process_queues": {},
        "client_offsets": {c: v[0] for c, v in qs.stores.items()},
    }
    for c, pq in qs.pqs.items():
        d = {"status": pq.status, "next_pull": pq.next_pull, "tree": _short(pq.tree),
             "queue_offset_max": pq.max_new}
        if pq.consuming:
            d["consuming"] = _short(pq.consuming)
        if pq.unheard is not None:
            d["taken_not_yet_consumed"] = list(pq.unheard)
        if pq.batches:
            d["in_flight"] = {str(k): list(v) for k, v in list(pq.batches.items())[:4]}
        if pq.orderly:
            d["locked"] = pq.locked
            d["last_lock_ts"] = pq.last_lock_ts
        if pq.pull_id is not None:
            d["pull_in_flight"] = pq.pull_id
        out["process_queues"][c] = d
    units = {}
    for u, p in qs.units.items():
        units[u or "group"] = {"start": p.start, "handled_below": p.wm, "handled_above": _short(p.done, 6)}
    out["progress"] = units
    if qs.busy:
        out["orderly_consuming"] = {c: {"consume_id": b.consume_id, "since": b.start_ts} for c, b in qs.busy.items()}
    return out


def compact_chain(ch: Chain | None) -> dict:
    if ch is None:
        return {}
    return {"requests": [{"client": cid, "msg_id": mid, "reconsume_times": v.reconsume_times,
                          "delay_level": v.delay_level} for (cid, mid), v in list(ch.requests.items())[:6]],
            "copies_in_flight": [{"state": e.state, "next_reconsume_times": e.r_next, "delay_level": e.level}
                                 for e in ch.entries[:6]]}
