"""Values in scope, scenario and gate files that the parsers accept but no field can take:
integers past Python's digit limit, wrong types, nan, NUL characters, empty lists. Each is bad
input (exit 2) named by the file and the key the user wrote, never exit 3, never accepted."""
from __future__ import annotations

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketspec.cli import main
from rocketspec.errors import UserError
from rocketspec.model_checks.scopes import BOUNDS, ScopeError, load_scope

HUGE = "9" * 5000


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def bad_input(res, *needles):
    assert res.exit_code == 2, (res.exit_code, res.output)
    err = res.stderr.strip()
    assert err.startswith("error: ") and "\n" not in err and "internal error" not in err, err
    for n in needles:
        assert n in err, (n, err)
    return err


# ------------------------------------------------------------------ integers of 5,000 digits

def test_a_5000_digit_integer_in_a_scenario_file_is_located(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(f'[[topics]]\nname = "T"\nqueues = {HUGE}\n')
    bad_input(cli("simulate", "--scenario", p, "--out", tmp_path / "o.jsonl"), f"{p}:3:", "digits")
    j = tmp_path / "s.json"
    j.write_text('{"topics": [{"name": "T",\n "queues": %s}]}' % HUGE)
    bad_input(cli("simulate", "--scenario", j, "--out", tmp_path / "o.jsonl"), f"{j}:2:", "digits")


def test_a_5000_digit_integer_in_a_scope_file_is_located(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(f"consumers = 1\nqueues = {HUGE}\n")
    bad_input(cli("explore", "--scope", p, "--max-states", 10), f"{p}:2:", "digits")


def test_a_5000_digit_integer_in_a_gate_file_is_located(tmp_path):
    p = tmp_path / "g.toml"
    p.write_text(f"[statemachine]\nmax_examples = {HUGE}\n")
    bad_input(cli("gate", "--config", p), f"{p}:2:", "digits")


def test_a_4000_digit_integer_is_named_short(tmp_path):
    # below the digit limit it parses; the message names the key and stays short
    p = tmp_path / "g.toml"
    p.write_text(f"budget_s = {'9' * 4000}\n")
    err = bad_input(cli("gate", "--config", p), "budget_s", "604800")
    assert len(err) < 400


# ------------------------------------------------------------------ empty files

@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
@pytest.mark.parametrize("command", ["simulate", "explore", "gate"])
def test_an_empty_configuration_file_is_refused_not_run_on_defaults(tmp_path, command, text):
    # A run on defaults nobody wrote passes on nothing (simulate's was 3 events, HOLDS).
    p = tmp_path / "x.toml"
    p.write_text(text)
    argv = {"simulate": ["simulate", "--scenario", p, "--out", tmp_path / "o.jsonl"],
            "explore": ["explore", "--scope", p, "--max-states", 10],
            "gate": ["gate", "--config", p]}[command]
    bad_input(cli(*argv), f"{p}: no settings")


# ------------------------------------------------------------------ gate values

@pytest.mark.parametrize("text, field, needle", [
    ("scopes = [5]\n", "scopes[0]", "expected a table"),
    ('[traces]\ndirs = ["a\\u0000b"]\n', "traces.dirs[0]", "NUL"),
    ('[[scopes]]\nname = "a\\u0000.toml"\n', "scopes[0].name", "expected a named scope"),
    ('[statemachine]\nenabled = "no"\n', "statemachine.enabled", "true or false"),
    ('[statemachine]\nbounded = 1\n', "statemachine.bounded", "true or false"),
    ("[statemachine]\nbudget_s = nan\n", "statemachine.budget_s", "finite"),
    ("budget_s = inf\n", "budget_s", "finite"),
    ("budget_s = 1e300\n", "budget_s", "604800"),
    ("[statemachine]\nmax_examples = 1.5\n", "statemachine.max_examples", "an integer"),
    ('[[scopes]]\nname = "tiny"\nworkers = 100000\n', "scopes[0].workers", "from 1 to 64"),
    ('[[scopes]]\nname = "tiny"\nmax_states = 2.5\n', "scopes[0].max_states", "an integer"),
    ("[mutants]\nseeds = [1.5]\n", "mutants.seeds[0]", "an integer"),
    ("[mutants]\nhypothesis_max_examples = 0.5\n", "mutants.hypothesis_max_examples", "an integer"),
    ('[statemachine]\nseed = "x"\n', "statemachine.seed", "an integer"),
])
def test_gate_values_are_validated_strictly(tmp_path, text, field, needle):
    p = tmp_path / "g.toml"
    p.write_text(text)
    bad_input(cli("gate", "--config", p), f"{p}: {field}: ", needle)


# ------------------------------------------------------------------ scope values

@pytest.mark.parametrize("text, key, needle", [
    ("consume_ms = []\n", "consume_ms", "[lo, hi]"),
    ('consume_ms = ["a"]\n', "consume_ms", "[lo, hi]"),
    ("consume_ms = [1000000000000]\n", "consume_ms", "7 days"),
    ("consume_ms = [5, 1]\n", "consume_ms", "lo <= hi"),
    ("crash_modes = []\n", "crash_modes", "non-empty"),
    ('crash_modes = ["zz"]\n', "crash_modes", "silent"),
    ("consumers = 2\nstart_gap_ms = 100000000000000\n", "start_gap_ms", "86400000"),
    ("horizon_ms = 100000000000000000\n", "horizon_ms", "604800000"),
    ('subscription_type = "SQL92"\nsubscription = "((("\n', "subscription", "SQL92"),
])
def test_scope_values_are_named_by_their_scope_key(tmp_path, text, key, needle):
    p = tmp_path / "s.toml"
    p.write_text(text)
    err = bad_input(cli("explore", "--scope", p, "--max-states", 10), f"{p}: {key}: ", needle)
    assert "scope:" not in err.split(":")[1]


_INT_KEYS = sorted(set(BOUNDS) | {"horizon_ms", "start_gap_ms"})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.dictionaries(st.sampled_from(_INT_KEYS + ["consume_ms", "subscription"]),
                              st.one_of(st.integers(-10, 2**70), st.lists(st.integers(-1, 10**13), max_size=3),
                                        st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=8)),
                              max_size=4))
def test_any_scope_is_a_scope_or_an_error_naming_its_own_key(tmp_path, values):
    import json

    p = tmp_path / "s.toml"
    p.write_text("".join(f"{k} = {json.dumps(v, ensure_ascii=False)}\n" for k, v in values.items()), "utf-8")
    try:
        load_scope(str(p), max_states=10)
    except ScopeError as exc:
        assert exc.file == str(p)
        assert exc.field in values or exc.field in ("max_states", "subscription"), (exc.field, str(exc))
    except UserError as exc:  # a file with no key at all
        assert not values and exc.file == str(p) and "no settings" in exc.message


def test_a_gate_configs_out_dir_is_where_counterexamples_go(tmp_path):
    # out_dir was accepted and then ignored; it is now the directory of counterexample traces,
    # relative to the config file, unless --out-dir is given; a non-path is refused by its key
    from rocketspec.conformance.gate import load_config

    cfg_path = tmp_path / "gate.toml"
    cfg_path.write_text('out_dir = "cex"\n')
    cfg, _ = load_config(str(cfg_path))
    assert cfg["out_dir"] == str((tmp_path / "cex").resolve())
    bad = tmp_path / "bad.toml"
    bad.write_text("out_dir = 5\n")
    from rocketspec.errors import UserError

    with pytest.raises(UserError) as info:
        load_config(str(bad))
    assert "out_dir" in str(info.value)
