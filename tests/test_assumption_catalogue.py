"""The assumption and user-guarantee catalogues (spec/assumptions.py, spec/user_guarantees.py):
every id named anywhere exists, every entry is used, and the users take them from there."""
from __future__ import annotations

import inspect
import re
from pathlib import Path

from rocketspec.spec import assumptions as A
from rocketspec.spec import invariants, user_guarantees as U
from rocketspec.spec.history import guarantees as H

ROOT = Path(__file__).resolve().parent.parent
# Code and docs of the project (build/ and the virtualenv hold copies, not sources).
SOURCES = ("spec", "reference", "conformance", "model_checks", "traces", "rocketspec", "bench", "tests", "docs",
           "README.md")
SUFFIXES = {".py", ".md", ".txt", ".json", ".java", ".html"}


def _files():
    for name in SOURCES:
        p = ROOT / name
        if p.is_file():
            yield p
        elif p.is_dir():
            yield from (f for f in p.rglob("*") if f.is_file() and f.suffix in SUFFIXES)


def _named_anywhere() -> dict[str, list[str]]:
    where: dict[str, list[str]] = {}
    for f in _files():
        for aid in A.ids_in(f.read_text(errors="replace")):
            where.setdefault(aid, []).append(str(f.relative_to(ROOT)))
    return where


def test_id_pattern_reads_ids_and_not_character_classes():
    assert A.ids_in("(A-LEASE-MARGIN) and A-BROKER-LOCKS: [A-Z0-9] NA-FOO A-X") == ["A-LEASE-MARGIN",
                                                                                   "A-BROKER-LOCKS"]


def test_every_assumption_id_named_in_code_or_docs_is_in_the_catalogue():
    where = _named_anywhere()
    unknown = {aid: files for aid, files in where.items() if aid not in A.BY_ID}
    assert not unknown, f"assumption ids not in spec/assumptions.py: {unknown}"


def test_every_assumption_is_used_by_an_invariant_a_report_and_the_state_machine():
    from rocketspec.conformance.statemachine import ReferenceMachine

    cited = {aid for inv in invariants.CATALOGUE for aid in inv.assumes}
    kept = {getattr(m, "keeps", None) for _, m in inspect.getmembers(ReferenceMachine, inspect.isfunction)}
    reported = set()
    for f in (ROOT / "spec" / "actions").glob("*.py"):
        reported |= set(re.findall(r"ref\('(A-[A-Z-]+)'\)", f.read_text()))
    for a in A.CATALOGUE:
        assert a.id in cited, f"{a.id}: no invariant cites it"
        assert a.id in kept, f"{a.id}: no guard of the state machine keeps it"
        assert a.id in reported, f"{a.id}: no report of the spec names it"
        assert a.statement and a.why and a.without and a.source, a.id


def test_every_guard_of_the_state_machine_names_the_assumption_it_keeps():
    from rocketspec.conformance.statemachine import ReferenceMachine

    guards = {n: m for n, m in inspect.getmembers(ReferenceMachine, inspect.isfunction)
              if n.startswith("_") and n.endswith("_allowed")}
    assert guards, "no _..._allowed guard found"
    for name, guard in guards.items():
        assert getattr(guard, "keeps", None) in A.BY_ID, f"{name} names no assumption of the catalogue"


def test_invariants_cite_the_catalogue_statement_verbatim():
    for inv in invariants.CATALOGUE:
        for aid in inv.assumes:
            assert aid in A.BY_ID, f"{inv.id} cites unknown {aid}"
            if f"{aid}:" in inv.assumptions:
                assert A.cite(aid) in inv.assumptions, f"{inv.id} retypes {aid}'s statement"


def test_every_invariant_and_history_guarantee_references_an_existing_user_guarantee():
    for inv in invariants.CATALOGUE:
        for gid in inv.protects:
            assert gid in U.BY_ID, f"{inv.id} protects unknown {gid}"
        assert inv.guarantee == "; ".join(U.statement(g) for g in inv.protects)
    for g in H.GUARANTEES:
        assert g.user_guarantee in U.BY_ID, f"{g.id} checks unknown user guarantee {g.user_guarantee!r}"


def test_every_user_guarantee_is_referenced():
    used = {gid for inv in invariants.CATALOGUE for gid in inv.protects} | \
        {g.user_guarantee for g in H.GUARANTEES}
    assert set(U.BY_ID) <= used, f"unreferenced user guarantees: {sorted(set(U.BY_ID) - used)}"
    assert len(U.BY_ID) == len(U.CATALOGUE) and len(A.BY_ID) == len(A.CATALOGUE), "duplicate ids"


def test_an_unknown_id_fails_where_it_is_used():
    import pytest

    stale = "A-" + "NO-SUCH"          # split, so that the scan of this file does not read it as named
    with pytest.raises(KeyError):
        A.ref(stale)
    with pytest.raises(KeyError):
        A.keeps(stale)
    with pytest.raises(KeyError):
        U.statement("G-NO-SUCH")
