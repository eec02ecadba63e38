"""Fast copies and canonical forms of spec states, for the explorer.

- `fast_copy(st)`: a structural copy of a `SpecState` (every ``__slots__`` object, dict, list and
  set copied; tuples, strings, ints and the frozen profile shared). Generic over the slots, so a
  field the spec adds later is copied too. About ten times cheaper than `copy.deepcopy`.
- `canon(st, now, rename)`: a hashable value equal for states the spec cannot tell apart:
  * **abstract time**: timestamps are stored relative to the explorer's clock and clamped where
    the spec stops telling them apart (a lock that expired 1 s or 1 h ago is just expired; a lease
    older than the longest window the spec compares is just old);
  * bookkeeping the spec never reads back (counters of allowed anomalies, ProcessQueue
    generations and pull counts, the lazy heap) is left out;
  * **symmetry**: `rename` maps client ids, view ids and message ids, and queue ids of the main
    topic, to their images under a permutation; the explorer keeps the least image.
"""
from __future__ import annotations

from rocketspec.spec.profiles import Profile
from rocketspec.spec.state import PQ, Chain, Client, QueueState, SpecState, View

_ATOMS = (int, str, float, bool, type(None), Profile, bytes)


def _copy(o):
    t = type(o)
    if t in _ATOMIC:
        return o
    if t is dict:
        return {k: _copy(v) for k, v in o.items()}
    if t is list:
        return [_copy(v) for v in o]
    if t is set:
        return set(o)
    cp = _SLOTTED.get(t)
    if cp is None:
        if hasattr(t, "__slots__"):
            cp = _SLOTTED[t] = _slot_copier(t)
        else:
            return o   # frozen values (profile, dataclasses) are shared
    return cp(o)


_ATOMIC = {int, str, float, bool, type(None), tuple, frozenset, bytes, Profile}
_SLOTTED: dict = {}


# Fields the spec sets once (client_started, topic_created) and never mutates afterwards: shared
# between copies. Everything else is copied.
_SHARED = {("Client", "subs"), ("Client", "config"), ("Directory", "topics")}


def _slot_copier(t):
    names = []
    for klass in t.__mro__:
        names.extend(getattr(klass, "__slots__", ()))
    names = tuple(n for n in names if n not in ("__weakref__", "__dict__"))
    shared = frozenset(n for n in names if (t.__name__, n) in _SHARED)
    new = object.__new__

    def cp(o):
        n = new(t)
        for name in names:
            try:
                v = getattr(o, name)
            except AttributeError:
                continue
            if type(v) in _ATOMIC or name in shared:
                setattr(n, name, v)
            else:
                setattr(n, name, _copy(v))
        return n
    return cp


def fast_copy(st: SpecState) -> SpecState:
    return _copy(st)


# ---------------------------------------------------------------------------- canonical form

_KNOWN = {
    SpecState: {"profile", "dir", "queues", "stored", "chains", "views", "ended", "counts", "sched_done"},
    QueueState: {"key", "committed", "flushed", "lock_state", "holder", "lock_exp", "lock_ts", "lock_epoch", "pqs",
                 "stores", "local", "persists", "units", "busy", "reads", "pull_commit", "orphans", "resets",
                 "reset_ahead"},
    PQ: {"client", "status", "gen", "tree", "heap", "consuming", "max_new", "next_pull", "alt_pull", "pull_id",
         "pulls", "locked", "last_lock_ts", "batches", "failed", "pending_upd", "created_ts", "orderly", "broadcast",
         "retry_topic", "expired"},
    Chain: {"requests", "entries", "accepted"},
}


class CanonError(RuntimeError):
    pass


def _check_slots():
    """Fields the spec added after this encoder was written: encoded generically (spec.state.freeze,
    no symmetry renaming inside them), and a warning so that someone teaches the encoder."""
    import warnings

    extra = {}
    for cls, known in _KNOWN.items():
        e = tuple(n for n in cls.__slots__ if n not in known)
        if e:
            extra[cls] = e
            warnings.warn(f"model_checks.canon: spec class {cls.__name__} has new fields {list(e)}; encoded "
                          "generically", stacklevel=3)
    return extra


