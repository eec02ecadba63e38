"""The one-line mutants of upstream's rocketmq-client-go (bench/go_library_mutants.py): each
anchor occurs exactly once in the pinned module's file and its replacement changes exactly one
line; a mutant is built through `go build -overlay` on a copy of the module (the overlay is what
gets compiled: a mutant that does not compile fails its build); the bench refuses a table that no
longer applies before any real run (exit 3). The pinned module must be in the Go module cache
(`make go-client`): without it these tests fail, saying so. Killing them on real RocketMQ is
tests/test_client_mutants.py's `real` test."""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess

import pytest

from bench import client_mutants as B
from bench import go_library_mutants as L
from rocketspec.spec.history.guarantees import GUARANTEES
from rocketspec.spec.invariants import CATALOGUE
from test_go_client_real import go_client  # noqa: F401


@pytest.fixture(scope="module")
def module_dir(go_client):  # noqa: F811
    # go_client runs `make go-client`, which downloads the pinned module on a fresh machine
    try:
        return L.module_dir()
    except L.MutantBuildError as e:
        pytest.fail(f"{e} (the library mutants are checked against the pinned module; CI gets it with "
                    f"`make go-client`)")


@pytest.mark.parametrize("m", L.MUTANTS, ids=lambda m: m.id)
def test_each_anchor_occurs_once_and_the_mutant_changes_one_line(module_dir, m):
    text = (module_dir / m.file).read_text()
    assert text.count(m.anchor) == 1, f"{m.id}: anchor occurs {text.count(m.anchor)} times in {m.file}"
    diff = L.changed_lines(text, L.apply(m, text))
    assert len(diff) == 1, diff
    old, new = diff[0]
    assert old.strip() and new.strip() and old != new


def test_the_table_is_well_formed():
    ids = [m.id for m in L.MUTANTS]
    assert len(ids) == len(set(ids)) >= 10
    assert not set(ids) & {m[0] for m in B.MUTANTS}      # no id shared with the driver's mutants
    known = {i.id for i in CATALOGUE} | {g.id for g in GUARANTEES}
    for m in L.MUTANTS:
        assert m.kill in known, m
        assert (B.SCEN / m.scenario).is_file() and m.scenario in B.DECLARED, m
        assert m.id.startswith("lib-") and m.mistake


def test_an_anchor_that_does_not_apply_is_the_tables_defect():
    m = L.MUTANTS[0]
    with pytest.raises(L.MutantDefect, match="occurs 0 times"):
        L.apply(m, "package consumer\n")
    with pytest.raises(L.MutantDefect, match="occurs 2 times"):
        L.apply(m, m.anchor + "\n" + m.anchor + "\n")


@pytest.mark.skipif(shutil.which("go") is None and os.environ.get("ROCKETSPEC_REQUIRE_REAL") != "1",
                    reason="Go is not on PATH")
def test_a_mutant_builds_from_the_overlay_and_the_overlay_is_what_is_compiled(module_dir, tmp_path):
    exe = L.build(L.BY_ID["lib-commit-batch-max"], into=tmp_path)
    assert exe == tmp_path / "lib-commit-batch-max" / "rocketspec-go-client" and exe.stat().st_size > 1_000_000
    # the mutant's program speaks the protocol: an unknown argument is refused with exit 2
    r = subprocess.run([str(exe), "--verbose"], input='{"type": "start", "protocol": 1}\n', capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and '"type":"error"' in r.stdout.replace(" ", "")
    # a replacement that does not compile fails the build: the overlaid file is the one compiled
    broken = dataclasses.replace(L.BY_ID["lib-commit-batch-max"], id="broken", replacement="offset := (")
    with pytest.raises(L.MutantDefect, match="does not build"):
        L.build(broken, into=tmp_path)
    # clients/go/go.mod is untouched: the replace directive lives in the build folder's copy
    assert "replace" not in (L.GO_DIR / "go.mod").read_text()
    assert f"replace {L.MODULE} =>" in (tmp_path / "go.mod").read_text()


def test_the_bench_refuses_a_table_that_no_longer_applies_before_any_run(monkeypatch, module_dir, capsys):
    bad = dataclasses.replace(L.MUTANTS[0], id="lib-bad", anchor="no such text in the library")
    monkeypatch.setattr(L, "MUTANTS", (*L.MUTANTS, bad))
    monkeypatch.setattr(L, "BY_ID", {**L.BY_ID, "lib-bad": bad})
    monkeypatch.setattr(B, "judge", lambda *a: pytest.fail("a real run started"))
    assert B.main(["--only", "lib-bad", "--no-controls"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "lib-bad" in err[0] and "occurs 0 times" in err[0]


def test_the_bench_says_in_one_line_when_go_is_missing(monkeypatch, capsys):
    monkeypatch.setattr(L.shutil, "which", lambda name: None)
    monkeypatch.setattr(B, "judge", lambda *a: pytest.fail("a real run started"))
    assert B.main(["--only", "lib-commit-batch-max", "--no-controls"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Go is not on PATH" in err[0]
