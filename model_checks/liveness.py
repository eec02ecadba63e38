"""Liveness on the explored state graph (networkx).

Properties (checked on every reachable cycle, under the fairness below):

- **INV-LIVE-1** (cycle form of the spec's quiescence check): every stored message of a
  subscribed topic is eventually consumed or dead-lettered, and every retry copy in flight is
  eventually delivered, *as long as some consumer of the group is alive* (running or paused).
- **LIVE-REASSIGN**: a queue that no live consumer holds (no live ProcessQueue of a running or
  paused client) is eventually held again, as long as some consumer is alive.

Fairness (strong fairness: an action enabled again and again is eventually taken), per action
instance (the action class with its client, topic and queue):
  rebalance, pull, pull answer (the broker answers a pull it can answer), consume start and
  listener return, schedule delivery, lock / lockAll renewal, offset persist and the broker's
  commit, resume after a pause and channel expiry of a crashed client, and time (time diverges).
No fairness for faults (crash, pause, lost persist, failed query, reset, failed send-back), for
listener failures (RECONSUME_LATER / SUSPEND are choices of the listener; bounded anyway) or
adversary moves.

Why strong, not weak: under abstract time the clock may jump 30 s while a client has work
enabled, and an orderly consume is disabled once the lease has lapsed. When lockAll could run at
any moment, weak fairness accepted "take no message while the lease is valid, let it lapse,
renew, repeat" as a fair run that never consumes. lockAll now runs on its schedule (every 20 s,
inside the lease), so a running client's lease does not lapse; a paused one's still does.
RocketMQ submits the ConsumeRequest at once; nothing but the passage of time disables it, so
an action that keeps coming back enabled is taken. `check_liveness(..., fairness="weak" | "none")` shows what each
assumption lets through.

Method: for each obligation o (an offset not yet handled by the group, a retry copy in flight, a
queue nobody live holds), take the subgraph of states where o is pending and a consumer is
alive, and its strongly connected components. Every state also has a stutter self-loop (a run
may stay anywhere forever unless fairness forbids it), so a dead end where no fair action is
enabled is a counterexample too, reported with an empty cycle. An SCC in which every fair
action instance enabled in some state is also taken on an inner edge is a fair counterexample.
If some enabled
action is never taken inside, no fair run visits the states where it is enabled: those are
removed and the rest is decomposed again (the Emerson-Lei / Streett refinement; exact for strong
fairness). The report is a lasso: the breadth-first path to the SCC's shallowest state, then a
closed walk inside the SCC that takes every fair action enabled in it (under weak fairness: or
visits a state where it is disabled). The lasso is replayed before it is reported: each move
must apply and one turn of the cycle must end in the state (fingerprint) where it started.

Symmetry reduction is turned off when liveness is asked for (obligations name concrete
messages and queues, which a permutation would mix up).
"""
from __future__ import annotations

from itertools import pairwise

import networkx as nx

from rocketspec.spec.pending import owed_offsets, retries_in_flight, unconsumed

from .explorer import Violation, _numbered

FAIR = {"rebalance", "pull", "pull_answer", "consume", "consume_return", "schedule", "lock", "persist", "commit",
        "recovery", "time"}
FAIRNESS = ("strong", "weak", "none")


def action_key(move, cls):
    e = move.events[0] if move.events else {}
    return (cls, e.get("client"), e.get("topic"), e.get("queue"))


def obligations(st):
    """Pending obligations of a state (empty when no consumer is alive): what spec.pending says
    is owed (each unconsumed offset, each retry copy on its way), and each queue of a subscribed
    topic with messages that no live consumer holds a ProcessQueue for (LIVE-REASSIGN)."""
    d = st.dir
    alive = [c for c in d.clients.values() if c.status in ("running", "paused")]
    if not alive:
        return frozenset()
    out = []
    topics = set()
    for c in alive:
        topics.update(c.subs)
    for (topic, broker, q), sq in st.stored.items():
        if topic not in topics or sq.next == 0:
            continue
        held = False
        for c in alive:
            qs = st.queues.get((c.group, topic, broker, q))
            pq = qs.pqs.get(c.cid) if qs is not None else None
            if pq is not None and pq.live:
                held = True
        if not held:
            out.append(("unheld", topic, q))
    for (g, topic, broker, q), unit, p, sq in unconsumed(st):
        out.extend(("msg", topic, q, o) for o in owed_offsets(p, sq))
    for (g, origin), _ in retries_in_flight(st):
        out.append(("retry", origin))
    return frozenset(out)


STUTTER = ("stutter", None, None, None)


