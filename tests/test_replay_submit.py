"""`spark-submit ... rocketspec/commands/replay_submit.py PATH...` runs on the master spark-submit gives (it
ran on an embedded local[*] whatever --master said), and a master it cannot reach is exit 2 in
seconds. The standalone cluster itself: tests/test_replay_cluster.py (make test-spark-cluster)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from rocketspec.spec.replay import check_trace

pyspark = pytest.importorskip("pyspark")
pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parent.parent
SUBMIT = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit")


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> str:
    from rocketspec.reference.runner import run_to_list
    from rocketspec.reference.scenario import load_scenario
    from rocketspec.traces.io import write_trace

    p = str(tmp_path_factory.mktemp("submit") / "t.parquet")
    write_trace(p, run_to_list(load_scenario("basic"), seed=3, profile="rocketmq-4.9.8"))
    return p


def _submit(master: str, *args, timeout=300):
    """spark-submit as docs/replay.md shows it: (exit code, stdout, stderr)."""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    p = subprocess.run([SUBMIT, "--master", master, "--conf", f"spark.pyspark.python={sys.executable}",
                        str(ROOT / "rocketspec" / "commands" / "replay_submit.py"), *args], capture_output=True, text=True,
                       env=env, timeout=timeout, cwd=ROOT)
    return p.returncode, p.stdout, p.stderr


def test_spark_submit_master_is_the_one_replay_runs_on(trace):
    rc, out, err = _submit("local[1]", "file://" + trace, "--json", "--quiet")
    assert rc == 0, err[-3000:]
    got = json.loads(out)
    assert got["spark"]["master"] == "local[1]"
    want = check_trace(trace).to_dict()
    assert (got["verdict"], got["counts"], got["events"]) == (want["verdict"], want["counts"], want["events"])


def test_spark_submit_to_an_unreachable_master_is_exit_2(trace):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rc, out, err = _submit(f"spark://127.0.0.1:{port}", trace, "--json", "--quiet", timeout=120)
    assert rc == 2, err[-3000:]
    got = json.loads(out)
    assert got["exit_code"] == 2 and f"127.0.0.1:{port}" in got["error"] and "no standalone master" in got["error"]
