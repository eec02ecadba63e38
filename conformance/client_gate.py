"""The gate's `client` suite: a client program under test, driven through the client driver
protocol (docs/driver-protocol.md) on a real RocketMQ, judged scenario by scenario.

For each configured built-in scenario the gate records a run with `rocketspec record --client`
(the broker recorder's events merged with the client's reports), then judges it twice:

- **check**: the spec at the trace's observation level (`trace_started.observed`: broker and
  client reports), so only the rules that level can see (spec/observation.py);
- **history**: the black-box guarantees (`rocketspec history` on the trace: sends, stores,
  deliveries, dead letters).

Each is a case, against `[client.expect]` (a scenario -> "holds" or ids: invariant ids for check,
H-... ids for history; none: both must hold). The scenario's own `expect` speaks of the Java
client rocketspec's recorder runs, not of the client under test, and is not read.

After the cases the gate prints the verdict table (one row per scenario) and the coverage report:
which judged rules and history guarantees the client's runs gave events to judge, and which event
kinds of the observed sides never appeared (docs/gate.md, "A client under test").
"""
from __future__ import annotations

import os
import shlex
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rocketspec.config_files import short
from rocketspec.errors import UserError

KEYS = {"command", "name", "release", "seed", "scenarios", "expect", "budget_s", "msgtrace"}


def _bad(msg, source, at):
    raise UserError(msg, file=source, field=at)


def resolve(cl: dict, base: Path) -> dict:
    """The program of `command` relative to the config file when it is a relative path."""
    cmd = cl.get("command")
    if isinstance(cmd, str) and "\x00" not in cmd:
        try:
            argv = shlex.split(cmd)
        except ValueError:
            return cl
        if argv and "/" in argv[0] and not os.path.isabs(argv[0]):
            argv[0] = str((base / argv[0]).resolve())
            cl["command"] = shlex.join(argv)
    # so is a scenario file (a built-in scenario is a name)
    scen = cl.get("scenarios")
    if isinstance(scen, list):
        moved = {s: str((base / s).resolve()) for s in scen
                 if isinstance(s, str) and s.endswith((".toml", ".json")) and "\x00" not in s}
        cl["scenarios"] = [moved.get(s, s) if isinstance(s, str) else s for s in scen]
        if isinstance(cl.get("expect"), dict):
            cl["expect"] = {moved.get(k, k): v for k, v in cl["expect"].items()}
    return cl


def label(scenario: str) -> str:
    """A scenario's name in cases, tables and file names: a scenario file by its stem."""
    return Path(scenario).stem if scenario.endswith((".toml", ".json")) else scenario


def validate(cl: dict, source: str) -> dict:
    """The `[client]` table checked; every mistake is bad configuration naming its field."""
    from rocketspec.traces.rocketmq_jars import DEFAULT_RELEASE, record_releases as releases
    from rocketspec.conformance.verdicts import load_checked_scenario
    from rocketspec.reference.scenario import ScenarioError

    if not isinstance(cl, dict):
        _bad(f"expected a table ([client] with a command and scenarios), got {short(cl)}", source, "client")
    unknown = sorted(set(cl) - KEYS)
    if unknown:
        _bad(f"unknown keys {unknown}; known: {sorted(KEYS)}", source, "client")
    cmd = cl.get("command")
    if not isinstance(cmd, str) or not cmd.strip() or "\x00" in cmd:
        _bad(f"expected the command that runs the client under test, got {short(cmd)}", source, "client.command")
    try:
        argv = shlex.split(cmd)
    except ValueError as exc:
        _bad(f"cannot split the command as a shell would ({exc})", source, "client.command")
    if shutil.which(argv[0]) is None:
        _bad(f"{argv[0]} is not an executable file or a program on PATH (the Go client: `make go-client` builds "
             "build/go-client/rocketspec-go-client)", source, "client.command")
    cl.setdefault("name", Path(argv[0]).name)
    if not isinstance(cl["name"], str):
        _bad(f"expected a name for the client, got {short(cl['name'])}", source, "client.name")
    rel = cl.setdefault("release", DEFAULT_RELEASE)
    if rel not in releases():
        _bad(f"unknown RocketMQ release {short(rel)}; available: {', '.join(releases())}", source, "client.release")
    seed = cl.setdefault("seed", 1)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        _bad(f"expected a seed, an integer from 0, got {short(seed)}", source, "client.seed")
    scen = cl.get("scenarios")
    if not isinstance(scen, list) or not scen or not all(isinstance(s, str) for s in scen):
        _bad(f"expected a non-empty list of built-in scenario names or scenario files, got {short(scen)}", source,
             "client.scenarios")
    if len(set(scen)) != len(scen):
        _bad("a scenario is named twice", source, "client.scenarios")
    for i, s in enumerate(scen):
        try:
            load_checked_scenario(s)
        except (ScenarioError, UserError) as exc:
            _bad(f"not a scenario rocketspec can run: {exc}", source, f"client.scenarios[{i}]")
    if not isinstance(cl.setdefault("msgtrace", False), bool):
        _bad(f"expected true or false, got {short(cl['msgtrace'])}", source, "client.msgtrace")
    b = cl.setdefault("budget_s", 180)
    if isinstance(b, bool) or not isinstance(b, (int, float)) or not 1 <= b <= 7 * 24 * 3600:
        _bad(f"expected a number of seconds per scenario, from 1, got {short(b)}", source, "client.budget_s")
    exp = cl.setdefault("expect", {})
    if not isinstance(exp, dict):
        _bad("expected a table: scenario name -> \"holds\" or a list of invariant and history guarantee ids",
             source, "client.expect")
    by_label = {label(s): s for s in scen}
    for k, v in list(exp.items()):
        at = f"client.expect.{k}"
        if k not in scen and k in by_label:       # a scenario file named by its stem
            exp[by_label[k]] = exp.pop(k)
            k = by_label[k]
        if k not in scen:
            _bad(f"{k} is not one of client.scenarios ({', '.join(scen)}): an expectation must name a scenario "
                 "the gate runs", source, at)
        expected_ids(v, source, at)
    return cl


