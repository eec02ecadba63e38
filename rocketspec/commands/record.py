"""`rocketspec record`: run a scenario on a real RocketMQ release (4.9.8 by default) and write the
recorded trace.

The scenario file is the one `simulate` reads (one parser: reference/scenario.py). This module
turns it into a plain JSON plan for the Java driver (traces/recorder), refuses what real
RocketMQ cannot do, runs the driver on loopback inside a private network namespace, bounded
in time, and merges the trace parts the driver and its client JVMs wrote into one trace.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

from rocketspec.commands.options import SEED, Seconds
from rocketspec.errors import UserError
from rocketspec.rocketmq.delays import DEFAULT_DELAY_LEVELS
from rocketspec.rocketmq.profiles import SERVER_CHANNEL_MAX_IDLE_KEY, SERVER_CHANNEL_MAX_IDLE_S

# What real runs can do, and why the rest cannot be done.
UNSUPPORTED_STEPS = {
    "restart_broker": "a broker restart is not driven on real runs yet",
    "oneway_loss": "losing one-way calls needs a fault-injecting network, which a real run does not have",
    "fail_offset_queries": "failing offset queries needs fault injection inside the client",
    "fail_revive_reads": "failing the broker's revive reads needs fault injection inside the broker's store",
    "delay_pop_reads": "delaying a pop's queue read after its pop time needs fault injection inside the broker",
    "lose_pop_responses": "losing a receive's answer between the proxy and the client needs fault injection in the proxy",
    "slow_store_reads": "slowing the broker's store reads on demand needs fault injection inside the broker",
    "delete_messages": "retention cannot be forced on a real store at a chosen offset",
    "expire_commit_log": "deleting commit-log files ahead of the consume queue's correction cannot be forced on a "
                         "real store in a short run",
    "set_broker_offset": "the broker offset table has no admin call that sets one queue's offset outside a reset",
}
SEPARATE_JVM_STEPS = ("crash", "pause")   # a real kill or freeze needs its own process
SUPPORTED_STRATEGIES = ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH")

# A scenario's `real` keys that are JVM system properties (read once when the class loads).
KNOBS = {
    "client_lock_max_live_ms": "rocketmq.client.rebalance.lockMaxLiveTime",
    "lock_interval_ms": "rocketmq.client.rebalance.lockInterval",
    "rebalance_interval_ms": "rocketmq.client.rebalance.waitInterval",
    "pull_max_idle_ms": "rocketmq.client.pull.pullMaxIdleTime",
    "unlock_delay_ms": "rocketmq.client.unlockDelayTimeMills",
    "max_time_consume_continuously_ms": "rocketmq.client.maxTimeConsumeContinuously",
}
JVM_FLAGS = [
    "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED", "--add-opens", "java.base/java.nio=ALL-UNNAMED",
    "--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED", "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
    "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss1m", "-Xmx384m",
    "-Dtls.server.mode=disabled",   # else each server generates a self-signed certificate (~8 s)
]

# The release a run takes by default, built from ../shared/rocketmq (`make rocketmq`); the others
# are the pinned release jars (third_party/rocketmq/VERSION, `make rocketmq-jars`).
from rocketspec.traces.rocketmq_jars import DEFAULT_RELEASE  # noqa: E402  (the one definition)
# A release with no profile of its own is judged under the next release's: 5.5.0 under 5.5.1's
# (every switch the same, docs/profiles.md).
STANDS_IN = {"5.5.0": "5.5.1"}
# A pin that mixes releases (third_party/rocketmq/5.5.1/pom.xml): what a run's summary line says of it.
MIXED_PINS = {"5.5.1": ", broker 5.5.1 with the 5.5.0 push consumer and namesrv"}


class RecordError(UserError):
    """Bad input or a missing prerequisite (exit 2)."""


def repo_root() -> Path:
    import rocketspec.traces
    return Path(rocketspec.traces.__file__).resolve().parent.parent


def _unsupported(sc: dict) -> list[str]:
    from rocketspec.reference.scenario import CRASH_MODES

    out = []
    if len(sc["brokers"]) != 1:
        out.append(f"brokers: {len(sc['brokers'])} brokers; real runs have one broker")
    for key in ("retry_queue_nums", "retry_max_times"):
        if key in sc["broker_config"]:
            out.append(f"broker_config.{key}: not settable on real runs yet")
    for i, st in enumerate(sc["steps"]):
        if st["action"] in UNSUPPORTED_STEPS:
            out.append(f"steps[{i}] ({st['action']}): {UNSUPPORTED_STEPS[st['action']]}")
        elif st["action"] == "crash" and st.get("mode", CRASH_MODES[0]) != "kill":
            # The driver's crash is a SIGKILL; a silent crash (a cut network) is not driven yet.
            out.append(f"steps[{i}] (crash, mode silent): a cut-off host is not driven on real runs yet; "
                       "use mode = \"kill\" (SIGKILL) or a pause")
    for name, g in sc["groups"].items():
        strategy = g.get("strategy", "AVG")
        if strategy not in SUPPORTED_STRATEGIES:
            out.append(f"groups.{name}.strategy: {strategy} is not supported on real runs")
        if g.get("consume_timestamp") is not None:
            out.append(f"groups.{name}.consume_timestamp: not supported on real runs yet")
    if any(g.get("client_type", "PUSH") != "PUSH" for g in sc["groups"].values()) \
            and sc.get("real", {}).get("attach_broker_after_ms", -1) >= 0:
        out.append("real.attach_broker_after_ms: the POP recorder attaches before the broker starts")
    return out


# the gRPC consumers: clients of the proxy, run by a gRPC client program (--client)
GRPC_CLIENT_TYPES = ("SIMPLE", "GRPC_PUSH")


def build_plan(sc: dict, seed: int, timeout_s: float, work_dir: Path, out_dir: Path) -> dict:
    """The JSON plan the Java driver runs; RecordError when a step cannot be done for real."""
    from rocketspec.reference.client.push_consumer import ConsumerConfig

    bad = _unsupported(sc)
    if bad:
        raise RecordError(f"scenario {sc['name']}: cannot run on real RocketMQ:\n  " + "\n  ".join(bad))
    real = sc.get("real", {})
    def plain(subscriptions):
        return {t: ({"type": "TAG", "expr": e} if isinstance(e, str) else {"type": e.get("type", "TAG"), "expr": e["expr"]})
                for t, e in subscriptions.items()}

    groups = {}
    for name, g in sc["groups"].items():
        groups[name] = {"config": ConsumerConfig.resolve(g), "subscriptions": plain(g["subscriptions"]),
                        "listener": g.get("listener")}
    # a start step's own subscriptions: the client subscribes them in place of its group's
    own: dict = {}
    for i, st in enumerate(sc["steps"]):
        if st["action"] != "start":
            continue
        subs = plain(st.get("subscriptions", sc["groups"][st["group"]]["subscriptions"]))
        if own.setdefault(st["client"], subs) != subs:
            raise RecordError(f"scenario {sc['name']}: steps[{i}] (start of {st['client']}): a client keeps its "
                              "subscriptions across its starts on real runs (the plan gives each client one set)")
    client_subs = {c: subs for c, subs in own.items()
                   if any(st["action"] == "start" and st["client"] == c and "subscriptions" in st for st in sc["steps"])}
    separate = sorted({st["client"] for st in sc["steps"] if st["action"] in SEPARATE_JVM_STEPS})
    bc = sc["broker_config"]
    knobs = {KNOBS[k]: v for k, v in real.items() if k in KNOBS}
    if "lock_max_live_ms" in bc:
        knobs["rocketmq.broker.rebalance.lockMaxLiveTime"] = bc["lock_max_live_ms"]
    jvm_args = JVM_FLAGS + [f"-D{k}={v}" for k, v in sorted(knobs.items())] + [f"-Duser.home={work_dir}",
                                                                                   "-Drocketmq.client.logUseSlf4j=false"]
    drain = real.get("drain_ms", 30000)
    return {
        "name": sc["name"], "seed": seed, "scenario": _scenario_for_trace(sc),
        "duration_ms": sc["duration_ms"] + drain, "min_run_ms": sc["duration_ms"],
        "timeout_ms": int(timeout_s * 1000), "work_dir": str(work_dir), "out_dir": str(out_dir),
        "broker": {
            "name": sc["brokers"][0],
            "message_delay_level": bc.get("message_delay_level", DEFAULT_DELAY_LEVELS),
            "enable_property_filter": bool(bc.get("enable_property_filter", False)),
            "filter_support_retry": bool(bc.get("filter_support_retry", False)),
            "long_polling_enable": bool(bc.get("long_polling_enable", True)),
            "pop_consumer_kv_service": bool(bc.get("pop_consumer_kv_service", False)),
            SERVER_CHANNEL_MAX_IDLE_KEY: real.get(SERVER_CHANNEL_MAX_IDLE_KEY, SERVER_CHANNEL_MAX_IDLE_S),
        },
        "client": {
            "persist_consumer_offset_interval_ms": real.get("persist_consumer_offset_interval_ms", 5000),
            "heartbeat_broker_interval_ms": real.get("heartbeat_broker_interval_ms", 30000),
            "poll_name_server_interval_ms": real.get("poll_name_server_interval_ms", 30000),
        },
        "topics": [{"name": t["name"], "queues": t["queues"]} for t in sc["topics"]],
        "groups": groups, "client_subscriptions": client_subs, "producers": sc["producers"], "steps": sc["steps"],
        "separate_clients": separate, "jvm_args": jvm_args,
        "attach_broker_after_ms": real.get("attach_broker_after_ms", -1),
    }


def _scenario_for_trace(sc: dict) -> dict:
    from rocketspec.reference.runner import sc_for_trace
    return sc_for_trace(sc) | {"real": sc.get("real", {}), "broker_config": sc["broker_config"]}


# ---------------------------------------------------------------------- prerequisites
def find_java() -> str:
    java = shutil.which("java")
    if java is None:
        raise RecordError("java not found on PATH: real runs need a JDK 17 (Debian: apt-get install openjdk-17-jdk-headless)")
    return java


def releases() -> list[str]:
    """Every release `record --release` knows: the default first, then the pinned ones."""
    from rocketspec.traces.rocketmq_jars import record_releases
    return record_releases()


def check_release(release: str) -> None:
    known = releases()
    if release not in known:
        raise RecordError(f"--release {release}: unknown RocketMQ release; available: {', '.join(known)}")


def release_classpath(root: Path, release: str) -> str:
    """The classpath of a release: 4.9.8's as rocketmq_classpath finds it; a pinned release's
    installed jars (build/rocketmq-VERSION/classpath.txt, `make rocketmq-jars`)."""
    check_release(release)
    if release == DEFAULT_RELEASE:
        return rocketmq_classpath(root)
    cp = root / "build" / f"rocketmq-{release}" / "classpath.txt"
    if not cp.is_file():
        raise RecordError(f"--release {release}: RocketMQ {release}'s jars are not installed ({cp} is missing); "
                          "`make rocketmq-jars` fetches and checks them")
    return cp.read_text().strip()


def proxy_classpath(root: Path, release: str) -> str:
    """The classpath of a release with its gRPC proxy (third_party/rocketmq/RELEASE/proxy, installed
    into build/rocketmq-RELEASE-proxy/): what a run with SimpleConsumers starts the proxy from."""
    check_release(release)
    from rocketspec.traces.rocketmq_jars import PINS
    if not (PINS / release / "proxy" / "jars.lock").is_file():
        pinned = sorted(p.parent.parent.name for p in PINS.glob("*/proxy/jars.lock"))
        raise RecordError(f"--release {release}: SimpleConsumers need RocketMQ's gRPC proxy, which is pinned for "
                          f"{', '.join(pinned) or 'no release'} only (third_party/rocketmq/RELEASE/proxy)")
    cp = root / "build" / f"rocketmq-{release}-proxy" / "classpath.txt"
    if not cp.is_file():
        raise RecordError(f"--release {release}: RocketMQ {release}'s proxy jars are not installed ({cp} is missing); "
                          f"run `make rocketmq-jars` (python3 traces/rocketmq_jars.py install {release}/proxy)")
    return cp.read_text().strip()


def trace_profile(release: str) -> str:
    """The profile a recorded trace names (check's default): the release's own, else the newest
    release profile of its line not newer than it (or than the release it stands in for)."""
    from rocketspec.rocketmq.profiles import PROFILES

    def key(v):
        return tuple(int(x) for x in v.split("."))

    for name in (release, STANDS_IN.get(release)):
        if name and f"rocketmq-{name}" in PROFILES:
            return f"rocketmq-{name}"
    line = [n.removeprefix("rocketmq-") for n in PROFILES
            if re.fullmatch(r"rocketmq-\d+\.\d+\.\d+", n) and n.split("-")[1].split(".")[0] == release.split(".")[0]]
    line = [v for v in line if key(v) <= key(STANDS_IN.get(release, release))]
    if not line:
        raise RecordError(f"--release {release}: no release profile of the {release.split('.')[0]}.x line to name in the trace")
    return f"rocketmq-{max(line, key=key)}"


def rocketmq_classpath(root: Path) -> str:
    """4.9.8's classpath: ROCKETMQ_CLASSPATH (a classpath, or a classpath.txt file or a folder
    holding one), else the repository's build/rocketmq/classpath.txt (`make rocketmq` builds it
    from ../shared/rocketmq)."""
    env = os.environ.get("ROCKETMQ_CLASSPATH")
    if env:
        p = Path(env)
        if p.is_dir() and (p / "classpath.txt").exists():
            return (p / "classpath.txt").read_text().strip()
        if p.is_file() and p.suffix == ".txt":
            return p.read_text().strip()
        if p.suffix == ".txt" or (os.sep in env and ":" not in env and not p.exists()):
            raise RecordError(f"ROCKETMQ_CLASSPATH={env}: no such file or folder")
        return env
    built = root / "build" / "rocketmq" / "classpath.txt"
    if built.exists():
        return built.read_text().strip()
    raise RecordError("no RocketMQ classpath: set ROCKETMQ_CLASSPATH, or run `make rocketmq` (needs "
                      f"{root.parent / 'shared' / 'rocketmq'}/build.sh and the 4.9.8 sources)")


def recorder_classes(root: Path, classpath: str, release: str = DEFAULT_RELEASE) -> Path:
    """The recorder compiled for a release (traces/recorder_build.py: build/recorder-RELEASE/),
    rebuilt when a source or the classpath changed."""
    from rocketspec.traces import recorder_build

    try:
        return recorder_build.build(release, classpath)
    except recorder_build.BuildError as exc:
        raise RecordError(str(exc)) from None


def namespace_prefix() -> list[str]:
    """unshare -n with lo up, when this user may (root here); else nothing (loopback addresses only)."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return []
    probe = subprocess.run(["unshare", "-n", "sh", "-c", "ip link set lo up"], capture_output=True)
    if probe.returncode != 0:
        return []
    return ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]


