"""The explicit-state explorer: breadth-first over every step the scope's deployment can take,
through the spec.

For each state, `Generator.moves` lists the candidate moves (see model_checks/generator.py); each
is applied event by event with `spec.step` on a copy of the state:

- an **adversary** move whose event the spec's guard rejects is not taken (the guard is its
  enabling condition);
- an **implementation** move whose event the guard rejects is a *violation*: the profile's
  client or broker takes a step the spec forbids (this is how known-bug profiles show);
- after each move, `check_state` (every state predicate) must hold;
- at quiescent states (nothing but time, faults and self-loops left), `check_end` (INV-LIVE-1).

Breadth-first, so the first violation found per invariant has a shortest trace. States are
deduplicated by a 64-bit fingerprint of their canonical form (`model_checks.canon`: abstract
time, symmetry over interchangeable consumers and queues), as TLC does.
"""
from __future__ import annotations

import itertools
import sys
import time
from array import array
from collections import deque
from dataclasses import dataclass, field

import orjson

from rocketspec.spec import check_end, check_state, get_profile, initial_state, step
from rocketspec.reference.allocation import allocate
from rocketspec.reference.message_queue import MessageQueue

from .canon import Canon, Fingerprints, cow_child, seal
from .generator import BROKER, LOCK_DUE, RETRY, ROUTE, TOPIC, Generator, msg_id, view_id
from .independence import footprint, independent
from .persistent import persistent_subset
from .scopes import Scope


@dataclass
class Violation:
    invariant: str
    message: str
    kind: str                  # "guard" (an implementation step rejected), "state", "end", "liveness"
    depth: int
    events: list               # the full trace, trace_started first, with seq and ts
    key: object = None
    detail: dict = field(default_factory=dict)

    def to_dict(self):
        return {"invariant": self.invariant, "kind": self.kind, "message": self.message, "depth": self.depth,
                "events": len(self.events), "key": list(self.key) if isinstance(self.key, tuple) else self.key,
                **self.detail}


@dataclass
class Result:
    scope: str
    profile: str
    generated: int = 0
    distinct: int = 0
    depth: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    complete: bool = True      # False: the distinct-state cap stopped the search
    stopped: bool = False      # True: the search stopped at the first violation (stop_at_first)
    bounded: bool = False      # True: states at the depth bound were not expanded (exhaustive up to it)
    quiescent: int = 0
    reduced: int = 0           # states expanded with a persistent subset of their moves
    persistent_sets: bool = False
    violations: list = field(default_factory=list)
    graph: object = None       # (edges, labels) when liveness was asked for
    symmetries: int = 1
    kinds: dict = field(default_factory=dict)   # fault kind -> its own search's Result (RefExplorer.run_split)

    @property
    def states_per_second(self):
        return self.generated / self.cpu_seconds if self.cpu_seconds else 0.0

    def to_dict(self):
        return {"scope": self.scope, "profile": self.profile, "states_generated": self.generated,
                "states_distinct": self.distinct, "depth": self.depth, "seconds": round(self.seconds, 3),
                "cpu_seconds": round(self.cpu_seconds, 3), "states_per_second": round(self.states_per_second),
                "complete": self.complete, "stopped_at_first_violation": self.stopped, "bounded": self.bounded, "quiescent_states": self.quiescent,
                "symmetries": self.symmetries, "persistent_sets": self.persistent_sets,
                "states_reduced": self.reduced,
                "violations": [v.to_dict() for v in self.violations]} | (
            {"fault_kinds": {k: {"states_generated": r.generated, "states_distinct": r.distinct, "depth": r.depth,
                                 "cpu_seconds": round(r.cpu_seconds, 3), "complete": r.complete}
                             for k, r in self.kinds.items()}} if self.kinds else {})


class Node:
    __slots__ = ("st", "now", "aux", "budget", "sleep", "only")

    def __init__(self, st, now, aux, budget):
        self.st, self.now, self.aux, self.budget = st, now, aux, budget
        self.sleep = _NO_SLEEP     # move key -> footprint: moves whose successors are reached another way
        self.only = None           # a re-expansion explores only these move keys


