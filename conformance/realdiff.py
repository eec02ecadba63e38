"""Step-for-step comparison of the reference ProcessQueue and lock manager with the real classes.

`conformance/java/PqDiff.java` applies a script of operations to RocketMQ's own
`ProcessQueue` and `RebalanceLockManager` and prints the observable state after every step;
`apply_pq` and `apply_lock` apply the same script to rocketspec's reference classes and
print the same observation. A script is a list of operations (dicts):

ProcessQueue: ``put``/``remove``/``again`` {msgs: [{id, offset, size, props?, start?}]}
(one id is one message object: reusing an id reuses the object), ``take`` {n}, ``commit``,
``rollback``, ``clear``, ``dropped`` {value}, ``clean`` {now, timeout_ms, orderly, fail:
[bool per send-back call]} (``start`` is the virtual time its listener call began).
Lock manager: ``lock`` {group, mq, client, now}, ``lockBatch``/``unlockBatch`` {group, mqs,
client, now}, with mq = [topic, broker, queue].

`RealClasses` runs one JVM for many scripts. The RocketMQ classpath comes from the
environment variable ROCKETMQ_CLASSPATH (a classpath, or a file holding one), else
``build/rocketmq/classpath.txt``, else it is built there with ``shared/rocketmq/build.sh``
found beside the checkout. The driver is compiled once into ``build/pqdiff/``.
`java_sql92_compile` and `java_sql92_edge` run `conformance/java/SqlDepth.java`: RocketMQ's
SQL92 parser on threads with the default stack. `RealSql92` runs `conformance/java/SqlDiff.java`:
RocketMQ's SQL92 filter compiling and evaluating selectors as the broker does, against
`apply_sql92`, rocketspec's evaluator (`sql92_difference` compares the outcome classes).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

from ..reference.broker.lock_manager import RebalanceLockManager
from ..reference.client.process_queue import IllegalCapacity, NoSuchElement, NumberFormat, ProcessQueue
from ..reference.message import Message
from ..reference.sim import Simulator

REPO = Path(__file__).resolve().parent.parent
DRIVER_SRC = Path(__file__).resolve().parent / "java" / "PqDiff.java"
BUILD = REPO / "build"


class Unavailable(Exception):
    """Java or the RocketMQ classes are not at hand; the message says which and why."""


# ---------------------------------------------------------------------------- the real side

def _build_script() -> Path | None:
    for base in (REPO.parent, REPO.parent.parent):
        p = base / "shared" / "rocketmq" / "build.sh"
        if p.is_file():
            return p
    return None


def _checked(cp: str, source: str) -> str:
    missing = [p for p in cp.split(":") if p and not Path(p).exists()]
    if not cp.strip() or missing:
        raise Unavailable(f"{source}: the classpath names {len(missing)} missing entries "
                          f"({', '.join(missing[:3]) or 'it is empty'})")
    return cp


def rocketmq_classpath(build: bool = True) -> str:
    env = os.environ.get("ROCKETMQ_CLASSPATH")
    if env:
        p = Path(env)
        if p.is_file():
            return _checked(p.read_text().strip(), f"ROCKETMQ_CLASSPATH={env}")
        return _checked(env, "ROCKETMQ_CLASSPATH")
    cp_file = BUILD / "rocketmq" / "classpath.txt"
    if not cp_file.is_file() and build:
        script = _build_script()
        if script is None:
            raise Unavailable("no RocketMQ classpath: ROCKETMQ_CLASSPATH is unset, build/rocketmq/classpath.txt "
                              "is absent and shared/rocketmq/build.sh is not beside the checkout")
        if shutil.which("javac") is None:
            raise Unavailable("javac is not installed (needed to build RocketMQ)")
        # one build at a time: the test workers (pytest -n 2) both ask for the classes, and two
        # builds into one directory delete each other's files; the second waits, then finds it done
        import fcntl

        BUILD.mkdir(parents=True, exist_ok=True)
        with open(BUILD / "rocketmq.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not cp_file.is_file():
                r = subprocess.run(["bash", str(script), str(BUILD / "rocketmq")], capture_output=True, text=True,
                                   timeout=900)
                if r.returncode != 0:
                    raise Unavailable(f"{script} build/rocketmq failed: {r.stderr.strip()[-500:]}")
    if not cp_file.is_file():
        raise Unavailable(f"no RocketMQ classpath: {cp_file} is absent")
    return _checked(cp_file.read_text().strip(), str(cp_file))


def compile_driver(cp: str, name: str = "PqDiff") -> Path:
    """javac conformance/java/NAME.java into build/NAME/<digest of source and classpath>/ (once)."""
    if shutil.which("java") is None or shutil.which("javac") is None:
        raise Unavailable("java/javac are not installed")
    src_file = DRIVER_SRC.with_name(f"{name}.java")
    src = src_file.read_bytes()
    out = BUILD / name.lower() / hashlib.sha256(src + cp.encode()).hexdigest()[:16]
    if (out / f"{name}.class").is_file():
        return out
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["javac", "-nowarn", "-Xlint:none", "-d", str(tmp), "-cp", cp, str(src_file)],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise Unavailable(f"javac {src_file.name} failed: {r.stderr.strip()[-800:]}")
    try:
        tmp.rename(out)
    except OSError:      # another process compiled it meanwhile
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def java_command(name: str, *args: str) -> list[str]:
    """The command line that runs conformance/java/NAME.java against the RocketMQ classes."""
    cp = rocketmq_classpath()
    return ["java", "-cp", f"{compile_driver(cp, name)}:{cp}", name, *args]


class _DriverJVM:
    """One long-lived JVM running a conformance/java driver, spoken to in JSON lines over its
    stdin and stdout (stderr discarded: RocketMQ's logging must not mix with the answers)."""

    def __init__(self, name: str, *args: str):
        self.proc = subprocess.Popen(java_command(name, *args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, encoding="utf-8")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class RealClasses(_DriverJVM):
    """One JVM running PqDiff; `run(kind, ops)` gives the real observation of each step."""

    def __init__(self, lock_lifetime_ms: int):
        self.lock_lifetime_ms = lock_lifetime_ms
        super().__init__("PqDiff", str(lock_lifetime_ms))

    def run(self, kind: str, ops: list) -> list:
        self.proc.stdin.write(json.dumps({"kind": kind, "ops": ops}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"PqDiff ended (exit {self.proc.wait()}) on the script {ops!r}")
        return json.loads(line)["steps"]


# ---------------------------------------------------------------------------- the reference side

def _exception(step: dict, exc: Exception) -> None:
    if isinstance(exc, IllegalCapacity):
        step["exc"], step["msg"] = "IllegalArgumentException", str(exc)
    elif isinstance(exc, NumberFormat):
        step["exc"], step["msg"] = "NumberFormatException", str(exc)
    elif isinstance(exc, NoSuchElement):
        step["exc"] = "NoSuchElementException"
    else:
        raise exc


def apply_pq(ops: list) -> list:
    pq = ProcessQueue()
    registry: dict[str, Message] = {}

    def msg(spec):
        m = registry.get(spec["id"])
        if m is None:
            m = Message(msg_id=spec["id"], topic="T", offset=spec["offset"], body_size=spec["size"],
                        props=dict(spec.get("props") or {}))
            m.consume_start_ts = spec.get("start")
            registry[spec["id"]] = m
        return m

    steps = []
    for op in ops:
        step: dict = {}
        pq.last_consume_ts = None
        name = op["op"]
        sent = []
        try:
            if name == "put":
                step["ret"] = pq.put_messages([msg(s) for s in op["msgs"]])
            elif name == "remove":
                step["ret"] = pq.remove_messages([msg(s) for s in op["msgs"]], 0)
            elif name == "take":
                step["ret"] = [m.msg_id for m in pq.take_messages(op["n"], 0)]
            elif name == "commit":
                step["ret"] = pq.commit()
            elif name == "rollback":
                pq.rollback()
            elif name == "again":
                pq.make_message_to_consume_again([msg(s) for s in op["msgs"]])
            elif name == "clear":
                pq.clear()
            elif name == "dropped":
                pq.dropped = op["value"]
            elif name == "clean":
                fails = list(op.get("fail") or ())

                def send_back(m, level):
                    sent.append([m.msg_id, level])
                    return not (fails.pop(0) if fails else False)

                pq.clean_expired_msg(op["now"], op["timeout_ms"], op.get("orderly", False), send_back)
            else:
                raise ValueError(f"unknown pq op {name!r}")
        except (IllegalCapacity, NumberFormat, NoSuchElement) as exc:
            _exception(step, exc)
        if sent:
            step["sent"] = sent
        step.update(
            tree=[[o, m.msg_id] for o, m in pq.msg_tree.items()],
            consuming_tree=[[o, m.msg_id] for o, m in pq.consuming_tree.items()],
            count=pq.msg_count, size=pq.msg_size, qmax=pq.queue_offset_max, consuming=pq.consuming,
            acc=pq.msg_acc_cnt, dropped=pq.dropped, touched=pq.last_consume_ts is not None)
        steps.append(step)
    return steps


class _Broker:
    name = "b"

    def __init__(self):
        self.sim = Simulator(0, lambda ev: None)


def apply_lock(ops: list, lifetime_ms: int) -> list:
    broker = _Broker()
    mgr = RebalanceLockManager(broker, lifetime_ms)
    brokers = {}     # the reference keys a queue by (topic, queue): one broker per table

    def key(mq):
        brokers[(mq[0], mq[2])] = mq[1]
        return (mq[0], mq[2])

    steps = []
    for op in ops:
        broker.sim.now = op["now"]
        step: dict = {}
        name, group, client = op["op"], op["group"], op["client"]
        if name == "lock":
            step["ret"] = mgr.try_lock(group, key(op["mq"]), client)
        elif name == "lockBatch":
            got = mgr.try_lock_batch(group, [key(q) for q in op["mqs"]], client)
            step["ret"] = [[t, brokers[(t, q)], q] for t, q in got]
        elif name == "unlockBatch":
            mgr.unlock_batch(group, [key(q) for q in op["mqs"]], client)
        else:
            raise ValueError(f"unknown lock op {name!r}")
        step["table"] = [[g, t, brokers[(t, q)], q, e.client, e.last_update]
                         for g, entries in mgr.table.items() for (t, q), e in entries.items()]
        steps.append(step)
    return steps


def normalise(steps: list) -> list:
    """Order-free parts (a batch's result set, the table) in one order on both sides."""
    out = []
    for s in steps:
        s = dict(s)
        for k in ("table",):
            if k in s:
                s[k] = sorted(s[k], key=repr)
        if isinstance(s.get("ret"), list) and s["ret"] and isinstance(s["ret"][0], list) and "table" in s:
            s["ret"] = sorted(s["ret"], key=repr)
        out.append(s)
    return out


def first_difference(ops: list, real: list, ours: list) -> str | None:
    """None when every step agrees, else a description of the first step that does not."""
    real, ours = normalise(real), normalise(ours)
    for i, (r, o) in enumerate(zip(real, ours)):
        if r != o:
            keys = sorted(k for k in set(r) | set(o) if r.get(k) != o.get(k))
            return (f"step {i} {ops[i]!r}: " + "; ".join(f"{k}: real {r.get(k)!r}, reference {o.get(k)!r}"
                                                       for k in keys))
    if len(real) != len(ours):
        return f"{len(real)} real steps, {len(ours)} reference steps"
    return None


# ---------------------------------------------------------------------------- SQL92 nesting

def java_sql92_compile(exprs: list[str]) -> list[dict]:
    """RocketMQ's SelectorParser.parse of each text on a new default-stack thread (one cold
    JVM): [{ok, overflow, error}]."""
    stdin = "".join(json.dumps({"expr": e}) + "\n" for e in exprs)
    r = subprocess.run(java_command("SqlDepth", "compile"), input=stdin, capture_output=True, text=True,
                       encoding="utf-8", timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"SqlDepth compile failed: {r.stderr.strip()[-800:]}")
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def java_sql92_edge(kind: str, warmup: int) -> int:
    """The deepest nesting of KIND that compiles after WARMUP parses (JIT-compiled parser)."""
    r = subprocess.run(java_command("SqlDepth", "edge", kind, str(warmup)), capture_output=True, text=True,
                       timeout=900)
    if r.returncode != 0:
        raise RuntimeError(f"SqlDepth edge {kind} failed: {r.stderr.strip()[-800:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])["max"]


# ---------------------------------------------------------------------------- SQL92 evaluation

SQL92_PROFILE = "rocketmq-4.9.8"     # the release whose classes the JVM runs


def sql92_outcome(answer: dict) -> str:
    """The outcome class of one answer (either side): COMPILE (refused), ERROR (evaluating
    throws), or the value evaluate returns: TRUE, FALSE, NULL (or a Java class name)."""
    if not answer["compiled"]:
        return "COMPILE"
    return "ERROR" if "throws" in answer else answer["value"]


class RealSql92(_DriverJVM):
    """One JVM running SqlDiff (conformance/java/SqlDiff.java): RocketMQ's FilterFactory
    compiles each selector, its Expression evaluates on a broker MessageEvaluationContext,
    and ExpressionMessageFilter decides the match. `run(requests)` answers a batch of
    {expr, props} through the pipe (written and read in chunks, so no pipe fills up)."""

    CHUNK = 256

    def __init__(self):
        super().__init__("SqlDiff")

    def run(self, requests: list[dict]) -> list[dict]:
        out = []
        for i in range(0, len(requests), self.CHUNK):
            chunk = requests[i:i + self.CHUNK]
            self.proc.stdin.write("".join(json.dumps({"expr": r["expr"], "props": r.get("props")}) + "\n"
                                          for r in chunk))
            self.proc.stdin.flush()
            for r in chunk:
                line = self.proc.stdout.readline()
                if not line:
                    raise RuntimeError(f"SqlDiff ended (exit {self.proc.wait()}) on {r!r}")
                out.append(json.loads(line))
        return out


def apply_sql92(expr: str, props: dict | None, profile: str = SQL92_PROFILE) -> dict:
    """rocketspec's answer in SqlDiff's shape: compile_sql92, Expression.evaluate on the
    properties as given (the evaluator alone), sql92_match (the broker's decision, on the
    properties as the broker stores them, which is what `rocketspec filter` answers)."""
    from ..rocketmq.filter import FilterCompileError, FilterEvaluateError, compile_sql92, sql92_match
    try:
        compiled = compile_sql92(expr, profile, cache=False)
    except FilterCompileError as exc:
        return {"compiled": False, "error": str(exc)}
    props = props or {}
    answer: dict = {"compiled": True, "matched": sql92_match(compiled, props)}
    try:
        v = compiled.evaluate(props)
        answer["value"] = {True: "TRUE", False: "FALSE", None: "NULL"}[v]
    except FilterEvaluateError as exc:
        answer["throws"], answer["error"] = exc.java_exception, exc.message
    return answer


def sql92_difference(request: dict, real: dict, ours: dict) -> str | None:
    """None when both sides give the same outcome class and the same broker decision."""
    if sql92_outcome(real) == sql92_outcome(ours) and real.get("matched") == ours.get("matched"):
        return None
    return (f"{request['expr']!r} on {request.get('props')!r}: RocketMQ {sql92_outcome(real)} "
            f"(matched {real.get('matched')}, {real.get('error', '')}), rocketspec {sql92_outcome(ours)} "
            f"(matched {ours.get('matched')}, {ours.get('error', '')})")
