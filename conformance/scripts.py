"""Narrated scenario scripts: the reference driven step by step, with expected output.

A script is a text file of blocks, in the datadriven style of etcd-io/raft's testdata:

    # Comment lines narrate the mechanism being shown.
    command arg=value ...
    optional body lines (TOML for `scenario`)
    ----
    expected output

Commands:
  scenario [profile=P] [seed=N]   body: a scenario in TOML without steps (topics, groups, broker_config)
  start client=C group=G          start a push consumer
  shutdown|crash client=C         graceful stop, or death with nothing persisted
  pause client=C ms=N             freeze a client (GC pause)
  produce topic=T [count=N] [tags=X] [keys=K]
  restart-broker broker=B [downtime=N]
  delete broker=B topic=T queue=Q before=N
  oneway-loss p=X
  advance ms=N [kinds=a,b] [client=C]   run the clock; print the events that happened
  offsets                         the broker's committed offsets and each client's offset table
  queues client=C                 the client's ProcessQueues

`run_script(text)` runs the script and returns its text with every expected output replaced by
the actual one. The caller compares that with the file (tests/test_scripts.py), or, under
`pytest tests/test_scripts.py --rewrite`, writes it back to the file.
"""
from __future__ import annotations

import shlex
import tomllib

from rocketspec.conformance.verdicts import validate_checked
from rocketspec.reference.runner import Run
from rocketspec.traces.kinds import KINDS

# What `advance` shows by default: the steps a reader follows, not every pull and heartbeat
# (the registry's Kind.scripts).
DEFAULT_KINDS = tuple(n for n, k in KINDS.items() if k.scripts)

_SKIP = {"seq", "ts", "kind", "client", "group", "topic", "broker", "queue", "msg_id", "origin_msg_id", "config",
         "mqs", "cids", "view", "subscriptions", "body_size", "tags_code", "store", "source"}


class ScriptError(Exception):
    def __init__(self, line: int, message: str):
        super().__init__(f"line {line}: {message}")


def render_event(e: dict) -> str:
    where = []
    if "client" in e:
        where.append(e["client"])
    if "topic" in e and "queue" in e:
        where.append(f"{e['topic']}/{e['queue']}")
    elif "topic" in e:
        where.append(e["topic"])
    parts = [f"{e['ts']:>7} {e['kind']:<22} {' '.join(where)}".rstrip()]
    if e["kind"] == "allocation_computed":
        parts.append("-> " + (",".join(f"{t}/{q}" for t, _, q in e["allocated"]) or "nothing"))
        parts.append(f"cids={','.join(e['cids'])}")
    for k, v in e.items():
        if k in _SKIP or k == "allocated":
            continue
        if e["kind"] == "message_stored" and k in ("reconsume_times",) and v == 0:
            continue
        parts.append(f"{k}={_fmt(v)}")
    if e["kind"] in ("message_stored",) and e.get("source") not in (None, "producer"):
        parts.append(f"source={e['source']}")
    return " ".join(parts)


