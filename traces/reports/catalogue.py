"""The counterexample catalogue (docs/catalogue/): for every error-level invariant and every
guarantee of the spec, a small trace that breaks it, with its timeline and its story.

    python -m rocketspec.traces.reports.catalogue            # regenerate docs/catalogue/ and docs/explain/ (make catalogue)
    python -m rocketspec.traces.reports.catalogue --check    # the committed pages still match (exit 1 if not)

Counterexamples come from, in this order of preference:
- the explorer's shortest counterexample of a known-bug profile in its scope
  (model_checks.scopes.BUG_SCOPES): generated, and shortest by construction;
- a built-in scenario that declares a failing verdict (reference/scenarios/), run on the
  reference, kept only once `rocketspec minimize` can shrink it;
- a hand-written wrong trace of tests/traces/ (a one-step mistake, tests/traces/build.py);
- a trace mutant (traces/reports/trace_mutants.py): a clean reference run changed in one event as an
  implementation with one specific mistake would write it, kept once minimize can shrink it.
Each is passed through `rocketspec.traces.minimize.minimize.minimize` when that module is installed.
An invariant no source breaks is listed in the index as missing, with the reason.

Every page is a pure function of its trace and its source line (`page()`), so the test
(tests/test_catalogue.py) regenerates the pages from the committed traces and compares.
"""
from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "catalogue"
HAND = ROOT / "tests" / "traces"
INDEX = "index.json"

# (scenario, seed, profile): reference runs whose declared verdict fails (their invariants).
SCENARIOS = [
    ("orderly-pause-broker-lock", 1, "rocketmq-4.9.8"),
    ("real-orderly-pause", 1, "rocketmq-4.9.8"),
]
# hand-written wrong traces (tests/traces/README.md says what each shows)
HAND_TRACES = [
    "wrong_offset_past_unconsumed.jsonl", "wrong_broker_commit_past_unconsumed.jsonl",
    "wrong_two_lock_holders.jsonl", "wrong_consume_after_drop.jsonl", "wrong_17th_retry.jsonl",
    "wrong_dlq_consume.jsonl", "wrong_loss_at_quiescence.jsonl", "wrong_two_pullers.jsonl",
    # POP (tests/test_spec_pop.py builds them)
    "wrong_pop_two_valid_handles.jsonl", "wrong_pop_acked_then_revived.jsonl", "wrong_pop_revive_dropped.jsonl",
    "wrong_pop_revive_count.jsonl", "wrong_pop_orderly_two_attempts.jsonl", "wrong_pop_stale_ack.jsonl",
    "wrong_pop_held_at_end.jsonl",
]


@dataclass
class Candidate:
    invariant: str
    events: list
    profile: str
    source: str          # "explorer" | "scenario" | "hand-written"
    origin: str          # where exactly it came from, in words
    original_length: int
    minimized: bool = False
    reasons: list | None = None      # minimize's word on why each remaining event stays


def error_invariants() -> list:
    from rocketspec.spec.invariants import CATALOGUE

    return [i for i in CATALOGUE if i.severity == "error"]


def guarantees() -> dict:
    """guarantee -> [invariant ids that carry it], in catalogue order."""
    from rocketspec.spec.invariants import CATALOGUE

    out: dict = {}
    for i in CATALOGUE:
        if i.guarantee:
            out.setdefault(i.guarantee, []).append(i.id)
    return out


def _check(events, profile, path="<events>"):
    from rocketspec.rocketmq.profiles import get_profile
    from rocketspec.spec.replay import check_events

    return check_events(enumerate(events, 1), get_profile(profile), path, max_listed=1000)


def _first_errors(rep) -> list:
    return list(dict.fromkeys(f.inv for f in rep.findings.errors))


def _renumber(events):
    out = []
    for i, e in enumerate(events):
        e = dict(e)
        e["seq"] = i
        out.append(e)
    return out


# ---------------------------------------------------------------------------- sources

def explorer_candidates(log=print):
    from rocketspec.model_checks.refexplore import bug_counterexample
    from rocketspec.model_checks.scopes import BUG_SCOPES
    from rocketspec.rocketmq.profiles import PROFILES

    for p in PROFILES.values():
        if not p.known_bug or p.known_bug not in BUG_SCOPES:
            continue
        name, over = BUG_SCOPES[p.known_bug]
        v = bug_counterexample(p)
        if v is not None:
            evs = _renumber(v.events)
            over_s = "".join(f", {k}={x}" for k, x in over.items())
            log(f"  explorer {p.name} ({name}{over_s}): {v.invariant}, {len(evs)} events")
            yield Candidate(v.invariant, evs, p.name, "explorer",
                            f"the explorer's shortest counterexample on the reference in scope `{name}`{over_s} "
                            f"under the known-bug profile `{p.name}` (RocketMQ {p.known_bug})", len(evs))


