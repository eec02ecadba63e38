"""`rocketspec allocate`: RocketMQ queue allocation as JSON Lines.

One request object per input line, one answer object per output line, in order, flushed
after each line (so the command can sit behind a pipe and answer interactively).

Request fields:

\b
  id                any JSON value, echoed back (null when absent)
  strategy          "AVG" | "AVG_BY_CIRCLE" | "CONSISTENT_HASH" | "CONFIG" | "MACHINE_ROOM"
  mqs               [[topic, brokerName, queueId], ...] or null (RocketMQ's mqAll)
  cids              [clientId, ...] or null (RocketMQ's cidAll)
  cid               the current client id (a string, or null), or instead:
  all               true: answer for every distinct id of cids
  sort              true: first sort (and de-duplicate) mqs and sort cids the way
                    RebalanceImpl does; otherwise both are used in the order given
  virtual_node_cnt  CONSISTENT_HASH only; default 10
  config_mqs        CONFIG only: the configured list, or null
  consumeridcs      MACHINE_ROOM only: the rooms of this consumer, or null
  profile           a version profile name (validated; the strategies are the same on
                    every profile)

Answers:

\b
  {"id": ..., "ok": true, "allocation": {cid: [[topic, brokerName, queueId], ...]}}
      one entry, or one per distinct cid with "all"; CONFIG's null list stays null
  {"id": ..., "ok": false, "error": "...", "exception": "IllegalArgumentException"}
      where RocketMQ's strategy throws (message as RocketMQ's)
  {"id": ..., "ok": false, "error": "line N: ...", "line": N}
      a line that is not a valid request (not JSON, a missing or ill-typed field,
      an unknown strategy or profile, ...)

Blank lines are skipped. Exit status: 0 once every line has been read and answered, even
when some answers are errors; 2 for a usage error (bad option, unreadable --input file);
1 if the output is closed before the input ends.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click
import orjson

from rocketspec.commands.jsonlines import LineError, decode, serve, type_name
from rocketspec.reference.allocation import STRATEGIES, AllocationError, make_strategy
from rocketspec.reference.message_queue import (
    INT32_MAX,
    INT32_MIN,
    MessageQueue,
    sort_cids,
    sort_mqs,
)
from rocketspec.rocketmq.profiles import UnknownProfile, get_profile

# Far above any real setting (RocketMQ's default is 10); keeps one line from hashing forever.
MAX_VIRTUAL_NODE_CNT = 100_000

FIELDS = frozenset({"id", "strategy", "mqs", "cids", "cid", "all", "sort", "virtual_node_cnt",
                    "config_mqs", "consumeridcs", "profile"})
QUEUE_SHAPE = "[topic, brokerName, queueId] (two strings and a 32-bit integer)"


class BadRequest(Exception):
    """The line is not a valid request; the message says what was expected."""


@dataclass
class Request:
    strategy: str
    mqs: list[MessageQueue] | None
    cids: list[str] | None
    cid: str | None
    all: bool
    sort: bool
    virtual_node_cnt: int
    config_mqs: list[MessageQueue] | None
    consumeridcs: list[str] | None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _queue(value: Any, where: str) -> MessageQueue:
    if (not isinstance(value, list) or len(value) != 3 or not isinstance(value[0], str)
            or not isinstance(value[1], str) or not _is_int(value[2])):
        raise BadRequest(f"{where}: expected {QUEUE_SHAPE}, got {orjson.dumps(value).decode()}")
    if not INT32_MIN <= value[2] <= INT32_MAX:
        raise BadRequest(f"{where}: queueId {value[2]} is outside the 32-bit integer range")
    return MessageQueue(value[0], value[1], value[2])


def _queues(obj: dict, key: str, *, required: bool) -> list[MessageQueue] | None:
    if key not in obj:
        if required:
            raise BadRequest(f"missing field {key!r}: expected a list of {QUEUE_SHAPE}, or null")
        return None
    value = obj[key]
    if value is None:
        return None
    if not isinstance(value, list):
        raise BadRequest(f"field {key!r}: expected a list of {QUEUE_SHAPE}, or null; "
                         f"got {type_name(value)}")
    return [_queue(item, f"field {key!r} item {i}") for i, item in enumerate(value)]


def _strings(obj: dict, key: str, *, required: bool) -> list[str] | None:
    if key not in obj:
        if required:
            raise BadRequest(f"missing field {key!r}: expected a list of strings, or null")
        return None
    value = obj[key]
    if value is None:
        return None
    if not isinstance(value, list):
        raise BadRequest(f"field {key!r}: expected a list of strings, or null; got {type_name(value)}")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise BadRequest(f"field {key!r} item {i}: expected a string, got {type_name(item)}")
    return value


def _flag(obj: dict, key: str) -> bool:
    value = obj.get(key, False)
    if not isinstance(value, bool):
        raise BadRequest(f"field {key!r}: expected true or false, got {type_name(value)}")
    return value


def parse_request(obj: Any) -> Request:
    """Validate one decoded JSON value as a request; raises `BadRequest`."""
    if not isinstance(obj, dict):
        raise BadRequest(f"expected a JSON object, got {type_name(obj)}")
    unknown = sorted(set(obj) - FIELDS)
    if unknown:
        raise BadRequest(f"unknown field(s) {', '.join(map(repr, unknown))}; "
                         f"expected only {', '.join(sorted(FIELDS))}")

    strategy = obj.get("strategy")
    if strategy not in STRATEGIES:
        got = repr(strategy) if isinstance(strategy, str) else type_name(strategy)
        if "strategy" not in obj:
            raise BadRequest(f"missing field 'strategy': expected one of {', '.join(STRATEGIES)}")
        raise BadRequest(f"field 'strategy': expected one of {', '.join(STRATEGIES)}, got {got}")

    if "profile" in obj and obj["profile"] is not None:
        if not isinstance(obj["profile"], str):
            raise BadRequest(f"field 'profile': expected a profile name, got {type_name(obj['profile'])}")
        try:
            get_profile(obj["profile"])
        except UnknownProfile as exc:
            raise BadRequest(f"field 'profile': {exc}") from None

    everyone = _flag(obj, "all")
    if everyone and "cid" in obj:
        raise BadRequest("fields 'cid' and 'all' exclude each other: give one")
    if not everyone and "cid" not in obj:
        raise BadRequest("missing field 'cid': expected the current client id, or \"all\": true")
    cid = obj.get("cid")
    if cid is not None and not isinstance(cid, str):
        raise BadRequest(f"field 'cid': expected a string or null, got {type_name(cid)}")

    cnt = obj.get("virtual_node_cnt", 10)
    if not _is_int(cnt):
        raise BadRequest(f"field 'virtual_node_cnt': expected an integer, got {type_name(cnt)}")
    if cnt > MAX_VIRTUAL_NODE_CNT:
        raise BadRequest(f"field 'virtual_node_cnt': at most {MAX_VIRTUAL_NODE_CNT} here, got {cnt}")

    return Request(
        strategy=strategy,
        mqs=_queues(obj, "mqs", required=True),
        cids=_strings(obj, "cids", required=True),
        cid=cid,
        all=everyone,
        sort=_flag(obj, "sort"),
        virtual_node_cnt=cnt,
        config_mqs=_queues(obj, "config_mqs", required=False),
        consumeridcs=_strings(obj, "consumeridcs", required=False),
    )


def _as_json(allocation: list[MessageQueue] | None):
    return None if allocation is None else [mq.to_list() for mq in allocation]


def run_request(req: Request) -> dict:
    """The answer fields (without the id) for a valid request."""
    mqs, cids = req.mqs, req.cids
    if req.sort:
        # RebalanceImpl builds mqAll from a Set, hence the de-duplication.
        mqs = None if mqs is None else sort_mqs(set(mqs))
        cids = None if cids is None else sort_cids(cids)
    try:
        strategy = make_strategy(req.strategy, virtual_node_cnt=req.virtual_node_cnt,
                                 config_mqs=req.config_mqs, consumeridcs=req.consumeridcs)
        if req.all:
            result = strategy.allocate_all(mqs, cids)
        else:
            result = {req.cid: strategy.allocate(req.cid, mqs, cids)}
    except AllocationError as exc:
        return {"ok": False, "error": str(exc), "exception": exc.java_exception}
    return {"ok": True, "allocation": {cid: _as_json(a) for cid, a in result.items()}}


def answer_line(raw: bytes, lineno: int) -> dict | None:
    """The answer to one input line, or None for a blank line."""
    if not raw.strip():
        return None
    try:
        obj = decode(raw)
    except LineError as exc:
        return {"id": None, "ok": False, "line": lineno, "error": f"line {lineno}: {exc}"}
    rid = obj.get("id") if isinstance(obj, dict) else None
    try:
        req = parse_request(obj)
    except BadRequest as exc:
        return {"id": rid, "ok": False, "line": lineno, "error": f"line {lineno}: {exc}"}
    return {"id": rid, **run_request(req)}


@click.command("allocate", help=__doc__.split("\n", 2)[2],
               short_help="Queue allocation as JSON Lines (stdin -> stdout).")
@click.option("--input", "input_file", type=click.File("rb"), default="-", metavar="FILE",
              show_default=True,
              help="Read requests from FILE instead of standard input.")
def allocate(input_file):
    serve(input_file, answer_line)
