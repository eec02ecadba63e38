"""`rocketspec record --release` and the recorder's build per release (traces/recorder_build.py).

No Java here: the import rewriting, the choice of adapter, the release list, and the errors a
user sees for an unknown release or one whose jars are not installed. The real 5.x run is
tests/test_real_5x.py.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from rocketspec.commands import record as rec
from rocketspec.traces import recorder_build as rb
from rocketspec.traces import rocketmq_jars as rj

ROOT = Path(__file__).resolve().parent.parent
MOVES = rb.package_moves("5")


def test_the_5x_line_moves_the_protocol_and_schedule_packages():
    assert ("org.apache.rocketmq.common.protocol", "org.apache.rocketmq.remoting.protocol") in MOVES
    assert ("org.apache.rocketmq.store.schedule", "org.apache.rocketmq.broker.schedule") in MOVES
    assert rb.package_moves("4") == []


def test_only_import_lines_are_rewritten():
    src = ("package rocketspec.recorder;\n"
           "import org.apache.rocketmq.common.protocol.RequestCode;\n"
           "import static org.apache.rocketmq.common.protocol.ResponseCode.SUCCESS;\n"
           "import org.apache.rocketmq.common.protocolx.Other;\n"
           "import org.apache.rocketmq.store.schedule.ScheduleMessageService;\n"
           "class A { String s = \"org.apache.rocketmq.common.protocol.RequestCode\"; }\n")
    out = rb.rewrite_imports(src, MOVES)
    assert "import org.apache.rocketmq.remoting.protocol.RequestCode;" in out
    assert "import static org.apache.rocketmq.remoting.protocol.ResponseCode.SUCCESS;" in out
    assert "import org.apache.rocketmq.common.protocolx.Other;" in out          # a package that only starts alike
    assert "import org.apache.rocketmq.broker.schedule.ScheduleMessageService;" in out
    assert 'String s = "org.apache.rocketmq.common.protocol.RequestCode"' in out   # code is untouched


@given(st.lists(st.from_regex(r"[a-z]{1,6}", fullmatch=True), min_size=1, max_size=4))
def test_a_rewrite_without_moves_is_the_identity_and_moves_apply_once(parts):
    name = "org.apache.rocketmq.common.protocol." + ".".join(parts)
    src = f"import {name};\n"
    assert rb.rewrite_imports(src, []) == src
    once = rb.rewrite_imports(src, MOVES)
    assert once == f"import org.apache.rocketmq.remoting.protocol.{'.'.join(parts)};\n"
    assert rb.rewrite_imports(once, MOVES) == once


def test_each_release_compiles_the_shared_sources_and_its_lines_adapter():
    for release, line in (("4.9.8", "4"), ("5.3.3", "5"), ("5.5.0", "5")):
        srcs = rb.sources(release)
        assert "rocketspec/recorder/Driver.java" in srcs and "rocketspec/recorder/Release.java" in srcs
        adapter = (ROOT / "traces/recorder/releases" / line / "rocketspec/recorder/Release.java").read_text()
        assert srcs["rocketspec/recorder/Release.java"] == rb.rewrite_imports(adapter, rb.package_moves(line))
        old = re.compile(r"^import\s+(static\s+)?org\.apache\.rocketmq\.common\.protocol\.", re.M)
        assert bool(old.search("".join(srcs.values()))) == (line == "4")


def test_a_release_line_without_an_adapter_is_refused_by_name():
    with pytest.raises(rb.BuildError) as exc:
        rb.sources("6.0.0")
    assert exc.value.code == 2 and "RocketMQ 6.0.0" in str(exc.value) and "releases/6" in str(exc.value)


def test_the_digest_changes_with_a_source_or_the_classpath():
    srcs = {"a/A.java": "class A {}"}
    d = rb.digest("x.jar", srcs)
    assert d != rb.digest("y.jar", srcs)
    assert d != rb.digest("x.jar", {"a/A.java": "class A { }"})
    assert d == rb.digest("x.jar\n", dict(srcs))


def test_releases_are_the_default_and_every_pinned_one():
    assert rec.releases()[0] == "4.9.8"
    assert rec.releases()[1:] == [v for v in rj.releases() if (rj.PINS / v / "jars.lock").is_file()]
    assert {"5.3.3", "5.5.0"} <= set(rec.releases())


def test_record_help_lists_the_releases():
    r = CliRunner().invoke(rec.record_cmd, ["--help"])
    assert r.exit_code == 0
    text = " ".join(r.output.split())
    for v in rec.releases():
        assert v in text
    # 5.5.1 is pinned in part: the help says which of its jars are 5.5.0's
    assert "5.5.1: its broker, store, common and remoting with 5.5.0's namesrv, push consumer and tools" in text and "make rocketmq-jars" in text.replace("- ", "-")


def test_an_unknown_release_is_exit_2_naming_the_available_ones(tmp_path):
    r = subprocess.run([str(ROOT / ".venv" / "bin" / "rocketspec"), "record", "--scenario", "real-basic", "--out",
                        str(tmp_path / "t.jsonl"), "--release", "9.9.9"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [
        "error: --release 9.9.9: unknown RocketMQ release; available: " + ", ".join(rec.releases())]
    assert not (tmp_path / "t.jsonl").exists()


def test_a_release_whose_jars_are_not_installed_names_the_make_target(tmp_path):
    with pytest.raises(rec.RecordError) as exc:
        rec.release_classpath(tmp_path, "5.5.0")
    assert "RocketMQ 5.5.0's jars are not installed" in str(exc.value) and "`make rocketmq-jars`" in str(exc.value)


def test_the_trace_names_the_release_profile_or_the_newest_of_its_line():
    from rocketspec.rocketmq.profiles import PROFILES

    assert rec.trace_profile("4.9.8") == "rocketmq-4.9.8"
    assert rec.trace_profile("5.3.3") == "rocketmq-5.3.3"
    want = "rocketmq-5.5.1" if "rocketmq-5.5.1" in PROFILES else "rocketmq-5.3.3"
    assert rec.trace_profile("5.5.0") == want
    with pytest.raises(rec.RecordError):
        rec.trace_profile("3.2.6")
