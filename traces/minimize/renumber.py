"""Consistent rewrites of a trace for reduction: free stored positions, compress time, renumber seq.

- `drop_messages(events, positions)`: remove stored messages from their queues. A queue's
  offsets are contiguous (the next message_stored continues at max_offset), so every offset of
  that queue above a removed one moves down: v -> v - |{removed < v}|, in every field that holds
  an offset of the queue; lists drop the removed offsets (and their parallel msg ids and counts);
  an ack_index moves with its batch. A pull answer or listener call left with no message goes,
  with the rest of its pull or call.
- `compress_time(events, cuts)`: cut intervals out of the time line; every absolute time
  (ts, deliver_ts, expires_at, updated_at, last_lock_ts) is mapped by the same monotone function.
- `fix_previous(events)`: offset_committed.previous follows the commits that remain.
- `renumber_seq(events)`: seq 0, 1, 2, ... as the schema promises.
"""
from __future__ import annotations

from bisect import bisect_left

from . import units
from ..kinds import KINDS
from .units import qkey

# fields holding an offset of the event's own queue (topic, broker, queue)
_SCALARS = ("offset", "next_offset", "min_offset", "max_offset", "commit_offset", "stored", "previous")
_LISTS = ("offsets", "broker_filtered", "client_filtered")
# lists that go with `offsets`, position by position
_PARALLEL = ("msg_ids", "origin_msg_ids", "reconsume_list")
# kinds whose offset is not in the queue the event names (the schedule topic's queue)
_OTHER_QUEUE = frozenset(n for n, k in KINDS.items() if k.renumber == "other_queue")

# events of a listener call that name its messages
_CALL_KINDS = frozenset(n for n, k in KINDS.items() if k.renumber == "call")

TIME_FIELDS = ("ts", "deliver_ts", "expires_at", "updated_at", "last_lock_ts")


def drop_messages(events: list[dict], positions) -> list[dict]:
    """`events` without the stored messages at `positions` ((topic, broker, queue, offset)), every
    later offset of their queues renumbered. Events are copied where changed, never mutated."""
    removed: dict[tuple, list[int]] = {}
    for t, b, q, o in positions:
        removed.setdefault((t, b, q), []).append(o)
    if not removed:
        return list(events)
    gone = {k: set(v) for k, v in removed.items()}
    low = {k: sorted(v) for k, v in removed.items()}
    fields = _kind_fields()
    out: list[dict] = []
    dead: set[int] = set()        # positions in `out` of events left with no message
    batch_cut: dict = {}          # (client, consume_id) -> batch positions removed
    for ev in events:
        k = qkey(ev)
        rm = gone.get(k) if k is not None else None
        if rm is None:
            out.append(ev)
            continue
        kind = ev["kind"]
        if kind == "message_stored" and ev["offset"] in rm:
            continue
        scalars, lists = fields.get(kind, _NONE)
        lo = low[k]
        first = lo[0]
        if kind != "consume_finished" and not (
                any(type(v) is int and v > first for v in map(ev.get, scalars))
                or any(v and max(v) >= first for v in map(ev.get, lists))):
            out.append(ev)          # nothing at or above the lowest removed offset: unchanged
            continue
        new = dict(ev)
        for f in scalars:
            v = new.get(f)
            if type(v) is int and v > first:
                new[f] = v - bisect_left(lo, v)
        had_any = left_any = False
        for f in lists:
            v = new.get(f)
            if not v:
                continue
            had_any = True
            keep = [j for j, o in enumerate(v) if o not in rm]
            if len(keep) != len(v):
                if f == "offsets":
                    for p in _PARALLEL:
                        pv = new.get(p)
                        if isinstance(pv, list) and len(pv) == len(v):
                            new[p] = [pv[j] for j in keep]
                    if kind == "consume_started":
                        batch_cut[(ev["client"], ev["consume_id"])] = [j for j, o in enumerate(v) if o in rm]
            new[f] = [v[j] - bisect_left(lo, v[j]) for j in keep]
            left_any = left_any or bool(keep)
        if kind == "consume_finished":
            cut = batch_cut.get((ev["client"], ev["consume_id"]))
            a = new.get("ack_index")
            if cut and type(a) is int and a >= 0:
                new["ack_index"] = a - sum(1 for j in cut if j <= a)
        if had_any and not left_any:
            dead.add(len(out))
        out.append(new)
    if not dead:
        return out
    # a pull that brought no message, a call that consumed none: gone with the rest of them
    drop = set(dead)
    dead_kinds = {out[i]["kind"] for i in dead}
    for kind, kinds in (("pull", {"pull_answered"}), ("consume", _CALL_KINDS)):
        if dead_kinds & kinds:
            for idx in units.units(kind, out).values():
                if not dead.isdisjoint(idx):
                    drop.update(idx)
    return [ev for i, ev in enumerate(out) if i not in drop]


_NONE: tuple = ((), ())
_FIELDS: dict = {}


def _kind_fields() -> dict:
    """kind -> (offset scalars, offset lists) it may carry (traces/schema_v2.json); a kind whose
    offset is in another queue than the one it names (the schedule topic's) carries none here."""
    if not _FIELDS:
        from ..schema import kinds

        for kind, kd in kinds().items():
            if kind in _OTHER_QUEUE:
                continue
            names = set(kd["required"]) | set(kd["optional"])
            _FIELDS[kind] = (tuple(f for f in _SCALARS if f in names), tuple(f for f in _LISTS if f in names))
    return _FIELDS


def fix_previous(events: list[dict]) -> list[dict]:
    """Recompute offset_committed.previous (the value the broker's table held before) from the
    events that remain: the last commit or reload of that queue, none after a broker restart."""
    table: dict = {}
    out = events
    copied = False
    for i, ev in enumerate(events):
        kind = ev["kind"]
        if kind == "offset_committed":
            k = (ev["broker"], ev["group"], ev["topic"], ev["queue"])
            if "previous" in ev and ev["previous"] != table.get(k) and ev.get("obs") != "sampled":
                if not copied:
                    out, copied = list(events), True
                out[i] = {**ev, "previous": table.get(k)}
            table[k] = ev["offset"]
        elif kind == "offset_loaded" and ev["store"] == "broker":
            table[(ev["broker"], ev["group"], ev["topic"], ev["queue"])] = ev["offset"]
        elif kind == "broker_restarted":
            b = ev["broker"]
            for k in [k for k in table if k[0] == b]:
                del table[k]
    return out


def time_map(cuts):
    """The monotone map that cuts the intervals [start, start + length) out of the time line."""
    cuts = sorted((s, n) for s, n in cuts if n > 0)

    def f(x):
        d = 0
        for s, n in cuts:
            if x <= s:
                break
            d += min(n, x - s)
        return x - d
    return f


def compress_time(events: list[dict], cuts) -> list[dict]:
    """`events` with every absolute time mapped through `time_map(cuts)`."""
    f = time_map(cuts)
    out = []
    for ev in events:
        new = None
        for name in TIME_FIELDS:
            v = ev.get(name)
            if type(v) is int:
                w = f(v)
                if w != v:
                    if new is None:
                        new = dict(ev)
                    new[name] = w
        out.append(ev if new is None else new)
    return out


def renumber_seq(events: list[dict]) -> list[dict]:
    return [ev if ev.get("seq") == i else {**ev, "seq": i} for i, ev in enumerate(events)]