def _fmt(v) -> str:
    if isinstance(v, list):
        return "[" + ",".join(_fmt(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}:{_fmt(x)}" for k, x in v.items()) + "}"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def parse_blocks(text: str):
    """Yield (first_line_no, leading_comments, command, body_lines, expected_lines)."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        comments = []
        while i < len(lines) and (lines[i].startswith("#") or not lines[i].strip()):
            comments.append(lines[i])
            i += 1
        if i >= len(lines):
            yield None, comments, None, [], []
            return
        start = i
        command = lines[i]
        i += 1
        body = []
        while i < len(lines) and lines[i] != "----":
            body.append(lines[i])
            i += 1
        if i >= len(lines):
            raise ScriptError(start + 1, f"command {command!r} has no '----' line")
        i += 1
        expected = []
        while i < len(lines) and lines[i].strip():
            expected.append(lines[i])
            i += 1
        yield start + 1, comments, command, body, expected


class ScriptRun:
    def __init__(self):
        self.run: Run | None = None
        self.events: list[dict] = []
        self.shown = 0

    def need_run(self, line):
        if self.run is None:
            raise ScriptError(line, "no scenario yet: start the script with a `scenario` block")
        return self.run

    def execute(self, line: int, command: str, body: list[str]) -> list[str]:
        words = shlex.split(command)
        name, args = words[0], {}
        for w in words[1:]:
            if "=" not in w:
                raise ScriptError(line, f"argument {w!r} is not key=value")
            k, v = w.split("=", 1)
            args[k] = v
        try:
            return getattr(self, "cmd_" + name.replace("-", "_"))(line, args, body)
        except AttributeError:
            raise ScriptError(line, f"unknown command {name!r}") from None
        except KeyError as exc:
            raise ScriptError(line, f"{name} needs {exc.args[0]}=...") from None

    def cmd_scenario(self, line, args, body):
        try:
            raw = tomllib.loads("\n".join(body))
        except tomllib.TOMLDecodeError as exc:
            raise ScriptError(line, f"scenario body is not TOML: {exc}") from None
        raw.setdefault("name", "script")
        sc = validate_checked(raw, f"script line {line}")
        self.run = Run(sc, int(args.get("seed", 1)), args.get("profile", "rocketmq-5.3.3"), self.events.append)
        self.run.setup()
        self.shown = len(self.events)
        return ["ok"]

    def _step(self, line, **st):
        self.need_run(line).do_step(st)
        return self._new_events(DEFAULT_KINDS, None)

    def cmd_start(self, line, args, body):
        return self._step(line, action="start", client=args["client"], group=args["group"])

    def cmd_shutdown(self, line, args, body):
        return self._step(line, action="shutdown", client=args["client"])

    def cmd_crash(self, line, args, body):
        return self._step(line, action="crash", client=args["client"])

    def cmd_pause(self, line, args, body):
        return self._step(line, action="pause", client=args["client"], duration_ms=int(args["ms"]))

    def cmd_produce(self, line, args, body):
        st = {"action": "produce", "topic": args["topic"], "count": int(args.get("count", 1))}
        for k in ("tags", "keys"):
            if k in args:
                st[k] = args[k]
        return self._step(line, **st)

    def cmd_restart_broker(self, line, args, body):
        return self._step(line, action="restart_broker", broker=args["broker"], downtime_ms=int(args.get("downtime", 0)))

    def cmd_delete(self, line, args, body):
        return self._step(line, action="delete_messages", broker=args["broker"], topic=args["topic"],
                          queue=int(args["queue"]), before=int(args["before"]))

    def cmd_oneway_loss(self, line, args, body):
        return self._step(line, action="oneway_loss", probability=float(args["p"]))

    def cmd_advance(self, line, args, body):
        run = self.need_run(line)
        run.sim.run_until(run.sim.now + int(args["ms"]))
        kinds = tuple(args["kinds"].split(",")) if "kinds" in args else DEFAULT_KINDS
        return self._new_events(kinds, args.get("client"))

    def _new_events(self, kinds, client):
        new = self.events[self.shown:]
        self.shown = len(self.events)
        out = [render_event(e) for e in new if e["kind"] in kinds and (client is None or e.get("client") == client)]
        return out or ["(nothing)"]

    def cmd_offsets(self, line, args, body):
        run = self.need_run(line)
        out = []
        for name, b in sorted(run.net.brokers.items()):
            for (group, topic, queue), off in sorted(b.offsets.table.items()):
                out.append(f"broker {name}: {group} {topic}/{queue} = {off}")
        for cid, c in sorted(run.consumers.items()):
            if not c.proc.alive:
                continue
            for mq, entry in sorted(c.offset_store.table.items()):
                out.append(f"client {cid}: {mq[0]}/{mq[2]} = {entry.value}{' (frozen)' if entry.frozen else ''}")
        return out or ["(none)"]

    def cmd_queues(self, line, args, body):
        run = self.need_run(line)
        c = run.consumers.get(args["client"])
        if c is None:
            raise ScriptError(line, f"no client {args['client']!r}")
        out = []
        for mq, pq in sorted(c.rebalance.pq_table.items()):
            flags = [f for f, on in (("dropped", pq.dropped), ("locked", pq.locked)) if on]
            out.append(f"{mq[0]}/{mq[2]}: msgs={list(pq.msg_tree.keys())} consuming={list(pq.consuming_tree.keys())}"
                       + (f" {' '.join(flags)}" if flags else ""))
        return out or ["(no process queues)"]


def run_script(text: str) -> str:
    """Execute a script; return it with every expected output replaced by the actual one."""
    sr = ScriptRun()
    out: list[str] = []
    for line, comments, command, body, _expected in parse_blocks(text):
        out.extend(comments)
        if command is None:
            break
        out.append(command)
        out.extend(body)
        out.append("----")
        out.extend(sr.execute(line, command, body))
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out) + "\n"
