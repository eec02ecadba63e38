"""pytest plugin (entry point `pytest11`): every trace in a directory becomes a test item.

    pytest --rocketspec-traces DIR [--rocketspec-traces DIR2] [--rocketspec-profile P]

Each trace file under DIR (JSON Lines, gzip or zstd compressed, or Parquet) is one test: it
replays through the spec and passes when the spec's verdict is the one the trace declares
(`trace_started.config.expect`, the scenario format: conformance.verdicts), or, when it
declares none, when it holds. A failure shows the report of `rocketspec check`; bad input
(an unreadable trace) fails with the file, line and what was expected.
"""
from __future__ import annotations

from pathlib import Path

import pytest

TRACE_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".jsonl.zstd", ".parquet")


def pytest_addoption(parser):
    group = parser.getgroup("rocketspec", "rocketspec trace conformance")
    group.addoption("--rocketspec-traces", action="append", default=[], metavar="DIR",
                    help="make each trace in DIR (recursively) a test item judged by the rocketspec spec "
                         "against its declared verdict (repeatable)")
    group.addoption("--rocketspec-profile", default=None, metavar="PROFILE",
                    help="judge the traces under this profile instead of the one each trace names")


def pytest_configure(config):
    dirs = config.getoption("rocketspec_traces") or []
    for d in dirs:
        if not Path(d).is_dir():
            raise pytest.UsageError(f"--rocketspec-traces {d}: no such directory; expected a directory of traces")
    config._rocketspec_trace_dirs = [Path(d).resolve() for d in dirs]


def is_trace(path: Path) -> bool:
    return path.name.endswith(TRACE_SUFFIXES)


@pytest.hookimpl(hookwrapper=True)
def pytest_collection_modifyitems(session, config, items):
    yield
    dirs = getattr(config, "_rocketspec_trace_dirs", [])
    seen = {str(getattr(i, "path", "")) for i in items if isinstance(i, TraceItem)}
    for d in dirs:
        for path in sorted(p for p in d.rglob("*") if p.is_file() and is_trace(p)):
            if str(path) in seen:
                continue
            seen.add(str(path))
            items.append(TraceItem.from_parent(session, name=f"rocketspec-trace::{path.relative_to(d.parent)}",
                                               path=path))


class TraceFailure(Exception):
    pass


class TraceItem(pytest.Item):
    """One trace replayed through the spec."""

    def runtest(self):
        from rocketspec.errors import UserError
        from rocketspec.traces.io import TraceInputError

        from .verdicts import judge_trace

        try:
            j = judge_trace(self.path, self.config.getoption("rocketspec_profile"))
        except (TraceInputError, UserError) as exc:
            raise TraceFailure(f"bad input: {exc}") from None
        self.user_properties.append(("verdict", ", ".join(sorted(j.got)) or "holds"))
        if not j.ok:
            from rocketspec.traces.reports.verdict_text import render_text

            raise TraceFailure(j.describe() + "\n\n" + render_text(j.report))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, TraceFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"rocketspec trace {self.path.name}"
