"""The pinned RocketMQ release jars (third_party/rocketmq, traces/rocketmq_jars.py).

The lock checks run on fake jars in a temporary tree (no Maven, no Java). The last test installs
every pinned release (`make rocketmq-jars`: from ~/.m2 or Maven Central the first time, a re-hash
after) and loads each release's NamesrvStartup and BrokerStartup from its classpath; without mvn
or Java it skips and says why, and under ROCKETSPEC_REQUIRE_REAL=1 (CI) that is a failure.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketspec.traces import rocketmq_jars as rj

ROOT = Path(__file__).resolve().parent.parent


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A pinned release '9.9.9' of two fake jars, installed (stamp written) as an install leaves it."""
    pins, build = tmp_path / "pins", tmp_path / "build"
    monkeypatch.setattr(rj, "PINS", pins)
    monkeypatch.setattr(rj, "BUILD", build)
    monkeypatch.setattr(rj, "REPO", tmp_path)
    rel = pins / "9.9.9"
    rel.mkdir(parents=True)
    (rel / "pom.xml").write_text("<project/>\n")
    jars = {"a:one:jar:1.0": ("one-1.0.jar", b"first jar"), "b:two:jar:linux-x86_64:2.0": ("two-2.0-linux-x86_64.jar", b"second")}
    lib = build / "rocketmq-9.9.9" / "lib"
    lib.mkdir(parents=True)
    for coord, (name, body) in jars.items():
        (lib / name).write_bytes(body)
    rj.write_lock(rel / "jars.lock", "9.9.9", rj.sha256_file(rel / "pom.xml"),
                  [rj.Jar(c, n, sha(b)) for c, (n, b) in jars.items()])
    (build / "rocketmq-9.9.9" / "classpath.txt").write_text(":".join(str(lib / n) for n, _ in jars.values()) + "\n")
    (build / "rocketmq-9.9.9" / ".installed").write_text(rj.sha256_file(rel / "jars.lock") + "\n")
    return rel, lib


def test_an_installed_release_is_only_rehashed(tree, monkeypatch, capsys):
    """A stamped release installs without Maven (and so without the network)."""
    monkeypatch.setattr(rj, "maven_resolve", lambda pom: pytest.fail("Maven was run for an installed release"))
    assert rj.main(["install", "9.9.9"]) == 0


def test_a_tampered_jar_stops_the_install_and_is_named(tree, monkeypatch, capsys):
    rel, lib = tree
    (lib / "two-2.0-linux-x86_64.jar").write_bytes(b"not the pinned bytes")
    monkeypatch.setattr(rj, "maven_resolve", lambda pom: pytest.fail("Maven was run for an installed release"))
    assert rj.main(["install", "9.9.9"]) == 1
    err = capsys.readouterr().err
    assert "b:two:jar:linux-x86_64:2.0" in err and sha(b"second") in err and sha(b"not the pinned bytes") in err
    assert "a:one:jar:1.0" not in err


def test_a_missing_jar_stops_the_install(tree, monkeypatch, capsys):
    rel, lib = tree
    (lib / "one-1.0.jar").unlink()
    assert rj.main(["install", "9.9.9"]) == 1
    assert "a:one:jar:1.0 (one-1.0.jar): in " in capsys.readouterr().err


def test_maven_resolving_other_jars_than_the_lock_stops_the_install(tree, tmp_path, monkeypatch, capsys):
    """A fresh install: every resolved jar must be locked with its sha256, every locked jar resolved."""
    rel, lib = tree
    shutil.rmtree(lib.parent)
    m2 = tmp_path / "m2"
    m2.mkdir()
    (m2 / "one-1.0.jar").write_bytes(b"first jar")
    (m2 / "two-2.0.jar").write_bytes(b"second, but another build")
    (m2 / "three-3.0.jar").write_bytes(b"a new dependency")
    monkeypatch.setattr(rj, "maven_resolve", lambda pom: [
        ("a:one:jar:1.0", m2 / "one-1.0.jar"), ("b:two:jar:linux-x86_64:2.0", m2 / "two-2.0.jar"),
        ("c:three:jar:3.0", m2 / "three-3.0.jar")])
    assert rj.main(["install", "9.9.9"]) == 1
    err = capsys.readouterr().err
    assert f"b:two:jar:linux-x86_64:2.0 ({m2 / 'two-2.0.jar'}): sha256 {sha(b'second, but another build')}" in err
    assert "c:three:jar:3.0" in err and "resolved but not in" in err
    assert not (rel.parent.parent / "build" / "rocketmq-9.9.9").exists()  # nothing half-installed


