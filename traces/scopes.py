"""Scopes: the deployments of a trace, as the replay's plan sees them, and when each one ends.

Names (spec.kinds.names: groups, topics, brokers, clients) that one event mentions together are
joined (union-find) into a *scope*. No action reads state of another scope than its event's
(spec.evict says why), so:

- a directory event (clients, brokers, topics, allocations) goes only to the partitions that
  hold a component of its scope, its first one being the scope's *owner* (which keeps the
  findings no component owns); a scope with no component is owned by partition 0. The trace's
  own events (trace_started, trace_ended) name nothing and go to every partition;
- once a partition has replayed the last event of a scope it receives, it may drop that scope's
  state (spec.evict): `ends` gives, per partition, the seq of that event and the scope's names.

Independent deployments (the benchmark's copies, each with its own brokers, topics, groups and
clients) are one scope each. Names shared (one broker serving many groups) join their scopes:
a scope ends when the last of its groups does.
"""
from __future__ import annotations


class UnionFind:
    def __init__(self):
        self.parent: dict = {}

    def find(self, x):
        p = self.parent
        p.setdefault(x, x)
        root = x
        while p[root] != root:
            root = p[root]
        while p[x] != root:
            p[x], x = root, p[x]
        return root

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


class Scopes:
    """`combos`: {(places, names): (events, last seq)} of a trace (places None for a directory
    event); `plan`: its traces.spark.spark_replay.Plan, whose partitions hold the components."""

    def __init__(self, combos: dict, plan):
        uf = UnionFind()
        for _, names in combos:
            for x in names:
                uf.find(x)
            for x in names[1:]:
                uf.union(names[0], x)
        self.root = {x: uf.find(x) for x in uf.parent}
        parts: dict = {}
        for places, names in combos:
            if places and names:        # (an event without state, places (), reads nothing)
                parts.setdefault(self.root[names[0]], set()).update(plan.targets(places))
        everywhere = tuple(range(plan.n))
        self.dir_targets = {}
        for r in set(self.root.values()):
            ps = sorted(parts.get(r, ()))
            self.dir_targets[r] = tuple(ps) if ps else (0,)
        self.everywhere = everywhere
        members: dict = {}
        for x, r in self.root.items():
            members.setdefault(r, []).append(x)
        last: dict = {}
        for (places, names), (_, seq) in combos.items():
            if not names:
                continue
            r = self.root[names[0]]
            for p in (plan.targets(places) if places is not None else self.targets(names)):
                if last.get((p, r), -1) < seq:
                    last[(p, r)] = seq
        self.count = len(members)
        self.ends = sorted((p, seq, tuple(sorted(members[r]))) for (p, r), seq in last.items())

    def __getstate__(self):
        # the ends are the driver's (it sends each partition its own, in its rows): the plan
        # broadcast to every executor does not carry them
        return {k: v for k, v in self.__dict__.items() if k != "ends"}

    def targets(self, names) -> tuple:
        """The partitions a directory event goes to (its scope's owner first)."""
        if not names:
            return self.everywhere
        return self.dir_targets[self.root[names[0]]]
