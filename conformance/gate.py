"""`rocketspec gate`: the conformance gate a CI job runs, within a time budget.

Four suites, each a list of test cases (docs/gate.md):

- **exhaustive**: the explorer's scopes (`rocketspec explore`, one subprocess per scope and
  profile, killed when its budget runs out). A violation fails the case with the shortest
  counterexample (breadth-first); a scope that runs out of budget or states is *incomplete* and
  fails the gate, unless the config declares it `bounded`.
- **statemachine**: the Hypothesis state machine on the reference
  (`conformance.statemachine.check_reference`) under a CI profile (derandomized); the shrunk
  counterexample goes in the failure, as code and as a trace file.
- **traces**: every trace in the configured directories, checked by the spec and judged against
  its expected verdict when it declares one (the config's `[traces.expect]`, or the trace's
  `trace_started.config.expect`), else it must hold; and every history (RocketMQ message traces,
  OpenChaos histories: conformance/history_cases.py) in those directories or named in
  `traces.histories`, judged as `rocketspec history` judges it against `[traces.expect]`.
  An expectation naming no file is bad configuration, and a gate with no case never passes.
- **mutants** (`--mutants`): each semantic mutant of the reference must be killed by a spec
  finding (conformance/mutants.py).

Exit codes (the developers' guide): 0 every case passed; 1 a case failed (a finding, a
surviving mutant, a trace against its verdict); 2 bad configuration, an unreadable trace or
history, or a gate that judged no case; 3 an
internal error of rocketspec; 4 a case incomplete (a budget or cap ran out) and none failed.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from rocketspec.errors import EXIT_BAD_INPUT, EXIT_FINDING, EXIT_INCOMPLETE, EXIT_INTERNAL, EXIT_OK, UserError
from rocketspec.config_files import short
from rocketspec.model_checks.scopes import RETIRED

RELEASES = ["rocketmq-5.3.3", "rocketmq-4.9.8"]
REPO = Path(__file__).resolve().parent.parent

# The project's defaults: `rocketspec gate` without --config. Under 10 minutes on the 2-core
# machine of docs/gate.md (bench figures there).
DEFAULTS: dict = {
    "budget_s": 540,
    "scopes": [
        # the reference broker and client themselves, every run of the scope (rocketspec explore)
        {"name": "tiny", "workers": 2, "profiles": RELEASES, "budget_s": 120},
        {"name": "tiny-choices", "workers": 2, "profiles": RELEASES, "budget_s": 150},
        # two clients rebalancing, every order of their tasks (about a minute per profile)
        {"name": "small-choices", "workers": 2, "profiles": RELEASES, "budget_s": 240},
    ],
    "statemachine": {"profiles": RELEASES, "max_examples": 40, "budget_s": 110, "bounded": False},
    "traces": {
        "dirs": [str(REPO / "tests" / "fixtures" / "real")],
        # Verdicts of the committed real RocketMQ 4.9.8 recordings: the runs that really broke a
        # guarantee (tests/test_real_verdicts.py BROKE says why; tests/test_gate.py keeps the two equal)
        "expect": {
            "real-orderly-pause.jsonl": ["INV-ORDER-3"],
            "real-orderly-dlq.jsonl": ["INV-DLQ-1"],
        },
    },
    "mutants": {"seeds": [1, 2, 3], "profiles": RELEASES, "budget_s": 60, "methods": ["simulate"]},
}

from rocketspec.conformance.history_cases import NAMED as NAMED_INPUTS  # noqa: E402
from rocketspec.conformance.history_cases import TRACE_SUFFIXES  # noqa: E402,F401


@dataclass
class Case:
    suite: str
    name: str
    status: str = "passed"      # passed | failed | incomplete | skipped | bad_input | error
    seconds: float = 0.0
    message: str = ""           # one line
    details: str = ""           # the report
    counterexample: str = ""    # the shortest or shrunk counterexample (events, code)
    artifacts: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class GateResult:
    cases: list
    seconds: float
    config_source: str
    notes: list = field(default_factory=list)   # what the gate read and did not judge
    reports: list = field(default_factory=list)  # lines after the verdict: the client's verdict table and coverage

    @property
    def exit_code(self) -> int:
        st = {c.status for c in self.cases}
        if "error" in st:
            return EXIT_INTERNAL
        if "bad_input" in st:
            return EXIT_BAD_INPUT
        if "failed" in st:
            return EXIT_FINDING
        if "incomplete" in st:
            return EXIT_INCOMPLETE
        return EXIT_OK

    def counts(self) -> dict:
        out: dict = {}
        for c in self.cases:
            out[c.status] = out.get(c.status, 0) + 1
        return out


# ---------------------------------------------------------------------------- configuration

_TOP = {"budget_s", "scopes", "statemachine", "traces", "mutants", "out_dir", "client"}
_SCOPE = {"name", "profiles", "budget_s", "bounded", "max_depth", "max_states", "engine", "workers"}
# keys of the explorer's own model, retired with it: what a config that still has one is told
_SCOPE_RETIRED = {"liveness": "runs are judged at their end (INV-LIVE-1 when they quiesce or settle by the "
                              "horizon); delete the key",
                  "persistent_sets": RETIRED["persistent_sets"]}
_SM = {"profiles", "max_examples", "budget_s", "bounded", "enabled", "seed"}
_TRACES = {"dirs", "expect", "profile", "histories", "history", "max_unreadable"}
_MUT = {"seeds", "profiles", "budget_s", "methods", "only", "scenarios", "hypothesis_max_examples", "include_survivors"}


def _bad(msg, source, field_path):
    raise UserError(msg, file=source, field=field_path)


# Bounds that keep a value usable where it goes: a budget is a timeout of the OS and of
# subprocess (a week is far past any CI job), counts and seeds are 64-bit in the explorer and
# the traces, and the explorer runs at most 64 workers (`explore --workers`).
MAX_BUDGET_S = 7 * 24 * 3600
MAX_INT = 2**63 - 1
MAX_WORKERS = 64


def _num(v, source, at, lo=0, hi=MAX_BUDGET_S):
    """A finite number in [lo, hi] (nan compares false with everything: refused by name)."""
    import math

    if (isinstance(v, bool) or not isinstance(v, (int, float)) or isinstance(v, float) and not math.isfinite(v)
            or not lo <= v <= hi):
        _bad(f"expected a finite number from {lo} to {hi}, got {short(v)}", source, at)
    return v


def _int(v, source, at, lo=1, hi=MAX_INT):
    """An integer in [lo, hi]: 1.5 examples or 2.0 workers are not counts."""
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        _bad(f"expected an integer from {lo} to {hi}, got {short(v)}", source, at)
    return v


def _bool(table, key, source, at):
    if key in table and not isinstance(table[key], bool):
        _bad(f"expected true or false, got {short(table[key])}", source, f"{at}.{key}")


def _strs(v, source, at):
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        _bad(f"expected a list of strings, got {short(v)}", source, at)
    for i, x in enumerate(v):
        if "\x00" in x:
            _bad("a NUL character; expected a name or a path", source, f"{at}[{i}]")
    return v


def _keys(table, allowed, source, at):
    if not isinstance(table, dict):
        _bad(f"expected a table, got {short(table)}", source, at)
    unknown = sorted(set(table) - allowed)
    if unknown:
        _bad(f"unknown keys {unknown}; known: {sorted(allowed)}", source, at)


def load_config(path: str | None) -> tuple[dict, str]:
    """The gate's configuration: the defaults, each section replaced by the file's when given."""
    import copy

    cfg = copy.deepcopy(DEFAULTS)
    if path is None:
        return validate(cfg, "defaults"), "defaults"
    from rocketspec.config_files import parse, read_text

    text = read_text(path, "gate configuration (.toml)")
    # an empty file is not the defaults: those are what no --config gives
    given = parse(text, "toml", str(path), what="gate configuration (docs/gate.md); for the defaults, give no --config")
    _keys(given, _TOP, path, None)
    base = Path(path).resolve().parent
    for k, v in given.items():
        cfg[k] = v
    if "traces" in given and isinstance(given["traces"], dict):
        cfg["traces"].setdefault("expect", {})
        # directories are relative to the config file
        cfg["traces"]["dirs"] = [str((base / d).resolve()) if isinstance(d, str) and "\x00" not in d else d
                                 for d in cfg["traces"].get("dirs", [])]
        # so are history files named one by one, and the --groups files of their options
        hs = cfg["traces"].get("histories", [])
        if isinstance(hs, list):
            cfg["traces"]["histories"] = [str((base / h).resolve()) if isinstance(h, str) and h and "\x00" not in h
                                          else h for h in hs]
        ho = cfg["traces"].get("history", {})
        if isinstance(ho, dict):
            from rocketspec.conformance.history_cases import history_options

            cfg["traces"]["history"] = {k: history_options(v, str(path), f"traces.history.{k}", base)
                                        for k, v in ho.items()}
    if "out_dir" in given:
        # counterexamples go here unless --out-dir says otherwise; relative to the config file
        od = given["out_dir"]
        if not isinstance(od, str) or not od or "\x00" in od:
            _bad(f"expected the path of a directory for counterexample traces, got {short(od)}", str(path), "out_dir")
        cfg["out_dir"] = str((base / od).resolve())
    if isinstance(given.get("client"), dict):
        from rocketspec.conformance.client_gate import resolve

        resolve(cfg["client"], base)     # a relative program path is relative to the config file
    if "scopes" in given and isinstance(given["scopes"], list):
        for s in cfg["scopes"]:
            if (isinstance(s, dict) and isinstance(s.get("name"), str) and s["name"].endswith(".toml")
                    and "\x00" not in s["name"]):
                s["name"] = str((base / s["name"]).resolve())
    return validate(cfg, str(path)), str(path)


def validate(cfg: dict, source: str) -> dict:
    from rocketspec.rocketmq.profiles import PROFILES

    def profiles(v, at):
        for i, p in enumerate(_strs(v, source, at)):
            if p not in PROFILES:
                _bad(f"unknown profile {p!r}; known: {sorted(PROFILES)}", source, f"{at}[{i}]")

    _num(cfg["budget_s"], source, "budget_s", 1)
    if not isinstance(cfg["scopes"], list):
        _bad("expected a list of tables ([[scopes]])", source, "scopes")
    from rocketspec.model_checks.scopes import named_scopes

    for i, s in enumerate(cfg["scopes"]):
        at = f"scopes[{i}]"
        if not isinstance(s, dict):
            _bad(f"expected a table ([[scopes]] with a name), got {short(s)}", source, at)
        for k in sorted(set(s) & set(_SCOPE_RETIRED)):
            _bad(f"{k} was a key of the explorer's own model, retired: {_SCOPE_RETIRED[k]}", source, f"{at}.{k}")
        _keys(s, _SCOPE, source, at)
        name = s.get("name")
        if not isinstance(name, str) or "\x00" in name or not (
                name in named_scopes() or (name.endswith(".toml") and os.path.isfile(name))):
            _bad(f"expected a named scope ({', '.join(named_scopes())}) or an existing scope .toml file, "
                 f"got {short(name)}",
                 source, f"{at}.name")
        profiles(s.setdefault("profiles", RELEASES), f"{at}.profiles")
        _num(s.setdefault("budget_s", 120), source, f"{at}.budget_s", 1)
        _bool(s, "bounded", source, at)
        for n in ("max_depth", "max_states"):
            if n in s:
                _int(s[n], source, f"{at}.{n}")
        if "workers" in s:
            _int(s["workers"], source, f"{at}.workers", hi=MAX_WORKERS)
        if s.setdefault("engine", "reference") != "reference":
            _bad(f"the explorer's own model is retired: the explorer searches the reference broker and client "
                 f"themselves; expected \"reference\" or no engine key, got {s['engine']!r}", source, f"{at}.engine")
    sm = cfg["statemachine"]
    _keys(sm, _SM, source, "statemachine")
    profiles(sm.setdefault("profiles", RELEASES), "statemachine.profiles")
    _int(sm.setdefault("max_examples", 40), source, "statemachine.max_examples", hi=10**6)
    _num(sm.setdefault("budget_s", 110), source, "statemachine.budget_s", 1)
    _bool(sm, "enabled", source, "statemachine")
    _bool(sm, "bounded", source, "statemachine")
    if sm.get("seed") is not None:
        _int(sm["seed"], source, "statemachine.seed", lo=0)
    tr = cfg["traces"]
    _keys(tr, _TRACES, source, "traces")
    _strs(tr.setdefault("dirs", []), source, "traces.dirs")
    for d in tr["dirs"]:
        if not os.path.isdir(d):
            _bad(f"no such directory: {d}; expected a directory of traces", source, "traces.dirs")
    exp = tr.setdefault("expect", {})
    if not isinstance(exp, dict):
        _bad("expected a table: trace file name -> \"holds\" or a list of invariant ids", source, "traces.expect")
    for k, v in exp.items():
        _verdict(v, source, f"traces.expect.{k}")
    for i, h in enumerate(_strs(tr.setdefault("histories", []), source, "traces.histories")):
        if not os.path.isfile(h):
            _bad(f"no such file: {h}; expected a history file (message traces or an OpenChaos history)", source,
                 f"traces.histories[{i}]")
    ho = tr.setdefault("history", {})
    if not isinstance(ho, dict):
        _bad("expected a table: history file name -> {format, complete, groups}", source, "traces.history")
    from rocketspec.conformance.history_cases import history_options

    for k, v in ho.items():
        history_options(v, source, f"traces.history.{k}")
    _num(tr.setdefault("max_unreadable", 0.0), source, "traces.max_unreadable", 0, 1)
    mu = cfg["mutants"]
    _keys(mu, _MUT, source, "mutants")
    seeds = mu.setdefault("seeds", [1, 2, 3])
    if not isinstance(seeds, list):
        _bad(f"expected a list of integers, got {short(seeds)}", source, "mutants.seeds")
    for i, x in enumerate(seeds):
        _int(x, source, f"mutants.seeds[{i}]", lo=0)
    if "hypothesis_max_examples" in mu:
        _int(mu["hypothesis_max_examples"], source, "mutants.hypothesis_max_examples", hi=10**6)
    profiles(mu.setdefault("profiles", RELEASES), "mutants.profiles")
    _num(mu.setdefault("budget_s", 60), source, "mutants.budget_s", 1)
    mu.setdefault("include_survivors", False)
    _bool(mu, "include_survivors", source, "mutants")
    for m in _strs(mu.setdefault("methods", ["simulate"]), source, "mutants.methods"):
        if m not in ("simulate", "hypothesis", "exhaustive"):
            _bad(f"unknown method {m!r}; known: ['exhaustive', 'hypothesis', 'simulate']", source, "mutants.methods")
    if "only" in mu:
        from rocketspec.conformance.mutants import BY_ID

        for i, m in enumerate(_strs(mu["only"], source, "mutants.only")):
            if m not in BY_ID:
                _bad(f"unknown mutant {m!r} (docs/mutants.md lists them)", source, f"mutants.only[{i}]")
    if cfg.get("client") is not None:
        from rocketspec.conformance import client_gate

        client_gate.validate(cfg["client"], source)
    if "scenarios" in mu:
        from rocketspec.reference.scenario import builtin_names

        for i, n in enumerate(_strs(mu["scenarios"], source, "mutants.scenarios")):
            if n not in builtin_names():
                _bad(f"unknown built-in scenario {n!r}", source, f"mutants.scenarios[{i}]")
    return cfg


def _verdict(v, source, at) -> set:
    """'holds' or a list of invariant ids (a trace's) or history guarantee ids (a history's) ->
    the set of ids expected."""
    from rocketspec.spec.history import GUARANTEES
    from rocketspec.spec.invariants import BY_ID, GUARD

    if v == "holds":
        return set()
    hids = {g.id for g in GUARANTEES}
    if isinstance(v, list) and all(isinstance(x, str) for x in v) and (
            all(x in BY_ID or x == GUARD for x in v) or all(x in hids for x in v)):
        return set(v)
    _bad(f"expected \"holds\", a list of invariant ids (spec/invariants.py: a trace's) or a list of history "
         f"guarantee ids ({', '.join(sorted(hids))}: a history's), got {v!r}", source, at)


# ---------------------------------------------------------------------------- suites

class Clock:
    def __init__(self, budget_s: float):
        self.t0 = time.monotonic()
        self.budget_s = budget_s

    def left(self) -> float:
        return self.budget_s - (time.monotonic() - self.t0)


def scope_label(name: str, profile: str) -> str:
    """A scope's case name: a scope file by its stem."""
    return f"{Path(name).stem if name.endswith('.toml') else name} [{profile}]"


