"""The invariant ids a scenario's `expect` names are checked against the spec's catalogue by the
layers above the reference (conformance.verdicts), with the message and the order of errors the
scenario parser always had; the reference alone reads only the shape of `expect`."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocketspec.cli import main
from rocketspec.conformance.verdicts import load_checked_scenario, validate_checked
from rocketspec.reference.scenario import ScenarioError, load_scenario, validate

BASE = {
    "topics": [{"name": "T", "queues": 2}],
    "groups": [{"name": "G", "subscriptions": {"T": "*"}}],
    "producers": [{"topic": "T", "count": 5}],
    "steps": [{"at_ms": 0, "action": "start", "client": "c", "group": "G"}],
}


@pytest.mark.parametrize("expect, field, unknown", [
    ({"fails": ["INV-PQ-1", "INV-ZZZ", "INV-NOPE"]}, "expect.fails", ["INV-ZZZ", "INV-NOPE"]),
    ({"fails": "INV-NOPE"}, "expect.fails", ["INV-NOPE"]),
    ({"fails": "INV-NOPE", "profiles": {"rocketmq-4.9.8": {"fails": ["INV-BAD"]}}},
     'expect.profiles."rocketmq-4.9.8".fails', ["INV-BAD"]),
])
def test_an_unknown_id_is_refused_at_its_field_with_the_ids_in_their_order(expect, field, unknown):
    with pytest.raises(ScenarioError) as exc:
        validate_checked(dict(BASE, expect=expect), "my.toml")
    assert exc.value.field == field
    assert f"unknown invariant ids {unknown} (see `rocketspec schema` / spec/SPEC.md)" in str(exc.value)
    # the reference alone reads the shape only
    assert validate(dict(BASE, expect=expect), "my.toml")["expect"] is not None


def test_an_unknown_id_is_reported_before_a_later_field_error():
    bad = dict(BASE, expect={"fails": "INV-NOPE"}, steps=[{"at_ms": 0, "action": "explode"}])
    with pytest.raises(ScenarioError) as exc:
        validate_checked(bad, "my.toml")
    assert exc.value.field == "expect.fails"


def test_every_builtin_scenario_names_known_ids():
    from rocketspec.reference.scenario import builtin_names

    for name in builtin_names():
        assert load_checked_scenario(name) == load_scenario(name)


def test_simulate_refuses_a_scenario_file_naming_an_unknown_id(tmp_path):
    f = tmp_path / "s.json"
    f.write_text(json.dumps(dict(BASE, expect={"fails": ["INV-NOPE"]})))
    res = CliRunner().invoke(main, ["simulate", "--scenario", str(f), "--out", str(tmp_path / "t.jsonl")])
    assert res.exit_code == 2, (res.output, res.exception)
    assert "expect.fails" in res.stderr and "unknown invariant ids ['INV-NOPE']" in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "t.jsonl").exists()


def test_the_reference_imports_nothing_of_the_spec():
    root = Path(__file__).resolve().parents[1] / "reference"
    found = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                mod = ("." * node.level) + (node.module or "")
                if mod.startswith("rocketspec.spec") or mod.startswith("...spec") or mod.startswith("..spec"):
                    found.append(f"{path.relative_to(root)}:{node.lineno} {mod}")
            elif isinstance(node, ast.Import):
                found += [f"{path.relative_to(root)}:{node.lineno} {a.name}" for a in node.names
                          if a.name.startswith("rocketspec.spec")]
    assert found == []
