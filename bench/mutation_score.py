"""Mutation score of the conformance checks, and each mutant's time to be killed, per method.

    python -m bench.mutation_score [--seeds 1,2,3] [--budget S] [--methods simulate,hypothesis,exhaustive]
                                   [--only ID,ID] [--json] [--witness]

Methods, each searched blind (no known witness):
- simulate: the reference's built-in scenarios over seeds and both release profiles (seed, then
  profile, then scenario in name order), each run's trace checked by the spec; the time to kill
  is the wall time until the first run with a finding the scenario does not declare.
- hypothesis: the Hypothesis state machine on the mutated reference
  (conformance.statemachine.check_reference, derandomized), under 5.3.3 then 4.9.8.
- exhaustive: the explorer of the reference itself (model_checks/refexplore.py,
  conformance.mutants.kill_by_exhaustion) on the mutated reference, over the mutant's own
  scopes (conformance.mutants.MUTANT_SCOPES) and then the shared small scopes of
  conformance.mutants.EXHAUSTIVE_SCOPES (each exhausted without a violation on the unmutated
  reference) and both release profiles, reduced first and then every order, stopping at the
  first violation; the time to kill is the wall time to it.

`--witness` prints the WITNESS table for conformance/mutants.py from the simulate kills.
"""
from __future__ import annotations

import argparse
import json
import time

from rocketspec.conformance import mutants as M



def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--budget", type=float, default=90.0, help="seconds per mutant and method")
    ap.add_argument("--methods", default="simulate,hypothesis")
    ap.add_argument("--only", default=None)
    ap.add_argument("--hypothesis-examples", type=int, default=200)
    ap.add_argument("--shrink-budget", type=float, default=10.0, help="seconds of shrinking after a kill")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--witness", action="store_true")
    ap.add_argument("--markdown", default=None, help="write the catalogue with these results (docs/mutants.md)")
    ap.add_argument("--save", default=None, help="also write the rows and scores as JSON to this file")
    ap.add_argument("--from-json", default=None, help="only write --markdown from files --save wrote (comma-separated: "
                                                      "e.g. one per method)")
    a = ap.parse_args(argv)
    if a.from_json:
        d = merge(a.from_json.split(","))
        with open(a.markdown, "w", encoding="utf-8") as fh:
            fh.write(markdown(d["rows"], d["score"], d["seeds"], d["budget"], d["seconds"]))
        return
    seeds = tuple(int(s) for s in a.seeds.split(","))
    methods = a.methods.split(",")
    muts = [M.BY_ID[i] for i in a.only.split(",")] if a.only else list(M.CATALOGUE)
    rows = []
    t0 = time.perf_counter()
    hyp_available = True
    for m in muts:
        row = {"mutant": m.id, "targets": list(m.targets)}
        if "simulate" in methods:
            row["simulate"] = M.kill_by_simulation(m, seeds=seeds, budget_s=a.budget).to_dict()
        if "hypothesis" in methods:
            if hyp_available:
                try:
                    row["hypothesis"] = M.kill_by_hypothesis(m, profile=M.RELEASES, budget_s=a.budget,
                                                             max_examples=a.hypothesis_examples,
                                                             shrink_budget_s=a.shrink_budget).to_dict()
                except ImportError:
                    hyp_available = False
            if not hyp_available:
                row["hypothesis"] = None
        if "exhaustive" in methods:
            row["exhaustive"] = M.kill_by_exhaustion(m, budget_s=a.budget).to_dict()
        rows.append(row)
        if not a.json:
            print(_line(row), flush=True)
    total = time.perf_counter() - t0
    score = scores(rows, methods)
    if a.json:
        print(json.dumps({"rows": rows, "score": score, "seconds": round(total, 1)}))
    else:
        print()
        for k, v in score.items():
            if isinstance(v, dict):
                print(f"mutation score ({k}): {v['killed']}/{v['total']} = {v['score']:.0%}; "
                      f"median time to kill {v['median_kill_s']} s CPU, max {v['max_kill_s']} s CPU")
            else:
                print(f"mutation score ({k}): {v}")
        print(f"total {total:.0f} s")
    if a.save:
        with open(a.save, "w", encoding="utf-8") as fh:
            json.dump({"rows": rows, "score": score, "seconds": round(total, 1), "seeds": seeds, "budget": a.budget}, fh)
    if a.markdown:
        with open(a.markdown, "w", encoding="utf-8") as fh:
            fh.write(markdown(rows, score, seeds, a.budget, total))
    if a.witness:
        print("WITNESS = {")
        for r in rows:
            s = r.get("simulate")
            if s and s["killed"]:
                print(f'    "{r["mutant"]}": ("{s["scenario"]}", "{s["profile"]}", {s["seed"]}),')
        print("}")