def run_scope(scope: dict, profile: str, budget_s: float, out_dir: Path) -> Case:
    """One explorer run as a subprocess (so its budget can end it)."""
    import orjson

    name = scope["name"]
    case = Case("exhaustive", scope_label(name, profile))
    cex_dir = out_dir / "explore" / f"{Path(name).stem}-{profile}"
    cmd = [sys.executable, "-c", "from rocketspec.cli import main; main()", "explore", "--scope", name, "--profile", profile, "--json",
           "--quiet", "--out-dir", str(cex_dir)]
    cmd += ["--workers", str(int(scope.get("workers", 1)))]
    if "max_depth" in scope:
        cmd += ["--max-depth", str(int(scope["max_depth"]))]
    if "max_states" in scope:
        cmd += ["--max-states", str(int(scope["max_states"]))]
    bounded = bool(scope.get("bounded"))
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=max(1.0, budget_s))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        case.seconds = round(time.monotonic() - t0, 3)
        case.status = "passed" if bounded else "incomplete"
        case.message = (f"the budget of {budget_s:.0f} s ran out before the scope was exhausted"
                        + (" (declared a bounded check: not a failure)" if bounded else ""))
        return case
    case.seconds = round(time.monotonic() - t0, 3)
    rc = proc.returncode
    try:
        d = orjson.loads(out.decode().strip().splitlines()[-1]) if out.strip() else {}
    except (orjson.JSONDecodeError, IndexError):
        d = {}
    summary = (f"{d.get('states_distinct')} distinct states, {d.get('states_generated')} generated, depth "
               f"{d.get('depth')}, {d.get('seconds')} s" if d else "")
    case.details = summary
    if rc == 0 and not d:
        case.status = "error"
        case.message = "explore exited 0 without a report"
    elif rc == 0:
        case.message = f"no violation ({summary})"
        case.details = ""
    elif rc == 1:
        vs = d.get("violations", [])
        case.status = "failed"
        case.message = f"{len(vs)} violations: " + ", ".join(sorted({v.get('invariant', '?') for v in vs}))
        lines = [summary]
        for v in vs:
            lines.append(f"{v.get('invariant')} ({v.get('kind')}) at depth {v.get('depth')}: {v.get('message')}")
            if v.get("trace"):
                lines.append(f"  trace: {v['trace']}")
                case.artifacts.append(v["trace"])
        case.details = "\n".join(lines)
        if vs:
            shortest = min(vs, key=lambda v: v.get("depth") or 0)
            case.counterexample = _events_text(shortest.get("trace"))
    elif rc == 4:
        case.status = "passed" if bounded else "incomplete"
        case.message = f"the state cap ran out before the scope was exhausted ({summary})" + (
            " (declared a bounded check: not a failure)" if bounded else "")
    elif rc == 2:
        case.status = "bad_input"
        case.message = (err.decode().strip().splitlines() or ["bad scope"])[-1]
    else:
        case.status = "error"
        case.message = f"explore exited {rc}"
        case.details = err.decode()[-4000:]
    return case


