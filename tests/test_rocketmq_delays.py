"""The one `messageDelayLevel` parser (rocketspec.rocketmq.delays) as the spec and the reference
use it: the same values and, for a bad string, each caller's own message, on all inputs."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as hs

from rocketspec.reference.broker.schedule import parse_delay_levels as reference_levels
from rocketspec.rocketmq.delays import DEFAULT_DELAY_LEVELS, DelayLevelError, parse_delay_levels
from rocketspec.rocketmq.profiles import get_profile
from rocketspec.spec.limits import BadConfig, delay_table

# Tokens near the format's edges: units and non-units, digits Python's isdigit() accepts but
# int() does not ('²': refused as a bad token), non-ASCII digits int() reads ('٣'), blanks of several kinds.
_token = hs.text(alphabet="0123456789smhdxS ²٣\t\n", max_size=6)
_text = hs.lists(_token, max_size=6).map(" ".join)


def _outcome(fn, text):
    """("ok", value), or the error as its callers catch it (BadConfig, else ValueError) and its message."""
    try:
        return ("ok", fn(text))
    except Exception as exc:
        caught = next(c for c in (BadConfig, ValueError, Exception) if isinstance(exc, c))
        return (caught.__name__, str(exc))


def _old_delay_table(levels):
    """spec.limits.delay_table as it was before the one parser (commit a14e926), but for one fix: a
    number must be decimal digits (isdecimal), so a digit int() cannot read ('²') is a bad token
    like any other, not an internal error."""
    unit_ms = {"s": 1000, "m": 60000, "h": 3600000, "d": 86400000}
    out = [0]
    for tok in str(levels).split():
        unit = unit_ms.get(tok[-1:])
        if unit is None or not tok[:-1].isdecimal():
            raise BadConfig(f"message_delay_level: token {tok!r} is not <number><s|m|h|d>")
        out.append(int(tok[:-1]) * unit)
    if len(out) == 1:
        raise BadConfig("message_delay_level: no levels")
    return tuple(out)


def _old_reference_levels(text):
    """reference.broker.schedule.parse_delay_levels as it was before the one parser (a14e926), with
    the same fix as _old_delay_table."""
    units = {"s": 1000, "m": 60000, "h": 3600000, "d": 86400000}
    out = []
    for i, word in enumerate(text.split()):
        unit = units.get(word[-1:])
        if unit is None or not word[:-1].isdecimal():
            raise ValueError(f"delay level {i + 1}: {word!r} is not <number><s|m|h|d>")
        out.append(int(word[:-1]) * unit)
    if not out:
        raise ValueError("messageDelayLevel is empty")
    return out


@settings(max_examples=400, deadline=None)
@given(_text)
def test_both_callers_keep_their_values_and_messages(text):
    assert _outcome(delay_table, text) == _outcome(_old_delay_table, text)
    assert _outcome(reference_levels, text) == _outcome(_old_reference_levels, text)


@settings(max_examples=200, deadline=None)
@given(_text)
def test_the_spec_table_is_the_parsed_levels_after_level_0(text):
    try:
        levels = parse_delay_levels(text)
    except DelayLevelError as exc:
        assert exc.empty == (not text.split())
        if not exc.empty:
            assert text.split()[exc.index - 1] == exc.token
        with pytest.raises(BadConfig):
            delay_table(text)
    else:
        assert delay_table(text) == (0, *levels)


def test_default_table_is_rocketmqs_18_levels_and_the_profiles_default():
    levels = parse_delay_levels(DEFAULT_DELAY_LEVELS)
    assert len(levels) == 18 and levels[0] == 1000 and levels[-1] == 7200000
    assert get_profile("rocketmq-5.3.3").delay_levels == DEFAULT_DELAY_LEVELS
    assert get_profile("rocketmq-4.9.8").delay_levels == DEFAULT_DELAY_LEVELS


def test_a_digit_int_cannot_read_is_bad_input_not_an_internal_error(tmp_path):
    # '²' passed isdigit() and then int() raised: check exited 3 on a trace whose broker config
    # had it; it is a bad token, exit 2, named by its field
    import json

    from click.testing import CliRunner

    from rocketspec.cli import main

    events = [
        {"seq": 0, "ts": 0, "kind": "trace_started", "schema_version": 1, "profile": "rocketmq-5.3.3",
         "scenario": "hand-written"},
        {"seq": 1, "ts": 0, "kind": "broker_started", "broker": "broker-a", "config": {"message_delay_level": "1s \u00b2s"}},
    ]
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in events))
    res = CliRunner().invoke(main, ["check", str(p)])
    assert res.exit_code == 2, res.output
    assert "message_delay_level" in res.output and "internal error" not in res.output
    with pytest.raises(DelayLevelError):
        parse_delay_levels("1s \u00b2s")