def expected_ids(v, source: str, at: str) -> tuple[set, set]:
    """"holds" or a list of ids -> (invariant ids check must report, H- ids history must)."""
    from rocketspec.spec.history import GUARANTEES
    from rocketspec.spec.invariants import BY_ID, GUARD

    if v == "holds":
        return set(), set()
    hids = {g.id for g in GUARANTEES}
    if isinstance(v, list) and v and all(isinstance(x, str) and (x in BY_ID or x == GUARD or x in hids) for x in v):
        return {x for x in v if x not in hids}, {x for x in v if x in hids}
    _bad(f"expected \"holds\" or a list of invariant ids (check's) and history guarantee ids "
         f"({', '.join(sorted(hids))}: history's), got {v!r}", source, at)


@dataclass
class Row:
    """One scenario's line of the verdict table."""
    scenario: str
    run: str = ""
    check: str = ""
    history: str = ""
    msgtrace: str = ""
    expected: str = "holds"
    result: str = ""
    trace: str = ""
    cases: list = field(default_factory=list)
    report: object = None       # check's report (spec.replay.Report)
    history_report: object = None   # history's report (spec.history)


def run_client(cl: dict, source: str, out_dir: Path, clock_left, case_cls, note, start, record=None) -> list[Row]:
    """Record and judge every scenario; each case goes to `note` as it ends. Returns the rows.
    `record(scenario, out, timeout_s, seed, keep, msgtrace, release, client) -> (rc, message)` makes
    a real run (`rocketspec record`'s, handed in by the gate command: this layer does not import
    the CLI)."""
    rows = []
    folder = out_dir / "client"
    folder.mkdir(parents=True, exist_ok=True)
    for sc in cl["scenarios"]:
        row = Row(label(sc))
        rows.append(row)
        want_check, want_hist = expected_ids(cl["expect"].get(sc, "holds"), source, f"client.expect.{sc}")
        declared = sc in cl["expect"]
        row.expected = "holds" if not (want_check | want_hist) else ", ".join(sorted(want_check | want_hist))
        left = clock_left()
        name = f"{label(sc)} [{cl['name']}]"
        if left <= 0:
            c = case_cls("client", f"{name} record", "incomplete", 0.0, "not run: the gate's budget ran out")
            note(c)
            row.cases.append(c)
            row.run, row.result = "not run", "incomplete"
            continue
        start("client", f"{name} record", min(cl["budget_s"], left))
        rec = _record(cl, sc, folder, min(cl["budget_s"], left), case_cls, name, record=record)
        note(rec)
        row.cases.append(rec)
        if rec.status != "passed":
            row.run, row.result = rec.message[:80], rec.status
            continue
        trace = Path(rec.artifacts[0])
        row.trace, row.run = str(trace), rec.message
        chk, row.report, row.check = _check(trace, want_check, declared, case_cls, name)
        note(chk)
        his, row.history_report, row.history = _history(trace, want_hist, declared, case_cls, name)
        note(his)
        row.cases += [chk, his]
        if cl["msgtrace"]:
            mt, row.msgtrace = _msgtrace_history(Path(rec.artifacts[1]), sc, want_hist, declared, case_cls, name)
            note(mt)
            row.cases.append(mt)
        bad = [c.status for c in row.cases if c.status != "passed"]
        row.result = bad[0] if bad else ("passed (declared)" if declared and (want_check | want_hist) else "passed")
    return rows


