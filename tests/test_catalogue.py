"""The committed counterexample catalogue (docs/catalogue/) cannot drift from the spec: every
trace is still rejected with its invariant, every page and the index match what the generator
makes of the committed traces (`make catalogue` regenerates them)."""
from __future__ import annotations

import json

from rocketspec.spec.invariants import BY_ID
from rocketspec.traces.reports import catalogue as cat


def test_committed_counterexamples_are_rejected_and_pages_match():
    assert cat.check() == []


def test_index_lists_every_error_invariant_and_guarantee():
    idx = json.loads((cat.OUT / cat.INDEX).read_text())
    readme = (cat.OUT / "README.md").read_text()
    for inv in cat.error_invariants():
        assert f"| [{inv.id}]({inv.id}.md) |" in readme or f"| {inv.id} | {inv.title} | **missing** |" in readme
    for g in cat.guarantees():
        assert f"| {g} |" in readme
    # what is there is what the generator prefers: an explorer counterexample is never longer
    # than the scope's shortest, and each entry names its invariant's catalogue entry
    for inv_id, e in idx["entries"].items():
        assert BY_ID[inv_id].severity == "error"
        assert e["source"] in ("explorer", "scenario", "hand-written", "trace mutant")
        assert (cat.OUT / f"{inv_id}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_changed_trace_is_caught(tmp_path):
    import shutil

    out = tmp_path / "catalogue"
    shutil.copytree(cat.OUT, out)
    idx = json.loads((out / cat.INDEX).read_text())
    inv_id = sorted(idx["entries"])[0]
    p = out / f"{inv_id}.jsonl"
    lines = p.read_text().splitlines()
    p.write_text("\n".join(lines[:-1]) + "\n")       # drop the violating event
    problems = cat.check(out)
    assert any(f"{inv_id}.jsonl changed" in x for x in problems)
    assert any(f"no longer rejected with {inv_id}" in x for x in problems)
