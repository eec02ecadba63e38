"""`rocketspec check --emitter`: is the trace a faithful record at the level it declares?

Tells what the emitter (the code that wrote the trace) got wrong apart from what the client did:

- recorder: a side the trace does not declare but writes some of (a partial side is judged as the
  whole of it: docs/emitter.md); a kind every run of a declared side writes that never appears; a
  failed listener call with no send-back and an orderly client with no lock change, when the
  client's internals are declared; `obs` marks that look wrong: the errors that go away when the
  kinds a polling emitter marks (docs/emitter.md) are judged as sampled.
- client: every error left at the declared level once those marks are set.

Bad input (a malformed event, a missing field, events out of order) stays exit 2, at its line.
"""
from __future__ import annotations

import os
import tempfile

import orjson

from rocketspec.spec import invariants as inv
from rocketspec.spec import observation
from rocketspec.spec.replay import check_trace
from rocketspec.traces.io import read_events

# what every run of a side writes (a run with a consumer that consumed anything)
ALWAYS = {"broker": ("broker_started", "message_stored"),
          "client_reports": ("client_started", "consume_started", "consume_finished"),
          "client_internals": ("pq_created", "pull_issued", "pull_answered")}
# the kinds a polling emitter marks "sampled" (docs/emitter.md, "What an emitter must mark")
POLLED = ("offset_updated", "pq_created", "pq_dropped", "pq_removed", "pq_lock_changed", "offset_removed")
FAILED = {"RECONSUME_LATER", "SUSPEND_CURRENT_QUEUE_A_MOMENT", "ROLLBACK"}


def _errors(rep) -> dict:
    return {k: n for k, n in sorted(rep.findings.counts.items()) if n and inv.severity(k) == "error"}


def conformance(path: str, profile=None) -> dict:
    rep = check_trace(path, profile, max_listed=20)
    events = [e for _, e in read_events(path)]
    lv = rep.level
    present: dict[str, int] = {}
    for e in events:
        present[e["kind"]] = present.get(e["kind"], 0) + 1
    recorder = []
    undeclared: dict[str, set] = {}
    for e in events:
        s = observation.side_of(e)
        if s is not None and s not in lv.observed:
            undeclared.setdefault(s, set()).add(e["kind"])
    for s, ks in sorted(undeclared.items()):
        recorder.append(f"writes {', '.join(sorted(ks))} of the {s} side, which trace_started.observed does not "
                        f"declare: declare the side and write all of it, or leave it out")
    for s in observation.OBSERVED_SIDES:
        if s in lv.observed:
            for k in ALWAYS[s]:
                if k not in present:
                    recorder.append(f"left out {k}: the {s} side is declared, and every run of it writes {k}")
    if "client_internals" in lv.observed:
        failed = sum(1 for e in events if e["kind"] == "consume_finished" and e.get("status") in FAILED)
        if failed and "send_back_requested" not in present and not any(
                (e.get("config") or {}).get("consume_mode") == "ORDERLY" for e in events if e["kind"] == "client_started"):
            recorder.append(f"left out send_back_requested: {failed} listener calls failed and no send-back was written")
        if "pq_lock_changed" not in present and any(
                (e.get("config") or {}).get("consume_mode") == "ORDERLY" and (e.get("config") or {}).get(
                    "message_model", "CLUSTERING") == "CLUSTERING" for e in events if e["kind"] == "client_started"):
            recorder.append("left out pq_lock_changed: an orderly clustering client's ProcessQueue locks are never written")
    errors = _errors(rep)
    client = dict(errors)
    unmarked = {k for k in POLLED if any(e["kind"] == k and e.get("obs") is None for e in events)}
    if errors and unmarked:
        marked = [dict(e, obs="sampled") if e["kind"] in unmarked and e.get("obs") is None else e for e in events]
        with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as fh:
            fh.write(b"".join(orjson.dumps(e) + b"\n" for e in marked))
        try:
            again = _errors(check_trace(fh.name, profile, max_listed=0))
        finally:
            os.unlink(fh.name)
        gone = {k: n - again.get(k, 0) for k, n in errors.items() if n > again.get(k, 0)}
        if gone:
            recorder.append(f"obs marks: {', '.join(sorted(unmarked))} carry no mark (exact), but judged as sampled "
                            f"{', '.join(f'{n} {k}' for k, n in gone.items())} go away: a polling emitter marks them "
                            f"\"obs\": \"sampled\" (docs/emitter.md)")
            client = again
    return {"path": str(path), "observed": lv.to_dict()["observed"], "rules_judged": list(lv.judged),
            "recorder": recorder, "client": client,
            "client_examples": [f.to_dict() for f in rep.findings.errors if f.inv in client][:5],
            "verdict": "conforms" if not recorder and not client else "fails"}


def render(d: dict) -> str:
    out = [f"{d['path']}: emitter {'CONFORMS' if d['verdict'] == 'conforms' else 'FAILS'} at level "
           f"{', '.join(d['observed'])} ({len(d['rules_judged'])} rules judged)"]
    out.append("  your recorder:" + ("" if d["recorder"] else " nothing left out, marks consistent"))
    out += [f"    - {x}" for x in d["recorder"]]
    out.append("  your client:" + ("" if d["client"] else " no rule broken at this level"))
    out += [f"    - {k} x{n}: {inv.BY_ID[k].title if k in inv.BY_ID else 'guard of the action'}"
            for k, n in d["client"].items()]
    for v in d["client_examples"]:
        out.append(f"      e.g. line {v['line']} {v['event_kind']}: {v['message']}")
    return "\n".join(out)