def test_a_fresh_install_copies_the_locked_jars_in_lock_order(tree, tmp_path, monkeypatch, capsys):
    """Maven's jars as the lock pins them: copied into lib/, classpath.txt in the lock's order, stamped,
    and the next install runs no Maven. The build folder may lie outside the checkout."""
    rel, lib = tree
    shutil.rmtree(lib.parent)
    monkeypatch.setattr(rj, "REPO", tmp_path / "elsewhere")
    m2 = tmp_path / "m2"
    m2.mkdir()
    (m2 / "one-1.0.jar").write_bytes(b"first jar")
    (m2 / "two.jar").write_bytes(b"second")
    # Maven lists them in another order than the lock: the lock's order is the classpath's
    monkeypatch.setattr(rj, "maven_resolve", lambda pom: [("b:two:jar:linux-x86_64:2.0", m2 / "two.jar"),
                                                          ("a:one:jar:1.0", m2 / "one-1.0.jar")])
    probed = []
    monkeypatch.setattr(rj, "probe", lambda cp: probed.append(cp) or [])
    assert rj.main(["install", "9.9.9"]) == 0
    cp = (lib.parent / "classpath.txt").read_text().strip()
    assert cp == f"{lib / 'one-1.0.jar'}:{lib / 'two-2.0-linux-x86_64.jar'}" and probed == [cp]
    assert (lib / "two-2.0-linux-x86_64.jar").read_bytes() == b"second"
    monkeypatch.setattr(rj, "maven_resolve", lambda pom: pytest.fail("Maven was run for an installed release"))
    assert rj.main(["install", "9.9.9"]) == 0


def test_classes_that_do_not_load_stop_the_install(tree, tmp_path, monkeypatch, capsys):
    rel, lib = tree
    shutil.rmtree(lib.parent)
    m2 = tmp_path / "m2"
    m2.mkdir()
    (m2 / "one-1.0.jar").write_bytes(b"first jar")
    (m2 / "two.jar").write_bytes(b"second")
    monkeypatch.setattr(rj, "maven_resolve", lambda pom: [("a:one:jar:1.0", m2 / "one-1.0.jar"),
                                                          ("b:two:jar:linux-x86_64:2.0", m2 / "two.jar")])
    monkeypatch.setattr(rj, "probe", lambda cp: ["org.apache.rocketmq.broker.BrokerStartup: NoClassDefFoundError x/Y"])
    assert rj.main(["install", "9.9.9"]) == 1
    assert "BrokerStartup: NoClassDefFoundError x/Y" in capsys.readouterr().err
    assert not lib.parent.exists()


def test_a_pom_edited_after_its_lock_is_refused(tree, capsys):
    rel, _ = tree
    (rel / "pom.xml").write_text("<project><!-- another dependency --></project>\n")
    assert rj.main(["install", "9.9.9"]) == 2
    assert "changed since" in capsys.readouterr().err


def test_an_unknown_release_is_bad_input(tree, capsys):
    assert rj.main(["install", "1.2.3"]) == 2
    assert "9.9.9" in capsys.readouterr().err  # names the pinned ones


def test_maven_central_unreachable_is_its_own_exit_code(tree, tmp_path, monkeypatch, capsys):
    """What the Makefile can tell apart from a mismatch: Maven could not talk to the repository."""
    rel, lib = tree
    shutil.rmtree(lib.parent)
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "mvn").write_text("#!/bin/sh\necho '[ERROR] Failed to execute goal: Could not transfer artifact "
                              "x:y:pom:1 from/to central: Unknown host repo: Temporary failure in name resolution'\n"
                              "exit 1\n")
    (fake / "mvn").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    assert rj.main(["install", "9.9.9"]) == 75
    assert "Maven Central cannot be reached" in capsys.readouterr().err


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.from_regex(r"[a-z][a-z.]{0,8}", fullmatch=True),
                          st.from_regex(r"[a-z][a-z-]{0,8}", fullmatch=True),
                          st.one_of(st.none(), st.sampled_from(["linux-x86_64", "osx-aarch_64"])),
                          st.from_regex(r"[0-9]\.[0-9]{1,2}(\.Final)?", fullmatch=True)), max_size=6))