_NO_SLEEP: dict = {}


# ---------------------------------------------------------------------------- symmetry

def symmetry_group(scope: Scope):
    """(names, qmap) pairs under which the scope's transition relation is invariant: a client
    permutation and a queue permutation such that the initial state maps to itself (messages per
    queue) and the strategy commutes with them for every view (subset of clients) and every
    subscribed topic. The retry topic's queue is not permuted, so a client permutation must
    also keep who gets it: with one retry queue and two consumers, the first client in id
    order always does, and swapping the clients is no symmetry."""
    clients = [f"c{i}" for i in range(scope.consumers)]
    nq = scope.queues
    per_q = [len(range(q, scope.messages, nq)) for q in range(nq)]
    topics = {TOPIC: nq}
    broadcast = scope.message_model == "BROADCASTING"
    if scope.retry and not broadcast:
        topics[RETRY] = 1
    subsets = [list(s) for r in range(1, len(clients) + 1) for s in itertools.combinations(clients, r)]

    def alloc(c, cids):
        out = set()
        for t, n in topics.items():
            mqs = [MessageQueue(t, BROKER, q) for q in range(n)]
            if broadcast:       # every client takes every queue
                out.update((t, q) for q in range(n))
                continue
            out.update((t, m.queue_id) for m in (allocate(scope.strategy, c, mqs, sorted(cids)) or ()))
        return frozenset(out)

    table = {(c, tuple(S)): alloc(c, S) for S in subsets for c in S}
    group = []
    for cp in itertools.permutations(clients):
        cm = dict(zip(clients, cp))
        for qp in itertools.permutations(range(nq)):
            qm = dict(zip(range(nq), qp))
            if any(per_q[q] != per_q[qm[q]] for q in range(nq)):
                continue
            ok = True
            for S in subsets:
                img = tuple(sorted(cm[c] for c in S))
                for c in S:
                    if table[(cm[c], img)] != frozenset((t, qm[q] if t == TOPIC else q)
                                                        for t, q in table[(c, tuple(S))]):
                        ok = False
                        break
                if not ok:
                    break
            if ok:
                group.append((cm, qm))
    if not scope.symmetry:
        group = group[:1]
    out = []
    rmax = scope.max_reconsume_times + 3
    for cm, qm in group:
        names = dict(cm)
        for S in subsets:
            names[view_id(S)] = view_id(sorted(cm[c] for c in S))
        for q in range(nq):
            for o in range(per_q[q]):
                a, b = msg_id(q, o), msg_id(qm[q], o)
                names[a] = b
                names[a + "~d"] = b + "~d"
                for r in range(rmax):
                    names[f"{a}~{r}"] = f"{b}~{r}"
                    names[f"{a}~s{r}"] = f"{b}~s{r}"
        identity = all(k == v for k, v in cm.items()) and all(k == v for k, v in qm.items())
        out.append((names, qm, identity))
    out.sort(key=lambda g: not g[2])     # identity first
    return [(n, q) for n, q, _ in out]


# ---------------------------------------------------------------------------- the explorer

