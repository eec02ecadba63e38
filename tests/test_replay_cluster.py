"""`rocketspec replay` on a real standalone Spark cluster: a master and two workers started on
this machine with spark-class (the PyPI package has no start-master.sh), the replay run
against it as a separate driver, and an executor killed (SIGKILL) in the middle of a run:
Spark re-runs the lost work and the results are unchanged. Also `spark-submit` as
docs/replay.md shows it, with rocketspec shipped to the driver and the executors as a wheel in
--py-files to a Python that lacks it: the application is the master's and its executors ran on
the workers. `make test-spark-cluster`."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import orjson
import pytest

pyspark = pytest.importorskip("pyspark")
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children(pid) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    home = os.path.dirname(pyspark.__file__)
    cls = os.path.join(home, "bin", "spark-class")
    d = tmp_path_factory.mktemp("spark-cluster")
    env = dict(os.environ, SPARK_HOME=home, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               SPARK_WORKER_DIR=str(d / "work"), SPARK_LOG_DIR=str(d / "logs"))
    port, ui = _port(), _port()
    procs = [subprocess.Popen([cls, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                               str(port), "--webui-port", str(ui)], env=env, stdout=open(d / "master.log", "w"),
                              stderr=subprocess.STDOUT, start_new_session=True)]
    url = f"spark://127.0.0.1:{port}"
    for i in range(2):
        procs.append(subprocess.Popen([cls, "org.apache.spark.deploy.worker.Worker", "--cores", "1", "--memory",
                                       "1g", "--webui-port", str(_port()), "--work-dir", str(d / f"w{i}"), url],
                                      env=env, stdout=open(d / f"worker{i}.log", "w"), stderr=subprocess.STDOUT,
                                      start_new_session=True))
    try:
        deadline = time.time() + 240
        while True:
            try:
                state = json.load(urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=5))
                if state.get("aliveworkers", 0) >= 2:
                    break
            except OSError:
                pass
            assert time.time() < deadline, "the standalone cluster did not come up"
            time.sleep(2)
        yield {"url": url, "workers": procs[1:], "env": env, "ui": ui, "dir": d}
    finally:
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


def _trace(tmp_path, events=60_000) -> str:
    sys.path.insert(0, str(ROOT))
    from bench.replay_scale import generate

    d = str(tmp_path / "data")
    generate(events, d)
    return d


def _kill_an_executor(cluster, job, settle: float):
    """SIGKILL the first executor JVM (a worker's child) seen while `job` runs, `settle` seconds
    after it appears (so that it has taken tasks); its pid, or None if none was seen."""
    deadline = time.time() + 600
    while job.poll() is None and time.time() < deadline:
        for w in cluster["workers"]:
            ex = _children(w.pid)
            if ex:
                time.sleep(settle)
                os.kill(ex[0], signal.SIGKILL)
                return ex[0]
        time.sleep(0.2)
    return None


def _replay(cluster, path, partitions=None, kill=False) -> dict:
    """`rocketspec replay --json` of `path` on the cluster (`partitions`: the exact path), its
    report; with `kill`, one executor JVM (a worker's child) is SIGKILLed while the job runs."""
    parts = [] if partitions is None else ["--partitions", str(partitions)]
    p = subprocess.Popen([str(BIN / "rocketspec"), "replay", "--master", cluster["url"], path, "--json",
                          "--quiet", *parts, "--max-violations", "1000000"],
                         env=cluster["env"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    killed = _kill_an_executor(cluster, p, settle=3) if kill else None
    out, err = p.communicate(timeout=900)
    assert killed is not None or not kill, "no executor seen to kill"
    assert p.returncode in (0, 1), err.decode()[-2000:]
    return orjson.loads(out)


def test_replay_on_a_standalone_cluster_equals_local_and_survives_a_killed_executor(cluster, tmp_path):
    from rocketspec.traces.spark.spark_replay import replay_local

    path = _trace(tmp_path)
    want = replay_local([path], max_listed=10 ** 6)
    got = _replay(cluster, path, partitions=6)
    assert (got["verdict"], got["counts"], got["events"]) == ("holds" if want.ok else "violated",
                                                              dict(sorted(want.findings.counts.items())), want.events)
    # again, and SIGKILL one executor JVM (a worker's child) while the job runs
    again = _replay(cluster, path, partitions=6, kill=True)
    assert (again["verdict"], again["counts"], again["events"], again["errors"]) == \
        (got["verdict"], got["counts"], got["events"], got["errors"])


def test_a_dataset_of_runs_whole_on_the_cluster_is_check_run_by_run_and_survives_a_killed_executor(cluster, tmp_path):
    """The whole path (each run whole in a task, traces/spark/spark_whole.py) on the standalone
    cluster: each run's verdict and counts are check's on that run, also when an executor is
    killed while the job runs."""
    from rocketspec.reference.bulk import simulate_dataset
    from rocketspec.reference.scenario import load_scenario
    from rocketspec.spec.replay import check_trace

    d = str(tmp_path / "runs")
    os.makedirs(d)      # (simulate_dataset writes into a directory its caller made and claimed)
    simulate_dataset(load_scenario("basic"), "rocketmq-5.3.3", d, 600_000)

    def replay():
        return subprocess.Popen([str(BIN / "rocketspec"), "replay", "--master", cluster["url"], d, "--json",
                                 "--quiet"], env=cluster["env"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    p = replay()
    out, err = p.communicate(timeout=900)
    assert p.returncode == 0, err.decode()[-2000:]
    got = orjson.loads(out)
    assert {r["report"]["spark"]["path"] for r in got["runs"]} == {"whole"}
    for r in got["runs"]:
        c = check_trace(os.path.join(r["path"], "part-0.parquet")).to_dict()
        assert (r["report"]["verdict"], r["report"]["counts"], r["report"]["events"]) == (
            c["verdict"], c["counts"], c["events"])
    p = replay()
    killed = _kill_an_executor(cluster, p, settle=2)
    out, err = p.communicate(timeout=900)
    assert p.returncode == 0, err.decode()[-2000:]
    again = orjson.loads(out)
    assert [(r["run"], r["report"]["counts"], r["report"]["events"]) for r in again["runs"]] == \
        [(r["run"], r["report"]["counts"], r["report"]["events"]) for r in got["runs"]]
    assert killed is not None, "no executor seen to kill"


def test_a_long_trace_of_many_deployments_on_the_cluster_is_check_and_survives_a_killed_executor(cluster, tmp_path):
    """The scoped path (replay's default for a long trace of many deployments in rocketspec's
    Parquet, traces/spark/spark_scoped.py) on the standalone cluster: check's verdict, counts and
    events, also when an executor is killed while the job runs (its survey or replay tasks run
    again; a task's result depends only on its input)."""
    from rocketspec.traces.spark.spark_whole import WHOLE_EVENTS

    d = _trace(tmp_path, events=WHOLE_EVENTS + 200_000)
    from bench.replay_scale import run_check      # (_trace put the project on the path)

    c = run_check(sorted(str(p) for p in Path(d).glob("*.parquet")))[2].to_dict()

    got = _replay(cluster, d)
    assert got["spark"]["path"] == "scoped" and got["spark"]["scopes"] > 1
    assert (got["verdict"], got["counts"], got["events"]) == (c["verdict"], c["counts"], c["events"])
    again = _replay(cluster, d, kill=True)
    assert (again["verdict"], again["counts"], again["events"], again["errors"]) == \
        (got["verdict"], got["counts"], got["events"], got["errors"])


def _bare_python(d: Path) -> str:
    """A Python with rocketspec's dependencies and not rocketspec: this venv's interpreter
    without its site hooks (the editable install is a .pth hook), its site-packages on the path."""
    import sysconfig

    py = d / "python-without-rocketspec"
    py.write_text("#!/bin/sh\n"
                  f'PYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{sysconfig.get_paths()["purelib"]}" '
                  f'exec {sys.executable} -S "$@"\n')
    py.chmod(0o755)
    probe = subprocess.run([str(py), "-c", "import orjson, pyarrow, pyspark; import rocketspec"],
                           capture_output=True, text=True, cwd=d)
    assert "No module named 'rocketspec'" in probe.stderr, probe.stderr
    return str(py)


def _ship_zip(d: Path) -> str:
    """docs/replay.md's steps: a wheel of the project (pure Python), as a .zip for --py-files."""
    import shutil

    src = d / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".venv", ".git", "build", "out", "*.egg-info",
                                                              "__pycache__", "tests", "bench", "docs", "shared"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(d / "dist"), str(src)], check=True, capture_output=True)
    (whl,) = (d / "dist").glob("rocketspec-*-py3-none-any.whl")
    shutil.copy(whl, d / "dist" / "rocketspec.zip")
    return str(d / "dist" / "rocketspec.zip")


def _apps(cluster) -> dict:
    state = json.load(urllib.request.urlopen(f"http://127.0.0.1:{cluster['ui']}/json/", timeout=10))
    return {a["id"]: a for a in state.get("activeapps", []) + state.get("completedapps", [])}


def test_spark_submit_with_rocketspec_as_py_files_runs_on_the_cluster(cluster, tmp_path):
    """spark-submit --master spark://... --py-files dist/rocketspec.zip rocketspec/commands/replay_submit.py,
    driver and executors on a Python without rocketspec: check's verdict; the application is
    registered with the master and its executors ran on the workers (their work directories
    hold the executors' logs); without --py-files the same submission fails, naming the module."""
    home = os.path.dirname(pyspark.__file__)
    path = _trace(tmp_path, events=20_000)
    want = replay_local_check(path)
    bare, ship = _bare_python(tmp_path), _ship_zip(tmp_path)
    before = set(_apps(cluster))

    def submit(*extra):
        cmd = [os.path.join(home, "bin", "spark-submit"), "--master", cluster["url"], *extra,
               "--conf", f"spark.pyspark.python={bare}", "--conf", f"spark.pyspark.driver.python={bare}",
               "--conf", "spark.executor.memory=1g",
               str(ROOT / "rocketspec" / "commands" / "replay_submit.py"), path, "--json", "--quiet", "--partitions", "4"]
        env = {k: v for k, v in cluster["env"].items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900, cwd=tmp_path)

    p = submit("--py-files", ship)
    assert p.returncode in (0, 1), p.stderr[-3000:]
    got = orjson.loads(p.stdout)
    assert got["spark"]["master"] == cluster["url"]
    assert (got["verdict"], got["counts"], got["events"]) == want
    new = {i: a for i, a in _apps(cluster).items() if i not in before}
    assert len(new) == 1, new
    (app_id,) = new
    ran = [w for w in ("w0", "w1") if list((cluster["dir"] / w / app_id).glob("*/stderr"))]
    assert ran, f"no executor of {app_id} ran on a worker"

    p = submit()
    assert p.returncode != 0 and "No module named 'rocketspec'" in p.stderr + p.stdout


def replay_local_check(path):
    from bench.replay_scale import run_check      # (_trace put the project on the path)

    c = run_check(sorted(str(p) for p in Path(path).glob("*.parquet")))[2].to_dict()
    return c["verdict"], c["counts"], c["events"]
