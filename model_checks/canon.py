"""Fast copies and canonical forms of spec states, for the explorer.

- `cow_child(st)` / `seal(st)`: a successor state to apply a move to, copy on write per keyed
  object (see `CowDict`); objects are copied by copiers compiled from their slots, generic over
  the slots, so a field the spec adds later is copied too.
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
from rocketspec.spec.state import PQ, Chain, Client, QueueState, SpecState, View  # noqa: F401

def _copy(o):
    t = type(o)
    if t in _ATOMIC:
        return o
    if t is dict:
        return {k: (v if type(v) in _ATOMIC else _copy(v)) for k, v in o.items()}
    if t is list:
        return [v if type(v) in _ATOMIC else _copy(v) for v in o]
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


# How each field of the spec's classes is copied. Declaring the shape of a field lets the compiled
# copier copy it in one C-level call instead of walking it; `check_copy_shapes` (run by the tests
# on every state of an exploration) verifies that the values really have the declared shape.
# Fields not listed are copied generically (`_copy`), so a field the spec adds later is still
# copied correctly, only slower.
#   share   atomic, or set once and never mutated afterwards (client_started, topic_created)
#   set     a set of atomic values            list  a list of atomic values
#   dict    a dict with atomic values         dict_of_lists  a dict of lists of atomic values
#   dict_of_sets  a dict of sets of atomic values
#   list_of_lists  a list of lists of atomic values
#   dict_of:<Class>  a dict whose values are instances of a slotted class
_SHAPES = {
    "Client": {"subs": "share", "config": "share"},
    "Directory": {"topics": "share", "brokers": "dict", "clients": "dict_of:Client", "registered": "dict_of_sets",
                  "alloc": "dict", "queue_keys": "dict_of_sets"},
    "PQ": {"tree": "set", "heap": "list", "consuming": "list", "batches": "dict", "failed": "dict",
           "pending_upd": "list", "expired": "set", "dup_seen": "set", "unheard": "share"},
    "Progress": {"done": "set"},
    "QueueState": {"pqs": "dict_of:PQ", "stores": "dict_of_lists", "local": "dict_of_lists", "persists": "dict",
                   "units": "dict_of:Progress", "busy": "dict", "reads": "dict", "pull_commit": "dict",
                   "orphans": "dict", "resets": "list", "held": "dict", "illegal": "dict_of_lists"},
    "StoredQueue": {"msgs": "dict"},
    "Chain": {"requests": "dict", "entries": "list_of_lists", "accepted": "set"},
    "View": {"mqs": "share", "cids": "share", "alloc": "dict", "owner": "dict"},
}

_SHAPE_CODE = {
    "share": "v",
    "set": "set(v)",
    "list": "v[:]",
    "dict": "v.copy()",
    "dict_of_lists": "{k: x[:] for k, x in v.items()}",
    "dict_of_sets": "{k: set(x) for k, x in v.items()}",
    "list_of_lists": "[x[:] for x in v]",
}


def _slots(t):
    names = []
    for klass in t.__mro__:
        names.extend(getattr(klass, "__slots__", ()))
    return tuple(n for n in names if n not in ("__weakref__", "__dict__"))


def _slot_copier(t):
    """A copier for one slotted class, compiled from its slots and their declared shapes (direct
    attribute access is several times cheaper than a getattr/setattr loop; the explorer copies a
    few objects per move)."""
    shapes = _SHAPES.get(t.__name__, {})
    lines = ["def cp(o):", "    n = new(T)"]
    ns = {"new": object.__new__, "T": t, "A": _ATOMIC, "c": _copy}
    for name in _slots(t):
        shape = shapes.get(name)
        if shape is None:
            value = "v if type(v) in A else c(v)"
        elif shape.startswith("dict_of:"):
            value = "{k: c(x) for k, x in v.items()}"
        else:
            value = _SHAPE_CODE[shape]
        # a slot never assigned stays unassigned in the copy
        lines += ["    try:", f"        v = o.{name}", "    except AttributeError:", "        pass", "    else:",
                  f"        n.{name} = {value}"]
    lines.append("    return n")
    exec("\n".join(lines), ns)
    return ns["cp"]


def check_copy_shapes(obj, path="state") -> list[str]:
    """Every place where a value does not have the shape `_SHAPES` declares for it (for the tests)."""
    bad = []
    t = type(obj)
    if t in (dict, list, set, tuple, frozenset):
        for i, v in (obj.items() if t is dict else enumerate(obj)):
            bad += check_copy_shapes(v, f"{path}[{i!r}]")
        return bad
    if not hasattr(t, "__slots__") or t in _ATOMIC:
        return bad
    shapes = _SHAPES.get(t.__name__, {})

    def atomic(x):
        return type(x) in _ATOMIC and (type(x) is not tuple or all(atomic(y) for y in x))

    for name in _slots(t):
        if not hasattr(obj, name):
            continue
        v, shape, where = getattr(obj, name), shapes.get(name), f"{path}.{name}"
        if shape is None or shape == "share":
            bad += check_copy_shapes(v, where)
            continue
        if shape.startswith("dict_of:"):
            ok = type(v) is dict and all(type(x).__name__ == shape[8:] for x in v.values())
            bad += [] if ok else [f"{where}: not a dict of {shape[8:]}"]
            if ok:
                bad += check_copy_shapes(v, where)
            continue
        ok = {"set": lambda: type(v) is set and all(map(atomic, v)),
              "list": lambda: type(v) is list and all(map(atomic, v)),
              "dict": lambda: type(v) is dict and all(map(atomic, v.values())),
              "dict_of_lists": lambda: type(v) is dict and all(type(x) is list and all(map(atomic, x))
                                                               for x in v.values()),
              "dict_of_sets": lambda: type(v) is dict and all(type(x) is set and all(map(atomic, x))
                                                              for x in v.values()),
              "list_of_lists": lambda: type(v) is list and all(type(x) is list and all(map(atomic, x)) for x in v),
              }[shape]()
        if not ok:
            bad.append(f"{where}: not {shape}: {v!r}"[:200])
    return bad


# ---------------------------------------------------------------------------- copy on write

class CowDict(dict):
    """One of a successor state's keyed variable families (queues, stored, chains, views) while a
    move is applied: its values are the parent state's objects until first touched here, then
    a private copy replaces them. A move touches one or two keys, so the rest stays shared (and
    keeps its cached canonical encoding, see `Fingerprints`). `seal` turns it back into a dict."""

    __slots__ = ("own", "parent", "dirty")

    def __init__(self, parent):
        dict.__init__(self, parent)
        self.own = set()
        self.parent = parent
        self.dirty = False      # False: nothing was read for writing, set or removed

    def _take(self, k):
        v = dict.__getitem__(self, k)
        if k not in self.own:
            v = _copy(v)
            dict.__setitem__(self, k, v)
            self.own.add(k)
            self.dirty = True
        return v

    def __getitem__(self, k):
        return self._take(k)

    def get(self, k, default=None):
        return self._take(k) if dict.__contains__(self, k) else default

    def __setitem__(self, k, v):
        self.own.add(k)
        self.dirty = True
        dict.__setitem__(self, k, v)

    def setdefault(self, k, default=None):
        if dict.__contains__(self, k):
            return self._take(k)
        self[k] = default
        return default

    def pop(self, k, *default):
        if dict.__contains__(self, k):
            self._take(k)
            self.own.discard(k)
        self.dirty = True
        return dict.pop(self, k, *default)

    def _take_all(self):
        for k in list(dict.keys(self)):
            if k not in self.own:
                self._take(k)

    def items(self):
        self._take_all()
        return dict.items(self)

    def values(self):
        self._take_all()
        return dict.values(self)

    def popitem(self):
        self._take_all()
        self.dirty = True
        return dict.popitem(self)

    def clear(self):
        self.dirty = True
        dict.clear(self)

    def __delitem__(self, k):
        self.own.discard(k)
        self.dirty = True
        dict.__delitem__(self, k)

    def __ior__(self, other):
        self.update(other)
        return self

    def update(self, *a, **kw):
        d = dict(*a, **kw)
        self.own.update(d)
        self.dirty = True
        dict.update(self, d)

    def copy(self):
        self._take_all()
        return dict(self)


_COW_FIELDS = ("queues", "stored", "chains", "views")


def cow_child(st: SpecState) -> SpecState:
    """A successor of a sealed state to apply a move to: the keyed families are `CowDict`s over the
    parent's, every other field is copied (`_copy`). The parent is never mutated."""
    n = object.__new__(SpecState)
    for name in SpecState.__slots__:
        v = getattr(st, name)
        if name in _COW_FIELDS:
            v = CowDict(v)
        elif type(v) not in _ATOMIC:
            v = _copy(v)
        setattr(n, name, v)
    return n