class Explorer:
    def __init__(self, scope: Scope, profile=None, *, liveness=False, progress=None, max_states=None,
                 stop_at_first=False):
        self.scope = scope
        self.profile = get_profile(profile)
        self.gen = Generator(scope, self.profile)
        self.canon = Canon(self.profile, TOPIC, BROKER)
        if liveness and scope.symmetry:
            from dataclasses import replace
            scope = self.scope = replace(scope, symmetry=False)   # see model_checks/liveness.py
        self.group = symmetry_group(scope)
        self.fps = Fingerprints(self.canon, self.group)
        self.liveness = liveness
        self.live_info = {}
        self.progress = progress
        self.max_states = max_states or scope.max_states
        self.stop_at_first = stop_at_first

    # ------------------------------------------------------------------ fingerprints
    def fingerprint(self, node: Node) -> int:
        return self._fingerprints(node)[0]

    def schedule_phase(self, now: int) -> int:
        """With scheduled lockAll runs, the time to the next run is part of the state."""
        return self.gen.next_lock_run(now) - now if self.gen.periodic_lock else 0

    def _fingerprints(self, node: Node):
        """(fingerprint, hash of the state under its own names)."""
        aux = node.aux
        phase = self.schedule_phase(node.now)
        if aux:
            def extra(i):
                names, qmap = self.group[i]
                return (tuple(sorted(_aux_image(aux, names, qmap))), node.budget, phase)
        else:
            budget = (node.budget, phase)

            def extra(i):
                return budget
        return self.fps(node.st, node.now, extra)

    # ------------------------------------------------------------------ setup
    def initial(self):
        st = initial_state(self.profile)
        evs = []
        for i, ev in enumerate(self.gen.setup_events()):
            ev = dict(ev, seq=i, ts=0)
            errs = [f for f in step(st, ev) if f.severity == "error"]
            if errs:
                raise RuntimeError(f"setup event {ev['kind']} rejected: {errs[0].inv}: {errs[0].message}")
            evs.append(ev)
        return Node(st, 0, self.gen.initial_aux(), (self.scope.faults, self.scope.failures)), evs

    def apply_move(self, node: Node, move):
        """(successor node, None) or (None, (finding, events applied including the rejected one))."""
        st = cow_child(node.st)
        now = node.now + move.tick
        done = []
        for ev in move.events:
            ev = dict(ev)
            ev["ts"] = now
            ev["seq"] = 0
            fs = step(st, ev)
            done.append(ev)
            for f in fs:
                if f.severity == "error":
                    return None, (f, done)
        seal(st)
        budget = node.budget
        if move.cost:
            budget = (budget[0] - move.cost.get("faults", 0), budget[1] - move.cost.get("failures", 0))
        aux = node.aux
        if move.aux:
            aux = dict(aux)
            aux.update(move.aux)
        if self.gen.orderly:
            aux = self.gen.held_counters(st, aux)
        return Node(st, now, aux, budget), None

    # ------------------------------------------------------------------ path reconstruction
    def trace_of(self, parents, moves_taken, nid, setup_events, extra=(), end_ts=None):
        path = []
        while nid > 0:
            path.append(moves_taken[nid])
            nid = parents[nid]
        path.reverse()
        node, evs = self.initial()
        evs = list(setup_events)
        for mi in path:
            move = self.gen.moves(node.st, node.now, node.aux, node.budget)[mi]
            nxt, bad = self.apply_move(node, move)
            if nxt is None:
                raise RuntimeError("path replay hit a rejected move")
            evs.extend(dict(ev, ts=nxt.now) for ev in move.events)
            node = nxt
        evs.extend(extra)
        return _numbered(evs), node

    # ------------------------------------------------------------------ search
    def run(self) -> Result:
        """Breadth-first search. With sleep sets (scope key `sleep_sets`, off for liveness, which
        needs every edge), a move is not applied in a state when it commutes with the moves taken
        since an ancestor where it was applied (model_checks/independence.py): its successor is
        reached the other way round. Every reachable state is still visited (Godefroid's sleep
        sets with state caching: a state reached again with fewer moves asleep is re-expanded
        with the difference); only the repeated work on diamonds is saved."""
        scope = self.scope
        t0, c0 = time.perf_counter(), time.process_time()
        res = Result(scope=scope.name, profile=self.profile.name, symmetries=len(self.group))
        root, setup = self.initial()
        self.setup = setup
        fp0, h0 = self._fingerprints(root)
        seen = {fp0: 0}
        parents = array("q", [-1])
        moves_taken = array("i", [-1])
        depths = array("i", [0])
        own_hash = array("q", [h0])        # hash of each state under the names it was first found with
        frontier = deque([(0, root)])
        # persistent sets (model_checks/persistent.py) replace sleep sets: each is sound alone,
        # and the state-caching sleep sets' re-expansions would have to respect the proviso
        use_por = scope.persistent_sets and not self.liveness
        res.persistent_sets = use_por
        use_sleep = scope.sleep_sets and not self.liveness and not use_por
        pending = {0: root}                # states in the frontier, by id (their sleep sets still shrink)
        expanded_sleep = {}                # id -> moves left asleep when it was expanded (if any)
        found = {}
        edges = [] if self.liveness else None
        labels = {} if self.liveness else None
        bar = self.progress
        generated = 1
        self.reexpanded = 0
        for f in check_state(root.st):
            found.setdefault(f[0], ("state", f, 0, []))
        if self.liveness:
            from .liveness import FAIR, action_key, obligations
        stop_depth = None                  # stop_at_first: the depth of the shortest violation found
        while frontier:
            nid, node = frontier.popleft()
            d = depths[nid]
            if stop_depth is not None and d >= stop_depth:
                # breadth-first: no state left can give a shorter counterexample (a state at depth
                # d gives a dead end at d, a rejected step or a bad successor at d + 1)
                res.stopped = True
                break
            again = node.only is not None
            if not again:
                pending.pop(nid, None)
            sleep = node.sleep
            if use_sleep and sleep and not again:
                expanded_sleep[nid] = sleep
            moves = self.gen.moves(node.st, node.now, node.aux, node.budget)
            productive = False
            asleep = []
            done = []
            enabled = set() if edges is not None else None
            order, cut, old = range(len(moves)), -1, False
            if use_por:
                subset = persistent_subset(self.gen, node, moves, [footprint(m) for m in moves])
                if subset is not None:
                    chosen = set(subset)
                    order = subset + [i for i in range(len(moves)) if i not in chosen]
                    cut = len(subset)
            for pos, mi in enumerate(order):
                if pos == cut:
                    if not old:
                        res.reduced += 1
                        break
                    # cycle proviso: a move of the subset leads back to a state no deeper than
                    # this one, so this state is expanded fully. Every cycle of the reduced graph
                    # has such an edge (breadth-first depths cannot rise all the way round), and
                    # its head was seen before its tail was expanded: every cycle has a fully
                    # expanded state (C3).
                move = moves[mi]
                if use_sleep:
                    key = move_key(move)
                    if again and key not in node.only:
                        continue
                    if key in sleep:
                        asleep.append(move)
                        continue
                    fpr = footprint(move)
                nxt, bad = self.apply_move(node, move)
                if nxt is None:
                    if move.env:
                        continue
                    f, done_evs = bad
                    if f.inv not in found:
                        found[f.inv] = ("guard", f, nid, (mi, done_evs))
                    continue
                generated += 1
                fp, h = self._fingerprints(nxt)
                if use_sleep:
                    csleep = {k: f for k, f in sleep.items() if independent(f, fpr)}
                    for k, f in done:
                        if independent(f, fpr):
                            csleep[k] = f
                    done.append((key, fpr))
                cid = seen.get(fp)
                if cid is None:
                    cid = len(parents)
                    seen[fp] = cid
                    parents.append(nid)
                    moves_taken.append(mi)
                    depths.append(d + 1)
                    own_hash.append(h)
                    if d + 1 > res.depth:
                        res.depth = d + 1
                    for f in check_state(nxt.st):
                        if f[0] not in found:
                            found[f[0]] = ("state", f, cid, None)
                    if d + 1 >= scope.max_depth:
                        res.bounded = True       # reached, checked, not expanded
                    else:
                        if use_sleep:
                            nxt.sleep = csleep
                            pending[cid] = nxt
                        frontier.append((cid, nxt))
                    if len(parents) >= self.max_states:
                        res.complete = False
                        frontier.clear()
                        break
                else:
                    if depths[cid] <= d:
                        old = True        # the cycle proviso's case (see the loop head)
                    if use_sleep:
                        self._revisit(cid, nxt, csleep, own_hash[cid] == h, pending, expanded_sleep, frontier)
                if cid != nid and not move.cost and not move.env and not move.tick:
                    productive = True
                if edges is not None:
                    cls = _move_class(move)
                    key = action_key(move, cls)
                    edges.append((nid, cid, mi, key))
                    if cls in FAIR:
                        enabled.add(key)
            if again:
                continue
            if not res.complete:
                # the cap stopped this node's expansion halfway: its moves not generated may be the
                # productive ones, so it is not known to be quiescent (no end check on a cut node)
                break
            if edges is not None:
                self.live_info[nid] = (obligations(node.st), frozenset(enabled))
            if not productive and asleep:
                # a move left asleep may be the only productive one: the quiescence check needs it
                productive, extra = self._any_productive(node, nid, asleep, seen)
                generated += extra
            if not productive and self._quiescent_ok(node):
                res.quiescent += 1
                for f in check_end(node.st):
                    if f.inv not in found:
                        found[f.inv] = ("end", f, nid, None)
            if bar is not None and not (nid & 1023):
                bar.set(len(parents), generated, depths[nid], len(found))
            if self.stop_at_first and found:
                stop_depth = min(self._found_depth(v, depths) for v in found.values())
        if stop_depth is not None and frontier:
            res.stopped = True
        res.generated = generated
        res.distinct = len(parents)
        res.seconds = time.perf_counter() - t0
        res.cpu_seconds = time.process_time() - c0
        self._parents, self._moves, self._depths, self._seen = parents, moves_taken, depths, seen
        if edges is not None:
            res.graph = (edges, labels)
        for inv, (kind, f, nid, extra) in found.items():
            res.violations.append(self._violation(kind, f, nid, extra))
        res.violations.sort(key=lambda v: (v.depth, v.invariant))
        if bar is not None:
            bar.close()
        return res

    @staticmethod
    def _found_depth(entry, depths) -> int:
        """The depth of a found violation's counterexample (see _violation)."""
        kind, _, nid, _ = entry
        return depths[nid] + 1 if kind == "guard" else depths[nid]

    def _revisit(self, cid, nxt, csleep, same_names, pending, expanded_sleep, frontier):
        """A known state reached again, with `csleep` asleep on this path."""
        waiting = pending.get(cid)
        if waiting is not None:
            # not expanded yet: only the moves asleep on every path to it may be skipped; with
            # other names (a symmetric image) the keys do not compare, so nothing is skipped
            if waiting.sleep:
                waiting.sleep = {k: f for k, f in waiting.sleep.items() if k in csleep} if same_names else _NO_SLEEP
            return
        stored = expanded_sleep.get(cid)
        if not stored:
            return
        if same_names:
            missing = [k for k in stored if k not in csleep]
            if not missing:
                return
            # expand the moves skipped there and not asleep here, with this path's sleep set
            nxt.sleep, nxt.only = csleep, frozenset(missing)
            left = {k: f for k, f in stored.items() if k in csleep}
            if left:
                expanded_sleep[cid] = left
            else:
                del expanded_sleep[cid]
        else:
            # a symmetric image: expand it afresh (its successors are images of the skipped ones)
            nxt.sleep, nxt.only = _NO_SLEEP, frozenset(move_key(m) for m in
                                                        self.gen.moves(nxt.st, nxt.now, nxt.aux, nxt.budget))
            del expanded_sleep[cid]
        self.reexpanded += 1
        frontier.append((cid, nxt))

    def _any_productive(self, node, nid, asleep, seen):
        n = 0
        for move in asleep:
            if move.cost or move.env or move.tick:
                continue
            nxt, bad = self.apply_move(node, move)
            if nxt is None:
                continue
            n += 1
            if seen.get(self.fingerprint(nxt)) != nid:
                return True, n
        return False, n

    def _quiescent_ok(self, node):
        st = node.st
        for cl in st.dir.clients.values():
            if cl.status == "paused":
                return False
        if self.gen.copy_in_schedule(st):
            return False
        # time would still change something: a broker lock of a client that is gone (it expires),
        # or an orderly lease that ran out (lockAll renews it)
        lease = self.profile.client_lock_max_live_ms
        for qs in st.queues.values():
            if qs.holder is not None:
                h = st.dir.clients.get(qs.holder)
                if h is None or h.status != "running":
                    return False
            for pq in qs.pqs.values():
                if pq.orderly and pq.live and (not pq.locked or node.now - pq.last_lock_ts > lease):
                    return False
        return True

    def _violation(self, kind, f, nid, extra):
        if kind == "guard":
            mi, done = extra
            evs, node = self.trace_of(self._parents, self._moves, nid, self.setup)
            ts = node.now + self.gen.moves(node.st, node.now, node.aux, node.budget)[mi].tick
            evs = _numbered([e for e in evs] + [dict(e, ts=ts) for e in done])
            return Violation(f.inv, f.message, "guard", self._depths[nid] + 1, evs, f.key,
                             {"rejected_event": done[-1]["kind"]})
        if kind == "state":
            inv, key, msg = f
            evs, node = self.trace_of(self._parents, self._moves, nid, self.setup)
            return Violation(inv, msg, "state", self._depths[nid], evs, key)
        # end
        evs, node = self.trace_of(self._parents, self._moves, nid, self.setup)
        evs = _numbered(evs + [{"kind": "trace_ended", "reason": "quiescent", "ts": node.now}])
        return Violation(f.inv, f.message, "end", self._depths[nid], evs, f.key)