class Canon:
    """Canonical-form builder for one scope and profile.

    Left out, because the spec never reads them back or they are fixed by the scope: the anomaly
    counters, ProcessQueue generations, pull counts, heaps and creation times, the broker lock's
    creation time and epoch, stored message bodies of the main topic (fixed by the scope), view
    owners (the allocations determine them), client configurations and subscriptions.
    """

    def __init__(self, profile: Profile, main_topic: str, broker: str):
        self.extra = _check_slots()
        self.topic = main_topic
        self.broker = broker
        p = profile
        # the longest window a past timestamp is compared against
        self.past = max(p.client_lock_max_live_ms, p.unlock_delay_ms,
                        p.broker_lock_max_live_ms - p.client_lock_max_live_ms) + 1

    def __call__(self, st: SpecState, now: int, names: dict | None = None, qmap: dict | None = None):
        T = self.topic
        past = self.past
        if names:
            ng = names.get

            def rn(x):
                return ng(x, x)
        else:
            def rn(x):
                return x
        if qmap:
            def mk(k):      # (g, t, b, q) or (t, b, q)
                if k[-3] == T:
                    return k[:-1] + (qmap[k[-1]],)
                return k
        else:
            def mk(k):
                return k

        def tpast(ts):
            d = ts - now
            return d if d > -past else -past

        xpq = self.extra.get(PQ, ())
        xqs = self.extra.get(QueueState, ())
        qenc = []
        for key, qs in st.queues.items():
            pqs = []
            for c, pq in qs.pqs.items():
                pqs.append((rn(c), (pq.status, tuple(sorted(pq.tree)), tuple(pq.consuming), pq.max_new, pq.next_pull,
                                    pq.alt_pull, pq.pull_id, pq.locked,
                                    tpast(pq.last_lock_ts) if pq.orderly else 0,
                                    tuple(sorted(pq.batches.items())) if pq.batches else (),
                                    tuple(sorted(pq.failed.items())) if pq.failed else (),
                                    tuple(pq.pending_upd), tuple(sorted(getattr(pq, "expired", ()))),
                                    _extra(pq, xpq))))
            pqs.sort()
            units = tuple(sorted((rn(u), p.start, p.wm, tuple(sorted(p.done)), p.skipped) for u, p in qs.units.items()))
            qenc.append((mk(key), (
                qs.committed, qs.flushed, qs.lock_state, rn(qs.holder) if qs.holder is not None else None,
                (qs.lock_exp - now if qs.lock_exp - now > -1 else -1) if qs.holder is not None else None,
                tuple(pqs),
                tuple(sorted((rn(c), v[0], v[1]) for c, v in qs.stores.items())) if qs.stores else (),
                tuple(sorted((rn(c), v[0], v[1]) for c, v in qs.local.items())) if qs.local else (),
                tuple(sorted(((rn(c), o), n) for (c, o), n in qs.persists.items())) if qs.persists else (),
                units,
                tuple(sorted((rn(c), b[0], tpast(b[1])) for c, b in qs.busy.items())) if qs.busy else (),
                tuple(sorted((rn(c), v) for c, v in qs.reads.items())) if qs.reads else (),
                tuple(sorted((rn(c), v) for c, v in qs.pull_commit.items())) if qs.pull_commit else (),
                tuple(sorted(((rn(c), k), v) for (c, k), v in qs.orphans.items())) if qs.orphans else (),
                tuple(getattr(qs, "resets", ())), getattr(qs, "reset_ahead", None), _extra(qs, xqs))))
        qenc.sort()
        senc = []
        for tkey, sq in st.stored.items():
            if tkey[0] == T:
                senc.append((mk(tkey), sq.next, sq.min))
            else:
                senc.append((tkey, sq.next, sq.min,
                             tuple((o, rn(m[0]), rn(m[1]), m[5]) for o, m in sorted(sq.msgs.items()))))
        senc.sort()
        cenc = []
        for (g, origin), ch in st.chains.items():
            reqs = tuple(sorted(((rn(c), rn(mid)), (v[0], v[1], v[2], mk(v[3]) if v[3] else None, v[4]))
                                for (c, mid), v in ch.requests.items()))
            ents = tuple(sorted((e[0], e[1], e[2], (e[3] - now if e[3] > now else 0) if e[3] is not None else None,
                                 rn(e[4]) if e[4] else e[4], rn(e[5]) if e[5] else e[5]) for e in ch.entries))
            acc = tuple(sorted((rn(c), rn(m)) for c, m in ch.accepted))
            cenc.append(((g, rn(origin)), reqs, ents, acc))
        cenc.sort()
        venc = []
        for (g, t, vid), v in st.views.items():
            venc.append(((g, t, rn(vid)), tuple(sorted((rn(c), tuple(sorted(mk(m) for m in a)))
                                                        for c, a in v.alloc.items()))))
        venc.sort()
        d = st.dir
        denc = (tuple(sorted((rn(c), cl.status, (cl.paused_until - now if cl.paused_until > now else 0)
                              if cl.status == "paused" else 0) for c, cl in d.clients.items())),
                tuple(sorted((k, tuple(sorted(rn(c) for c in v))) for k, v in d.registered.items())),
                tuple(sorted(((rn(c), t), tuple(sorted(mk(m) for m in a))) for (c, t), a in d.alloc.items())),
                tuple(sorted(d.brokers.items())))
        sd = tuple(sorted((rn(k), v) for k, v in st.sched_done.items())) if st.sched_done else ()
        return (tuple(qenc), tuple(senc), tuple(cenc), tuple(venc), denc, st.ended, sd,
                _extra(st, self.extra.get(SpecState, ())))


def _extra(obj, names):
    if not names:
        return ()
    from rocketspec.spec.state import freeze

    return tuple(freeze(getattr(obj, n, None)) for n in names)