def _events_text(path, limit: int = 60) -> str:
    if not path or not os.path.isfile(path):
        return ""
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    if len(lines) > limit:
        lines = lines[:5] + [f"... ({len(lines) - limit} events left out)"] + lines[-(limit - 5):]
    return "\n".join(lines)


def run_statemachine(sm: dict, profile: str, budget_s: float) -> Case:
    case = Case("statemachine", f"reference state machine [{profile}]")
    try:
        from rocketspec.conformance.statemachine import check_reference
    except ImportError:
        case.status = "skipped"
        case.message = "the Hypothesis state machine (conformance/statemachine.py) is not in this tree"
        return case
    t0 = time.monotonic()
    r = check_reference(profile, max_examples=int(sm["max_examples"]), derandomize=True, seed=sm.get("seed"),
                        budget_s=budget_s)
    case.seconds = round(time.monotonic() - t0, 3)
    n = getattr(r, "examples_run", None)
    runaway = getattr(r, "runaway", 0)
    if r.ok:
        if n is not None and n < sm["max_examples"] and not sm.get("bounded"):
            case.status = "incomplete"
            case.message = f"{n} of {sm['max_examples']} examples ran before the budget of {budget_s:.0f} s ran out"
        elif runaway and not sm.get("bounded"):
            # an example cut at an event cap was judged only up to the cap: not a finding, not a pass
            case.status = "incomplete"
            case.message = (f"{n} examples, no finding, but {runaway} ran away (cut at an event cap of the state "
                            f"machine, judged on what they emitted)")
            case.details = "the first of them:\n" + "\n".join(getattr(r, "runaway_steps", None) or [])
        else:
            case.message = f"{n} examples, no finding" + (f"; {runaway} ran away (cut at an event cap)" if runaway else "")
        return case
    f = r.finding
    if f is None and getattr(r, "crash", None):
        # the reference itself raised: a bug in rocketspec, not a finding of the spec
        case.status = "error"
        case.message = f"the reference crashed: {str(r.crash)[:250]}"
        case.details = str(getattr(r, "message", ""))
        case.counterexample = r.falsifying_code or ""
        return case
    case.status = "failed"
    if isinstance(f, str):
        case.message = f"{f}: {str(getattr(r, 'message', ''))[:250]}"
    elif isinstance(f, dict):
        case.message = f"{f.get('invariant') or f.get('inv')}: {f.get('message')}"[:300]
    else:
        case.message = str(getattr(f, "message", f))[:300] if f is not None else str(getattr(r, "message", "failed"))
    case.details = f"finding: {f}\ntrace: {r.trace_path}"
    case.counterexample = (r.falsifying_code or "") + (f"\n# trace: {r.trace_path}" if r.trace_path else "")
    if r.trace_path:
        case.artifacts.append(r.trace_path)
    return case