def graph_of(res, expanded=()) -> nx.DiGraph:
    """The explored graph: one edge per (state, successor), with `moves` {action key: move index}
    (the first move of that action instance leading there). Every expanded state also gets a
    stutter self-loop (key STUTTER, no move): a run may stay in a state forever, which fairness
    rules out unless no fair action is enabled there. That is how a dead end (no move left, or
    only faults) with an obligation pending is a fair cycle too, also where the explorer's
    quiescence check does not look (e.g. a crashed client's broker lock is still recorded)."""
    g = nx.DiGraph()
    for u, v, mi, key in (res.graph[0] if res.graph else ()):
        d = g.get_edge_data(u, v)
        if d is None:
            g.add_edge(u, v, moves={key: mi})
        else:
            d["moves"].setdefault(key, mi)
    for n in expanded:
        d = g.get_edge_data(n, n)
        if d is None:
            g.add_edge(n, n, moves={STUTTER: None})
        else:
            d["moves"][STUTTER] = None
    return g


def fair_components(g, nodes, info, fairness="strong", stats=None):
    """Yield (component, taken, enabled) for each fair strongly connected component of the
    subgraph of `nodes`: a set of states an infinite run can stay in forever, visiting every one
    of them and taking every edge between them infinitely often, while respecting fairness.
    `taken` is the set of action keys on its inner edges, `enabled` those of fair actions enabled
    in some state of it. `stats["sccs"]` counts the components examined that have a real cycle
    (not only stuttering)."""
    stack = [list(nodes)]
    while stack:
        sub = g.subgraph(stack.pop())
        for comp in nx.strongly_connected_components(sub):
            if len(comp) == 1:
                n = next(iter(comp))
                if not sub.has_edge(n, n):
                    continue
                real = len(sub[n][n]["moves"]) > (STUTTER in sub[n][n]["moves"])
            else:
                real = True
            if stats is not None and real:
                stats["sccs"] = stats.get("sccs", 0) + 1
            taken = set()
            for u in comp:
                for v, d in sub[u].items():
                    if v in comp:
                        taken.update(d["moves"])
            enabled = set()
            for n in comp:
                enabled |= info[n][1]
            if fairness == "none":
                yield comp, taken, enabled
            elif fairness == "weak":
                # weak: an action enabled in *every* state of the component must be taken in it
                always = set.intersection(*(set(info[n][1]) for n in comp))
                if always <= taken:
                    yield comp, taken, enabled
            else:
                # strong: an action enabled in *some* state must be taken in it. If one is not,
                # no fair run visits the states where it is enabled: drop them and look again at
                # what is left (Streett / Emerson-Lei refinement)
                bad = enabled - taken
                if not bad:
                    yield comp, taken, enabled
                else:
                    rest = [n for n in comp if not (info[n][1] & bad)]
                    if rest:
                        stack.append(rest)


def check_liveness(ex, res, max_reports=2, fairness="strong") -> dict:
    """Fair cycles of the explored graph that violate INV-LIVE-1 or LIVE-REASSIGN, as lasso traces.
    `fairness` is "strong" (the assumption, see the module doc), "weak" or "none" (every cycle of
    real moves counts, no stuttering: for showing what the fairness assumption rules out)."""
    if fairness not in FAIRNESS:
        raise ValueError(f"fairness must be one of {FAIRNESS}")
    info = ex.live_info
    g = graph_of(res, info if fairness != "none" else ())     # "none": real cycles only
    all_obl = set()
    for obl, _ in info.values():
        all_obl.update(obl)
    found = []
    fair_seen = 0
    stats = {"sccs": 0}
    reported = set()
    for o in sorted(all_obl, key=repr):
        nodes = [n for n, (obl, _) in info.items() if o in obl]
        for comp, taken, enabled in fair_components(g, nodes, info, fairness, stats):
            fair_seen += 1
            kind = "LIVE-REASSIGN" if o[0] == "unheld" else "INV-LIVE-1"
            if kind in reported or len(found) >= max_reports:
                continue
            reported.add(kind)
            # the cycle must take every fair action that is enabled somewhere in the component and
            # taken in it, and (weak fairness) visit a state where each of the others is disabled
            if fairness == "none":
                need_keys, need_states = set(), {}
            else:
                need_keys = enabled & taken
                need_states = {a: [n for n in comp if a not in info[n][1]] for a in enabled - taken}
            found.append(_lasso(ex, g.subgraph(comp), comp, o, kind, need_keys, need_states))
    return {"sccs": stats["sccs"], "fair_cycles": fair_seen, "fairness": fairness, "violations": found}


