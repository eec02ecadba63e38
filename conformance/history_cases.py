"""Histories as gate and pytest-plugin cases: which files of a directory are traces or histories,
and a history judged as `rocketspec history` judges it, against its expected verdict.

A directory's file is a case when its name says what it holds (docs/gate.md, "Inputs"):

- a trace: `.jsonl`, `.ndjson` (gzip `.gz` or zstd `.zst`/`.zstd` compressed) or `.parquet`; a
  JSON Lines file whose first line is a message-trace export ({"body": ...}, no "kind") is a
  message-trace history;
- a RocketMQ message-trace history: `.msgtrace` (compressed too);
- an OpenChaos history: the name OpenChaos's ChaosControl gives it (`...-chaos-history-file`),
  or `.openchaos` (compressed too).

Any other file is not a case; the gate says how many it passed over, and a gate that found no
case at all never passes.

A history case holds, fails or is incomplete as `rocketspec history` would say (exit 0, 1, 4),
with two differences that make a gate fail closed: an unreadable record makes the case bad
input unless the config allows a share of them (`max_unreadable`), and the violated guarantees
are compared with the expected ones (none expected: it must hold).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rocketspec.errors import UserError

_PACKED = ("", ".gz", ".zst", ".zstd")
TRACE_SUFFIXES = tuple(s + z for s in (".jsonl", ".ndjson") for z in _PACKED) + (".parquet",)
MSGTRACE_SUFFIXES = tuple(".msgtrace" + z for z in _PACKED)
OPENCHAOS_SUFFIXES = tuple(s + z for s in (".openchaos", "-chaos-history-file") for z in _PACKED)
NAMED = "a trace (.jsonl, .ndjson, .parquet) or a history (.msgtrace, .openchaos, OpenChaos's *-chaos-history-file)"


def input_kind(path: Path) -> str | None:
    """"trace", "history" or None (not a case), by the file's name (and, for JSON Lines, its
    first line: a message-trace export is a history)."""
    name = path.name
    if name.endswith(MSGTRACE_SUFFIXES) or name.endswith(OPENCHAOS_SUFFIXES):
        return "history"
    if name.endswith(TRACE_SUFFIXES):
        if not name.endswith(".parquet") and _is_msgtrace_export(path):
            return "history"
        return "trace"
    return None


def _is_msgtrace_export(path: Path) -> bool:
    from rocketspec.traces.history.sources import detect_format

    try:
        return detect_format(path) == "msgtrace"
    except (UserError, OSError):
        return False            # judged as a trace, whose reader says what is wrong with it


@dataclass
class Found:
    """What a set of directories holds: the cases, and the files that are not cases."""
    cases: list          # (Path, "trace" | "history")
    other: list          # Path: neither

    def describe_other(self, limit: int = 3) -> str:
        if not self.other:
            return "no file"
        shown = ", ".join(str(p) for p in self.other[:limit])
        return f"{len(self.other)} file(s) that are not {NAMED} by name ({shown}{', ...' if len(self.other) > limit else ''})"


def scan(dirs) -> Found:
    cases, other = [], []
    for d in dirs:
        for p in sorted(Path(d).rglob("*")):
            if not p.is_file():
                continue
            k = input_kind(p)
            if k is None:
                if "result-file" not in p.name:     # OpenChaos's checker verdicts beside a history
                    other.append(p)
            else:
                cases.append((p, k))
    return Found(cases, other)


HISTORY_KEYS = {"format", "complete", "groups"}


def history_options(opts: dict, source, at: str, base: Path | None = None) -> dict:
    """A history's reading options (as `rocketspec history` takes them), checked: format
    (trace | msgtrace | openchaos), complete (true | false), groups (a --groups JSON file,
    relative to the config)."""
    if not isinstance(opts, dict):
        raise UserError("expected a table of format, complete, groups", file=source, field=at)
    unknown = sorted(set(opts) - HISTORY_KEYS)
    if unknown:
        raise UserError(f"unknown keys {unknown}; known: {sorted(HISTORY_KEYS)}", file=source, field=at)
    out = dict(opts)
    if "format" in out and out["format"] not in ("trace", "msgtrace", "openchaos"):
        raise UserError(f"expected trace, msgtrace or openchaos, got {out['format']!r}", file=source,
                        field=f"{at}.format")
    if "complete" in out and not isinstance(out["complete"], bool):
        raise UserError(f"expected true or false, got {out['complete']!r}", file=source, field=f"{at}.complete")
    if "groups" in out:
        g = out["groups"]
        if not isinstance(g, str) or not g or "\x00" in g:
            raise UserError(f"expected the path of a --groups JSON file, got {g!r}", file=source, field=f"{at}.groups")
        out["groups"] = str((base / g).resolve()) if base is not None else g
    return out


@dataclass
class HistoryOutcome:
    status: str          # passed | failed | incomplete | bad_input
    message: str
    details: str = ""
    got: frozenset = frozenset()


def judge_history(path, want: set, opts: dict | None = None, profile: str | None = None,
                  max_unreadable: float = 0.0, declared: bool = True) -> HistoryOutcome:
    """The history at `path` judged as `rocketspec history` judges it (opts: format, complete,
    groups), against `want` (violated guarantee ids; empty: it must hold)."""
    from rocketspec.spec.history import check_path
    from rocketspec.spec.history.judge import WINDOW_MS
    from rocketspec.traces.history.sources import read_groups

    opts = opts or {}
    try:
        groups = read_groups(opts["groups"]) if opts.get("groups") else None
        default_max = None
        if profile:
            from rocketspec.rocketmq.profiles import get_profile

            default_max = get_profile(profile).default_max_reconsume_times
        rep = check_path(path, opts.get("format"), opts.get("complete"), groups, default_max, WINDOW_MS)
    except UserError as exc:
        return HistoryOutcome("bad_input", str(exc))
    h = rep.history
    details = _details(rep)
    if h.problem_count:
        share = h.problem_count / max(h.records, 1)
        if share > max_unreadable:
            p = h.problems[0]
            allowed = "none allowed" if not max_unreadable else f"at most a share of {max_unreadable} allowed"
            return HistoryOutcome("bad_input", f"{p.file}:{p.line}: {h.problem_count} of {h.records} record(s) could "
                                              f"not be read ({allowed}: traces.max_unreadable); the first: {p.message}",
                                  details)
    got = frozenset(rep.violated())
    verdict = getattr(rep, "verdict", "holds" if rep.ok else "violated")
    said = ("holds" if not got else ", ".join(sorted(got)))
    size = f"{rep.sizes.get('produced', 0)} sends, {rep.sizes.get('consumed', 0)} deliveries"
    expected = "holds" if not want else ", ".join(sorted(want))
    if verdict == "incomplete" and not want:
        return HistoryOutcome("incomplete", f"no guarantee could judge anything ({h.format}, {size}): not a pass",
                              details, got)
    if got == set(want):
        how = "declared" if declared else "expected: no declared verdict, so it must hold"
        return HistoryOutcome("passed", f"{said} ({h.format}, {size}; as {how})", details, got)
    return HistoryOutcome("failed", f"verdict {said} ({h.format}, {size}); expected {expected}"
                                    f"{'' if declared else ' (no declared verdict)'}", details, got)


def _details(rep, listed: int = 5) -> str:
    """Each guarantee's status and its first findings (the gate's failure text)."""
    h = rep.history
    out = [f"{h.source}: {h.format}, {'complete' if h.complete else 'lossy'}; {h.records} records, "
           f"{h.problem_count} unreadable"]
    out += [f"  note: {n}" for n in h.notes]
    for v in rep.verdicts:
        out.append(f"  {v.id:<12} {v.status.upper():<9} {v.title}"
                   + (f" (the history lacks {', '.join(v.missing)})" if v.status == "skipped" else ""))
        out += [f"      {f.to_dict().get('where') or '-'}: {f.to_dict().get('message')}" for f in v.findings[:listed]]
    return "\n".join(out)