def trace_files(dirs) -> list[Path]:
    from rocketspec.conformance.history_cases import scan

    return [p for p, kind in scan(dirs).cases if kind == "trace"]


def _base(source: str) -> Path:
    """Where a config's relative paths start: its own directory."""
    return REPO if source == "defaults" else Path(source).resolve().parent


def _names(key: str, path: Path, base: Path) -> bool:
    """Does a `[traces.expect]` or `[traces.history]` key name this file: its name, its path,
    or its path relative to the config?"""
    return key in (path.name, str(path)) or ("\x00" not in key and (base / key).resolve() == path)


def collect_inputs(tr: dict, source: str):
    """The gate's trace and history cases ([(path, "trace" | "history")]) and what else the
    directories hold (history_cases.Found). Every `[traces.expect]` and `[traces.history]` key
    must name one of them, with an expectation of its kind: else bad configuration (UserError)."""
    from rocketspec.conformance.history_cases import scan

    found = scan(tr["dirs"])
    at = {p.resolve(): i for i, (p, _) in enumerate(found.cases)}
    for h in tr.get("histories", []):
        p = Path(h).resolve()
        if p in at:
            found.cases[at[p]] = (p, "history")
        else:
            at[p] = len(found.cases)
            found.cases.append((p, "history"))
            found.other = [o for o in found.other if o.resolve() != p]
    base = _base(source)
    where = f"traces.dirs ({', '.join(tr['dirs']) or 'none'})" + (" or traces.histories" if tr.get("histories") else "")
    for table in ("expect", "history"):
        for key, v in tr.get(table, {}).items():
            hits = [(p, k) for p, k in found.cases if _names(key, p, base)]
            if not hits:
                look = (f"no such file: {(base / key).resolve()}" if os.sep in key or "/" in key
                        else f"no file named {key}")
                raise UserError(f"{look} among the traces and histories of {where}; expected the name or path of "
                                f"a file the gate reads", file=source, field=f"traces.{table}.{key}")
            if table == "expect":
                want = _verdict(v, source, f"traces.expect.{key}")
                for p, k in hits:
                    if want and k == "trace" and not all(x.startswith(("INV-", "GUARD")) for x in want):
                        _bad(f"{p} is a trace: expected \"holds\" or invariant ids, got {v!r}", source,
                             f"traces.expect.{key}")
                    if want and k == "history" and any(not x.startswith("H-") for x in want):
                        _bad(f"{p} is a history: expected \"holds\" or history guarantee ids (H-...), got {v!r}",
                             source, f"traces.expect.{key}")
            elif any(k == "trace" for _, k in hits):
                _bad(f"{hits[0][0]} is read as a trace, not a history: [traces.history] gives the options of "
                     "histories (name the file in traces.histories to read it as one)", source,
                     f"traces.history.{key}")
    return found


