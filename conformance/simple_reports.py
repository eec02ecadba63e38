"""A SimpleConsumer group's deliveries, as its application saw them, for the oracle of random runs.

The oracle reads consumption from RocketMQ's message traces (RIP-6: a consumer's SubBefore and
SubAfter records). rocketmq-client-java (5.2.0), the gRPC client, writes none: its consumers have
no consume trace hook, and the 5.5.0 proxy writes none for them. A run of SimpleConsumers would
have no consume record at all, and every guarantee would hold on nothing. What the application
received and what its listener returned is in the client program's driver-protocol lines
(`run/parts/client-NAME.life-N.proto`: `pop_consume_started` and `pop_consume_finished`,
docs/driver-protocol.md), one listener call per message: the oracle reads them in their place.

Where the message came from is read from the receipt handle the proxy handed out, not from the
library's MessageView: 5.2.0's MessageViewImpl.fromProtobuf takes the message queue of the
receive request (a queue the client picked to route the receive; the proxy pops every queue of
that broker), and only the offset from the message. The proxy's handle is the broker's
(ExtraInfoUtil: checkpoint start offset, pop time, invisible time, revive queue, retry flag,
broker, queue id, queue offset) followed by the copy's commit log offset
(ConsumerProcessor.createHandle); that offset names the stored copy the store holds. The call's
deadline is pop time + invisible time.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from rocketspec.rocketmq.pop import parse_handle

from rocketspec.traces.history.model import SUCCESS_STATUSES, Consume

_PART = re.compile(r"client-(?P<name>.+)\.life-(?P<life>\d+)\.proto$")


def simple_groups(sc: dict) -> set:
    """The scenario's SimpleConsumer groups."""
    return {g["name"] for g in sc["groups"] if g.get("client_type") == "SIMPLE"}


def handle_facts(handle: str):
    """(pop time + invisible time, retry flag, broker, queue id, queue offset, commit log offset or None)
    of a proxy's receipt handle; None if it is not one."""
    parts = handle.split(" ") if isinstance(handle, str) else []
    commit = None
    if len(parts) == 9:
        try:
            commit = int(parts[8])
        except ValueError:
            return None
        parts = parts[:8]
    f = parse_handle(" ".join(parts))
    if f is None:
        return None
    return f["pop_time"] + f["invisible_time"], f["retry_flag"], f["broker"], f["queue"], f["offset"], commit


def read_simple_consumes(sc: dict, run_dir: Path, stored=()) -> tuple[list, dict, list]:
    """(Consume records, {scenario client: [client ids it reported]}, problems) of the SimpleConsumer
    groups' clients in `run_dir/parts`. `stored`: the commit log's messages (store_contents), to name
    each delivered copy by its topic, queue and store id. A call that never finished (a SIGKILL, the
    run's end) is a delivery of unknown result."""
    groups = simple_groups(sc)
    group_of = {st["client"]: st["group"] for st in sc["steps"] if st["action"] == "start"}
    by_commit = {m.physical_offset: m for m in stored}
    out, ids, problems = [], {}, []
    parts = Path(run_dir) / "parts"
    files = sorted(parts.glob("client-*.proto"), key=lambda p: (_PART.search(p.name)["name"],
                                                                   int(_PART.search(p.name)["life"])))
    for path in files:
        name = _PART.search(path.name)["name"]
        group = group_of.get(name)
        if group not in groups:
            continue
        client, open_calls, refused, recs = None, {}, set(), []
        for n, text in enumerate(path.read_text(errors="replace").splitlines(), 1):
            try:
                line = json.loads(text)
            except ValueError:
                problems.append(f"{path.name}:{n}: not a JSON object (a line cut short by a SIGKILL?)")
                continue
            kind, where = line.get("type"), f"{path.name}:{n}"
            if kind == "started":
                client = line.get("client_id") or name
                ids.setdefault(name, []).append(client)
            elif kind == "pop_consume_started":
                open_calls[line["consume_id"]] = (line, where)
            elif kind == "pop_consume_finished":
                st = open_calls.pop(line["consume_id"], None)
                if st is not None:
                    recs += _consumes(group, client or name, f"{name}/{path.stem}", st[0], st[1], line, by_commit)
            elif kind == "pop_settle_failed":
                refused.add((f"{name}/{path.stem}/{line.get('consume_id')}", line.get("msg_id")))
        for st, where in open_calls.values():
            recs += _consumes(group, client or name, f"{name}/{path.stem}", st, where, None, by_commit)
        for c in recs:
            c.settle_refused = (c.batch, c.id) in refused
        out += recs
    return out, ids, problems


def _consumes(group, client, life, st, where, fin, by_commit):
    ms = st["ts_ns"] // 1_000_000
    end = None if fin is None else fin["ts_ns"] // 1_000_000
    ok = None if fin is None else fin["status"] in SUCCESS_STATUSES
    recs = []
    for m in st["messages"]:
        facts = handle_facts(m.get("handle"))
        queue, offset, copy, deadline = (st["topic"], st["broker"], st["queue"]), m.get("offset"), None, None
        if facts is not None:
            deadline, _flag, broker, qid, offset, commit = facts
            queue = (st["topic"], broker, qid)
            s = by_commit.get(commit)
            if s is not None:
                # a revived copy is popped from the group's POP retry topic: its queue is there
                queue, offset, copy = (s.topic, broker, s.queue_id), s.queue_offset, s.store_id
        recs.append(Consume(group, m.get("origin_msg_id") or m["msg_id"], ms, end, client, queue, offset,
                            m.get("reconsume_times"), ok, copy, f"{life}/{st['consume_id']}", where,
                            deadline=deadline))
    return recs
