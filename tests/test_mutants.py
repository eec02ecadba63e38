"""The semantic mutants of the reference (conformance/mutants.py, docs/mutants.md): each names a
line that still exists, is applied as a real source change at run time and undone after, and is
killed by a spec finding on its witness run; a crash of the mutated reference is not a kill."""
from __future__ import annotations

import builtins
import types
from pathlib import Path

import pytest

from rocketspec.conformance import mutants as M
from rocketspec.spec.invariants import CATALOGUE as INVARIANTS

REPO = Path(__file__).resolve().parent.parent


def test_at_least_25_mutants_with_unique_ids():
    assert len(M.CATALOGUE) >= 25
    assert len(M.BY_ID) == len(M.CATALOGUE)


def test_every_error_level_invariant_has_a_mutant():
    errors = {inv.id for inv in INVARIANTS if inv.severity == "error"}
    targeted = {t for m in M.CATALOGUE for t in m.targets}
    assert targeted <= {inv.id for inv in INVARIANTS}
    assert errors - targeted == set(M.NOT_MUTABLE), sorted(errors - targeted)
    assert all(M.NOT_MUTABLE.values())


@pytest.mark.parametrize("m", M.CATALOGUE, ids=lambda m: m.id)
def test_the_original_line_still_exists_in_reference(m):
    # the committed file itself, not only the imported function: a mutant cannot rot silently
    text = (REPO / "reference" / m.file).read_text()
    assert sum(1 for ln in text.splitlines() if ln.strip() == m.original.strip()) >= m.count
    lines, i, _ = M.locate(m)
    assert lines[i].strip() == m.original.strip()
    assert m.mutated.strip() != m.original.strip()


def _global_names(code: types.CodeType):
    yield from code.co_names
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _global_names(c)


@pytest.mark.parametrize("m", M.CATALOGUE, ids=lambda m: m.id)
def test_a_mutant_is_applied_and_undone(m):
    module, owner, name, raw, func = M._resolve(m)
    with M.applied(m) as new:
        now = vars(owner)[name]
        assert now is new and now is not raw
        code = (new.__func__ if isinstance(new, (staticmethod, classmethod)) else new).__code__
        orig = func.__code__
        assert code.co_code != orig.co_code or code.co_consts != orig.co_consts or code.co_names != orig.co_names
        # the mutated line may only use names the module has (a NameError would be a crash, not a kill)
        added = set(_global_names(code)) - set(_global_names(orig))
        for n in added:
            assert n in module.__dict__ or hasattr(builtins, n) or n.isidentifier(), n
    assert vars(owner)[name] is raw


def test_a_module_function_is_replaced_where_it_was_imported():
    from rocketspec.reference.broker import broker, message_filter

    m = M.BY_ID["broker-ignores-filter"]
    original = message_filter.pull_filter
    with M.applied(m) as new:
        assert broker.pull_filter is new and message_filter.pull_filter is new
    assert broker.pull_filter is original and message_filter.pull_filter is original


# witness runs that take more than a few seconds (the mutant makes the run much longer)
SLOW_WITNESSES = {"pull-offset-not-advanced"}   # every run of it runs away to the event cap


@pytest.mark.parametrize("mid", [pytest.param(m, marks=pytest.mark.slow) if m in SLOW_WITNESSES else m
                                 for m in sorted(M.WITNESS)], ids=str)
def test_the_witness_run_kills_its_mutant(mid):
    sc, profile, seed = M.WITNESS[mid]
    k = M.kill_by_simulation(M.BY_ID[mid], scenarios=[sc], profiles=(profile,), seeds=(seed,))
    assert k.killed, k.to_dict()
    assert k.crashes == 0 and k.invariants and all(i.startswith("INV-") or i == "GUARD" for i in k.invariants)


def test_every_mutant_has_a_witness_or_a_reason():
    assert set(M.WITNESS) | set(M.SURVIVORS) == set(M.BY_ID)
    assert not set(M.WITNESS) & set(M.SURVIVORS)


def test_the_unmutated_reference_is_not_killed_by_a_witness_run():
    # the kill is the mutant's doing: the same run without it meets the scenario's verdict
    for mid in ("commit-batch-max", "orderly-take-highest"):
        sc, profile, seed = M.WITNESS[mid]
        _, _, unexpected, _ = M.run_scenario(sc, seed, profile)
        assert unexpected == []


