import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


def pytest_addoption(parser):
    parser.addoption("--rewrite", action="store_true", default=False,
                     help="rewrite the expected output of narrated scripts (tests/testdata/*.txt)")


@pytest.fixture(scope="session")
def spark():
    """One small local Spark session for every Spark test of the run (tests marked `spark`;
    `make test` runs them in one process, after the rest)."""
    pytest.importorskip("pyspark")
    from rocketspec.traces.spark.spark_replay import spark_session

    s = spark_session("local[2,3]", app="rocketspec-tests", conf={
        "spark.ui.enabled": "false", "spark.driver.memory": "1g", "spark.default.parallelism": "2"})
    yield s
    s.stop()