INTRO = """# Semantic mutants of the reference

Each mutant is a one-line change to `reference/` that a client or broker author could make
(conformance/mutants.py holds the catalogue; `rocketspec gate --mutants` runs them). It is
applied at run time as a real source change: the function's source is read from its module,
the one line replaced, the function compiled again in the module's namespace and put in place
of the original for the duration of the run; the committed files are never edited.
tests/test_mutants.py checks that every original line still exists in `reference/` (a mutant
cannot rot silently), that applying and undoing works, and that each mutant's witness run
still kills it.

A mutant is **killed** only by a spec finding: an error-level finding of the checker (an
invariant, or the guard of an action that rejects an event) on the mutated reference's trace
that the unmutated reference does not produce on that scenario (its declared verdict). A crash
of the mutated reference is not a kill (it is counted and the search goes on). A run that runs
away (more than 300,000 events; the largest built-in scenario emits about 50,000) is stopped
and judged on the events it emitted, a prefix of its trace.

Methods (`python -m bench.mutation_score`, which wrote this page):

- **simulate**: the built-in scenarios, run on the mutated reference over seeds and both
  release profiles, in the order seed, profile, scenario (by name), each trace checked by the
  spec; *time to kill* is the wall time until the first killing run, searched blind (the
  witness is what the search found, not where it started).
- **hypothesis**: the Hypothesis state machine on the mutated reference
  (`conformance.statemachine.check_reference(..., reference_patch=...)`, derandomized), under
  rocketmq-5.3.3 and then rocketmq-4.9.8, each with at most `--hypothesis-examples` examples and
  an equal share of the `--budget` seconds left; the time to kill (wall and CPU) is the time to
  the first failing example, before shrinking, the first profile's time included when the
  second kills, and *examples* the examples run up to it. An example that runs away (the state
  machine's event caps) ends without a finding: it is counted ("ran away"), never a kill.
  The machine keeps the environment within the spec's assumptions (A-LEASE-MARGIN,
  A-BROKER-LOCKS, ...). A mutant that survives that is searched again outside them, with the
  same budget: there the unmutated reference loses guarantees too, so the search is
  differential, and an example kills only where the unmutated reference, given the same moves
  (the example's steps replayed on it), holds. Such a kill is marked "outside the assumptions
  (differential)"; its time counts both searches, its examples the second's.
- **exhaustive**: the explorer of the reference itself (`rocketspec explore`,
  `conformance.mutants.kill_by_exhaustion`) on the mutated reference, breadth-first over the
  mutant's own scopes (`MUTANT_SCOPES`: where its author would point `rocketspec explore` to
  check the mechanism the mistake breaks, as `BUG_SCOPES` names a known bug's; 13 of the 45
  have one) and then the small scopes of `EXHAUSTIVE_SCOPES` (variants of `tiny` and `small`,
  cheapest first), each exhausted without a violation on the unmutated reference under the
  profiles it is searched with (tests/test_mutants.py), under both release profiles,
  stopping at the first violation (a shortest trace). Two passes: every scope with the
  footprint reduction first (a violation found there is a real run; the reduction can only
  leave runs out), then every scope taking every order of the tasks due together (a mutant may
  break a footprint's promise); the time to kill is the wall time to the violation, within
  `--budget`.

What the mutants found in the spec (fixed with them):

- `no-retry-subscription` survived first: a clustering consumer that never subscribes
  `%RETRY%<group>` leaves every retry copy unconsumed, and the trace ended quiescent and held.
  The spec now counts a clustering group's retry topic among what it must have consumed at
  quiescence (spec/pending.py).
- `sendback-whole-batch` survived first: INV-RETRY-3 says a send-back concerns a message the
  client consumed and failed, but a send-back of any message still in the ProcessQueue was
  taken for cleanExpiredMsg's. The spec now requires such a send-back to be cleanExpiredMsg's:
  the tree's first message, at delay level 3 (ProcessQueue.cleanExpiredMsg).

The mutants that let an orderly queue go while a listener call holds its consume lock
(`orderly-remove-while-consuming-*`) die by INV-ORDER-1 on the scenarios with slow calls
(`orderly-slow-handover`, `orderly-long-call-handover`): the new owner starts a batch while the
old call is open. The old owner's commit of that call's batch is no finding. Its
ConsumeRequest commits on the ProcessQueue it holds, removed or not, as RocketMQ's does; that
commit once counted as INV-PQ-1, which killed these mutants on the wrong grounds.

Seven mutants survived the first pass. Each was decided from the 4.9.8 source:

- Two were **equivalent**, and were replaced by a non-equivalent mistake in the same mechanism.
  - `offset-not-increase-only` (updateOffset without increaseOnly after a concurrent batch).
    In RocketMQ, increaseOnly guards a race: two consume threads each compute removeMessage
    under the ProcessQueue's lock, then call updateOffset after releasing it, in either order.
    The reference runs a batch's result as one task, removeMessage and updateOffset together,
    and within one ProcessQueue removeMessage's results never decrease. Messages enter the tree
    at ascending offsets above queueOffsetMax (one PullRequest, INV-PULL-1 and INV-PULL-2), so
    the tree minimum only rises, and queueOffsetMax + 1 is above every key the tree held. The
    entry's other writers leave it at or below the next result: the store read at the
    ProcessQueue's creation, and correctTagsOffset (increaseOnly, only with an empty tree, at a
    nextBeginOffset at least queueOffsetMax + 1). A reset or OFFSET_ILLEGAL drops the
    ProcessQueue first. So increaseOnly never refuses anything. The replacement is
    `sendback-failed-removed`: the same step's removeMessage is given the whole batch, also
    the messages whose send-back failed and that the client resubmits.
  - `orderly-stale-lease-persist` (persistAll also persists entries outside the
    ProcessQueue table). persistAll(mqs) persists the entries in mqs and drops the others, and
    the store holds an entry only for a queue in the table. An entry is made by the store read
    that creates a ProcessQueue (added right after) or by an update from a ProcessQueue in the
    table. removeUnnecessaryMessageQueue removes it when the ProcessQueue leaves: 4.9.x before
    its consume-lock check, 5.x with the removal. The one exception is resetOffset on 5.x while
    an orderly call holds the consume lock: the ProcessQueue leaves the table and the entry
    stays. That entry holds the reset value, which the broker also holds until the next
    rebalance re-creates the ProcessQueue and overwrites the entry. The replacement is
    `persist-all-rewrites-local-file`, the other way to get persistAll's queue set wrong:
    writing a broadcasting client's offsets file with only the queues it holds now (#4016 in a
    current client).
- Two were said to cause **only duplicates**.
  - `remove-queue-no-persist` does. Every pull carries the client's offset (commitOffset) and
    persistAll runs every 5 s, so the next owner starts at most that far behind.
    At-least-once allows a redelivery, so the spec reports an unexplained duplicate as
    ANOM-DUP-1, not as an error; making it one would go beyond RocketMQ's guarantee. A loss
    would need the queue to move before anything was committed, and then the unmutated client
    loses it too. The replacement is `remove-queue-persists-pulled`: at the same call, the
    client commits how far it pulled instead of what it consumed.
  - `broker-offsets-not-reloaded` is not duplicates-only. A broker that forgets
    consumerOffset.json answers "no offset". Where a queue's first message is gone
    (retention), the new owner then starts at maxOffset and skips what the group had not
    consumed: a loss, INV-LOSS-1. The scenario `restart-retention` shows it.
- Three were **unreached**; new scenarios reach them.
  - `fallback-send-wrong-delay`: `sendback-fallback`, where a message's broker is down when
    its listener call fails.
  - `orderly-commit-first-key`: `orderly-batch`, with consumeMessageBatchMaxSize 4.
  - `orderly-no-queue-lock`: `orderly-offset-moved`. OFFSET_ILLEGAL takes a ProcessQueue out
    of the table during a listener call, and the rebalance creates a new one for the queue
    whose lock the client still holds. Reaching it also fixed a spec gap: the commit of an
    orderly batch of a removed ProcessQueue was taken for the new ProcessQueue's (a false
    INV-ORDER-2).
"""