def _record(cl, sc, folder: Path, budget_s: float, case_cls, name, record=None):
    case = case_cls("client", f"{name} record")
    if record is None:
        raise RuntimeError("the client suite needs the recorder (rocketspec gate hands it in: run_gate(record=...))")
    out = folder / f"{label(sc)}.jsonl"
    mt = folder / f"{label(sc)}.msgtrace" if cl["msgtrace"] else None
    t0 = time.monotonic()
    try:
        rc, msg = record(sc, str(out), None, int(cl["seed"]), str(folder / f"{label(sc)}.run"),
                         str(mt) if mt else None, cl["release"], cl["command"])
    except UserError as exc:
        # a client that broke the driver protocol, or a run that could not start: bad input, named
        case.status, case.message = "bad_input", str(exc).splitlines()[-1][:400]
        case.details = str(exc)
        return case
    case.seconds = round(time.monotonic() - t0, 3)
    if rc != 0:
        case.status = "incomplete" if rc == 4 else "error"
        case.message = msg
        return case
    if case.seconds > budget_s:
        case.status, case.message = "incomplete", f"the recording took {case.seconds:.0f} s, past its budget of {budget_s:.0f} s"
        return case
    # "<scenario> (...): N events, ended R, T s -> path": the run's part
    case.message = msg.split(": ", 1)[-1].rsplit(" -> ", 1)[0]
    case.artifacts.append(str(out))
    if mt is not None:
        case.artifacts.append(str(mt))
    return case


def _check(trace: Path, want: set, declared: bool, case_cls, name):
    """The check case, the report and the verdict's words."""
    from rocketspec.conformance.verdicts import judge_trace
    from rocketspec.traces.reports.verdict_text import level_clause, render_text, scope_clause

    case = case_cls("client", f"{name} check")
    t0 = time.monotonic()
    j = judge_trace(trace, None)
    rep = j.report
    case.seconds = round(time.monotonic() - t0, 3)
    got = set(j.got)
    verdict = ("holds" if not got else ", ".join(sorted(got)))
    words = f"{verdict} ({len(rep.level.judged)} of {len(rep.level.judged) + len(rep.level.not_judged)} rules judged)"
    case.details = render_text(rep, verbose=True)
    case.artifacts.append(str(trace))
    if rep.nothing_judged:
        case.status, case.message = "incomplete", "the trace's observation level leaves no rule to judge: not a pass"
        return case, rep, words
    expected = "holds" if not want else ", ".join(sorted(want))
    text = verdict + level_clause(rep) + scope_clause(rep)
    if got == want:
        case.message = f"{text} (as {'declared' if declared else 'expected: no declared verdict, so it must hold'})"
        return case, rep, words
    case.status = "failed"
    case.message = f"verdict {text}; expected {expected}{'' if declared else ' (no declared verdict)'}"
    first = rep.findings.errors[0] if rep.findings.errors else None
    if first is not None and first.event is not None:
        import orjson

        case.counterexample = f"first finding at line {first.line}:\n" + orjson.dumps(first.event).decode()
    return case, rep, words


def _history(trace: Path, want: set, declared: bool, case_cls, name):
    """The history case, the history report and the verdict's words."""
    from rocketspec.conformance.history_cases import judge_history
    from rocketspec.spec.history import check_path
    from rocketspec.spec.history.judge import WINDOW_MS

    case = case_cls("client", f"{name} history")
    t0 = time.monotonic()
    o = judge_history(trace, want, {"format": "trace"}, None, 0.0, declared=declared)
    case.seconds = round(time.monotonic() - t0, 3)
    case.status, case.message, case.details = o.status, o.message, o.details
    words = ("holds" if not o.got else ", ".join(sorted(o.got))) if o.status != "bad_input" else "unreadable"
    case.artifacts.append(str(trace))
    hist = check_path(trace, "trace", None, None, None, WINDOW_MS) if o.status != "bad_input" else None
    return case, hist, words


def _msgtrace_history(path: Path, sc: str, want: set, declared: bool, case_cls, name):
    """The client library's own RocketMQ message traces, judged as `rocketspec history --format
    msgtrace --groups` judges them: the groups' settings the traces lack (mode, model,
    maxReconsumeTimes, subscriptions, start) declared from the scenario, as the random runs'
    oracle declares them."""
    import json

    from rocketspec.conformance.history_cases import judge_history
    from rocketspec.conformance.real_random import declared_groups
    from rocketspec.conformance.verdicts import load_checked_scenario

    case = case_cls("client", f"{name} msgtrace history")
    groups = path.with_suffix(".groups.json")
    # the checked scenario holds its groups by name; the random runs' raw scenarios as a list
    listed = {"groups": list(load_checked_scenario(sc)["groups"].values())}
    groups.write_text(json.dumps(declared_groups(listed), indent=1) + "\n")
    t0 = time.monotonic()
    o = judge_history(path, want, {"format": "msgtrace", "groups": str(groups)}, None, 0.0, declared=declared)
    case.seconds = round(time.monotonic() - t0, 3)
    case.status, case.message, case.details = o.status, o.message, o.details
    case.artifacts.append(str(path))
    words = ("holds" if not o.got else ", ".join(sorted(o.got))) if o.status not in ("bad_input", "incomplete") \
        else o.status
    return case, words