def configured_verdict(path: Path, expect: dict, source: str):
    """The gate config's verdict for this trace or history (`traces.expect`, by file name, path
    or path relative to the config), or None when the config says nothing about it (then a
    trace's own declaration counts)."""
    base = _base(source)
    for key in expect:
        if _names(key, path, base):
            return _verdict(expect[key], source, f"traces.expect.{key}")
    return None


def run_history(path: Path, tr: dict, source: str) -> Case:
    """A history judged as `rocketspec history` judges it, against `[traces.expect]` (none: it
    must hold); an unreadable record beyond `traces.max_unreadable` is bad input."""
    from rocketspec.conformance.history_cases import judge_history

    case = Case("traces", path.name)
    t0 = time.monotonic()
    configured = configured_verdict(path, tr.get("expect", {}), source)
    base = _base(source)
    opts = next((v for k, v in tr.get("history", {}).items() if _names(k, path, base)), {})
    o = judge_history(path, configured or set(), opts, tr.get("profile"), float(tr.get("max_unreadable", 0.0)),
                      declared=configured is not None)
    case.seconds = round(time.monotonic() - t0, 3)
    case.status = o.status
    case.message, case.details = o.message, o.details
    return case


def run_trace(path: Path, tr: dict, source: str, require_end: bool = False) -> Case:
    from rocketspec.traces.reports.verdict_text import require_end as end_required
    from rocketspec.traces.reports.verdict_text import scope_clause
    from rocketspec.conformance.verdicts import judge_trace
    from rocketspec.traces.io import TraceInputError

    case = Case("traces", path.name)
    t0 = time.monotonic()
    try:
        configured = configured_verdict(path, tr.get("expect", {}), source)
        # the trace's own declaration is read by the one rule for declared verdicts
        # (conformance.verdicts, the scenario parser's reading of `expect`)
        j = judge_trace(path, tr.get("profile"))
        if require_end:
            end_required(j.report)
    except (TraceInputError, UserError) as exc:
        case.status = "bad_input"
        case.message = str(exc)
        return case
    case.seconds = round(time.monotonic() - t0, 3)
    rep, got = j.report, set(j.got)
    if configured is not None:
        declared, want = True, configured
    else:
        declared, want = j.declared, set(j.want)
    verdict = ("holds" if not got else ", ".join(sorted(got))) + scope_clause(rep)
    expected = "holds" if not want else ", ".join(sorted(want))
    from rocketspec.traces.reports.verdict_text import render_text

    case.details = render_text(rep, verbose=True)
    if got == want:
        case.message = f"{verdict} (as {'declared' if declared else 'expected: no declared verdict, so it must hold'})"
        return case
    case.status = "failed"
    case.message = f"verdict {verdict}; expected {expected}{'' if declared else ' (no declared verdict)'}"
    first = rep.findings.errors[0] if rep.findings.errors else None
    if first is not None and first.event is not None:
        import orjson

        case.counterexample = f"first finding at line {first.line}:\n" + orjson.dumps(first.event).decode()
    return case