def _closed_walk(csub, entry, need_keys, need_states):
    """A closed walk [(u, v, key)] from `entry` inside the component that takes an edge of every
    key in need_keys and visits, for every list in need_states, one of its states. Greedy: go to
    the nearest unmet target, then back to entry."""
    todo_k = set(need_keys)
    todo_s = {a: set(ns) for a, ns in need_states.items()}
    walk = []
    cur = entry

    def step(a, b, want=None):
        ks = csub[a][b]["moves"]
        k = want if want is not None else min((k for k in ks if k in todo_k), default=None, key=repr)
        if k is None:
            k = min(ks, key=lambda k: (k == STUTTER, repr(k)))
        walk.append((a, b, k))
        todo_k.discard(k)
        for x in [x for x, ns in todo_s.items() if b in ns]:
            del todo_s[x]

    for x in [x for x, ns in todo_s.items() if entry in ns]:
        del todo_s[x]
    while todo_k or todo_s:
        paths = nx.single_source_shortest_path(csub, cur)
        best = None                     # ((length, self-loop), path, final key or None)
        for ns in todo_s.values():
            for n in ns:
                p = paths[n]
                if best is None or (len(p) - 1, False) < best[0]:
                    best = ((len(p) - 1, False), p, None)
        for u, v, d in csub.edges(data=True):
            for k in d["moves"]:
                # on a tie, an edge that moves on (a self-loop is a turn that changes nothing)
                if k in todo_k and (best is None or (len(paths[u]), u == v) < best[0]):
                    best = ((len(paths[u]), u == v), paths[u] + [v], k)
        _, p, k = best
        for i, (a, b) in enumerate(pairwise(p)):
            step(a, b, k if i == len(p) - 2 else None)
        cur = p[-1]
    if not walk:
        # nothing required: any cycle through entry (a self-loop if there is one)
        nxt = entry if csub.has_edge(entry, entry) else min(csub.successors(entry))
        step(entry, nxt)
        cur = nxt
    if cur != entry:
        p = nx.shortest_path(csub, cur, entry)
        for a, b in pairwise(p):
            step(a, b)
    return walk


def _lasso(ex, csub, comp, o, kind, need_keys, need_states):
    entry = min(comp, key=lambda n: (ex._depths[n], n))
    # prefix: the breadth-first tree path to the component's shallowest state
    prefix = []
    n = entry
    while n > 0:
        prefix.append(ex._moves[n])
        n = ex._parents[n]
    prefix.reverse()
    walk = [w for w in _closed_walk(csub, entry, need_keys, need_states) if w[2] != STUTTER]
    cycle = [csub[a][b]["moves"][k] for a, b, k in walk]     # empty: the run stops at entry
    evs, cycle_start, labels = _replay(ex, prefix, cycle, [k for _, _, k in walk])
    evs.append({"kind": "trace_ended", "reason": "duration", "ts": evs[-1]["ts"] if evs else 0})
    evs = _numbered(evs)
    what = {"unheld": f"queue {o[1]}:{o[2]} is held by no live consumer forever",
            "msg": f"offset {o[3] if len(o) > 3 else '?'} of {o[1]}:{o[2]} is never consumed",
            "retry": f"the retry copy of {o[-1]} is never delivered"}[o[0]]
    how = " on a fair cycle" if cycle else " in a state where no fair action is enabled (the run stops there)"
    return Violation(kind, what + how, "liveness", len(prefix) + len(cycle), evs, None,
                     {"lasso": {"prefix_moves": len(prefix), "cycle_moves": len(cycle),
                                "cycle_starts_at_seq": cycle_start, "prefix": list(prefix), "cycle": cycle,
                                "cycle_labels": labels, "cycle_states": [a for a, _, _ in walk] or [entry]},
                      "obligation": list(o)})


def _replay(ex, prefix, cycle, keys):
    """Re-apply prefix + one turn of the cycle from the initial state: the events, the index of the
    cycle's first event, and the cycle's move labels. The explorer's graph is over fingerprints, so
    this checks what the lasso claims: every move applies, each cycle move is the action the walk
    chose, and the turn ends in the state (fingerprint) where it started."""
    from .explorer import _move_class

    node, setup = ex.initial()
    evs = list(setup)
    start = len(evs)
    fp0 = None
    labels = []
    for i, mi in enumerate(list(prefix) + list(cycle)):
        if i == len(prefix):
            start = len(evs)
            fp0 = ex.fingerprint(node)
        move = ex.gen.moves(node.st, node.now, node.aux, node.budget)[mi]
        if i >= len(prefix):
            k = action_key(move, _move_class(move))
            if k != keys[i - len(prefix)]:
                raise RuntimeError(f"lasso replay: move {mi} is {k}, the graph says {keys[i - len(prefix)]}")
            labels.append(move.label)
        nxt, _ = ex.apply_move(node, move)
        if nxt is None:
            raise RuntimeError(f"lasso replay hit a rejected move: {move.label}")
        evs.extend(dict(ev, ts=nxt.now) for ev in move.events)
        node = nxt
    if fp0 is not None and ex.fingerprint(node) != fp0:
        raise RuntimeError("lasso replay: one turn of the cycle does not return to its first state")
    return evs, start, labels
