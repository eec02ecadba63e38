"""Breadth-first search of the reference itself (model_checks/world.py), through the spec.

A node is a snapshot of the whole reference world (simulator heap, broker, clients) with the
spec's state of its trace so far and the budgets left. Its successors: the simulator takes one
step (`Simulator.step`: which due task runs first, whether an armed fault strikes before it,
then that task), and every choice the step makes (task order, fault strike, listener status,
consume duration, lost one-way call, failed send-back or offset query, retry queue) is
enumerated by re-running the step from the snapshot with each script
(`reference.choice.enumerate_scripts`). The events the step emits go through the spec
(`spec.step`); an error is a violation with its invariant id (the profile's broker or client
took a step the spec forbids). A run ends when the reference's own quiescence check holds
(`Run.quiescent`: everything consumed and committed) or at the scope's horizon; the trace then
ends (`trace_ended`) and the spec's end rule (INV-LIVE-1) judges it: a quiescent end, and a
horizon end with nothing left waiting on the clock (`Run.waiting`: reason horizon; a run still
owing messages then is one that never settles). A horizon end with a delayed message, a pause or
a lost route still pending is cut short (reason duration) and not judged. Faults strike only
before the run ends.

States are deduplicated by a 96-bit digest of the snapshot (tie-break counters and event
numbers left out, the heap in canonical order). Time is absolute: the search is exhaustive
within the horizon.
"""
from __future__ import annotations

import multiprocessing
import resource
import time
from array import array
from collections import deque

from rocketspec.reference.choice import enumerate_scripts
from rocketspec.spec import check_state, get_profile, step

from . import world as W
from .result import Result, Violation, _numbered