def run_mutant(mid: str, mu: dict, budget_s: float, out_dir: Path) -> Case:
    from rocketspec.conformance import mutants as M

    m = M.BY_ID[mid]
    case = Case("mutants", mid)
    t0 = time.monotonic()
    tried = []
    kill = None
    try:
        M.locate(m)
    except M.MutantRotten as exc:
        case.status = "error"
        case.message = str(exc)
        return case
    for method in mu["methods"]:
        left = budget_s - (time.monotonic() - t0)
        if left <= 0:
            break
        if method == "simulate":
            kill = M.kill_by_simulation(m, scenarios=mu.get("scenarios"), profiles=tuple(mu["profiles"]),
                                        seeds=tuple(mu["seeds"]), budget_s=left, out_dir=str(out_dir / "mutants"),
                                        first=M.WITNESS.get(mid))
        elif method == "exhaustive":
            kill = M.kill_by_exhaustion(m, profiles=tuple(mu["profiles"]), budget_s=left,
                                        out_dir=str(out_dir / "mutants"))
        else:
            try:
                kill = M.kill_by_hypothesis(m, profile=mu["profiles"][0], budget_s=left,
                                            max_examples=int(mu.get("hypothesis_max_examples", 200)))
            except ImportError:
                tried.append("hypothesis: not in this tree")
                continue
        tried.append(f"{method}: {'killed' if kill.killed else 'survived'} after {kill.runs} runs, {kill.seconds} s"
                     + (f", {kill.crashes} crashes of the mutated reference (not kills)" if kill.crashes else "")
                     + (" (budget ran out)" if kill.incomplete else ""))
        if kill.killed:
            break
    case.seconds = round(time.monotonic() - t0, 3)
    head = f"{m.file}:{m.function}: `{m.original.strip()}` -> `{m.mutated.strip()}`\n{m.mistake}\n"
    case.details = head + "\n".join(tried)
    if kill is not None and kill.killed:
        where = (f" on {kill.scenario} [{kill.profile}] seed {kill.seed}" if kill.method == "simulate" else "")
        case.message = f"killed by {', '.join(kill.invariants)} ({kill.method}{where}, {kill.seconds} s)"
        case.details += f"\n{kill.message}" + (f"\ntrace: {kill.trace_path}" if kill.trace_path else "")
        if kill.trace_path:
            case.artifacts.append(kill.trace_path)
        return case
    if kill is not None and kill.incomplete:
        case.status = "incomplete"
        case.message = f"not killed within the budget of {budget_s:.0f} s"
    else:
        case.status = "failed"
        case.message = "survived: no spec finding on any run" + (f" ({kill.note})" if kill and kill.note else "")
    return case