def move_key(move) -> tuple:
    """A move's identity across states: what it does (its events and explorer-side variables),
    not where it was proposed."""
    aux = tuple(sorted(move.aux.items(), key=repr)) if move.aux else ()
    return (move.tick, orjson.dumps(move.events, option=orjson.OPT_SORT_KEYS), aux)


def _aux_image(aux, names, qmap):
    """The explorer-side variables under one symmetry image: client ids renamed, main-topic
    queue keys mapped."""
    for (a, k, o), r in aux.items():
        if a == LOCK_DUE:
            yield (a, names.get(k, k), o), r
        else:
            yield (names.get(a, a), k[:-1] + (qmap.get(k[-1], k[-1]) if k[1] == TOPIC else k[-1],), o), r


def _move_class(move) -> str:
    """The fairness class of a move (see model_checks/liveness.py)."""
    if move.env:
        return "adversary"
    if move.cost.get("faults"):
        return "fault"
    if move.tick:
        return "time"
    if move.aux and any(k[0] == ROUTE and v == 0 for k, v in move.aux.items()):
        return "recovery"      # a lost queue back in the route (its broker is up again)
    kinds = [e["kind"] for e in move.events]
    k0 = kinds[0] if kinds else ""
    if k0 == "allocation_computed":
        return "rebalance"
    if k0 in ("pull_issued", "offset_read"):
        return "pull"
    if k0 == "pull_answered":
        return "pull_answer"
    if k0 in ("consume_started", "messages_taken"):
        return "consume"
    if k0 == "consume_finished":
        return "failure" if move.cost.get("failures") else "consume_return"
    if k0 == "offset_persisted":
        return "persist"
    if k0 == "offset_committed":
        return "commit"
    if k0 == "schedule_delivered":
        return "schedule"
    if k0 == "lock_requested":
        return "lock"
    if k0 in ("client_resumed", "consumer_unregistered"):
        return "recovery"
    return k0


def _numbered(evs):
    out = []
    last = 0
    for i, ev in enumerate(evs):
        ev = dict(ev)
        ev["seq"] = i
        ev["ts"] = max(last, ev.get("ts", 0))
        last = ev["ts"]
        kind = ev.pop("kind")
        out.append({"seq": ev.pop("seq"), "ts": ev.pop("ts"), "kind": kind, **ev})
    return out


def explore(scope, profile=None, **kw) -> Result:
    return Explorer(scope, profile, **kw).run()


def write_trace(path, events) -> None:
    import orjson

    with open(path, "wb") as fh:
        for ev in events:
            fh.write(orjson.dumps(ev) + b"\n")


__all__ = ["Explorer", "Result", "Violation", "explore", "symmetry_group", "write_trace"]
_ = sys