def test_dependency_list_is_parsed_in_order(entries):
    """dependency:list's lines (scope, absolute file, module suffix) give back each coordinate and file."""
    lines, want = ["", "The following files have been resolved:"], []
    for g, a, cls, v in entries:
        coord = f"{g}:{a}:jar:{cls}:{v}" if cls else f"{g}:{a}:jar:{v}"
        path = Path(f"/m2/{g}/{a}/{v}/{a}-{v}.jar")
        lines.append(f"   {coord}:compile:{path} -- module {a.replace('-', '.')} (auto)")
        want.append((coord, path))
    assert rj.parse_list("\n".join(lines)) == want


def test_the_committed_locks_match_their_poms():
    """Each pinned release has a lock written from its pom as committed, naming the release's jars."""
    releases = rj.releases()
    assert "5.3.3" in releases and any(v.startswith("5.5.") for v in releases), releases
    for v in releases:
        rel = rj.PINS / v
        pom_sha, jars = rj.read_lock(rel / "jars.lock")
        assert pom_sha == rj.sha256_file(rel / "pom.xml"), f"{rel}/pom.xml changed without a new lock"
        coords = {j.coordinate for j in jars}
        # the broker side is the release's own; a module the registry lacks in that release is
        # pinned by the pom to an older one (5.5.1's namesrv, client and tools are 5.5.0's)
        declared = dict(re.findall(r"<artifactId>rocketmq-([a-z-]+)</artifactId><version>([0-9.]+)</version>",
                                   (rel / "pom.xml").read_text()))
        for module in ("broker", "store", "remoting", "common"):
            assert f"org.apache.rocketmq:rocketmq-{module}:jar:{v}" in coords, (v, module)
        for module in ("namesrv", "client", "tools"):
            assert f"org.apache.rocketmq:rocketmq-{module}:jar:{declared.get(module, v)}" in coords, (v, module)
        assert len({j.file for j in jars}) == len(jars)


def _cannot_install() -> str | None:
    for tool in ("mvn", "java"):
        if shutil.which(tool) is None:
            return f"{tool} is not on PATH"
    return None


def test_every_pinned_release_installs_and_its_servers_load():
    reason = _cannot_install()
    if reason is not None:
        if os.environ.get("ROCKETSPEC_REQUIRE_REAL") == "1":
            pytest.fail(f"ROCKETSPEC_REQUIRE_REAL=1 but the pinned RocketMQ jars cannot be installed: {reason}")
        pytest.skip(f"pinned RocketMQ jars not installed: {reason}")
    r = subprocess.run(["make", "-s", "-C", str(ROOT), "rocketmq-jars"], capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, f"make rocketmq-jars failed ({r.returncode}):\n{r.stderr[-3000:]}"
    assert {"org.apache.rocketmq.namesrv.NamesrvStartup", "org.apache.rocketmq.broker.BrokerStartup"} <= set(rj.PROBED_CLASSES)
    for v in rj.releases():
        cp_file = ROOT / "build" / f"rocketmq-{v}" / "classpath.txt"
        assert cp_file.is_file(), f"make rocketmq-jars left no {cp_file}"
        cp = cp_file.read_text().strip()
        # one JVM per release: every probed class loads, and a class that is not there is reported
        # (the probe is not a pass on nothing)
        r = subprocess.run(["java", "-cp", cp, str(rj.PROBE), *rj.PROBED_CLASSES, "org.apache.rocketmq.broker.NoSuchStartup"],
                           capture_output=True, text=True, timeout=300)
        failed = r.stdout.strip().splitlines()
        assert r.returncode == 1 and len(failed) == 1 and failed[0].startswith("org.apache.rocketmq.broker.NoSuchStartup: "), \
            f"RocketMQ {v}: these classes do not load from {cp_file}:\n{r.stdout}{r.stderr[-2000:]}"