def run_gate(cfg: dict, *, source: str = "defaults", mutants: bool = False, out_dir: str = "gate-out",
             progress=None, started=None, require_end: bool = False, record=None) -> GateResult:
    """Run every case. `progress(case)` is called as each case ends; `started(suite, name,
    budget_s)` as each case starts (budget_s None: a trace, which has no budget of its own).
    `require_end`: a trace with no trace_ended is bad input (else it is judged for safety only).
    `record`: the real-run recorder a `[client]` suite needs (client_gate.run_client)."""
    clock = Clock(float(cfg["budget_s"]))
    out = Path(out_dir)
    cases: list[Case] = []
    inputs = collect_inputs(cfg["traces"], source)
    planned = (sum(len(s["profiles"]) for s in cfg["scopes"])
               + (len(cfg["statemachine"]["profiles"]) if cfg["statemachine"].get("enabled", True) else 0)
               + len(inputs.cases) + (1 if mutants else 0)
               + (len(cfg["client"]["scenarios"]) if cfg.get("client") else 0))
    if not planned:
        raise UserError(_nothing_to_judge(cfg, inputs), file=source)

    def note(c: Case):
        cases.append(c)
        if progress is not None:
            progress(c)

    def start(suite, name, budget_s):
        if started is not None:
            started(suite, name, budget_s)

    def out_of_budget(suite, name) -> Case:
        return Case(suite, name, "incomplete", 0.0, f"not run: the gate's budget of {cfg['budget_s']} s ran out")

    for scope in cfg["scopes"]:
        for p in scope["profiles"]:
            left = clock.left()
            if left <= 0:
                note(out_of_budget("exhaustive", scope_label(scope["name"], p)))
                continue
            start("exhaustive", scope_label(scope["name"], p), min(scope["budget_s"], left))
            note(_guarded(lambda: run_scope(scope, p, min(scope["budget_s"], left), out), "exhaustive",
                          scope_label(scope["name"], p)))
    sm = cfg["statemachine"]
    if sm.get("enabled", True):
        for p in sm["profiles"]:
            left = clock.left()
            if left <= 0:
                note(out_of_budget("statemachine", f"reference state machine [{p}]"))
                continue
            start("statemachine", f"reference state machine [{p}]", min(sm["budget_s"], left))
            note(_guarded(lambda: run_statemachine(sm, p, min(sm["budget_s"], left)), "statemachine",
                          f"reference state machine [{p}]"))
    for path, kind in inputs.cases:
        start("traces", path.name, None)
        if kind == "history":
            note(_guarded(lambda: run_history(path, cfg["traces"], source), "traces", path.name))
        else:
            note(_guarded(lambda: run_trace(path, cfg["traces"], source, require_end), "traces", path.name))
    reports: list[str] = []
    if cfg.get("client"):
        from rocketspec.conformance import client_gate

        rows = client_gate.run_client(cfg["client"], source, out, clock.left, Case, note, start, record=record)
        reports = client_gate.verdict_table(cfg["client"], rows) + [""] + client_gate.coverage(rows)
    if mutants:
        from rocketspec.conformance.mutants import CATALOGUE, SURVIVORS

        mu = cfg["mutants"]
        for m in CATALOGUE:
            if "only" in mu and m.id not in mu["only"]:
                continue
            if m.id in SURVIVORS and not mu.get("include_survivors"):
                # a documented survivor (equivalent under every scenario, or a known gap of the spec):
                # no evidence either way, so neither a pass nor a failure
                note(Case("mutants", m.id, "skipped", 0.0, f"known survivor (docs/mutants.md): {SURVIVORS[m.id]}"))
                continue
            left = clock.left()
            if left <= 0:
                note(out_of_budget("mutants", m.id))
                continue
            start("mutants", m.id, min(mu["budget_s"], left))
            note(_guarded(lambda: run_mutant(m.id, mu, min(mu["budget_s"], left), out), "mutants", m.id))
    if all(c.status == "skipped" for c in cases):
        raise UserError(_nothing_to_judge(cfg, inputs, cases), file=source)
    res = GateResult(cases, round(time.monotonic() - clock.t0, 3), source, reports=reports)
    if inputs.other:
        res.notes.append(f"not cases: {inputs.describe_other()} in traces.dirs")
    return res