# ---------------------------------------------------------------------- trace parts
_LIFE = re.compile(r"^(?P<base>.+)\.life-(?P<life>\d+)\.jsonl$")


def part_order(path: Path) -> tuple:
    """driver.jsonl first, then the client parts by name and each client's JVM lives in order
    (`client-NAME.life-N.jsonl`, N counted from 1; life 10 after life 9)."""
    m = _LIFE.match(path.name)
    base, life = (m["base"], int(m["life"])) if m else (path.name.removesuffix(".jsonl"), 0)
    return (path.name != "driver.jsonl", base, life)


def merge_parts(parts_dir: Path) -> list[dict]:
    """One trace from the parts (driver.jsonl first, then part_order): by wall-clock ns, renumbered,
    cut at trace_ended."""
    events = []
    for i, path in enumerate(sorted(parts_dir.glob("*.jsonl"), key=part_order)):
        with path.open() as fh:
            for n, line in enumerate(fh):
                line = line.strip()
                if not line:
                    continue
                try:
                    ev = json.loads(line)
                except json.JSONDecodeError:
                    continue   # a line cut short when a client JVM was killed
                events.append((ev.pop("_t"), i, n, ev))
    events.sort(key=lambda e: e[:3])
    out = []
    for _, _, _, ev in events:
        ev["seq"] = len(out)
        out.append(ev)
        if ev["kind"] == "trace_ended":
            break
    link_origins(out)
    return out