def scenario_candidates(log=print):
    from rocketspec.reference.runner import run_to_list
    from rocketspec.reference.scenario import load_scenario

    for name, seed, prof in SCENARIOS:
        evs = run_to_list(load_scenario(name), seed, prof)
        rep = _check(evs, prof)
        for inv in _first_errors(rep):
            log(f"  scenario {name} seed {seed} {prof}: {inv}, {len(evs)} events")
            yield Candidate(inv, evs, prof, "scenario",
                            f"the built-in scenario `{name}` (seed {seed}) run on the reference under `{prof}`",
                            len(evs))


def hand_candidates(log=print):
    for name in HAND_TRACES:
        evs = [json.loads(x) for x in (HAND / name).read_text().splitlines() if x.strip()]
        prof = evs[0]["profile"]
        rep = _check(evs, prof)
        for inv in _first_errors(rep):
            log(f"  hand-written {name}: {inv}, {len(evs)} events")
            yield Candidate(inv, evs, prof, "hand-written",
                            f"the hand-written wrong trace `tests/traces/{name}` (a one-step mistake; "
                            f"tests/traces/README.md)", len(evs))


def mutant_candidates(log=print):
    from rocketspec.reference.runner import run_to_list
    from rocketspec.reference.scenario import load_scenario
    from rocketspec.traces.reports.trace_mutants import MUTANTS

    runs: dict = {}
    for m in MUTANTS:
        k = (m.scenario, m.profile)
        if k not in runs:
            runs[k] = run_to_list(load_scenario(m.scenario), 1, m.profile)
        res = m.mutate(runs[k])
        tries = [] if res is None else ([res] if res and isinstance(res[0], dict) else list(res))
        evs, got = None, []
        for t in tries:       # a mutant with several places to change: the first the spec rejects so
            evs, got = t, _first_errors(_check(t, m.profile))
            if m.invariant in got:
                break
        if evs is None:
            log(f"  mutant {m.invariant}: nothing to change in {m.scenario}")
            continue
        log(f"  mutant {m.invariant} on {m.scenario}: {', '.join(got) or 'holds'}, {len(evs)} events")
        if m.invariant in got:
            yield Candidate(m.invariant, evs, m.profile, "trace mutant",
                            f"a trace mutant: the clean reference run of `{m.scenario}` (seed 1, `{m.profile}`) "
                            f"changed in one event as an implementation with this mistake would write it: "
                            f"{m.mistake} (traces/reports/trace_mutants.py)", len(evs))


def _minimizer():
    try:
        from rocketspec.traces.minimize.minimize import minimize
    except ImportError:
        return None
    return minimize


def choose(log=print) -> tuple[dict, dict]:
    """invariant -> Candidate (the preferred source, minimized), and invariant -> why missing."""
    minimize = _minimizer()
    wanted = {i.id for i in error_invariants()}
    chosen: dict = {}
    waiting: dict = {}
    for gen in (explorer_candidates, scenario_candidates, hand_candidates, mutant_candidates):
        best: dict = {}
        for c in gen(log):
            if c.invariant not in wanted or c.invariant in chosen:
                continue
            if c.source in ("scenario", "trace mutant") and minimize is None:
                waiting[c.invariant] = (f"{c.origin} breaks it ({c.original_length} events), waiting for "
                                        f"`rocketspec minimize` to shrink it")
                continue
            if c.invariant not in best or len(c.events) < len(best[c.invariant].events):
                best[c.invariant] = c
        for inv, c in best.items():
            if minimize is not None:
                from rocketspec.errors import UserError

                try:
                    r = minimize(c.events, invariant=inv, profile=c.profile)
                except UserError as exc:
                    log(f"  minimize could not shrink {inv} ({exc}): kept as it is")
                else:
                    small = _renumber(r.events)
                    if inv in _first_errors(_check(small, c.profile)) and len(small) <= len(c.events):
                        seqs = {e["seq"]: i for i, e in enumerate(r.events)}
                        c.events, c.minimized = small, True
                        c.reasons = [[seqs[x.seq], x.text()] for x in r.reasons if x.seq in seqs]
                    log(f"  minimized {inv}: {c.original_length} -> {len(c.events)} events")
            chosen[inv] = c
            waiting.pop(inv, None)
    return chosen, waiting


# ---------------------------------------------------------------------------- pages