def markdown(rows, score, seeds, budget, total) -> str:
    from rocketspec.spec.invariants import CATALOGUE as INV

    out = [INTRO, "## Results", ""]
    out.append(f"Seeds {', '.join(map(str, seeds))}; at most {budget:.0f} s per mutant and method; "
               f"{total:.0f} s in all on a 2-core machine shared with other jobs (wall times vary with its load).")
    out.append("")
    for k, v in score.items():
        if isinstance(v, dict):
            part = "" if v.get("of", v["total"]) == v["total"] else f" (only {v['total']} of the {v['of']} mutants measured)"
            out.append(f"- **{k}**: {v['killed']}/{v['total']} killed ({v['score']:.0%}){part}; median time to kill "
                       f"{v['median_kill_s']} s of CPU, longest {v['max_kill_s']} s")
        else:
            out.append(f"- **{k}**: {v}")
    out.append("")
    out.append("| mutant | targets | simulate: time to kill wall / CPU (runs), killed by, the first killing run | hypothesis | "
               "exhaustive |")
    out.append("|---|---|---|---|---|")
    for r in rows:
        cells = [f"`{r['mutant']}`", " ".join(r["targets"])]
        cells += [cell(method, r.get(method)) for method in ("simulate", "hypothesis", "exhaustive")]
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    out.append("## The catalogue")
    out.append("")
    for m in M.CATALOGUE:
        out.append(f"### `{m.id}` ({', '.join(m.targets)})")
        out.append("")
        out.append(f"{m.mistake}")
        out.append("")
        out.append(f"`reference/{m.file}`, `{m.function}`:")
        out.append("")
        out.append("```diff")
        out.append(f"- {m.original.strip()}")
        out.append(f"+ {m.mutated.strip()}")
        out.append("```")
        if m.id in M.SURVIVORS:
            out.append("")
            out.append(f"Survives: {M.SURVIVORS[m.id]}")
        out.append("")
    errors = [i.id for i in INV if i.severity == "error"]
    out.append("## Coverage of the error-level invariants")
    out.append("")
    out.append("| invariant | mutants targeting it | simulate kills that report it |")
    out.append("|---|---|---|")
    for i in errors:
        ms = [m.id for m in M.CATALOGUE if i in m.targets]
        by = [r["mutant"] for r in rows if (r.get("simulate") or {}).get("killed") and i in r["simulate"]["invariants"]]
        out.append(f"| {i} | {', '.join(f'`{x}`' for x in ms) or 'none: ' + M.NOT_MUTABLE.get(i, '')} | "
                   f"{len(by)} |")
    out.append("")
    return "\n".join(out) + "\n"