def link_origins(events: list[dict]) -> None:
    """Client events name a consumed copy's origin as the client read it: its ORIGIN_MESSAGE_ID,
    else its own id. The fallback's copy of a first copy has none (sendMessageBack's setProperties
    replaced the map that held it), and the broker recorder names it by its UNIQ_KEY's first copy;
    the client's consume_started and send_back_requested take the origin the broker's
    message_stored gives that copy, so a chain of copies has one origin throughout."""
    stored = {e["msg_id"]: e["origin_msg_id"] for e in events if e["kind"] == "message_stored"}
    for ev in events:
        if ev["kind"] == "consume_started" and ev.get("msg_ids") and ev.get("origin_msg_ids"):
            ev["origin_msg_ids"] = [stored.get(m, o) for m, o in zip(ev["msg_ids"], ev["origin_msg_ids"])]
        elif ev["kind"] == "send_back_requested" and ev.get("msg_id") in stored:
            ev["origin_msg_id"] = stored[ev["msg_id"]]


def client_command(command: str) -> list[str]:
    """`--client CMD` as an argv, its program resolved (exit 2 when it is not there)."""
    argv = shlex.split(command)
    if not argv:
        raise RecordError("--client: give the command that runs the client under test (docs/driver-protocol.md)")
    program = shutil.which(argv[0])
    if program is None:
        raise RecordError(f"--client {command}: {argv[0]} is not an executable file or a program on PATH "
                          "(the Go client: `make go-client` builds build/go-client/rocketspec-go-client)")
    return [str(Path(program).resolve())] + argv[1:]


