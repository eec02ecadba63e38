"""`rocketspec replay` checks Java, the master and the paths before Spark starts: each fault is
exit 2 with one line, in seconds (an unreachable standalone master used to be an internal error
after about 68 s of retries; a bogus JAVA_HOME or no Java, an internal error)."""
from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketspec.errors import UserError
from rocketspec.traces.spark.spark_preflight import check_master, java_major, local_path, master_addresses

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> str:
    from rocketspec.reference.runner import run_to_list
    from rocketspec.reference.scenario import load_scenario
    from rocketspec.traces.io import write_trace

    p = str(tmp_path_factory.mktemp("preflight") / "t.jsonl")
    write_trace(p, run_to_list(load_scenario("basic"), seed=1, profile="rocketmq-5.3.3"))
    return p


def _replay(*args, env=None, timeout=60):
    """`rocketspec replay ARGS` as a user runs it: (exit code, stdout, stderr). The timeout
    fails a run that waits on Spark (the old unreachable-master path took 68 s)."""
    p = subprocess.run([str(BIN / "rocketspec"), "replay", *args, "--quiet"], capture_output=True, text=True,
                       env=env or dict(os.environ), timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def _one_error_line(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("master", ["bogus", "spark:/127.0.0.1:7077", "spark://127.0.0.1", "spark://h:99999",
                                    "local[0]", "local[x]", "mesos://h:5050", "sc://localhost"])
def test_a_malformed_master_is_exit_2_before_spark_starts(trace, master):
    rc, _, err = _replay("--master", master, trace)
    assert rc == 2
    line = _one_error_line(err)
    assert f"--master {master!r}: not a Spark master" in line and "spark://HOST:PORT" in line


def test_an_unreachable_standalone_master_is_exit_2_at_once(trace):
    port = _closed_port()
    rc, _, err = _replay("--master", f"spark://127.0.0.1:{port}", trace, timeout=30)
    assert rc == 2
    assert f"127.0.0.1:{port}" in _one_error_line(err) and "no standalone master reachable" in err


def test_an_unresolvable_master_host_is_exit_2(trace):
    rc, _, err = _replay("--master", "spark://no-such-host.invalid:7077", trace, timeout=30)
    assert rc == 2 and "no-such-host.invalid:7077" in _one_error_line(err)


def test_a_master_that_does_not_answer_is_refused_within_the_bound(monkeypatch):
    def silent(addr, timeout=None):
        raise socket.timeout("timed out")

    monkeypatch.setattr(socket, "create_connection", silent)
    with pytest.raises(UserError, match=r"did not answer within 3 s"):
        check_master("spark://10.0.0.1:7077,10.0.0.2:7077")


def test_a_standalone_master_that_listens_passes(trace):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        check_master(f"spark://127.0.0.1:{_closed_port()},127.0.0.1:{s.getsockname()[1]}")   # (one of HA masters)


def test_yarn_without_its_hadoop_configuration_is_exit_2(trace):
    env = {k: v for k, v in os.environ.items() if k not in ("HADOOP_CONF_DIR", "YARN_CONF_DIR")}
    rc, _, err = _replay("--master", "yarn", trace, env=env)
    assert rc == 2 and "HADOOP_CONF_DIR" in _one_error_line(err)


@given(host=st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z][a-z0-9-]{0,10}){0,3}", fullmatch=True),
       port=st.integers(1, 65535), n=st.integers(1, 3))
def test_every_well_formed_standalone_master_is_parsed(host, port, n):
    url = "spark://" + ",".join(f"{host}:{port + i if port + i < 65536 else port}" for i in range(n))
    assert [h for h, _ in master_addresses(url)] == [host] * n


@pytest.mark.parametrize("master", ["local", "local[*]", "local[4]", "local[2,3]", "local-cluster[2,1,1024]",
                                    "yarn", "k8s://https://10.0.0.1:6443", "k8s://kubernetes.default.svc"])
def test_masters_with_nothing_to_connect_to_here_are_accepted(master):
    assert master_addresses(master) == []


def test_a_bogus_java_home_is_exit_2(trace, tmp_path):
    rc, _, err = _replay(trace, env=dict(os.environ, JAVA_HOME=str(tmp_path / "no-jdk")))
    assert rc == 2 and f"JAVA_HOME={tmp_path / 'no-jdk'} has no executable bin/java" in _one_error_line(err)


def test_no_java_at_all_is_exit_2(trace, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(BIN)      # (the venv's scripts; no java there)
    rc, _, err = _replay(trace, env=env)
    assert rc == 2 and "no Java found" in _one_error_line(err)


def _fake_java(d: Path, said: str, code: int = 0) -> str:
    (d / "bin").mkdir(parents=True)
    j = d / "bin" / "java"
    j.write_text(f"#!/bin/sh\necho '{said}' >&2\nexit {code}\n")
    j.chmod(j.stat().st_mode | stat.S_IXUSR)
    return str(d)


def test_a_java_too_old_for_spark_is_exit_2(trace, tmp_path):
    home = _fake_java(tmp_path / "jdk8", 'openjdk version "1.8.0_392"')
    rc, _, err = _replay(trace, env=dict(os.environ, JAVA_HOME=home))
    assert rc == 2 and "is Java 8: Spark 4 needs Java 17 or later" in _one_error_line(err)


def test_a_java_that_fails_is_exit_2(trace, tmp_path):
    home = _fake_java(tmp_path / "broken", "Error occurred during initialization of VM", code=1)
    rc, _, err = _replay(trace, env=dict(os.environ, JAVA_HOME=home))
    assert rc == 2 and "Error occurred during initialization of VM" in _one_error_line(err)


@pytest.mark.parametrize("said, major", [('openjdk version "17.0.15" 2025-04-15', 17), ('java version "1.8.0_392"', 8),
                                         ('openjdk version "21" 2023-09-19', 21), ("nothing", None)])
def test_java_major(said, major):
    assert java_major(said) == major


@pytest.mark.parametrize("url", ["hdfs://nn:8020/traces/t.parquet", "s3a://bucket/t.parquet", "s3://b/t",
                                 "gs://b/t", "abfss://c@a.dfs.core.windows.net/t"])
def test_a_remote_file_system_path_is_refused_before_spark_starts(url, trace):
    rc, _, err = _replay(url)
    scheme = url.split("://")[0]
    assert rc == 2 and f"{scheme}:// input" in _one_error_line(err) and "mount" in err


def test_a_remote_out_directory_is_refused_before_spark_starts(trace):
    rc, _, err = _replay(trace, "--out", "s3a://bucket/out")
    assert rc == 2 and "s3a:// --out" in _one_error_line(err)


def test_file_urls_are_local_paths(trace):
    assert local_path("file://" + trace) == trace
    assert local_path("file://localhost" + trace) == trace
    assert local_path(trace) == trace
    with pytest.raises(UserError, match="names host 'nn'"):
        local_path("file://nn/tmp/t.jsonl")


def test_a_file_url_to_a_missing_file_names_it(trace):
    rc, _, err = _replay("file:///no/such/trace.jsonl")
    assert rc == 2 and "/no/such/trace.jsonl: no such file" in _one_error_line(err)


def test_a_launcher_that_exits_is_exit_2_naming_its_arguments(trace):
    """PYSPARK_SUBMIT_ARGS with a master Spark's launcher refuses: its JVM never starts."""
    env = dict(os.environ, PYSPARK_SUBMIT_ARGS="--master bogus pyspark-shell")
    rc, _, err = _replay(trace, env=env, timeout=120)
    assert rc == 2 and "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: Spark's launcher (spark-submit) exited") and "--master bogus" in last