# ---------------------------------------------------------------------------- reports

def verdict_table(cl: dict, rows: list[Row]) -> list[str]:
    out = [f"client under test: {cl['name']} ({cl['command']}), real RocketMQ {cl['release']}, seed {cl['seed']}",
           "| scenario | run | check (at its level) | history (trace) | history (message traces) | declared | result |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        mt = _cell(r.msgtrace) or ("-" if cl.get("msgtrace") else "not recorded")
        out.append(f"| {r.scenario} | {_cell(r.run)} | {_cell(r.check) or '-'} | {_cell(r.history) or '-'} | {mt} | "
                   f"{_cell(r.expected)} | {r.result} |")
    return out


def _cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def coverage(rows: list[Row]) -> list[str]:
    """What the client's runs exercised: the rules judged at their level and whether each had
    events of every kind it reads; the history guarantees and what each counted; the event kinds
    of the observed sides that never appeared."""
    from rocketspec.spec.observation import NEEDS, kind_side
    from rocketspec.traces.io import read_events
    from rocketspec.traces.kinds import KINDS

    kinds: Counter = Counter()
    observed: set = set()
    judged: dict = {}
    guarantees: dict = {}
    traces = 0
    for r in rows:
        if r.report is None:
            continue
        traces += 1
        it = read_events(r.trace, validate=False)
        try:
            for _, ev in it:
                kinds[ev["kind"]] += 1
        finally:
            it.close()
        observed |= set(r.report.level.observed)
        for rule in r.report.level.judged:
            judged.setdefault(rule, set()).add(r.scenario)
        if r.history_report is not None:
            for v in r.history_report.verdicts:
                d = guarantees.setdefault(v.id, {"title": v.title, "judged": [], "counts": Counter()})
                if v.status in ("holds", "violated") and any(v.counts.values()):
                    d["judged"].append(r.scenario)
                    d["counts"].update(v.counts)
    if not traces:
        return ["coverage: no run of the client was judged"]
    # the POP kinds and rules only where a run's release has POP (profile switch pop)
    from rocketspec.rocketmq.profiles import get_profile
    from rocketspec.traces.schema import kinds as schema_kinds

    pop = any(get_profile(r.report.profile).pop for r in rows if r.report is not None)
    cats = {k: v.get("category") for k, v in schema_kinds().items()}
    pop_rules = sorted(r for r in judged if not pop and any(cats.get(k) == "pop" for k in NEEDS[r]))
    out = [f"coverage of {traces} run(s) (observed: {', '.join(sorted(observed))})", "  rules judged at this level:"]
    for rule in sorted(set(judged) - set(pop_rules)):
        need = [k for k in NEEDS[rule] if kind_side(k) in observed]
        seen = [k for k in need if kinds[k]]
        lacking = [k for k in need if not kinds[k]]
        how = "exercised" if not lacking else ("partly exercised" if seen else "not exercised")
        out.append(f"    {rule}: {how}: " + ", ".join(f"{k} x{kinds[k]}" for k in seen)
                   + (f"; never seen: {', '.join(lacking)}" if lacking else ""))
    if pop_rules:
        out.append(f"    {', '.join(pop_rules)}: nothing to judge (POP; no run's release has it)")
    out.append("  history guarantees:")
    for gid, d in guarantees.items():
        if d["judged"]:
            counts = ", ".join(f"{n} {k}" for k, n in d["counts"].items() if n)
            out.append(f"    {gid}: judged on {len(d['judged'])} run(s) ({counts})")
        else:
            out.append(f"    {gid}: nothing to judge in these runs ({d['title']})")
    actions = sorted(k for k in KINDS if kind_side(k) in observed and k != "broker_started"
                     and (pop or cats.get(k) != "pop"))
    seen = [k for k in actions if kinds[k]]
    never = [k for k in actions if not kinds[k]]
    out.append(f"  actions (event kinds of the observed sides): {len(seen)} of {len(actions)} appeared: "
               + ", ".join(f"{k} x{kinds[k]}" for k in seen))
    out.append(f"    never appeared: {', '.join(never) or 'none'}")
    return out