def mark_client_under_test(first: dict, argv: list[str]) -> None:
    """What a trace recorded through the driver protocol observed: the broker recorder's exact
    events and the client program's reports, not its internals. Declared as the schema's
    `trace_started.observed` (what every reader of levels takes) and, as before, in
    `config.client_under_test` with the program that ran."""
    from rocketspec.traces import client_protocol

    first.setdefault("config", {})["client_under_test"] = {
        "cmd": argv, "protocol": client_protocol.PROTOCOL, "observed": client_protocol.OBSERVED}
    first["observed"] = ["broker", client_protocol.OBSERVED]


def driver_env(client_argv, msgtrace) -> dict | None:
    """The driver's environment (None: this one), which its client programs inherit: with
    --msgtrace, ROCKETSPEC_MSGTRACE=1 asks a client program to turn its library's message trace on
    (docs/driver-protocol.md), as the Java recorder's consumers do."""
    if client_argv is None or msgtrace is None:
        return None
    return {**os.environ, "ROCKETSPEC_MSGTRACE": "1"}


def external_plan(plan: dict, argv: list[str]) -> None:
    """Every scenario client runs as the client program, in its own process (driver protocol)."""
    plan["external_client"] = {"cmd": argv, "protocol": 1}
    plan["separate_clients"] = sorted({st["client"] for st in plan["steps"] if st["action"] == "start"})