def cell(method: str, k: dict | None) -> str:
    """One method's result for one mutant, as a cell of the results table."""
    if k is None:
        return "n/a"
    if k["killed"]:
        where = f"; {k['scenario']} [{k['profile']}] seed {k['seed']}" if method == "simulate" else ""
        n = k.get("examples_to_kill") if method == "hypothesis" else None
        runs = f"{n} examples" if n is not None else k["runs"]
        if k.get("differential"):
            where += "; outside the assumptions (differential)"
        return f"{k['seconds']:.2f} s / {k['cpu_seconds']:.2f} s CPU ({runs}), {' '.join(k['invariants'])}{where}"
    return (("budget out" if k["incomplete"] else "**survived**") + f" ({k['runs']} runs, {k['seconds']:.0f} s)"
            + (f", {k['crashes']} crashes" if k["crashes"] else "")
            + (f", {k['runaway']} ran away" if k.get("runaway") else ""))


def scores(rows, methods) -> dict:
    """The mutation score of each method, and the median and longest CPU time to kill."""
    score: dict = {}
    for method in ("simulate", "hypothesis", "exhaustive"):
        measured = [r for r in rows if r.get(method) is not None]
        if method in methods and measured:
            killed = [r for r in measured if r[method]["killed"]]
            times = sorted(r[method]["cpu_seconds"] for r in killed)
            score[method] = {"killed": len(killed), "total": len(measured), "of": len(rows),
                             "score": round(len(killed) / len(measured), 3),
                             "median_kill_s": times[len(times) // 2] if times else None,
                             "max_kill_s": times[-1] if times else None}
        elif method in methods:
            score[method] = "n/a: conformance/statemachine.py is not in this tree"
    return score


def merge(paths) -> dict:
    """The rows of several --save files (one per method) side by side."""
    rows: dict = {}
    meta: dict = {"seconds": 0.0, "seeds": None, "budget": None}
    methods = set()
    for p in paths:
        d = json.load(open(p, encoding="utf-8"))
        meta["seconds"] += d["seconds"]
        meta["seeds"] = meta["seeds"] or d["seeds"]
        meta["budget"] = meta["budget"] or d["budget"]
        for r in d["rows"]:
            row = rows.setdefault(r["mutant"], {"mutant": r["mutant"], "targets": r["targets"]})
            for m in ("simulate", "hypothesis", "exhaustive"):
                if r.get(m) is not None:
                    row[m] = r[m]
                    methods.add(m)
    out = [rows[m.id] for m in M.CATALOGUE if m.id in rows]
    return {"rows": out, "score": scores(out, methods), **meta}


def _line(row) -> str:
    parts = [f"{row['mutant']:38s}"]
    for method in ("simulate", "hypothesis", "exhaustive"):
        if method not in row:
            continue
        k = row[method]
        if k is None:
            parts.append(f"{method}: n/a")
        elif k["killed"]:
            where = (f" on {k['scenario']} [{k['profile']}] seed {k['seed']}" if method == "simulate"
                     else f" on {k['scenario']} [{k['profile']}]" if method == "exhaustive" else "")
            n = k.get("examples_to_kill")
            runs = f"{n} examples to the kill, {k['runs']} with shrinking" if n is not None else f"{k['runs']} runs"
            parts.append(f"{method}: killed in {k['seconds']:.2f} s wall, {k['cpu_seconds']:.2f} s CPU ({runs}) by "
                         f"{','.join(k['invariants'])}{where}")
        else:
            parts.append(f"{method}: {'budget out' if k['incomplete'] else 'SURVIVED'} after {k['runs']} runs, "
                         f"{k['seconds']:.1f} s" + (f" ({k['crashes']} crashes)" if k["crashes"] else "")
                         + (f" ({k['runaway']} ran away: cut at an event cap)" if k.get("runaway") else ""))
    return " | ".join(parts)


if __name__ == "__main__":
    main()
