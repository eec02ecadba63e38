"""pytest plugin (entry point `pytest11`): every trace and history in a directory becomes a test item.

    pytest --rocketspec-traces DIR [--rocketspec-traces DIR2] [--rocketspec-profile P]
           [--rocketspec-histories FILE] [--rocketspec-expect NAME=VERDICT] [--rocketspec-max-unreadable SHARE]

Each trace file under DIR (JSON Lines, gzip or zstd compressed, or Parquet) is one test: it
replays through the spec and passes when the spec's verdict is the one the trace declares
(`trace_started.config.expect`, the scenario format: conformance.verdicts), or, when it
declares none, when it holds. A failure shows the report of `rocketspec check`; bad input
(an unreadable trace) fails with the file, line and what was expected.

Each history under DIR (RocketMQ message traces `.msgtrace`, OpenChaos histories, named as the
gate names them: conformance/history_cases.py) and each --rocketspec-histories file is one test
too, judged as `rocketspec history` judges it; it must hold unless --rocketspec-expect gives its
violated guarantees. An unreadable record fails it as bad input unless
--rocketspec-max-unreadable allows a share. A directory holding no trace or history, or an
expectation naming no collected file, is a usage error: never a pass on nothing.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from .history_cases import NAMED, TRACE_SUFFIXES, input_kind, scan  # noqa: F401


def pytest_addoption(parser):
    group = parser.getgroup("rocketspec", "rocketspec trace conformance")
    group.addoption("--rocketspec-traces", action="append", default=[], metavar="DIR",
                    help="make each trace and history in DIR (recursively) a test item judged by the rocketspec "
                         "spec against its declared verdict (repeatable)")
    group.addoption("--rocketspec-profile", default=None, metavar="PROFILE",
                    help="judge the traces under this profile instead of the one each trace names")
    group.addoption("--rocketspec-histories", action="append", default=[], metavar="FILE",
                    help="make this history file (message traces or an OpenChaos history, whatever its name) a "
                         "test item judged as `rocketspec history` judges it (repeatable)")
    group.addoption("--rocketspec-expect", action="append", default=[], metavar="NAME=VERDICT",
                    help="the verdict a trace or history (by file name or path) must have: holds, or its "
                         "violated ids separated by commas (INV-... for a trace, H-... for a history); repeatable")
    group.addoption("--rocketspec-max-unreadable", default=0.0, type=float, metavar="SHARE",
                    help="the share of a history's records that may be unreadable (default 0: any unreadable "
                         "record fails its item as bad input)")


def pytest_configure(config):
    dirs = config.getoption("rocketspec_traces") or []
    for d in dirs:
        if not Path(d).is_dir():
            raise pytest.UsageError(f"--rocketspec-traces {d}: no such directory; expected a directory of traces")
    files = config.getoption("rocketspec_histories") or []
    for f in files:
        if not Path(f).is_file():
            raise pytest.UsageError(f"--rocketspec-histories {f}: no such file; expected a history file")
    share = config.getoption("rocketspec_max_unreadable")
    if not 0 <= share <= 1:
        raise pytest.UsageError(f"--rocketspec-max-unreadable {share}: expected a share from 0 to 1")
    cases = []
    for d in dirs:
        found = scan([d])
        if not found.cases:
            raise pytest.UsageError(f"--rocketspec-traces {d}: {found.describe_other()} and no case; expected "
                                    f"{NAMED} (a directory that gives no test would pass on nothing)")
        cases += [(p.resolve(), k, Path(d).resolve()) for p, k in found.cases]
    for f in files:
        p = Path(f).resolve()
        cases = [c for c in cases if c[0] != p] + [(p, "history", p.parent)]
    config._rocketspec_cases = cases
    config._rocketspec_expect = _expectations(config.getoption("rocketspec_expect") or [], cases)


def _expectations(given, cases) -> dict:
    """--rocketspec-expect NAME=VERDICT, each naming a collected trace or history: path -> set of ids."""
    from rocketspec.errors import UserError

    from .gate import _verdict

    out = {}
    for item in given:
        name, sep, verdict = item.partition("=")
        if not sep or not name:
            raise pytest.UsageError(f"--rocketspec-expect {item}: expected NAME=holds or NAME=ID,ID...")
        hits = [(p, k) for p, k, _ in cases if name in (p.name, str(p)) or Path(name).resolve() == p]
        if not hits:
            raise pytest.UsageError(f"--rocketspec-expect {item}: no collected trace or history is named {name} "
                                    f"(no such file: {Path(name).resolve()})")
        try:
            want = _verdict("holds" if verdict == "holds" else [x.strip() for x in verdict.split(",") if x.strip()],
                            "--rocketspec-expect", name)
        except UserError as exc:
            raise pytest.UsageError(f"--rocketspec-expect {item}: {exc.message}") from None
        for p, k in hits:
            if want and (k == "history") != all(x.startswith("H-") for x in want):
                raise pytest.UsageError(f"--rocketspec-expect {item}: {p} is a {k}: expected "
                                        + ("H-... guarantee ids" if k == "history" else "INV-... invariant ids"))
            out[p] = want
    return out


def is_trace(path: Path) -> bool:
    return input_kind(path) == "trace"


@pytest.hookimpl(hookwrapper=True)
def pytest_collection_modifyitems(session, config, items):
    yield
    cases = getattr(config, "_rocketspec_cases", [])
    seen = {str(getattr(i, "path", "")) for i in items if isinstance(i, (TraceItem, HistoryItem))}
    for path, kind, root in cases:
        if str(path) in seen:
            continue
        seen.add(str(path))
        try:
            rel = path.relative_to(root.parent)
        except ValueError:
            rel = path.name
        cls = HistoryItem if kind == "history" else TraceItem
        items.append(cls.from_parent(session, name=f"rocketspec-{kind}::{rel}", path=path))


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
        want = getattr(self.config, "_rocketspec_expect", {}).get(self.path.resolve())
        if want is not None:
            if set(j.got) != want:
                from rocketspec.traces.reports.verdict_text import render_text

                raise TraceFailure(f"{self.path}: {', '.join(sorted(j.got)) or 'holds'}; expected "
                                   f"{', '.join(sorted(want)) or 'holds'} (--rocketspec-expect)\n\n"
                                   + render_text(j.report))
            return
        if not j.ok:
            from rocketspec.traces.reports.verdict_text import render_text

            raise TraceFailure(j.describe() + "\n\n" + render_text(j.report))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, TraceFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"rocketspec trace {self.path.name}"


class HistoryItem(pytest.Item):
    """One history judged as `rocketspec history` judges it."""

    def runtest(self):
        from .history_cases import judge_history

        want = getattr(self.config, "_rocketspec_expect", {}).get(self.path.resolve())
        o = judge_history(self.path, want or set(), None, self.config.getoption("rocketspec_profile"),
                          self.config.getoption("rocketspec_max_unreadable"), declared=want is not None)
        self.user_properties.append(("verdict", ", ".join(sorted(o.got)) or "holds"))
        if o.status == "bad_input":
            raise TraceFailure(f"bad input: {o.message}")
        if o.status != "passed":
            raise TraceFailure(f"{self.path}: {o.status}: {o.message}\n\n{o.details}")

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, TraceFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"rocketspec history {self.path.name}"