def trace_bytes(events) -> bytes:
    import orjson

    return b"".join(orjson.dumps(e) + b"\n" for e in events)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def explanation(inv_id: str, events: list, profile: str):
    from rocketspec.traces.explain.explain import explain_events

    rep = _check(events, profile, f"docs/catalogue/{inv_id}.jsonl")
    return rep, explain_events(events, rep)


def page(inv_id: str, entry: dict, events: list) -> str:
    """The Markdown page of one counterexample: a pure function of its trace and index entry."""
    from rocketspec.spec.invariants import BY_ID

    inv = BY_ID[inv_id]
    rep, ex = explanation(inv_id, events, entry["profile"])
    errs = _first_errors(rep)
    lines = [f"# {inv.id}: {inv.title}", "",
             f"**The rule.** {inv.statement}", "",
             f"**What makes it hold in RocketMQ.** {inv.mechanism}", ""]
    if inv.assumptions:
        lines += [f"**Assumes.** {inv.assumptions}", ""]
    if inv.breaks:
        lines += [f"**Known to break it.** {inv.breaks}", ""]
    if inv.guarantee:
        lines += [f"**Guarantee lost when it breaks:** {inv.guarantee}", ""]
    size = f"{len(events)} events"
    if entry.get("minimized"):
        size += f", minimized by `rocketspec minimize` from {entry['original_length']}"
    lines += ["## The counterexample", "",
              f"From {entry['origin']} ({size}), under profile `{entry['profile']}`.", "",
              f"- trace: [{inv_id}.jsonl]({inv_id}.jsonl)",
              f"- `rocketspec check docs/catalogue/{inv_id}.jsonl` rejects it with "
              f"{', '.join(errs) if errs else 'nothing (stale!)'}",
              f"- `rocketspec explain docs/catalogue/{inv_id}.jsonl --html {inv_id}.html` draws it interactively",
              "", f"![timeline of the counterexample]({inv_id}.png)", "",
              "## What happened", "", "```text", ex.text(width=96), "```", ""]
    if entry.get("reasons"):
        from rocketspec.traces.explain.narrate import describe

        lines += ["## Why each event is there", "",
                  "What `rocketspec minimize` found when it left each event out:", "",
                  "| seq | event | without it |", "|---|---|---|"]
        for seq, why in entry["reasons"]:
            ev = events[seq] if 0 <= seq < len(events) else {}
            cell = lambda t: str(t).replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {seq} | {cell(describe(ev))} | {cell(why)} |")
        lines.append("")
    return "\n".join(lines)


def index_page(entries: dict, waiting: dict) -> str:
    lines = ["# A catalogue of counterexamples", "",
             "For every error-level invariant of the spec (`spec/invariants.py`, `spec/SPEC.md`) and every "
             "guarantee, a small trace that breaks it: its timeline (one lane per queue per group; "
             "[how to read it](../explain.md)) and its story told event by event. Generated by "
             "`make catalogue` (`python -m rocketspec.traces.reports.catalogue`); `make test` checks that every "
             "trace here is still rejected with its invariant and that the pages match the traces.", "",
             "## Invariants", "", "| invariant | what it says | counterexample | events | source |",
             "|---|---|---|---|---|"]
    for inv in error_invariants():
        e = entries.get(inv.id)
        if e is not None:
            lines.append(f"| [{inv.id}]({inv.id}.md) | {inv.title} | [{inv.id}.jsonl]({inv.id}.jsonl), "
                         f"[timeline]({inv.id}.png) | {e['events']} | {e['source']} |")
        else:
            why = waiting.get(inv.id) or "no source breaks it yet"
            lines.append(f"| {inv.id} | {inv.title} | **missing** | - | {why} |")
    lines += ["", "## Guarantees", "", "| guarantee | carried by | shown by |", "|---|---|---|"]
    for g, ids in guarantees().items():
        shown = [f"[{i}]({i}.md)" for i in ids if i in entries]
        lines.append(f"| {g} | {', '.join(ids)} | {', '.join(shown) if shown else '**missing**'} |")
    have = sum(1 for i in error_invariants() if i.id in entries)
    lines += ["", f"{have} of {len(error_invariants())} error-level invariants have a counterexample here; "
              f"{sum(1 for ids in guarantees().values() if any(i in entries for i in ids))} of "
              f"{len(guarantees())} guarantees."
              + (" \"No source breaks it yet\": no known-bug profile, failing scenario, hand-written trace or "
                 "trace mutant breaks the invariant; the reference's semantic mutants (issue 15) are the planned "
                 "source for those." if have < len(error_invariants()) else ""), ""]
    return "\n".join(lines)