class RefExplorer:
    def __init__(self, scope, profile=None, *, progress=None, max_states=None, stop_at_first=False,
                 max_depth=None, deadline=None, workers=1, reduce=True, chain=True, split=True, on_kind=None):
        self.scope = scope
        self.profile = get_profile(profile)
        self.progress = progress
        self.max_states = max_states or scope.max_states
        self.stop_at_first = stop_at_first
        # expand no node this deep: every run of at most this many choices is checked (a bounded
        # search); the scope's own max_depth unless given
        self.max_depth = max_depth if max_depth is not None else (
            scope.max_depth if scope.max_depth != type(scope).max_depth else None)
        self.deadline = deadline        # time.monotonic() after which the search ends, incomplete
        self.workers = max(1, workers)  # processes expanding a level's nodes in parallel
        # tasks due together that commute run in one order (reference/footprint.py); their
        # footprints promise no task for the same millisecond, which needs a network latency
        self.reduce = reduce
        # a node is a state before a choice: the steps between two choices run as one
        self.chain = chain
        # one fault among several kinds: a search per kind (see run_split)
        self.split = split
        # called with (kind, Result) as each fault kind's search ends (run_split): a long search
        # reports what it has finished so far
        self.on_kind = on_kind
        self.depth_limit = None   # expand no node this deep (a shallower violation is known)

    # ------------------------------------------------------------------ one step
    def _root(self):
        evs = []
        w = W.build(self.scope, self.profile, evs.append)
        for ev in evs:
            errs = [f for f in step(w.spec, ev) if f.severity == "error"]
            if errs:
                raise RuntimeError(f"setup event {ev['kind']} rejected: {errs[0].inv}: {errs[0].message}")
        return w, evs

    def _advance(self, snap: bytes, ch, evs: list):
        """Run one step of the world in `snap` with chooser `ch`, then (with `chain`) every
        following step that makes no choice, up to the next one that does; events go to `evs`.
        Returns (world, finding): finding is ("guard", Finding) for an event the spec rejects,
        ("end", Finding) for a run that ends badly, or None.

        A step with no choice has one successor, so the states of such a chain need no snapshot
        of their own: the next node is the state before the next choice, or the run's end, or a
        state where a state predicate fails (checked after every step). Whether a step chooses
        is known only once it asks (`BudgetChooser.probe`); the world is then halfway through
        that step, and the chain is run again from `snap` to the state before it."""
        w, finding, _found = self._chain(snap, ch, evs)
        return w, finding

    def _chain(self, snap: bytes, ch, evs: list):
        """_advance, and the state predicates' findings in the world it returns when the chain
        already checked them there (else None)."""
        w = W.load(snap, evs.append, ch)
        finding = self._step(w, evs, 0)
        if w.ended is not None and ch.deferred:
            return self._undeferred(snap, ch, 0, evs, 0)
        if not self.chain:
            return w, finding, None
        steps = 1
        found = None
        while finding is None and w.ended is None:
            found = check_state(w.spec)
            if found:
                break                      # the node where a state predicate fails
            sim = w.run.sim
            batch = sim.next_batch(self.horizon)
            pick, offered = (None, None) if batch is None else ch.ahead(batch)
            if w.faults_left > 0 and sim.armed and (batch is None or w.nodefer or offered != []):
                break                      # a fault may strike before the next task: a choice
            if batch is not None and len(batch) > 1 and pick is None:
                break                      # the next step orders its tasks: a choice, seen ahead
            mark = len(evs)
            ch.probe = True
            ch.deferred = False
            try:
                finding = self._step(w, evs, mark)
            except W.Branch:               # the world rebuilt is the one `found` was checked in
                del evs[mark:]
                w = self._rerun(snap, [i for _, _, i in ch.trail], steps)
                break
            finally:
                ch.probe = False
            if w.ended is not None and ch.deferred:
                return self._undeferred(snap, ch, steps, evs, mark)
            found = None
            steps += 1
        return w, finding, found

    def _undeferred(self, snap, ch, steps, evs, mark):
        """A step that left a fault or a task for later ended the run, so no later came: the
        state before that step (`steps` steps after `snap`), marked to take its next step every
        way. The step is taken again from there (a new node, or `snap` itself marked)."""
        del evs[mark:]
        w = self._rerun(snap, [i for _, _, i in ch.trail], steps)
        w.nodefer = True
        return w, None, None

    def _rerun(self, snap, script, steps):
        """The world `steps` steps of a chain after `snap` (the first with `script`)."""
        evs = []
        w = W.load(snap, evs.append, self._chooser(script))
        for _ in range(steps):
            if self._step(w, evs, len(evs)) is not None:
                raise RuntimeError("a chain of the reference ran differently the second time")
        return w

    def _step(self, w, evs: list, start: int):
        """One step of the simulator on w; its events (evs[start:]) through the spec."""
        run, sim = w.run, w.run.sim
        limit = self.horizon
        what = sim.step(limit)
        sim.chooser.stepped()
        w.nodefer = False
        if what is None:
            sim.now = limit
        end = None
        if what is None or sim.now >= limit:
            # the horizon: with nothing left waiting on the clock (no delayed message, pause or
            # lost route; the scope's faults long past), a run still owing messages never
            # settles: the end is judged (horizon). Else the run was cut short (duration)
            end = "duration" if run.waiting() else "horizon"
        elif run.steps_done and sim.next_live_due() != sim.now and run.quiescent():
            # judged once a millisecond's tasks have all run: tasks due together that commute
            # then end the run in the same state whatever their order (the reduction runs them in
            # one order; a run cut between two of them would end in a state the other order
            # passes by). A fault the budget allows may still strike, and the run goes on: a
            # fault that struck between two tasks of the millisecond, in an order the reduction
            # does not take, is such a fault after both
            if not (w.faults_left > 0 and sim.strike_now()):
                end = "quiescent"
        elif run.steps_done and w.faults_left > 0 and sim.next_live_due() != sim.now:
            # a crash left for later (it commuted with a task of this millisecond) may have struck
            # between two of its tasks, in an order the reduction does not take, and ended the
            # run here: offered here when it would (W.crashes_that_end)
            if sim.strike_now(W.crashes_that_end(w)) and sim.next_live_due() != sim.now and run.quiescent():
                end = "quiescent"
        n = start
        spec = w.spec
        for i in range(start, len(evs)):
            n += 1
            for f in step(spec, evs[i]):
                if f.severity == "error":
                    del evs[n:]
                    return ("guard", f)
        if end is not None:
            w.ended = end
            sim.emit("trace_ended", reason=end)
            for f in step(spec, evs[-1]):
                if f.severity == "error":
                    return ("end", f)
        return None

    # ------------------------------------------------------------------ search
    def expand(self, snap: bytes) -> list:
        """Every successor of the node `snap`: (script, findings, ended, digest, snapshot, steps)
        per script of one step (and the chain after it: `steps` states). findings: [(kind, finding)], kind "guard" or "end" (the step was
        rejected: no state follows) or "state" (a state predicate fails in the new state).
        An ended run, or a rejected step, has no digest and no snapshot."""
        out = []
        for script, trail, (w, finding, checked) in enumerate_scripts(lambda ch: self._try(snap, ch),
                                                                      chooser=self._chooser):
            script = list(script)
            steps = max(1, w.run.sim.tasks_run)    # the states a chain passed through
            if finding is not None:
                out.append((script, [finding], None, None, None, steps))
                continue
            if checked is None:
                checked = check_state(w.spec)
            found = [("state", (inv, key, msg)) for inv, key, msg in checked]
            if w.ended is not None:
                out.append((script, found, w.ended, None, None, steps))
                continue
            s = W.snapshot(w)
            out.append((script, found, None, W.digest(s), s, steps))
        return out

    def run(self) -> Result:
        if self.split and self.scope.faults == 1 and len(W.fault_kinds(self.scope)) > 1:
            return self.run_split()
        return self._run()

    def run_split(self) -> Result:
        """A scope with a budget of one fault among several kinds, searched as one search per
        kind. A run of the scope has at most one fault, so it is a run of exactly one kind's
        scope (or of all of them, when no fault strikes): the union of the kinds' state spaces
        is the scope's, and each kind's search is exhaustive, reduced and stopped as this one
        would be. With workers, each kind's search expands its levels in N processes. What
        none of them strikes, the runs with no fault, is searched once per kind: distinct and
        generated are sums over the kinds."""
        import dataclasses

        kinds = W.fault_kinds(self.scope)
        subs = [RefExplorer(dataclasses.replace(self.scope, fault_kinds=(k,)), self.profile,
                            max_states=self.max_states, stop_at_first=self.stop_at_first, deadline=self.deadline,
                            max_depth=self.max_depth, reduce=self.reduce, chain=self.chain, split=False) for k in kinds]
        t0, c0 = time.perf_counter(), time.process_time()
        kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        res = Result(scope=self.scope.name, profile=self.profile.name)
        bar = self.progress
        # with workers, each kind's search expands its levels in parallel (a kind after another):
        # the pause kind alone is most of `small`, so one worker per kind left the other idle
        results = []
        for sub in subs:
            sub.workers = self.workers
            if bar is not None:
                sub.progress = _Offset(bar, results)
            if self.stop_at_first:
                # a kind searched after one that found a violation need not go deeper
                sub.depth_limit = min((v.depth for r in results for v in r.violations), default=None)
            # the state cap is the whole search's: a kind gets what the kinds before it left
            left = self.max_states - sum(r.distinct for r in results)
            if left < 1:
                results.append(Result(scope=sub.scope.name, profile=self.profile.name, complete=False))
                continue
            sub.max_states = left
            results.append(sub._run())
            if self.on_kind is not None:
                self.on_kind(sub.scope.fault_kinds[0], results[-1])
        for k, r in zip(kinds, results):
            _add(res, r)
            res.kinds[k] = r
        found = sorted((v for r in results for v in r.violations), key=lambda v: (v.depth, v.invariant))
        if self.stop_at_first and found:
            found = [v for v in found if v.depth == found[0].depth]
        first = {}
        for v in found:
            first.setdefault(v.invariant, v)
        res.violations = sorted(first.values(), key=lambda v: (v.depth, v.invariant))
        res.seconds = time.perf_counter() - t0
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        res.cpu_seconds = (time.process_time() - c0 + (kids.ru_utime - kids0.ru_utime)
                           + (kids.ru_stime - kids0.ru_stime))
        if bar is not None:
            bar.set(res.distinct, res.generated, res.depth, len(res.violations))
            bar.close()
        return res

    def _run(self) -> Result:
        scope = self.scope
        t0, c0 = time.perf_counter(), time.process_time()
        kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        res = Result(scope=scope.name, profile=self.profile.name)
        root, setup = self._root()
        self.horizon = root.run.scenario["drain_limit_ms"]
        if root.run.net.latency_ms < 1:
            self.reduce = False
        self.setup = setup
        snap0 = W.snapshot(root)
        seen = {W.digest(snap0): 0}
        parents = array("q", [-1])
        depths = array("i", [0])
        scripts = [None]               # the step's script from the parent (node id -> list)
        found = {}
        generated = 1
        bar = self.progress
        pool = _pool(self) if self.workers > 1 else None
        try:
            level = [(0, snap0)]
            d = 0
            while level:
                if self.depth_limit is not None and d >= self.depth_limit:
                    res.stopped = True     # a violation this shallow was found elsewhere (run_split)
                    break
                if self.max_depth is not None and d >= self.max_depth:
                    res.bounded = True     # the bound: these nodes' runs go on unchecked
                    break
                nxt = []
                for nid, succs in self._expansions(level, pool):
                    for script, findings, ended, fp, s, steps in succs:
                        generated += steps
                        for kind, f in findings:
                            inv = f[0] if kind == "state" else f.inv
                            if inv not in found:
                                found[inv] = (kind, f, nid, script, d + 1)
                        if ended is not None:
                            res.quiescent += ended == "quiescent"
                            res.horizon += ended == "horizon"
                            res.unjudged += ended == "duration"
                            continue
                        if fp is None or fp in seen:
                            continue
                        cid = len(parents)
                        seen[fp] = cid
                        parents.append(nid)
                        depths.append(d + 1)
                        scripts.append(script)
                        res.depth = max(res.depth, d + 1)
                        nxt.append((cid, s))
                        if len(parents) >= self.max_states:
                            res.complete = False
                            break
                    if not res.complete:
                        break
                    if self.deadline is not None and time.monotonic() > self.deadline:
                        res.complete = False
                        break
                    if bar is not None and not (nid & 255):
                        bar.set(len(parents), generated, d, len(found))
                if not res.complete:
                    break
                d += 1
                if self.stop_at_first and found:
                    # breadth-first: every violation of this level is a shortest one
                    res.stopped = bool(nxt)
                    break
                level = nxt
        finally:
            if pool is not None:
                pool.close()
                pool.join()
        res.generated = generated
        res.distinct = len(parents)
        res.seconds = time.perf_counter() - t0
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        res.cpu_seconds = (time.process_time() - c0 + (kids.ru_utime - kids0.ru_utime)
                           + (kids.ru_stime - kids0.ru_stime))
        self._parents, self._scripts, self._depths = parents, scripts, depths
        for inv, (kind, f, nid, script, depth) in found.items():
            res.violations.append(self._violation(kind, f, nid, script, depth))
        res.violations.sort(key=lambda v: (v.depth, v.invariant))
        if bar is not None:
            bar.close()
        return res

    def _expansions(self, level, pool):
        """(node id, successors) for every node of one breadth-first level, in the level's
        order whatever the number of workers (so node ids, and the first violation found, do
        not depend on it)."""
        if pool is None:
            for nid, snap in level:
                yield nid, self.expand(snap)
            return
        size = max(1, min(64, len(level) // (self.workers * 8)))
        chunks = [level[i:i + size] for i in range(0, len(level), size)]
        for chunk, results in zip(chunks, pool.imap(_expand_chunk, [[s for _, s in c] for c in chunks])):
            for (nid, _), succs in zip(chunk, results):
                yield nid, succs

    def _chooser(self, script):
        return W.BudgetChooser(script, reduce=self.reduce)

    def _try(self, snap, ch):
        return self._chain(snap, ch, [])

    # ------------------------------------------------------------------ counterexamples
    def trace_of(self, nid: int, last_script=None) -> list:
        """The events from the root to node `nid` (then one step more with `last_script`),
        by replaying the scripts from the root."""
        path = []
        while nid > 0:
            path.append(self._scripts[nid])
            nid = self._parents[nid]
        path.reverse()
        if last_script is not None:
            path.append(last_script)
        root, setup = self._root()
        evs = list(setup)
        snap = W.snapshot(root)
        for script in path:
            ch = self._chooser(script)
            step_evs = []
            w, finding = self._advance(snap, ch, step_evs)
            evs.extend(step_evs)
            if finding is not None:
                break
            snap = W.snapshot(w)
        return _numbered(evs)

    def _violation(self, kind, f, nid, script, depth):
        evs = self.trace_of(nid, script)
        if kind == "state":
            inv, key, msg = f
            return Violation(inv, msg, "state", depth, evs, key)
        return Violation(f.inv, f.message, "guard" if kind == "guard" else "end", depth, evs, f.key,
                         {"rejected_event": evs[-1]["kind"]})


# The worker processes' explorer (set in each worker by the pool's initializer; with the fork
# start method the parent's explorer is inherited, not pickled).
_WORKER = None


def _init_worker(ex):
    global _WORKER
    _WORKER = ex


def _expand_chunk(snaps):
    return [_WORKER.expand(s) for s in snaps]


def _pool(ex):
    ctx = multiprocessing.get_context("fork")
    return ctx.Pool(ex.workers, initializer=_init_worker, initargs=(ex,))


def _add(res, r) -> None:
    res.distinct += r.distinct
    res.generated += r.generated
    res.quiescent += r.quiescent
    res.horizon += r.horizon
    res.unjudged += r.unjudged
    res.bounded = res.bounded or r.bounded
    res.depth = max(res.depth, r.depth)
    res.complete = res.complete and r.complete
    res.stopped = res.stopped or r.stopped


class _Offset:
    """The progress of one kind's search shown on top of the kinds searched before it."""

    def __init__(self, bar, done):
        self.bar = bar
        self.done = (sum(r.distinct for r in done), sum(r.generated for r in done), max((r.depth for r in done), default=0))

    def set(self, distinct, generated, depth, found):
        d, g, dp = self.done
        self.bar.set(d + distinct, g + generated, max(dp, depth), found)

    def close(self):
        pass


def explore(scope, profile=None, **kw) -> Result:
    return RefExplorer(scope, profile, **kw).run()


def bug_counterexample(profile, **kw):
    """The shortest counterexample of a known-bug profile: its bug's scope (scopes.BUG_SCOPES)
    searched breadth-first to the first violation. The violation of the invariant the bug's
    shortest run breaks first (scopes.BUG_FIRST, else the profile's expected violation), or
    None if the search does not find it."""
    from .scopes import BUG_FIRST, BUG_SCOPES, load_scope

    prof = get_profile(profile)
    name, over = BUG_SCOPES[prof.known_bug]
    want = BUG_FIRST.get(prof.known_bug, prof.expected_violation)
    res = RefExplorer(load_scope(name, **over), prof, stop_at_first=True, **kw).run()
    return next((v for v in res.violations if v.invariant == want), None)
