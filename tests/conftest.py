import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def pytest_addoption(parser):
    parser.addoption("--rewrite", action="store_true", default=False,
                     help="rewrite the expected output of narrated scripts (tests/testdata/*.txt)")