def generate(out: Path = OUT, log=print) -> dict:
    from rocketspec.traces.explain.explain_png import write_png

    out.mkdir(parents=True, exist_ok=True)
    chosen, waiting = choose(log)
    entries = {}
    for inv in error_invariants():
        c = chosen.get(inv.id)
        if c is None:
            continue
        data = trace_bytes(c.events)
        (out / f"{inv.id}.jsonl").write_bytes(data)
        entry = {"invariant": inv.id, "profile": c.profile, "source": c.source, "origin": c.origin,
                 "events": len(c.events), "original_length": c.original_length, "minimized": c.minimized,
                 "sha256": sha(data)}
        if c.reasons:
            entry["reasons"] = c.reasons
        entries[inv.id] = entry
        (out / f"{inv.id}.md").write_text(page(inv.id, entry, c.events))
        _, ex = explanation(inv.id, c.events, c.profile)
        write_png(ex, out / f"{inv.id}.png")
        log(f"  wrote {inv.id}: {len(c.events)} events")
    for stale in out.glob("*"):
        if stale.suffix in (".jsonl", ".md", ".png") and stale.stem.startswith("INV-") and stale.stem not in entries:
            stale.unlink()
    (out / INDEX).write_text(json.dumps({"entries": entries, "waiting": waiting}, indent=1, sort_keys=True) + "\n")
    (out / "README.md").write_text(index_page(entries, waiting))
    return entries


def check(out: Path = OUT) -> list:
    """Problems with the committed catalogue: a trace no longer rejected with its invariant, a
    page that does not match its trace, a trace whose bytes changed without its page."""
    idx = json.loads((out / INDEX).read_text())
    entries, waiting = idx["entries"], idx.get("waiting", {})
    problems = []
    for inv_id, e in entries.items():
        data = (out / f"{inv_id}.jsonl").read_bytes()
        if sha(data) != e["sha256"]:
            problems.append(f"{inv_id}.jsonl changed since its page and picture were made (regenerate)")
        events = [json.loads(x) for x in data.decode().splitlines() if x.strip()]
        rep = _check(events, e["profile"])
        if inv_id not in _first_errors(rep):
            problems.append(f"{inv_id}.jsonl is no longer rejected with {inv_id} (got {_first_errors(rep) or 'holds'})")
        if (out / f"{inv_id}.md").read_text() != page(inv_id, e, events):
            problems.append(f"{inv_id}.md does not match its trace (regenerate)")
        if not (out / f"{inv_id}.png").is_file():
            problems.append(f"{inv_id}.png is missing")
    if (out / "README.md").read_text() != index_page(entries, waiting):
        problems.append("README.md does not match the index (regenerate)")
    return problems


# Pictures for docs/explain.md: three failing reference runs and a clean one, each
# (file stem, scenario, seed, profile, --key or None).
PICTURES = [
    ("orderly-pause", "orderly-pause-broker-lock", 1, "rocketmq-4.9.8", {"topic": "TopicOrder", "queue": 3}),
    ("bug-2708", "bug-2708", 1, "bug-2708-rocketmq-4.9.0", {"topic": "Invoices", "queue": 0}),
    ("bug-5481", "bug-5481", 1, "bug-5481-rocketmq-5.0.0", None),
    ("clean-takeover", "real-orderly-takeover", 1, "rocketmq-4.9.8", {"topic": "TopicOrder", "queue": 3}),
]


def pictures(out: Path = ROOT / "docs" / "explain", log=print) -> None:
    """The explain pictures of docs/explain.md (PNG, and the story as text beside each)."""
    from rocketspec.reference.runner import run_to_list
    from rocketspec.reference.scenario import load_scenario
    from rocketspec.traces.explain.explain import explain_events
    from rocketspec.traces.explain.explain_png import write_png

    out.mkdir(parents=True, exist_ok=True)
    for stem, name, seed, prof, key in PICTURES:
        evs = run_to_list(load_scenario(name), seed, prof)
        rep = _check(evs, prof, f"{name} (seed {seed}, {prof})")
        ex = explain_events(evs, rep, key)
        write_png(ex, out / f"{stem}.png")
        (out / f"{stem}.txt").write_text(ex.text(width=96) + "\n")
        log(f"  docs/explain/{stem}.png: {name}, {len(evs)} events, {'holds' if rep.ok else 'violated'}")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--check" in argv:
        problems = check()
        for p in problems:
            print(p)
        print("catalogue matches its traces" if not problems else f"{len(problems)} problem(s)")
        return 1 if problems else 0
    entries = generate()
    print(f"docs/catalogue: {len(entries)} counterexamples")
    if "--no-pictures" not in argv:
        pictures()
    return 0


if __name__ == "__main__":
    sys.exit(main())