def record(scenario_name: str, out: str, timeout_s: float | None, seed: int, keep: str | None,
           msgtrace: str | None = None, release: str = DEFAULT_RELEASE, client: str | None = None) -> tuple[int, str]:
    from rocketspec.conformance.verdicts import load_checked_scenario
    from rocketspec.reference.scenario import ScenarioError

    try:
        sc = load_checked_scenario(scenario_name)
    except ScenarioError as exc:
        raise RecordError(str(exc)) from None
    root = repo_root()
    if timeout_s is None:
        timeout_s = (sc["duration_ms"] + sc.get("real", {}).get("drain_ms", 30000)) / 1000 + 60
    if not out.endswith(".jsonl"):
        raise RecordError(f"--out {out}: real traces are written as JSON Lines (.jsonl)")
    build_plan(sc, seed, timeout_s, Path("."), Path("."))   # refuse what cannot run before making anything
    if release.split(".", 1)[0] == "4":
        if sc["broker_config"].get("pop_consumer_kv_service"):
            raise RecordError(f"scenario {sc['name']}: broker_config.pop_consumer_kv_service: the RocksDB POP path "
                              f"exists only in RocketMQ 5.x, not {release}; use --release 5.5.1")
        if any(g.get("client_type", "PUSH") != "PUSH" for g in sc["groups"].values()):
            raise RecordError(f"scenario {sc['name']}: consumes by POP, which RocketMQ {release} does not have; "
                              "use --release 5.5.0")
    simple = sorted(n for n, g in sc["groups"].items() if g.get("client_type") in GRPC_CLIENT_TYPES)
    if simple and client is None:
        # a SimpleConsumer or a gRPC PushConsumer is a gRPC client of the proxy; the recorder has no
        # gRPC client of its own
        kind = sc["groups"][simple[0]]["client_type"]
        raise RecordError(f"scenario {sc['name']}: groups.{simple[0]}.client_type: {kind} consumes through the gRPC "
                          "proxy: run it with --client CMD, a gRPC client program (e.g. "
                          "build/grpc-client/rocketspec-grpc-client, `make grpc-client`)")
    client_argv = client_command(client) if client is not None else None
    classpath = proxy_classpath(root, release) if simple else release_classpath(root, release)
    profile = trace_profile(release)
    work = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="rocketspec-record-"))
    work.mkdir(parents=True, exist_ok=True)
    parts = work / "parts"
    plan = build_plan(sc, seed, timeout_s, work, parts)
    java = find_java()
    # with the proxy: the recorder built against the proxy's classpath, with its ProxyRecorder
    classes = recorder_classes(root, classpath, f"{release}-proxy" if simple else release)
    plan_path = work / "plan.json"
    plan["plan_path"] = str(plan_path)
    plan["release"], plan["profile"] = release, profile
    if client_argv is not None:
        external_plan(plan, client_argv)
    if msgtrace is not None:
        # enableMsgTrace on the producer and every consumer; the broker's RMQ_SYS_TRACE_TOPIC
        # message bodies are written to this file after the trace ends
        plan["msgtrace_out"] = str(Path(msgtrace).resolve())
    plan_path.write_text(json.dumps(plan, indent=1))
    cmd = namespace_prefix() + [java] + plan["jvm_args"] + ["-cp", f"{classes}:{classpath}",
                                                           "rocketspec.recorder.Driver", str(plan_path)]
    log = (work / "driver.log").open("w")
    t0 = time.monotonic()
    # Its own session: on a timeout the whole group (driver and client JVMs) is stopped, and only it.
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            env=driver_env(client_argv, msgtrace))
    try:
        rc = proc.wait(timeout=timeout_s + 30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return 4, f"the run did not finish within {timeout_s + 30:.0f} s; log: {work / 'driver.log'}"
    finally:
        log.close()
        try:
            os.killpg(proc.pid, signal.SIGKILL)   # any client JVM left behind
        except ProcessLookupError:
            pass
    if rc == 2:
        raise RecordError((work / "driver.log").read_text()[-2000:])
    if rc != 0:
        if client_argv is not None:
            from rocketspec.traces import client_protocol
            client_protocol.convert_parts(parts, plan)   # a client that broke the protocol is named (exit 2)
        return 3, f"the driver failed (exit {rc}); log: {work / 'driver.log'}"
    if client_argv is not None:
        from rocketspec.traces import client_protocol
        client_protocol.convert_parts(parts, plan)
    events = merge_parts(parts)
    if not events or events[-1]["kind"] != "trace_ended":
        return 3, f"the driver wrote no complete trace; log: {work / 'driver.log'}"
    if client_argv is not None:
        mark_client_under_test(events[0], client_argv)
    with open(out, "w") as fh:
        for ev in events:
            fh.write(json.dumps(ev, separators=(",", ":")) + "\n")
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    stand_in = MIXED_PINS.get(release, "")
    return 0, (f"{sc['name']} (real RocketMQ {release}{stand_in}; trace profile {profile}): {len(events)} events, "
               f"ended {events[-1]['reason']}, "
               f"{time.monotonic() - t0:.1f}s -> {out}")


@click.command("record")
@click.option("--scenario", "scenario_name", default=None,
              help="A built-in scenario name or a .toml/.json scenario file (the ones `simulate` reads).")
@click.option("--out", required=True, help="Trace file to write (.jsonl); with --random, the folder of the runs.")
@click.option("--timeout", "timeout_s", type=Seconds(max_s=7 * 24 * 3600), default=None,
              help="Wall-clock bound in seconds, above 0 and at most a week (default: the scenario's "
                   "duration + drain + 60 s); with --random, per run.")
@click.option("--seed", default=1, show_default=True, type=SEED,
              help="Seed of the producers' and listeners' choices; with --random, the first run's seed "
                   "(runs take seeds S, S+1, ...; each seed is its own scenario).")
@click.option("--keep", default=None, help="Keep the run's folder (plan, logs, store, trace parts) here.")
@click.option("--msgtrace", default=None,
              help="Also run with enableMsgTrace and write the RMQ_SYS_TRACE_TOPIC message bodies here "
                   "(read them with `rocketspec history --format msgtrace`).")
@click.option("--random", "random_runs", default=None, type=click.IntRange(1, 1_000_000),
              help="Record N random scenarios (conformance/random_scenarios.py) with message tracing, check "
                   "each trace, judge each run against RocketMQ's own records (message traces, the DLQ in "
                   "the store) and print the table: agreed, false alarms, missed losses, white-box-only "
                   "findings. Per-run files go to --out DIR/seed-S/. Exit 1 on a false alarm or a missed "
                   "loss, 4 when a run could not finish (docs/recorder.md).")
@click.option("--small", is_flag=True, help="With --random: small scenarios (one group, fewer clients and messages).")
@click.option("--pop", is_flag=True,
              help="With --random: POP scenarios (push consumers in POP mode, client_type POP_PUSH, sometimes "
                   "beside an ordinary group; conformance/random_scenarios.generate_pop). RocketMQ 5.x only: "
                   "give --release 5.5.1, 5.5.0 or 5.3.3. With --client: SimpleConsumer scenarios (client_type "
                   "SIMPLE, some FIFO; generate_simple) run by a gRPC client program through the proxy, "
                   "--release 5.5.0.")
@click.option("--pop-kv", "pop_kv", is_flag=True,
              help="With --random --pop: the broker's RocksDB POP path on in every run (broker_config "
                   "pop_consumer_kv_service: popConsumerKVServiceInit and popConsumerKVServiceEnable, off by "
                   "default in RocketMQ), 5.x only.")
@click.option("--rejudge", is_flag=True,
              help="Record nothing: classify again the random runs an earlier --random wrote under --out DIR "
                   "(after a change to the spec or the oracle), rewrite their check, oracle and result files, "
                   "and print the table; exit codes as --random.")
@click.option("--client", "client", default=None, metavar="CMD",
              help="Run every scenario client as this program (a client under test, e.g. "
                   "build/go-client/rocketspec-go-client), one process per client life, driven through the "
                   "client driver protocol (docs/driver-protocol.md) in place of the Java recorder's consumer; "
                   "its reports are merged with the broker's events. With --random, in every run (the program "
                   "is asked for its library's message trace, which the oracle reads). A scenario with "
                   "SimpleConsumers (client_type SIMPLE) needs it: a gRPC client program (e.g. "
                   "build/grpc-client/rocketspec-grpc-client, `make grpc-client`) of the proxy that record "
                   "starts in the broker's JVM (5.5.0).")
@click.option("--release", default=DEFAULT_RELEASE, show_default=True,
              help=f"The RocketMQ release to run (namesrv, broker, push consumer): {', '.join(releases())} "
                   f"(5.5.1: its broker, store, common and remoting with 5.5.0's namesrv, push consumer and "
                   f"tools, whose 5.5.1 jars the registry here lacks). 4.9.8 is built by `make "
                   "rocketmq`; the others are pinned jars from Maven Central, installed by `make rocketmq-jars`.")
def record_cmd(scenario_name, out, timeout_s, seed, keep, msgtrace, random_runs, small, pop, release, client,
               rejudge, pop_kv):
    """Run a scenario on a real in-process RocketMQ (4.9.8 by default; --release) and write the
    recorded trace; or, with --random N, record and judge N random scenarios."""
    check_release(release)
    if pop and random_runs is None:
        raise RecordError("--pop goes with --random")
    if pop_kv and not pop:
        raise RecordError("--pop-kv goes with --random --pop")
    if pop and release.split(".", 1)[0] == "4":
        raise RecordError(f"--pop: POP consumption exists only in RocketMQ 5.x, not {release}: give --release "
                          + ("5.5.0 (the release whose gRPC proxy is pinned)" if client is not None
                             else "5.5.1, 5.5.0 or 5.3.3"))
    if pop and client is not None and random_runs is not None:
        proxy_classpath(repo_root(), release)   # SimpleConsumers need the release's pinned, installed proxy
    if rejudge:
        if random_runs is not None or scenario_name is not None or client is not None:
            raise RecordError("--rejudge records nothing: give it only --out DIR (a folder of --random runs)")
        sys.exit(rejudge_random(out))
    if random_runs is not None:
        import functools
        if client is not None:
            client_command(client)      # a program that is not there is refused before any run
        sys.exit(record_random(random_runs, seed, out, timeout_s, small, scenario_name, keep, msgtrace,
                               functools.partial(record, release=release, client=client), pop,
                               simple=pop and client is not None, kv=pop_kv))
    if small:
        raise RecordError("--small goes with --random")
    if scenario_name is None:
        raise RecordError("give --scenario NAME_OR_FILE, or --random N")
    rc, message = record(scenario_name, out, timeout_s, seed, keep, msgtrace, release, client)
    click.echo(message, err=rc != 0)
    sys.exit(rc)


def record_random(runs: int, seed: int, out: str, timeout_s, small: bool, scenario_name, keep, msgtrace,
                  recorder=record, pop: bool = False, simple: bool = False, kv: bool = False) -> int:
    """`record --random`: the runs, their table, and the exit code (conformance.real_random)."""
    from rocketspec.conformance import real_random

    for given, name in ((scenario_name, "--scenario"), (msgtrace, "--msgtrace"), (keep, "--keep")):
        if given is not None:
            raise RecordError(f"{name} does not go with --random (each run's scenario, message traces and "
                              "folder are written to --out DIR/seed-S/)")
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise RecordError(f"--out {out}: with --random, --out is a folder (it is a file)")
    folder.mkdir(parents=True, exist_ok=True)

    def progress(res):
        click.echo(f"seed {res.seed}: {res.cls}"
                   + (f" ({', '.join(res.blamed)})" if res.blamed else "")
                   + f", {res.events} events, {res.seconds:.0f} s" + (f": {res.note}" if res.cls == "incomplete" else ""),
                   err=True)

    results = real_random.run_many(recorder, runs, seed, folder, small, timeout_s, progress=progress, pop=pop, kv=kv,
                                   simple=simple)
    table = real_random.render_table(results)
    (folder / "table.md").write_text(table + "\n")
    (folder / "summary.json").write_text(json.dumps(real_random.summary(results), indent=1) + "\n")
    click.echo(table)
    return real_random.exit_code(results)


def rejudge_random(out: str) -> int:
    """`record --rejudge`: the runs under --out classified again from their files."""
    from rocketspec.conformance import real_random

    folder = Path(out)
    runs = sorted(folder.glob("seed-*")) if folder.is_dir() else []
    if not runs:
        raise RecordError(f"--out {out}: no folder of random runs here (expected {out}/seed-S/ from --random)")
    results = real_random.reclassify(folder)
    table = real_random.render_table(results)
    (folder / "table.md").write_text(table + "\n")
    (folder / "summary.json").write_text(json.dumps(real_random.summary(results), indent=1) + "\n")
    click.echo(table)
    return real_random.exit_code(results)


if __name__ == "__main__":
    record_cmd()
