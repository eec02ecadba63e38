"""Orderly commits whose polled offset_updated comes late, derived from real recordings.

ConsumeMessageOrderlyService.processConsumeResult (4.9.8, 5.x) commits the ProcessQueue and
updates the offset store right after the consume hook (consume_finished). The recorder sees
the store only by polling (offset_updated, obs sampled), so the sample can arrive after a pull
(commitOffset) or a persist that already carries the new value. A window is one such commit in
a real trace: its sample, the first proof after the sample that carries the same value, and the
next event that settles the commit anyway. Moving the sample to any position between the proof
and that event is a reordering the recorder's sampling can produce, and nothing else changes."""
from __future__ import annotations

from typing import NamedTuple

# events that settle a due orderly commit of their client and queue (spec/actions: _settle)
SETTLING = {"consume_started", "messages_taken", "offset_updated", "pq_dropped", "pq_removed"}
CLIENT_SETTLING = {"client_stopped", "client_crashed"}


class Window(NamedTuple):
    sample: int         # index of the sampled offset_updated of the commit
    proof: int          # index of the first pull_issued / offset_persisted carrying its value
    settle: int         # index of the next settling event (len(evs) if none)
    value: int


def _carried(e):
    k = e["kind"]
    if k == "pull_issued":
        return e.get("commit_offset")
    if k == "offset_persisted":
        return e.get("offset")
    return None


def windows(evs: list[dict]) -> list[Window]:
    """Each orderly commit of `evs` whose sample precedes a proof of it with no settling event
    between (the candidates for a late sample)."""
    out = []
    open_: dict[tuple, dict] = {}      # (client, topic, queue) -> the commit being followed
    for i, e in enumerate(evs):
        k = e["kind"]
        cid = e.get("client")
        if k in CLIENT_SETTLING:
            for q in [q for q in open_ if q[0] == cid]:
                _close(open_.pop(q), i, out)
            continue
        q = (cid, e.get("topic"), e.get("queue"))
        if k == "consume_finished":
            if q in open_:
                _close(open_.pop(q), i, out)
            if e.get("status") in ("SUCCESS", "COMMIT") and not e.get("dropped") and e.get("offsets"):
                open_[q] = {"value": max(e["offsets"]) + 1, "sample": None, "proof": None}
            continue
        c = open_.get(q)
        if c is None:
            continue
        if k == "offset_updated" and c["sample"] is None:
            if e.get("obs") == "sampled" and e["stored"] == c["value"]:
                c["sample"] = i
                continue
            del open_[q]
            continue
        if c["sample"] is not None and c["proof"] is None and _carried(e) == c["value"]:
            c["proof"] = i
        if k in SETTLING:
            _close(open_.pop(q), i, out)
    for c in open_.values():
        _close(c, len(evs), out)
    return out


def _close(c, settle, out):
    if c["sample"] is not None and c["proof"] is not None:
        out.append(Window(c["sample"], c["proof"], settle, c["value"]))


def move_sample(evs: list[dict], w: Window, after: int, obs: str | None = "sampled") -> list[dict]:
    """A copy of `evs` with the window's sample moved to just after index `after` (proof <= after
    < settle), its ts that of the event it now follows (seen then). `obs=None` marks it exact."""
    assert w.proof <= after < w.settle, (w, after)
    out = [dict(e) for e in evs]
    late = out[w.sample]
    late["ts"] = out[after]["ts"]
    if obs is None:
        late.pop("obs", None)
    else:
        late["obs"] = obs
    out.insert(after + 1, late)
    del out[w.sample]
    return out