def test_a_crash_of_the_mutated_reference_is_not_a_kill():
    crash = M.Mutant("test-crash", "client/consume_concurrently.py", "ConsumeMessageConcurrentlyService._finish",
                     "self.in_flight -= 1", "raise RuntimeError('mutant crash')", ("INV-LIVE-1",), "crashes")
    k = M.kill_by_simulation(crash, scenarios=["basic"], profiles=("rocketmq-5.3.3",), seeds=(1,))
    assert not k.killed and k.crashes == 1 and "mutant crash" in k.note


def test_a_rotten_mutant_is_reported():
    rotten = M.Mutant("test-rotten", "client/process_queue.py", "ProcessQueue.commit", "return offset + 2",
                      "return offset", ("INV-OFFSET-1",), "no such line")
    with pytest.raises(M.MutantRotten, match="occurs 0 times"):
        M.locate(rotten)


# ---------------------------------------------------------------- the mutants' own exhaustive scopes

# (CPU seconds on this machine, 2026-12-02) the unmutated search of these takes over 5 s
SLOW_SCOPE_HOLDS = {"orderly-skip-lease-check", "unlock-by-anyone", "orderly-remove-while-consuming-5x",
                    "orderly-commit-when-dropped", "fallback-send-wrong-delay", "broker-offsets-not-reloaded"}
# (fallback-send-wrong-delay: two brokers, each may restart; about 40 CPU-s to the kill, 2026-12-04)
SLOW_SCOPE_KILLS = {"orderly-skip-lease-check", "fallback-send-wrong-delay"}
# a dropped batch's result processed shows first as its failed message sent back from a queue the
# client no longer holds (INV-RETRY-3), before any offset of it is committed (INV-DROP-1); a
# broker that reloaded no offsets answers the joining client's query "not found", and the offset
# the client then sets is one no ProcessQueue produced (INV-OFFSET-1), before its pull starts there
FIRST_BROKEN = {"dropped-result-processed": {"INV-RETRY-3"}, "broker-offsets-not-reloaded": {"INV-OFFSET-1"}}


def _scope_cases():
    seen = set()
    for mid, scopes in sorted(M.MUTANT_SCOPES.items()):
        for name, over, *only in scopes:
            for p in (only[0] if only else M.RELEASES):
                key = (name, repr(sorted(over.items())), p)
                if key in seen:
                    continue
                seen.add(key)
                yield pytest.param(mid, name, over, p, id=f"{mid}-{p}",
                                   marks=[pytest.mark.slow] if mid in SLOW_SCOPE_HOLDS else [])


def _shared_cases():
    # the shared list is cheapest first: from the 14th on, each takes over 3 s (2026-12-02)
    for i, (name, over, *only) in enumerate(M.EXHAUSTIVE_SCOPES):
        for p in (only[0] if only else M.RELEASES):
            yield pytest.param("shared", name, over, p, id=f"shared-{i}-{name}-{p}",
                               marks=[pytest.mark.slow] if i >= 13 else [])


@pytest.mark.parametrize("mid, name, over, profile", list(_scope_cases()) + list(_shared_cases()))
def test_a_mutant_scope_is_exhausted_and_holds_on_the_unmutated_reference(mid, name, over, profile):
    # a violation found in a mutant's scope is the mutant's only if the reference without it holds there
    from rocketspec.model_checks.refexplore import RefExplorer
    from rocketspec.model_checks.scopes import load_scope

    r = RefExplorer(load_scope(name, **over), profile).run()
    assert r.complete and r.violations == [], [(v.invariant, v.message) for v in r.violations]


@pytest.mark.parametrize("mid", [pytest.param(m, marks=pytest.mark.slow) if m in SLOW_SCOPE_KILLS else m
                                 for m in sorted(M.MUTANT_SCOPES)], ids=str)
def test_a_mutant_is_killed_by_exhausting_its_own_scope(mid):
    k = M.kill_by_exhaustion(M.BY_ID[mid], scopes=())
    assert k.killed and k.crashes == 0, k.to_dict()
    # the invariant the mistake targets, or the one its shortest run breaks first
    assert set(k.invariants) & (set(M.BY_ID[mid].targets) | FIRST_BROKEN.get(mid, set())), k.invariants
    assert k.scenario.split(" ")[0] in {s[0] for s in M.MUTANT_SCOPES[mid]}
