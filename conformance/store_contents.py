"""What a RocketMQ 4.9.8 broker stored, read from its commit log after the run.

The commit log is RocketMQ's own record of every message it accepted, independent of the
recorder's events: each entry is laid out as `CommitLog.checkMessageAndReturnSize` reads it
(total size, magic code, body CRC, queue id, flag, queue offset, physical offset, sysflag, born
timestamp and host, store timestamp and host, reconsume times, prepared transaction offset, body,
topic, properties). A file ends at a BLANK entry (its tail is padding) or at a zero size (nothing
written yet). The real-run oracle (conformance.real_random) takes the dead-letter copies from it.
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

MESSAGE_MAGIC_CODE = -626843481
BLANK_MAGIC_CODE = -875286124
BORNHOST_V6_FLAG = 0x1 << 4
STOREHOSTADDRESS_V6_FLAG = 0x1 << 5
NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR = "\x01", "\x02"


class StoreReadError(Exception):
    """A commit log entry that does not read as 4.9.8 writes it."""


@dataclass(slots=True)
class StoredMessage:
    topic: str
    queue_id: int
    queue_offset: int
    physical_offset: int
    born_ts: int
    store_ts: int
    reconsume_times: int
    properties: dict
    # the broker's id of the stored message (MessageDecoder.createMessageId: the store host's address
    # and port, then the physical offset, in upper-case hex): the clients' msgId of a copy
    # that has no UNIQ_KEY of its own, and the producer's offsetMsgId
    store_id: str = ""


def properties(text: str) -> dict:
    """MessageDecoder.string2messageProperties: name \\1 value \\2 ..."""
    out = {}
    for item in text.split(PROPERTY_SEPARATOR):
        name, sep, value = item.partition(NAME_VALUE_SEPARATOR)
        if sep:
            out[name] = value
    return out


def read_commit_log(store_dir) -> list[StoredMessage]:
    """Every message in the commit log under `store_dir` (a broker's storePathRootDir), in store order."""
    folder = Path(store_dir) / "commitlog"
    files = sorted(folder.iterdir(), key=lambda p: int(p.name)) if folder.is_dir() else []
    if not files:
        raise StoreReadError(f"{folder}: no commit log files")
    out = []
    for path in files:
        data = path.read_bytes()
        pos = 0
        while pos + 8 <= len(data):
            size, magic = struct.unpack_from(">ii", data, pos)
            if size == 0 or magic == BLANK_MAGIC_CODE:
                break
            if magic != MESSAGE_MAGIC_CODE or size < 0 or pos + size > len(data):
                raise StoreReadError(f"{path}: bad entry at file offset {pos} (size {size}, magic {magic:#x})")
            out.append(_entry(data, pos, path))
            pos += size
    return out


def _entry(data: bytes, pos: int, path: Path) -> StoredMessage:
    p = pos + 12
    queue_id, _flag, queue_offset, physical, sysflag, born = struct.unpack_from(">iiqqiq", data, p)
    p += 4 + 4 + 8 + 8 + 4 + 8
    p += 20 if sysflag & BORNHOST_V6_FLAG else 8
    (store_ts,) = struct.unpack_from(">q", data, p)
    p += 8
    host = 20 if sysflag & STOREHOSTADDRESS_V6_FLAG else 8
    store_id = (data[p:p + host] + struct.pack(">q", physical)).hex().upper()
    p += host
    reconsume, _prepared, body_len = struct.unpack_from(">iqi", data, p)
    p += 4 + 8 + 4 + max(body_len, 0)
    topic_len = data[p]
    topic = data[p + 1:p + 1 + topic_len].decode("utf-8")
    p += 1 + topic_len
    (props_len,) = struct.unpack_from(">h", data, p)
    props = data[p + 2:p + 2 + props_len].decode("utf-8", errors="replace") if props_len > 0 else ""
    return StoredMessage(topic, queue_id, queue_offset, physical, born, store_ts, reconsume, properties(props),
                         store_id)


# ---------------------------------------------------------------------- offsets at the end
#
# Both files are written by fastjson, which writes a map's non-string keys bare: the broker's
# `{"TopicR@G":{0:11,1:12}}` and the client's `{{"brokerName":..,"queueId":..,"topic":..}:9}`.

_GROUP_TABLE = re.compile(r'"([^"@]+)@([^"]+)"\s*:\s*\{([^{}]*)\}')
_QUEUE_OFFSET = re.compile(r"(-?\d+)\s*:\s*(-?\d+)")
_MQ_KEY = re.compile(r"\{([^{}]*)\}\s*:\s*(-?\d+)")
_FIELD = re.compile(r'"(\w+)"\s*:\s*("([^"]*)"|-?\d+)')


@dataclass(slots=True)
class Offsets:
    """One offset file read at the end of a run. `written_ms`: the file's modification time."""
    path: str
    written_ms: int
    group: str | None                     # a client's file: its group (the broker's holds every group)
    client: str | None                    # a client's file: its client id
    table: dict                           # (topic, group) -> {queue id: offset} | (topic, broker, queue id) -> offset


def _text_or_bak(path: Path) -> tuple[str, Path]:
    """An offsets file's text as RocketMQ loads it: when the file is empty or holds no table (a
    process stopped inside MixAll.string2File, which writes the file last), the `.bak` copy that
    string2File keeps of the previous content (LocalFileOffsetStore.readLocalOffset ->
    readLocalOffsetBak; ConfigManager.load -> loadBak)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if "offsetTable" in text:
        return text, path
    bak = path.with_name(path.name + ".bak")
    if bak.is_file():
        btext = bak.read_text(encoding="utf-8", errors="replace")
        if "offsetTable" in btext:
            return btext, bak
    raise StoreReadError(f"{path}: no offsetTable" + (f" (nor in {bak.name})" if bak.is_file() else ""))


def read_broker_offsets(store_dir) -> Offsets | None:
    """The broker's committed offsets as `ConsumerOffsetManager.persist` last wrote them
    (`<store>/config/consumerOffset.json`, every flushConsumerOffsetInterval and at shutdown);
    None when the broker never wrote it."""
    path = Path(store_dir) / "config" / "consumerOffset.json"
    if not path.is_file():
        return None
    text, used = _text_or_bak(path)
    table = {}
    for m in _GROUP_TABLE.finditer(text):
        table[(m[1], m[2])] = {int(q): int(o) for q, o in _QUEUE_OFFSET.findall(m[3])}
    return Offsets(str(used), int(used.stat().st_mtime * 1000), None, None, table)


def read_local_offsets(run_dir) -> list[Offsets]:
    """Each broadcasting client's own offsets as `LocalFileOffsetStore.persistAll` last wrote
    them (`<user.home>/.rocketmq_offsets/<clientId>/<group>/offsets.json`: every
    persistConsumerOffsetInterval from 10 s after the client started, and at its shutdown)."""
    out = []
    for path in sorted((Path(run_dir) / ".rocketmq_offsets").glob("*/*/offsets.json")):
        text, used = _text_or_bak(path)
        table = {}
        for m in _MQ_KEY.finditer(text):
            f = {k: (s if s else int(v)) for k, v, s in _FIELD.findall(m[1])}
            if {"topic", "brokerName", "queueId"} <= f.keys():
                table[(f["topic"], f["brokerName"], int(f["queueId"]))] = int(m[2])
        out.append(Offsets(str(used), int(used.stat().st_mtime * 1000), path.parent.name, path.parent.parent.name,
                           table))
    return out
