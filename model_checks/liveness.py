"""Liveness on the explored state graph (networkx).

Properties (checked on every reachable cycle, under the fairness below):

- **INV-LIVE-1** (cycle form of the spec's quiescence check): every stored message of a
  subscribed topic is eventually consumed or dead-lettered, and every retry copy in flight is
  eventually delivered, *as long as some consumer of the group is alive* (running or paused).
- **LIVE-REASSIGN**: a queue that no live consumer holds (no live ProcessQueue of a running or
  paused client) is eventually held again, as long as some consumer is alive.

Fairness (weak fairness: an action that stays enabled is eventually taken), per action instance
(the action class with its client, topic and queue):
  rebalance, pull, pull answer (the broker answers a pull it can answer), consume start and
  listener return, schedule delivery, lock / lockAll renewal, offset persist and the broker's
  commit, resume after a pause and channel expiry of a crashed client, and time (time diverges).
No fairness for faults (crash, pause, lost persist, failed query, reset, failed send-back), for
listener failures (RECONSUME_LATER / SUSPEND are choices of the listener; bounded anyway) or
adversary moves.

Method: for each obligation o (an offset not yet handled by the group, a retry copy in flight, a
queue nobody live holds), take the subgraph of states where o is pending and a consumer is
alive, and its strongly connected components. A non-trivial SCC is a fair counterexample iff
every fair action instance is either taken on an edge inside the SCC or disabled in some state
of it (for weak fairness this test on the whole SCC is exact). The report is a lasso: the
shortest path to the SCC, then a cycle inside it that takes every such action and visits every
such state.

Symmetry reduction is turned off when liveness is asked for (obligations name concrete
messages and queues, which a permutation would mix up).
"""
from __future__ import annotations

import networkx as nx

from .explorer import Violation, _numbered

FAIR = {"rebalance", "pull", "pull_answer", "consume", "consume_return", "schedule", "lock", "persist", "commit",
        "recovery", "time"}


def action_key(move, cls):
    e = move.events[0] if move.events else {}
    return (cls, e.get("client"), e.get("topic"), e.get("queue"))


def obligations(st):
    """Pending obligations of a state, or None when no consumer is alive."""
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
        qs = st.queues.get((alive[0].group, topic, broker, q))
        p = qs.units.get("") if qs is not None else None
        lo = p.wm if p is not None else 0
        for o in range(lo, sq.next):
            if p is None or o not in p.done:
                out.append(("msg", topic, q, o))
    for (g, origin), ch in st.chains.items():
        if any(e[0] in ("sent_back", "delayed", "redelivered") for e in ch.entries):
            out.append(("retry", origin))
    return frozenset(out)


def check_liveness(ex, res, max_reports=2) -> dict:
    info = ex.live_info
    edges = res.graph[0] if res.graph else []
    g = nx.DiGraph()
    for u, v, mi, key in edges:
        if not g.has_edge(u, v):
            g.add_edge(u, v, mi=mi, keys={key})
        else:
            g[u][v]["keys"].add(key)
    all_obl = set()
    for obl, _ in info.values():
        all_obl.update(obl)
    found = []
    sccs_seen = 0
    fair_checked = 0
    reported = set()
    for o in sorted(all_obl, key=repr):
        nodes = [n for n, (obl, _) in info.items() if o in obl]
        sub = g.subgraph(nodes)
        for comp in nx.strongly_connected_components(sub):
            if len(comp) == 1:
                n = next(iter(comp))
                if not sub.has_edge(n, n):
                    continue
            sccs_seen += 1
            fair_checked += 1
            taken = set()
            for u in comp:
                for v in sub.successors(u):
                    if v in comp:
                        taken |= sub[u][v]["keys"]
            enabled_somewhere_all = None
            disabled_witness = {}
            for n in comp:
                en = info[n][1]
                enabled_somewhere_all = set(en) if enabled_somewhere_all is None else enabled_somewhere_all & en
            # an action enabled in every state of the SCC must be taken inside it
            unfair = [a for a in enabled_somewhere_all if a not in taken]
            if unfair:
                continue
            kind = "LIVE-REASSIGN" if o[0] == "unheld" else "INV-LIVE-1"
            if kind in reported:
                continue
            reported.add(kind)
            # actions that must appear in the cycle: every fair action enabled somewhere in the SCC
            # and taken inside it; states where the others are disabled
            needed = set()
            for n in comp:
                needed |= info[n][1]
            needed &= taken
            found.append(_lasso(ex, res, g, sub, comp, o, kind, needed, disabled_witness))
            if len(found) >= max_reports:
                break
        if len(found) >= max_reports:
            break
    return {"sccs": sccs_seen, "fair_cycles": fair_checked, "violations": found}


def _lasso(ex, res, g, sub, comp, o, kind, needed, _):
    comp = set(comp)
    entry = min(comp, key=lambda n: ex._depths[n])
    # prefix: BFS parents
    prefix = []
    n = entry
    while n > 0:
        prefix.append(ex._moves[n])
        n = ex._parents[n]
    prefix.reverse()
    csub = sub.subgraph(comp)
    # a closed walk from entry through an edge of each needed action
    walk = []
    cur = entry
    todo = set(needed)
    guard = 0
    while todo and guard < 200:
        guard += 1
        best = None
        for u in comp:
            for v in csub.successors(u):
                ks = csub[u][v]["keys"] & todo
                if ks:
                    p = nx.shortest_path(csub, cur, u)
                    if best is None or len(p) < len(best[0]):
                        best = (p, u, v, ks)
        if best is None:
            break
        p, u, v, ks = best
        for a, b in zip(p, p[1:]):
            walk.append((a, b))
        walk.append((u, v))
        todo -= ks
        cur = v
    if cur != entry or not walk:
        if not walk and csub.has_edge(entry, entry):
            walk.append((entry, entry))
        else:
            p = nx.shortest_path(csub, cur, entry)
            for a, b in zip(p, p[1:]):
                walk.append((a, b))
    cycle = [csub[a][b]["mi"] for a, b in walk]
    evs, cycle_start = _replay(ex, prefix, cycle)
    evs.append({"kind": "trace_ended", "reason": "duration", "ts": evs[-1]["ts"] if evs else 0})
    evs = _numbered(evs)
    what = {"unheld": f"queue {o[1]}:{o[2]} is held by no live consumer forever",
            "msg": f"offset {o[3] if len(o) > 3 else '?'} of {o[1]}:{o[2]} is never consumed",
            "retry": f"the retry copy of {o[-1]} is never delivered"}[o[0]]
    return Violation(kind, what + " on a fair cycle", "liveness", len(prefix) + len(cycle), evs, None,
                     {"lasso": {"prefix_moves": len(prefix), "cycle_moves": len(cycle),
                                "cycle_starts_at_seq": cycle_start}, "obligation": list(o)})


def _replay(ex, prefix, cycle):
    node, setup = ex.initial()
    evs = list(setup)
    start = None
    for i, mi in enumerate(list(prefix) + list(cycle)):
        if i == len(prefix):
            start = len(evs)
        move = ex.gen.moves(node.st, node.now, node.aux, node.budget)[mi]
        nxt, bad = ex.apply_move(node, move)
        if nxt is None:
            break
        evs.extend(dict(ev, ts=nxt.now) for ev in move.events)
        node = nxt
    return evs, start if start is not None else len(evs)