def _nothing_to_judge(cfg: dict, inputs, cases=()) -> str:
    """Why a gate judged no case: what it was given and what it found."""
    tr = cfg["traces"]
    why = [f"{len(cfg['scopes'])} scopes",
           "the state machine " + ("disabled" if not cfg["statemachine"].get("enabled", True) else
                                   f"under {len(cfg['statemachine']['profiles'])} profiles"),
           f"traces.dirs ({', '.join(tr['dirs']) or 'none'}) holding {inputs.describe_other()} and no trace or "
           "history"]
    if cases:
        why.append(f"{len(cases)} case(s), every one skipped")
    return ("the gate judged no case, and a gate that judges nothing never passes: " + "; ".join(why)
            + f"; expected at least one scope, the state machine, or {NAMED_INPUTS} in traces.dirs or "
              "traces.histories (docs/gate.md, \"Inputs\")")


def _guarded(fn, suite, name) -> Case:
    """A case whose own code failed is an internal error of rocketspec, reported as such."""
    import traceback

    try:
        return fn()
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001
        return Case(suite, name, "error", 0.0, f"internal error: {type(exc).__name__}: {exc}",
                    "".join(traceback.format_exception(exc))[-6000:])


# ---------------------------------------------------------------------------- reports

def junit_xml(res: GateResult) -> bytes:
    """JUnit XML: one <testsuite> per suite, one <testcase> per scope, state machine, trace and
    mutant; failed and incomplete cases carry <failure> with the report and the counterexample,
    internal errors and bad input <error>, skipped cases <skipped>."""
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites", name="rocketspec gate", time=f"{res.seconds:.3f}")
    suites: dict = {}
    for c in res.cases:
        suites.setdefault(c.suite, []).append(c)
    tot = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for sname, cs in suites.items():
        n = {"tests": len(cs), "failures": sum(c.status in ("failed", "incomplete") for c in cs),
             "errors": sum(c.status in ("error", "bad_input") for c in cs),
             "skipped": sum(c.status == "skipped" for c in cs)}
        for k in tot:
            tot[k] += n[k]
        se = ET.SubElement(root, "testsuite", name=_xml_safe(sname), time=f"{sum(c.seconds for c in cs):.3f}",
                           **{k: str(v) for k, v in n.items()})
        for c in cs:
            te = ET.SubElement(se, "testcase", classname=f"rocketspec.gate.{sname}", name=_xml_safe(c.name),
                               time=f"{c.seconds:.3f}")
            text = c.details + (f"\n\ncounterexample:\n{c.counterexample}" if c.counterexample else "")
            if c.status in ("failed", "incomplete"):
                el = ET.SubElement(te, "failure", message=_xml_safe(c.message), type=c.status)
                # the failure text: the report, then the shortest or shrunk counterexample
                el.text = _xml_safe(text)
            elif c.status in ("error", "bad_input"):
                el = ET.SubElement(te, "error", message=_xml_safe(c.message), type=c.status)
                el.text = _xml_safe(text)
            elif c.status == "skipped":
                ET.SubElement(te, "skipped", message=_xml_safe(c.message))
            else:
                so = ET.SubElement(te, "system-out")
                so.text = _xml_safe(c.message + ("\n" + c.details if c.details else ""))
    for k, v in tot.items():
        root.set(k, str(v))
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def _xml_safe(s: str) -> str:
    """XML 1.0 forbids most control characters, whatever the escaping."""
    return "".join(ch if ch in "\t\n\r" or ord(ch) >= 0x20 else f"\\x{ord(ch):02x}" for ch in str(s))


ICON = {"passed": "✅", "failed": "❌", "incomplete": "⏳", "skipped": "⏭️", "bad_input": "⚠️", "error": "💥"}


def markdown_summary(res: GateResult) -> str:
    counts = res.counts()
    verdict = {0: "passed", 1: "FAILED", 2: "bad input", 3: "internal error", 4: "INCOMPLETE"}[res.exit_code]
    out = [f"## rocketspec gate: {verdict}", "",
           f"{len(res.cases)} cases in {res.seconds:.0f} s (config: {res.config_source}): "
           + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())), ""]
    suites: dict = {}
    for c in res.cases:
        suites.setdefault(c.suite, []).append(c)
    for sname, cs in suites.items():
        bad = [c for c in cs if c.status not in ("passed", "skipped")]
        out.append(f"### {sname}: {sum(c.status == 'passed' for c in cs)}/{len(cs)} passed")
        out.append("")
        out.append("| case | result | time | note |")
        out.append("|---|---|---:|---|")
        for c in cs:
            out.append(f"| {c.name} | {ICON.get(c.status, '')} {c.status} | {c.seconds:.1f} s | "
                       f"{_md_cell(c.message)} |")
        out.append("")
        for c in bad:
            if c.counterexample or c.details:
                out.append(f"<details><summary>{c.name}: {_md_cell(c.message)}</summary>")
                out.append("")
                out.append("```")
                out.append((c.details + ("\n\ncounterexample:\n" + c.counterexample if c.counterexample else ""))[:6000])
                out.append("```")
                out.append("</details>")
                out.append("")
    if res.reports:
        out += ["### client under test", "", "```"] + res.reports + ["```", ""]
    return "\n".join(out) + "\n"


def _md_cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")[:200]
