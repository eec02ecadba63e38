"""The rocketmq-5.5.1 release profile (issue 43): registered wherever profiles are chosen, and
its switches those docs/profiles.md states from the 5.5.0 source (5.5.0 stands in for 5.5.1,
whose client and namesrv jars the registry here does not serve)."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from rocketspec.cli import main
from rocketspec.commands.record import trace_profile
from rocketspec.conformance.statemachine import resolve_profile
from rocketspec.rocketmq.profiles import PROFILES, get_profile


def test_5_5_1_is_a_release_profile_listed_and_shown():
    r = CliRunner().invoke(main, ["profiles"])
    assert r.exit_code == 0
    releases = r.output.split("Known-bug profiles")[0]
    assert "rocketmq-5.5.1" in releases and "rocketmq-5.3.3" in releases
    r = CliRunner().invoke(main, ["profiles", "rocketmq-5.5.1", "--json"])
    d = json.loads(r.output)
    assert d["release"] == "5.5.1" and d["known_bug"] is None


def test_5_5_1_has_the_switches_of_5_3_3():
    """Every switch, read in 5.5.0's source (diffed against the rocketmq-all-5.3.3 tag: the
    client's consumer classes, the broker's pull, send, offset, lock and schedule processors,
    the store's getMessage), is as in 5.3.3; 5.5's differences are outside what a switch models
    (docs/profiles.md). If one ever differs, the gate and the state machine must run 5.5.1 too:
    today they run 5.3.3, whose reference runs are the same. The one exception is the broker's
    RocksDB POP path (off by default, in no gate scope): 5.5.1 fixed #10276 (PR #10277) and #10827
    (tryLockForPop) there, and their scopes and state-machine environments (POP_KV, POP_GRPC) run
    5.5.1."""
    a, b = get_profile("rocketmq-5.5.1").switches(), get_profile("rocketmq-5.3.3").switches()
    assert {k for k in a if a[k] != b[k]} == {"name", "release", "description", "pop_kv_change_deletes_same_key",
                                              "pop_kv_lock_fails_same_attempt"}
    assert not a["pop_consumer_kv_service"] and not b["pop_consumer_kv_service"]


def test_a_5_5_0_recording_names_the_5_5_1_profile():
    """`rocketspec record --release 5.5.0` stamps its trace with the profile of the release it
    stands in for; 5.3.3 keeps its own."""
    assert trace_profile("5.5.0") == "rocketmq-5.5.1"
    assert trace_profile("5.3.3") == "rocketmq-5.3.3"
    assert trace_profile("4.9.8") == "rocketmq-4.9.8"


def test_every_profile_option_takes_it():
    assert "rocketmq-5.5.1" in PROFILES
    assert resolve_profile("5.5.1") == "rocketmq-5.5.1"
    trace = str(Path(__file__).parent / "fixtures" / "real" / "5x" / "real-reset-5.5.0.jsonl.gz")
    r = CliRunner().invoke(main, ["check", "--profile", "rocketmq-5.5.2", trace])
    assert r.exit_code == 2 and "rocketmq-5.5.1" in r.output
    r = CliRunner().invoke(main, ["check", "--profile", "rocketmq-5.5.1", trace])
    assert r.exit_code == 0 and "HOLDS under profile rocketmq-5.5.1" in r.output