def seal(st: SpecState) -> SpecState:
    """End of a move: plain dicts again (fast reads); from now on the state is never mutated."""
    for name in _COW_FIELDS:
        v = getattr(st, name)
        if type(v) is CowDict:
            # untouched: the parent's dict itself (its cached fingerprint stays valid)
            setattr(st, name, dict(v) if v.dirty else v.parent)
    return st


# ---------------------------------------------------------------------------- canonical form

_KNOWN = {
    SpecState: {"profile", "dir", "queues", "stored", "chains", "views", "ended", "counts", "sched_done",
                "sampled_stores"},
    QueueState: {"key", "committed", "flushed", "lock_state", "holder", "lock_exp", "lock_ts", "lock_epoch", "pqs",
                 "stores", "local", "persists", "units", "busy", "reads", "pull_commit", "orphans", "resets",
                 "reset_ahead", "overlaps", "batch_max", "held", "lost_entry", "orphan_outcome", "reset_drops",
                 "illegal"},
    PQ: {"client", "status", "gen", "tree", "heap", "consuming", "max_new", "next_pull", "alt_pull", "pull_id",
         "pulls", "locked", "last_lock_ts", "batches", "failed", "pending_upd", "created_ts", "orderly", "broadcast",
         "retry_topic", "expired", "dup_seen", "commit_due", "sampled", "unheard"},
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
    """Canonical-form builder for one scope and profile, one encoder per keyed variable family.

    Left out, because the spec never reads them back or they are fixed by the scope: the anomaly
    counters, ProcessQueue generations, pull counts, heaps and creation times, the broker lock's
    creation time and epoch, stored message bodies of the main topic (fixed by the scope), view
    owners (the allocations determine them), client configurations and subscriptions.

    `rn` renames client, view and message ids, `mk` maps a queue key (of the main topic) to its
    image; both come from one symmetry image (`Image`).
    """

    def __init__(self, profile: Profile, main_topic: str, broker: str):
        self.extra = _check_slots()
        self.topic = main_topic
        self.broker = broker
        p = profile
        # the longest window a past timestamp is compared against
        self.past = max(p.client_lock_max_live_ms, p.unlock_delay_ms,
                        p.broker_lock_max_live_ms - p.client_lock_max_live_ms) + 1

    def image(self, names: dict | None = None, qmap: dict | None = None) -> "Image":
        return Image(self.topic, names, qmap)

    # ------------------------------------------------------------------ per key
    @staticmethod
    def queue_timed(qs: QueueState) -> bool:
        """Whether the queue's encoding reads the clock (lock, lease or orderly call timestamps)."""
        if qs.holder is not None or qs.busy:
            return True
        for pq in qs.pqs.values():
            if pq.orderly:
                return True
        return False

    def queue(self, key, qs: QueueState, now: int, im: "Image"):
        rn, mk = im.rn, im.mk
        past = self.past

        def tpast(ts):
            d = ts - now
            return d if d > -past else -past

        xpq = self.extra.get(PQ, ())
        xqs = self.extra.get(QueueState, ())
        pqs = []
        for c, pq in qs.pqs.items():
            pqs.append((rn(c), (pq.status, tuple(sorted(pq.tree)), tuple(pq.consuming), pq.max_new, pq.next_pull,
                                pq.alt_pull, pq.pull_id, pq.locked,
                                tpast(pq.last_lock_ts) if pq.orderly else 0,
                                tuple(sorted(pq.batches.items())) if pq.batches else (),
                                tuple(sorted(pq.failed.items())) if pq.failed else (),
                                tuple(pq.pending_upd), tuple(sorted(getattr(pq, "expired", ()))),
                                tuple(sorted(pq.dup_seen)) if pq.dup_seen else (), pq.commit_due, pq.sampled,
                                pq.unheard, _extra(pq, xpq))))
        pqs.sort()
        units = tuple(sorted((rn(u), p.start, p.wm, tuple(sorted(p.done)), p.skipped, p.had_offset) for u, p in qs.units.items()))
        return (mk(key), (
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
            tuple(getattr(qs, "resets", ())), getattr(qs, "reset_ahead", None),
            tuple(sorted((rn(c), k) for c, k in qs.overlaps)) if qs.overlaps else (), qs.batch_max,
            tuple(sorted((rn(c), h) for c, h in qs.held.items())) if qs.held else (), qs.lost_entry,
            # client -> (orphan orderly batch's offsets, ts); clients whose ProcessQueue a reset dropped
            tuple(sorted((rn(c), b, tpast(t)) for c, (b, t) in qs.orphan_outcome.items()))
            if qs.orphan_outcome else (),
            tuple(sorted(rn(c) for c in qs.reset_drops)) if qs.reset_drops else (),
            # client -> illegal-offset corrections still to run
            tuple(sorted((rn(c), tuple(v)) for c, v in qs.illegal.items())) if qs.illegal else (),
            _extra(qs, xqs)))

    def stored(self, tkey, sq, im: "Image"):
        if tkey[0] == self.topic:
            return (im.mk(tkey), sq.next, sq.min)
        rn = im.rn
        return (tkey, sq.next, sq.min, tuple((o, rn(m[0]), rn(m[1]), m[5]) for o, m in sorted(sq.msgs.items())))

    @staticmethod
    def chain_timed(ch: Chain) -> bool:
        return any(e[3] is not None for e in ch.entries)

    def chain(self, ckey, ch: Chain, now: int, im: "Image"):
        rn, mk = im.rn, im.mk
        g, origin = ckey
        reqs = tuple(sorted(((rn(c), rn(mid)), (v[0], v[1], v[2], mk(v[3]) if v[3] else None, v[4]))
                            for (c, mid), v in ch.requests.items()))
        ents = tuple(sorted((e[0], e[1], e[2], (e[3] - now if e[3] > now else 0) if e[3] is not None else None,
                             rn(e[4]) if e[4] else e[4], rn(e[5]) if e[5] else e[5]) for e in ch.entries))
        acc = tuple(sorted((rn(c), rn(m)) for c, m in ch.accepted))
        return ((g, rn(origin)), reqs, ents, acc)

    def view(self, vkey, v: View, im: "Image"):
        rn, mk = im.rn, im.mk
        g, t, vid = vkey
        return ((g, t, rn(vid)), tuple(sorted((rn(c), tuple(sorted(mk(m) for m in a))) for c, a in v.alloc.items())))

    def rest(self, st: SpecState, now: int, im: "Image"):
        """The directory and the few unkeyed variables."""
        rn, mk = im.rn, im.mk
        d = st.dir
        denc = (tuple(sorted((rn(c), cl.status, (cl.paused_until - now if cl.paused_until > now else 0)
                              if cl.status == "paused" else 0) for c, cl in d.clients.items())),
                tuple(sorted((k, tuple(sorted(rn(c) for c in v))) for k, v in d.registered.items())),
                tuple(sorted(((rn(c), t), tuple(sorted(mk(m) for m in a))) for (c, t), a in d.alloc.items())),
                tuple(sorted(d.brokers.items())))
        sd = tuple(sorted((rn(k), v) for k, v in st.sched_done.items())) if st.sched_done else ()
        # sampled_stores: only recorded traces (obs) fill it; a state the explorer makes has none
        return (denc, st.ended, sd, frozenset(st.sampled_stores), _extra(st, self.extra.get(SpecState, ())))

    # ------------------------------------------------------------------ whole state
    def __call__(self, st: SpecState, now: int, names: dict | None = None, qmap: dict | None = None):
        """The canonical form of a whole state under one image (uncached)."""
        im = self.image(names, qmap)
        return (tuple(sorted(self.queue(k, qs, now, im) for k, qs in st.queues.items())),
                tuple(sorted(self.stored(k, sq, im) for k, sq in st.stored.items())),
                tuple(sorted(self.chain(k, ch, now, im) for k, ch in st.chains.items())),
                tuple(sorted(self.view(k, v, im) for k, v in st.views.items())),
                self.rest(st, now, im))


class Image:
    """One symmetry image: renaming of ids and of the main topic's queue ids."""

    __slots__ = ("rn", "mk")

    def __init__(self, topic, names=None, qmap=None):
        if names:
            ng = names.get
            self.rn = lambda x: ng(x, x)
        else:
            self.rn = _ident
        if qmap:
            def mk(k):      # (g, t, b, q) or (t, b, q)
                if k[-3] == topic:
                    return k[:-1] + (qmap[k[-1]],)
                return k
            self.mk = mk
        else:
            self.mk = _ident


def _ident(x):
    return x


class Fingerprints:
    """State fingerprints for the explorer: the least hash over the symmetry images of the canonical
    form, built incrementally (as TLC does in spirit: hash once what did not change).

    Copy on write (`cow_child`) shares every keyed object a move did not touch with the parent
    state (and a whole family, when the move touched none of it), and a sealed object is never
    mutated again. So each keyed object's encoding is hashed once per image (once per clock value
    if it reads the clock), each family's hash is the hash of its objects' sorted hashes, and the
    state's hash combines the families' hashes, the directory's and the explorer's variables.
    Caches keep the objects themselves, so an id is never mistaken for a reused one; they are
    dropped wholesale when they grow past `limit`. Hashing hashes instead of whole encodings
    adds one 64-bit hash per level: collisions stay as unlikely as with one flat hash."""

    def __init__(self, canon: Canon, images: list, limit: int = 400_000):
        self.canon = canon
        self.images = [canon.image(n, q) for n, q in images]
        self.limit = limit
        self.cache: dict = {}          # id(keyed object) -> (object, now, timed, hashes per image)
        self.fam_cache: dict = {}      # id(family dict) -> (dict, now, timed, hashes per image)
        self.rest_cache: dict = {}     # directory content -> hashes per image
        cn = canon
        self.families = (
            ("queues", cn.queue_timed, lambda k, o, now, im: cn.queue(k, o, now, im)),
            ("stored", None, lambda k, o, now, im: cn.stored(k, o, im)),
            ("chains", cn.chain_timed, lambda k, o, now, im: cn.chain(k, o, now, im)),
            ("views", None, lambda k, o, now, im: cn.view(k, o, im)),
        )

    def _family(self, fam: dict, now: int, timed_of, enc):
        fc = self.fam_cache.get(id(fam))
        if fc is not None and fc[0] is fam and (not fc[2] or fc[1] == now):
            return fc[3]
        images = self.images
        n = len(images)
        cache = self.cache
        cols = [[] for _ in range(n)]
        fam_timed = False
        for k, o in fam.items():
            e = cache.get(id(o))
            if e is not None and e[0] is o and (not e[2] or e[1] == now):
                hs = e[3]
                fam_timed = fam_timed or e[2]
            else:
                timed = timed_of(o) if timed_of is not None else False
                hs = tuple(hash(enc(k, o, now, im)) for im in images)
                cache[id(o)] = (o, now, timed, hs)
                fam_timed = fam_timed or timed
            for i in range(n):
                cols[i].append(hs[i])
        out = tuple(hash(tuple(sorted(c))) for c in cols)
        self.fam_cache[id(fam)] = (fam, now, fam_timed, out)
        return out

    def __call__(self, st: SpecState, now: int, extra=()) -> tuple[int, int]:
        """(fingerprint, hash under the first image). The first image is the identity (the
        explorer sorts it first): equal second values mean equal states with the same names.
        `extra`: explorer-side variables, a function of the image index to a hashable value."""
        cn = self.canon
        if len(self.cache) > self.limit or len(self.fam_cache) > self.limit or len(self.rest_cache) > self.limit:
            self.cache.clear()
            self.fam_cache.clear()
            self.rest_cache.clear()
        fams = [self._family(getattr(st, name), now, timed_of, enc) for name, timed_of, enc in self.families]
        # the directory is copied by every move but rarely changed: its encodings are cached by
        # content (the clock enters only through a paused client)
        d = st.dir
        dkey = (tuple((c, cl.status, cl.paused_until - now if cl.status == "paused" else 0)
                      for c, cl in d.clients.items()),
                tuple((k, frozenset(v)) for k, v in d.registered.items()),
                tuple(d.alloc.items()), tuple(d.brokers.items()), st.ended,
                tuple(st.sched_done.items()) if st.sched_done else (), frozenset(st.sampled_stores),
                _extra(st, cn.extra.get(SpecState, ())))
        rest = self.rest_cache.get(dkey)
        if rest is None:
            rest = self.rest_cache[dkey] = tuple(hash(cn.rest(st, now, im)) for im in self.images)
        best = ident = None
        for i in range(len(self.images)):
            h = hash((fams[0][i], fams[1][i], fams[2][i], fams[3][i], rest[i], extra(i) if extra else ()))
            if best is None or h < best:
                best = h
            if i == 0:
                ident = h
        return best, ident


def _extra(obj, names):
    if not names:
        return ()
    from rocketspec.spec.state import freeze

    return tuple(freeze(getattr(obj, n, None)) for n in names)
