"""Random real runs judged twice: white-box by `check`, black-box by RocketMQ's own records.

For each seed: the random scenario (conformance.random_scenarios) is recorded on real RocketMQ
4.9.8 with message tracing on (`rocketspec record --msgtrace`); `check` judges the recorded
trace; and an oracle made only from what RocketMQ itself kept judges what a user would lose:
the message-trace topic's records (sends, listener calls, reconsume counts, results), the
dead-letter copies in the broker's commit log (conformance.store_contents), the operator's own
steps (offset resets) and, for sharding-keyed producers, the key each message was sent with.
The oracle is declared complete when the driver saw RocketMQ settle (trace_ended quiescent:
nothing in the schedule topic, every queue's committed offset at its end, and, for a client
under test, every live client registered in its group), else lossy.

Each run is classified (docs/recorder.md, "Random real runs"):
- agreed: both hold, or every guarantee the oracle finds violated is matched by an invariant
  check reports for it;
- false alarm: check fails an invariant whose effect the oracle judges (its guarantee was not
  skipped), and the oracle holds; or check refuses the recorded trace;
- missed loss: the oracle finds a guarantee violated that no invariant of check matches;
- white-box-only finding: check fails only invariants the black-box level cannot see here (to
  be explained, docs/notes/real-random.md);
- expected loss (break): the scenario breaks an assumption on purpose (its "breaks"), and check
  fails only invariants a break expects, each violation naming that break's cause, besides what
  the oracle's own findings explain (a failure the break does not explain is still classified
  as above); or the oracle finds a guarantee violated only in the groups of breaks that expect
  an invariant check could not judge at the trace's observation level (check.json's
  rules_not_judged: a client under test's trace has no pull answers for INV-SUB-1), which the
  user sees as that guarantee's violation;
- incomplete: the run did not finish (its time bound, or the driver failed), or RocketMQ's
  records of it could not be read;
- error: judging the run failed (a bug in rocketspec).
"""
from __future__ import annotations

import collections
import json
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from .random_scenarios import generate, history_groups, write

# What the oracle reads of a run, by version (written to oracle.json and result.json; the
# records are described in docs/scenarios.md, "Random scenarios"):
# 1 message traces, the commit log's dead letters, the scenario's offset resets;
# 2 also the group membership changes of RocketMQ's client log (conformance.client_log);
# 3 also the commit log's %RETRY% copies, and the steps placed by the driver's steps.json;
# 4 a POP group's copies in its POP retry topic, named by the group;
# 5 H-DELIVER-1 lists the messages it left unjudged, by group and reason ("unjudged_messages");
# 6 each violated guarantee counts its findings by group ("findings_by_group", when it kept them all);
# 7 a SimpleConsumer group's deliveries from the client program's reports (conformance.simple_reports):
#   the gRPC client writes no message trace; a SIGKILL of a SimpleConsumer hides none of them; a
#   SimpleConsumer group starts at the queue's first message (the proxy pops with init mode MAX).
# 8 H-DELIVER-1 leaves a message whose deliveries failed and which an operator reset then passed
#   unjudged (FAILED_THEN_RESET: the records do not show whether its send-back was tried), where 7
#   excused it as skipped by the reset; result.json names the version "oracle_version" (its
#   "oracle" is the violated guarantees)
ORACLE_VERSION = 8

# The invariants of check whose violation a user would see as each guarantee's violation.
# (INV-BCAST-1 is seen as none: a broadcasting client's send-back, or a broker commit of a
# broadcasting group, takes no message from any client; 4.9.8's orderly path sends a message each
# client failed to a group-wide DLQ, docs/notes/real-random.md, seed 208)
SEEN_AS = {
    "H-DELIVER-1": {"INV-LOSS-1", "INV-LIVE-1", "INV-OFFSET-3", "INV-FILTER-1", "INV-SUB-1", "INV-POP-LOSS-1"},
    "H-RETRY-1": {"INV-RETRY-1"},
    "H-RETRY-2": {"INV-RETRY-3"},
    "H-RETRY-3": {"INV-RETRY-1", "INV-RETRY-2", "INV-DLQ-1"},
    "H-ORDER-1": {"INV-ORDER-1", "INV-OWNER-2", "INV-LOCK-1"},
    "H-ORDER-2": {"INV-ORDER-2"},
    "H-DUP-1": {"INV-ORDER-3", "INV-OFFSET-2", "INV-OFFSET-3", "INV-START-1", "INV-DROP-1", "INV-CLIENT-1"},
}
# Invariants that can cause a guarantee's violation without always showing in it: a violation of
# the guarantee with one of these failing is no missed loss, but their failing alone does not make
# the guarantee's holding a false alarm. Two consumers inside an orderly queue (a lease outliving
# the broker's lock) hand a later offset out before the earlier owner's held ones: per-key order
# breaks across consumers, which INV-ORDER-2 (one ProcessQueue's batches) cannot see. A POP
# message's attempts are its receives (the broker's per-offset count of an orderly queue, a revived
# copy's reconsume times), and the oracle counts listener calls: a message received and left to its
# invisible time (a client killed while its receive was in flight, a FIFO batch stopped before it)
# is an attempt check counts past the limit where the oracle sees fewer failed calls.
CAUSES = {
    "H-ORDER-2": {"INV-ORDER-1", "INV-OWNER-2", "INV-LOCK-1"},
    "H-RETRY-1": {"INV-POP-DLQ-1"},
}
# Guarantees that can only fail on an absence: judged only when the oracle is complete.
ABSENCE = {"H-DELIVER-1"}
CHECK_REFUSED = "CHECK-REFUSED"   # check exit 2 on a real trace: it refused what RocketMQ did

CLASSES = ("agreed", "expected loss (break)", "false alarm", "missed loss", "finding", "incomplete", "error")
BREAK = "expected loss (break)"


@dataclass
class RunResult:
    seed: int
    cls: str
    check_ids: dict = field(default_factory=dict)     # invariant -> errors
    oracle_ids: list = field(default_factory=list)    # violated guarantees
    blamed: list = field(default_factory=list)        # the invariants or guarantees that decided the class
    events: int = 0
    ended: str | None = None
    seconds: float = 0.0
    note: str = ""
    folder: str = ""
    recorder: str = ""       # digest of the recorder's sources the run was recorded with
    oracle: int = 0          # ORACLE_VERSION the run was last judged with (0: never judged)
    breaks: list = field(default_factory=list)        # the scenario's deliberate breaks, "kind:target"
    named: list = field(default_factory=list)         # the invariants check failed naming a break's cause

    def to_dict(self):
        return {"seed": self.seed, "class": self.cls, "check": self.check_ids, "oracle": self.oracle_ids,
                "blamed": self.blamed, "events": self.events, "ended": self.ended,
                "seconds": round(self.seconds, 1), "note": self.note, "folder": self.folder,
                "recorder": self.recorder, "oracle_version": self.oracle, "breaks": self.breaks, "named": self.named}


def recorder_digest() -> str:
    """SHA-256 (first 16 hex digits) of the recorder's sources, Java and the 5.x line's logging
    configuration (shared and per release line): which recorder made a run."""
    import hashlib

    import rocketspec.traces

    h = hashlib.sha256()
    base = Path(rocketspec.traces.__file__).resolve().parent / "recorder"
    for path in sorted(p for p in base.rglob("*") if p.suffix in (".java", ".xml")):
        h.update(str(path.relative_to(base)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def classify(check_ids: dict, oracle: dict, unseen=frozenset(), named=frozenset(),
             unjudged_breaks=None) -> tuple[str, list]:
    """(class, blamed) from check's failing invariants (id -> count; CHECK_REFUSED when it refused
    the trace), the oracle's report (HistoryReport.to_dict), `unseen`: invariants whose every
    violation concerns what the oracle cannot see in this run (a broadcasting group: message-trace
    bodies name no consumer), `named`: invariants a deliberate break of the scenario expects,
    every violation of which names that break's cause (break_named), and `unjudged_breaks`:
    {guarantee: invariants} of the violated guarantees that deliberate breaks explain although
    check could not judge their invariants at the trace's level (break_unjudged)."""
    if CHECK_REFUSED in check_ids:
        return "false alarm", [CHECK_REFUSED]
    unjudged_breaks = unjudged_breaks or {}
    status = {g["id"]: g["status"] for g in oracle["guarantees"]}
    violated = [g for g, s in status.items() if s == "violated"]
    failing = set(check_ids)
    missed = [g for g in violated if not failing & (SEEN_AS.get(g, set()) | CAUSES.get(g, set()))]
    # a loss a declared break explains, where check could not judge the break's invariant, is the
    # break's expected loss, not one check missed
    excused = set().union(*(unjudged_breaks[g] for g in missed if g in unjudged_breaks)) if missed else set()
    missed = [g for g in missed if g not in unjudged_breaks]
    if missed:
        return "missed loss", missed
    explained = set().union(*(SEEN_AS.get(g, set()) | CAUSES.get(g, set()) for g in violated)) if violated else set()
    by_break = (failing - explained) & set(named)
    extra = failing - explained - by_break
    if not extra:
        return (BREAK, sorted(by_break | excused)) if by_break or excused else ("agreed", violated)
    judged = {g for g, s in status.items() if s != "skipped" and (g not in ABSENCE or oracle.get("complete"))}
    visible = set().union(*(SEEN_AS.get(g, set()) for g in judged)) if judged else set()
    alarms = sorted((extra & visible) - set(unseen))
    if alarms:
        return "false alarm", alarms
    return "finding", sorted(extra)


def break_named(check_json: dict, sc: dict) -> set:
    """The invariants check failed that the scenario's deliberate breaks explain: a break expects
    the invariant, and each of its listed violations names that break's cause (after "cause:"
    in check's message, or, for INV-SUB-1, the differing subscriptions themselves). A violation
    that names no break keeps its invariant out: it is judged as any other."""
    breaks = sc.get("breaks") or []
    ok: dict = {}
    for v in check_json.get("violations", []):
        if v.get("severity", "error") != "error":
            continue
        inv = v["invariant"]
        ok[inv] = ok.get(inv, True) and any(inv in b["expect"] and _names_cause(v, b, sc) for b in breaks)
    return {i for i, yes in ok.items() if yes and len([v for v in check_json["violations"] if v["invariant"] == i])
            == check_json["counts"].get(i)}


def break_unjudged(check_json: dict, sc: dict, oracle: dict) -> dict:
    """{guarantee: invariants} of the violated guarantees of `oracle` whose every finding is in a
    group that a deliberate break of the scenario targets, the break expecting an invariant that
    protects that guarantee (SEEN_AS) and that check did not judge at all at the trace's level
    (check.json's rules_not_judged; a rule judged in part could have named the break). The
    invariants are those breaks' unjudged ones. A guarantee whose findings are not all counted by
    group (an oracle before version 6, or findings past what it kept) is explained by none."""
    not_judged = {r["rule"] for r in check_json.get("rules_not_judged") or []}
    breaks = sc.get("breaks") or []
    out: dict = {}
    for g in oracle.get("guarantees", []):
        by_group = g.get("findings_by_group")
        if g["status"] != "violated" or not by_group or sum(by_group.values()) != g["findings"]:
            continue
        invs: set = set()
        for group in by_group:
            hit = {i for b in breaks if b["target"] == group
                   for i in set(b["expect"]) & SEEN_AS.get(g["id"], set()) & not_judged}
            if not hit:
                break
            invs |= hit
        else:
            out[g["id"]] = invs
    return out


def _names_cause(v: dict, b: dict, sc: dict) -> bool:
    """Whether check's violation `v` names break `b` as its cause."""
    msg = v.get("message", "")
    cause = msg.split("cause:", 1)[1] if "cause:" in msg else ""
    group = (v.get("key") or {}).get("group")
    if b["kind"] == "pause_past_lease":
        return b["target"] in cause and "pause" in cause
    if b["kind"] == "lock_shorter_than_lease":
        lease = sc.get("real", {}).get("client_lock_max_live_ms")
        lock = sc.get("broker_config", {}).get("lock_max_live_ms")
        return "the broker lock is not longer than the client lease" in cause or \
            (f"client lease {lease} ms" in cause and f"broker lock {lock} ms" in cause)
    if b["kind"] == "overlong_call":
        return group == b["target"] and "listener call has run" in cause and "outlived the lease margin" in cause
    if b["kind"] == "subscriptions_differ":
        return group == b["target"] and "subscribe" in msg and "differently" in msg
    return False


_DELAY_LEVEL = re.compile(r"\(delay level (\d+)\)")


def unseen_invariants(check_json: dict, sc: dict, oracle: dict | None = None) -> set:
    """Invariants all of whose listed violations the oracle cannot see in this run: about a
    broadcasting group whose consumers the message traces do not name (their bodies name none;
    the oracle names the consumer of a group that had one all run: `broadcast_named`), or
    INV-DLQ-1 on a DLQ copy whose detour through the schedule is no longer than H-RETRY-3's
    window (the scenario's delay level of that copy is at most DLQ_PROMPT_MS), or a violation whose
    cause check names as a known upstream RocketMQ bug (`_known_bug_cause`): such a window is seen
    by the oracle only through its consequence, a loss or a duplicate, and then the guarantee's own
    violation decides the run; or the loss of one named message that the oracle's H-DELIVER-1 left
    unjudged for the violation's group (`_unjudged_loss`: a consumer of the group killed, sent before
    the group's first consumption, a filter the message traces cannot evaluate, ...)."""
    from rocketspec.spec.history.guarantees import DLQ_PROMPT_MS

    named = set((oracle or {}).get("broadcast_named", {}))
    broadcast = {g["name"] for g in sc["groups"] if g.get("message_model") == "BROADCASTING"} - named
    levels = _delay_levels_ms(sc)
    unjudged = unjudged_by_group(oracle, "H-DELIVER-1")
    by_id: dict = {}
    for v in check_json.get("violations", []):
        group = (v.get("key") or {}).get("group")
        lvl = _DELAY_LEVEL.search(v.get("message", "")) if v["invariant"] == "INV-DLQ-1" else None
        short = lvl is not None and 0 < int(lvl[1]) <= len(levels) and levels[int(lvl[1]) - 1] <= DLQ_PROMPT_MS
        by_id.setdefault(v["invariant"], []).append(group in broadcast or short or _known_bug_cause(v)
                                                    or _BLIND in v.get("message", "")
                                                    or _unjudged_loss(v, unjudged))
    return {i for i, unseen in by_id.items() if unseen and all(unseen) and len(unseen) == check_json["counts"].get(i)}


# Violations that report the loss of one message they name, "(<id>)" before the cause, by the
# words that make them one: the user sees such a loss, if at all, as H-DELIVER-1's. (A message a
# POP consumer acked past its retries that no listener call received; a broker commit past a
# message a listener call declared not consumed, never sent back nor delivered again.)
_LOSS_OF_NAMED = {"INV-POP-LOSS-1": "no listener call ever received the message",
                  "INV-OFFSET-3": "declared not consumed"}
_NAMED_ID = re.compile(r"\(([0-9A-F]{32,})\)")


def unjudged_by_group(oracle: dict | None, guarantee: str) -> dict:
    """{group: {message id or store id: why}} of the messages `guarantee` left unjudged (oracle.json
    from version 5: its "unjudged_messages"; none before)."""
    v = next((g for g in (oracle or {}).get("guarantees", []) if g["id"] == guarantee), None)
    out: dict = {}
    for group, by_why in ((v or {}).get("unjudged_messages") or {}).items():
        ids = out.setdefault(group, {})
        for why, rows in by_why.items():
            for mid, stored, _who in rows:
                for i in (mid, *stored):
                    ids.setdefault(i, why)
    return out


def _unjudged_loss(v: dict, unjudged: dict) -> bool:
    """Whether violation `v` reports the loss of one named message that the oracle left unjudged
    for the violation's group: the message traces could not have shown that loss."""
    words = _LOSS_OF_NAMED.get(v["invariant"])
    msg = v.get("message", "")
    if words is None or words not in msg:
        return False
    named = _NAMED_ID.findall(msg.split("cause:", 1)[0])
    group = (v.get("key") or {}).get("group")
    return len(named) == 1 and named[0] in unjudged.get(group, {})


# check's words for a cause whose effect the message traces cannot carry (spec.actions.retry
# _count_lost_cause: a %RETRY% copy's count lost in a retried producer send)
_BLIND = "a count the message traces never show"
_UPSTREAM_BUG = re.compile(r"(?:apache/rocketmq)?#\d{3,5}\b")


def _known_bug_cause(v: dict) -> bool:
    """Whether check's violation names an upstream RocketMQ issue (apache/rocketmq#N, or #N) as its cause:
    the white-box level saw RocketMQ's own defect at work (e.g. #4206, a reset overwritten by a
    pull answered after it), which a run without a crash or a move of the queue repairs unseen."""
    msg = v.get("message", "")
    return "cause:" in msg and bool(_UPSTREAM_BUG.search(msg.split("cause:", 1)[1]))


def _delay_levels_ms(sc: dict) -> list[int]:
    """The broker's delay levels in ms (messageDelayLevel: 1s 5s 10s 30s 1m ... ; 4.9.8's default)."""
    text = sc.get("broker_config", {}).get("message_delay_level") or \
        "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    unit = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
    return [int(x[:-1]) * unit[x[-1]] for x in text.split()]


def declared_groups(sc: dict) -> dict:
    """What the history is told of each group (`rocketspec history --groups`): the message traces'
    missing settings, and where the group starts (each run's broker is new, so is each group)."""
    out = history_groups(sc)
    for g in sc["groups"]:
        if g.get("client_type") == "SIMPLE":
            # A SimpleConsumer has no consume-from-where: the proxy pops with ConsumeInitMode.MAX
            # (ReceiveMessageActivity, 5.5.0), and the broker starts a group with no offset at 0
            # while the queue's minimum is 0 and offset 0 is in memory (PopMessageProcessor.
            # getInitOffset, initPopOffsetByCheckMsgInMem, on by default), as in every run's new
            # broker and store of a few MB: it owes the group every message from the first.
            out[g["name"]]["consume_from_where"] = "CONSUME_FROM_FIRST_OFFSET"
        elif g.get("consume_from_where"):
            out[g["name"]]["consume_from_where"] = g["consume_from_where"]
    return out


def oracle_report(sc: dict, msgtrace: Path, store_dir: Path, t0: int | None, complete: bool):
    """The black-box judgement of one real run from RocketMQ's records (see the module's doc);
    `store_dir` is the broker's store in the run's folder (`<run>/store`)."""
    from rocketspec.spec.history import check_history, load_history
    from rocketspec.traces.history.model import DeadLetter, Disruption, Reset

    from .client_log import failed_trace_bodies, read_changes
    from .store_contents import read_broker_offsets, read_commit_log, read_local_offsets

    # the bodies a dispatcher failed to send are in RocketMQ's log: read with the ones it sent
    failed = failed_trace_bodies(Path(store_dir).parent)
    if failed:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            both = Path(tmp) / "msgtrace.txt"
            both.write_bytes(Path(msgtrace).read_bytes() + ("\n".join(failed) + "\n").encode())
            h = load_history(str(both), "msgtrace", complete, declared_groups(sc))
        h.notes.append(f"{len(failed)} message-trace bod{'y' if len(failed) == 1 else 'ies'} a client failed to send, "
                       "read from RocketMQ's log ('send trace data failed')")
    else:
        h = load_history(str(msgtrace), "msgtrace", complete, declared_groups(sc))
    _ack_index_results(sc, h)
    # Sharding keys make H-ORDER-2 judgeable by key; not on a topic an orderly broadcasting group
    # reads: each of its consumers is a stream, and message-trace bodies name no consumer
    bcast = {t for g in sc["groups"] if g.get("message_model") == "BROADCASTING" and g.get("consume_mode") == "ORDERLY"
             for t in g["subscriptions"]}
    keyed = {p["topic"] for p in sc["producers"] if p.get("sharding_keys")} - bcast
    for p in h.produces:
        if p.topic in keyed and p.keys:
            # the producer's selector sends by this key (record's driver); producers of two topics
            # draw from the same key names, so a stream is a topic's key
            p.sharding_key = f"{p.topic}/{p.keys}"
    stored = read_commit_log(store_dir)
    simple_ids = _simple_deliveries(sc, h, Path(store_dir).parent, stored)
    # The trace dispatcher drops records it cannot send (no route to RMQ_SYS_TRACE_TOPIC yet, a full
    # queue): a message the store holds with no Pub record shows it, and then nothing is complete.
    topics = {t["name"] for t in sc["topics"]}
    published = {p.id for p in h.produces}
    unpublished = {m.properties.get("UNIQ_KEY") for m in stored if m.topic in topics} - published
    if unpublished and complete:
        h.complete = h.declared_complete = False
        h.notes.append(f"{len(unpublished)} message(s) in the store have no Pub record: the trace dispatcher dropped "
                       "records, so the history is judged lossy")
    # the %RETRY% copies the store holds: a failure's send-back reached the broker; for a POP
    # group, revive stored the copy in the group's POP retry topic %RETRY%<group>_<topic> (a copy
    # past maxReconsumeTimes is then acked unconsumed: the push consumer in POP mode has no DLQ,
    # DefaultMQPushConsumerImpl.processPopResult)
    pop_retry = pop_retry_groups(sc)
    for m in stored:
        if m.topic.startswith("%RETRY%") and "UNIQ_KEY" in m.properties:
            key = (pop_retry.get(m.topic, m.topic[len("%RETRY%"):]), m.properties["UNIQ_KEY"])
            h.retried[key] = max(h.retried.get(key, 0), m.reconsume_times)
    dead = []
    for m in stored:
        if m.topic.startswith("%DLQ%") and "UNIQ_KEY" in m.properties:
            dead.append(DeadLetter(m.topic[len("%DLQ%"):], m.properties["UNIQ_KEY"], m.store_ts, m.reconsume_times,
                                   where=f"commitlog@{m.physical_offset}"))
    refused = refused_steps(Path(store_dir).parent)
    when = step_clock(Path(store_dir).parent, t0)
    resets = [Reset(when(st), st["group"]) for st in sc["steps"]
              if st["action"] == "reset_offset" and t0 is not None
              and (st["at_ms"], st["group"], st["topic"]) not in refused]
    h.dead_letters = dead
    h.resets = resets
    h.observes = frozenset(h.observes | {"dead_letters", "resets"})
    h.notes.append(f"{len(dead)} dead letter(s) from the broker's commit log; {len(resets)} operator reset(s) "
                   "from the scenario's steps" + (f" ({len(refused)} refused by the broker, not counted)"
                                                  if refused else ""))
    # who held the queues when: a redelivery across owners is at-least-once, not a retry past the limit
    changes, note = read_changes(Path(store_dir).parent)
    h.disruptions = [Disruption(c.ts, c.what, c.group, c.client, f"{c.detail} (client log line {c.line})")
                     for c in changes]
    # A SIGKILLed client never sends the message-trace records its AsyncTraceDispatcher still
    # holds: each killed client is "killed" when the broker saw its channel close (the client
    # log's first "left" of it after the step; at the run's end if none)
    for s in sc["steps"]:
        if s.get("action") != "crash":
            continue
        cid = _killed_id(sc, s, simple_ids) or f"127.0.0.1@{s['client']}"
        after = when(s) if t0 is not None else s.get("at_ms", 0)
        if s["client"] in simple_ids:
            # a SimpleConsumer's calls are its program's reports, each written and flushed as it
            # happens: a SIGKILL loses none of them, so the kill is a fault and hides nothing (the
            # broker logs no leave of a killed gRPC client: the proxy holds its channel)
            h.disruptions.append(Disruption(after, "crashed", group_of_client(sc, s["client"]), cid,
                                            "SIGKILL (scenario step) of a SimpleConsumer"))
            continue
        gone = [c.ts for c in changes if c.what == "left" and c.client == cid and c.ts >= after]
        group = next((st.get("group") for st in sc["steps"] if st.get("client") == s["client"] and st.get("group")), None)
        h.disruptions.append(Disruption(min(gone) if gone else 2 ** 62, "killed", group, cid,
                                        "SIGKILL (scenario step)"))
    h.disruptions.sort(key=lambda d: d.ts)
    if changes:
        h.observes = frozenset(h.observes | {"membership"})
    h.notes.append(note)
    local = read_local_offsets(Path(store_dir).parent)
    named = _name_lone_consumers(sc, h, changes, local)
    h.stream = []   # judged in time order, message traces and store records together
    rep = check_history(h, list_unjudged=True)
    _name_stored_copies(rep, stored)
    rep.broadcast_named = named
    rep.offsets = _offsets_summary(read_broker_offsets(store_dir), local)
    rep.positions_judged = []
    rep.positions = _positions(h, local, changes, stored, rep.positions_judged) if h.complete else []
    return rep


def _simple_deliveries(sc: dict, h, run_dir: Path, stored) -> dict:
    """A SimpleConsumer group's consume records, which no message trace holds, from the client
    program's reports (conformance.simple_reports); {scenario client: its reported client ids}."""
    from .simple_reports import read_simple_consumes, simple_groups

    groups = simple_groups(sc)
    if not groups:
        return {}
    consumes, ids, problems = read_simple_consumes(sc, run_dir, stored)
    for name in groups:
        h.group(name).pop = "SIMPLE"
    for c in consumes:
        h.keep(c)
    h.notes.append(f"{len(consumes)} SimpleConsumer deliveries of {', '.join(sorted(groups))} from the client "
                   "program's reports (the gRPC client writes no message trace)")
    if problems:
        h.notes.append(f"{len(problems)} unreadable client report line(s), the first {problems[0]}: lossy")
        h.complete = h.declared_complete = False
    return ids


def group_of_client(sc: dict, client: str) -> str | None:
    return next((st.get("group") for st in sc["steps"] if st.get("client") == client and st.get("group")), None)


def _killed_id(sc: dict, step: dict, ids: dict) -> str | None:
    """The client id a SimpleConsumer life killed by `step` reported (its lives in start order)."""
    lives = ids.get(step["client"])
    if not lives:
        return None
    n = sum(1 for st in sc["steps"] if st["action"] == "start" and st["client"] == step["client"]
            and st["at_ms"] <= step["at_ms"])
    return lives[min(max(n, 1), len(lives)) - 1]


def _name_stored_copies(rep, stored) -> None:
    """Each message a guarantee left unjudged, named also by the broker's id of each stored copy of
    it (the original, its %RETRY% and POP retry copies, its dead letter: one UNIQ_KEY), which is how
    the recorder's trace, and so check, names a message: [[message id, [store ids], consumer]]."""
    copies = collections.defaultdict(set)
    for m in stored:
        if "UNIQ_KEY" in m.properties and m.store_id:
            copies[m.properties["UNIQ_KEY"]].add(m.store_id)
    for v in rep.verdicts:
        for by_why in (v.unjudged_messages or {}).values():
            for why, rows in by_why.items():
                by_why[why] = [[mid, sorted(copies.get(mid, set()) | ({sid} if sid else set())), who]
                               for mid, sid, who in rows]


def pop_retry_groups(sc: dict) -> dict:
    """{POP retry topic: group} for the scenario's POP groups (both of KeyBuilder's namings)."""
    from rocketspec.rocketmq.pop import pop_retry_topic

    return {pop_retry_topic(g["name"], t, v2): g["name"] for g in sc["groups"]
            if g.get("client_type", "PUSH") != "PUSH" for t in g["subscriptions"] for v2 in (False, True)}


def _ack_index_results(sc: dict, h) -> None:
    """A concurrent listener's ackIndex, which the message traces do not carry: 4.9.8's trace hook
    writes one SubAfter per call, success = (status == CONSUME_SUCCESS), for every message of the
    batch (ConsumeMessageTraceHookImpl.consumeMessageAfter), while processConsumeResult takes the
    messages past ackIndex as failed (sent back; dropped when broadcasting). The scenario's
    listener sets the same ackIndex on every call, so those messages' deliveries are failures.
    A SubAfter's messages come in the batch's order (the hook's trace beans, in msgs' order)."""
    ack = {g["name"]: g["listener"]["ack_index"] for g in sc["groups"]
           if g.get("consume_mode", "CONCURRENTLY") == "CONCURRENTLY" and "ack_index" in (g.get("listener") or {})}
    if not ack:
        return
    batches = collections.defaultdict(list)
    for c in h.consumes:
        if c.group in ack and c.batch is not None:
            batches[(c.group, c.batch)].append(c)
    failed = 0
    for (group, _), cs in batches.items():
        if not all(c.success is True for c in cs):
            continue        # a failed call: the whole batch failed already; a lost SubAfter: unknown
        for c in cs[max(ack[group], -1) + 1:]:
            c.success = False
            failed += 1
    h.notes.append(f"{failed} delivery(ies) past the listener's ackIndex read as failures (the trace hook marks "
                   "a whole CONSUME_SUCCESS batch successful)")


def step_clock(run_dir: Path, t0: int | None):
    """A function from a scenario step to the epoch ms it was issued at: the driver's steps.json
    (the operator's log: each step's own time, and the origin `t0` its at_ms count from, which
    follows the cluster's start: seconds after the trace's first event on 5.x), else, for runs
    recorded before that log, `t0` (the trace's start) + at_ms."""
    path = Path(run_dir) / "steps.json"
    origin, issued = t0, {}
    if path.exists():
        try:
            log = json.loads(path.read_text())
            origin = int(log["t0"])
            for r in log["issued"]:
                issued.setdefault((int(r["at_ms"]), r["action"], r.get("group"), r.get("client"), r.get("topic")),
                                  int(r["ts"]))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            from .store_contents import StoreReadError

            raise StoreReadError(f"{path}: not the driver's log of issued steps ({exc})") from None

    def when(st: dict) -> int:
        key = (int(st.get("at_ms", 0)), st.get("action"), st.get("group"), st.get("client"), st.get("topic"))
        return issued.get(key, (origin or 0) + int(st.get("at_ms", 0)))
    return when


def refused_steps(run_dir: Path) -> set:
    """(at_ms, group, topic) of each reset step RocketMQ refused in the run (the driver's
    refused-steps.json: Broker2Client.resetOffset answered "consumer group not exist" and changed
    nothing); none when the file is absent."""
    path = Path(run_dir) / "refused-steps.json"
    if not path.exists():
        return set()
    try:
        rows = json.loads(path.read_text())
        return {(int(r["at_ms"]), r["group"], r["topic"]) for r in rows if r.get("action") == "reset_offset"}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        from .store_contents import StoreReadError

        raise StoreReadError(f"{path}: not the driver's list of refused steps ({exc})") from None


def oracle_dict(rep) -> dict:
    """The oracle's report as oracle.json holds it: the history's verdicts, with the positions of
    broadcasting consumers (`_positions`) counted under H-DELIVER-1, and what else was read."""
    d = rep.to_dict()
    d["oracle_version"] = ORACLE_VERSION
    for v, g in zip(rep.verdicts, d["guarantees"]):
        if v.status == "violated" and len(v.findings) == v.n_findings:
            g["findings_by_group"] = dict(collections.Counter((f.key or {}).get("group") for f in v.findings))
    d["broadcast_named"] = rep.broadcast_named
    d["offsets"] = rep.offsets
    d["positions"] = len(rep.positions)
    judged = getattr(rep, "positions_judged", [])
    if judged and not rep.positions:
        # the message traces could not judge a broadcasting group; its consumers' own final
        # positions were judged: that is a judgement, and it found nothing
        v = next(g for g in d["guarantees"] if g["id"] == "H-DELIVER-1")
        if v["status"] == "skipped":
            v["status"], v["missing"] = "holds", []
        v["notes"] = v["notes"] + [f"judged from the final positions of broadcasting consumer(s) {', '.join(judged)} "
                                   "(their offsets.json): no stored message at or above them was missed"]
        if d["verdict"] == "incomplete":
            d["ok"], d["verdict"] = True, "holds"
    if rep.positions:
        v = next(g for g in d["guarantees"] if g["id"] == "H-DELIVER-1")
        known = v.get("findings_by_group", {}) if v["status"] == "violated" else {}
        v["status"], v["findings"] = "violated", v["findings"] + len(rep.positions)
        v["listed"] = v["listed"] + rep.positions[:50]
        if known or v["findings"] == len(rep.positions):
            for p in rep.positions:
                group = (p.get("key") or {}).get("group")
                known[group] = known.get(group, 0) + 1
            v["findings_by_group"] = known
        d["ok"], d["verdict"] = False, "violated"
    return d


def _name_lone_consumers(sc, h, changes, local) -> dict:
    """{group: client} for each broadcasting group that had one consumer all run (by RocketMQ's
    client log and the clients' offset files): each of its deliveries is that consumer's, so the
    group is judged for it. A group of several consumers stays judged for nobody."""
    named = {}
    for g in sc["groups"]:
        if g.get("message_model") != "BROADCASTING":
            continue
        who = {c.client for c in changes if c.group == g["name"] and c.client} | \
              {o.client for o in local if o.group == g["name"]}
        if len(who) != 1:
            continue
        client = named[g["name"]] = who.pop()
        joined = min((c.ts for c in changes if c.group == g["name"] and c.what == "joined"), default=None)
        h.group(g["name"]).members[client] = [joined, None]
        for c in h.consumes:
            if c.group == g["name"] and c.client is None:
                c.client = client
        h.notes.append(f"broadcasting group {g['name']} had one consumer, {client}, all run: its deliveries are "
                       "that consumer's")
    return named


def _offsets_summary(broker, local) -> dict:
    out = {"broker": None, "clients": []}
    if broker is not None:
        out["broker"] = {"file": broker.path, "written_ms": broker.written_ms,
                         "offsets": {f"{t}@{g}": q for (t, g), q in sorted(broker.table.items())}}
    for o in local:
        out["clients"].append({"file": o.path, "written_ms": o.written_ms, "client": o.client, "group": o.group,
                               "offsets": {f"{t}/{b}/{q}": v for (t, b, q), v in sorted(o.table.items())}})
    return out


def _positions(h, local, changes, stored, judged=None) -> list[dict]:
    """H-DELIVER-1 from a broadcasting consumer's own position (the oracle's level, beyond the
    message traces, which name no consumer): at a settled end, a client's offsets.json written
    after its group's last delivery ended holds its final position per queue; a stored message
    at or above it that the client's subscription matches, stored while the client was in the
    group, never reached that client. A client that ended the run out of its group is not judged."""
    from rocketspec.spec.filtering import decide, subscription

    out = []
    by_queue = collections.defaultdict(list)
    for m in stored:
        by_queue[(m.topic, m.queue_id)].append(m)
    for o in local:
        g = h.groups.get(o.group)
        if g is None or g.message_model != "BROADCASTING" or not g.subscriptions:
            continue
        last = max((c.end if c.end is not None else c.ts for c in h.consumes if c.group == o.group
                    and (c.end is not None or c.ts is not None)), default=None)
        if last is None or o.written_ms <= last:
            h.notes.append(f"{o.path}: written at {o.written_ms}, not after group {o.group}'s last delivery: its "
                           "positions are not judged")
            continue
        mine = [c for c in changes if c.client == o.client and c.group == o.group]
        joined = max((c.ts for c in mine if c.what == "joined"), default=None)
        left = max((c.ts for c in mine if c.what == "left" and (joined is None or c.ts > joined)), default=None)
        if left is not None:
            # a consumer shutting down does not drain its queues (the pull callback's consume request
            # is refused once the consume service is shut down): what is at or above its persisted
            # position is owed to its next start, not lost
            h.notes.append(f"{o.path}: {o.client} left group {o.group} at {left} and did not come back: its "
                           "positions are not judged")
            continue
        if judged is not None:
            judged.append(f"{o.client} ({o.group})")
        for (topic, _broker, qid), pos in o.table.items():
            if topic not in g.subscriptions:
                continue
            sub = subscription(*g.subscriptions[topic])
            for m in by_queue.get((topic, qid), ()):
                if m.queue_offset < pos or (joined is not None and m.store_ts < joined):
                    continue
                if decide(sub, m.properties.get("TAGS"), None, m.properties)[1] is False:
                    continue
                out.append({"guarantee": "H-DELIVER-1", "where": o.path, "message":
                            f"message {m.properties.get('UNIQ_KEY')} (topic {topic}, queue {qid}, offset "
                            f"{m.queue_offset}) never reached {o.client} of broadcasting group {o.group}: its "
                            f"own position of the queue ended at {pos} (offsets.json written at {o.written_ms})",
                            "key": {"group": o.group, "client": o.client, "msg": m.properties.get("UNIQ_KEY")}})
    return out


def _check(trace: Path) -> tuple[dict, dict]:
    """(invariant -> errors, check's report as `check --json` prints it)."""
    from rocketspec.errors import UserError
    from rocketspec.spec.replay import check_trace

    try:
        # under the profile the recorder wrote for the release it ran (trace_started.profile)
        rep = check_trace(str(trace), None, max_listed=1000)
    except UserError as exc:
        return {CHECK_REFUSED: 1}, {"verdict": "refused", "error": str(exc)}
    d = rep.to_dict()
    # every error (the invariants, and GUARD: an event the spec refuses), not the warnings (the
    # anomalies RocketMQ allows)
    errors = {v["invariant"] for v in d["violations"]}
    return {k: v for k, v in d["counts"].items() if k in errors}, d


def run_one(record, seed: int, out_dir, small: bool = False, timeout_s: float | None = None,
            pop: bool = False, simple: bool = False, kv: bool = False) -> RunResult:
    """Generate, record, judge and classify the run of `seed` (`pop`: its POP scenario,
    random_scenarios.generate_pop; with `simple`, its SimpleConsumer scenario, generate_simple);
    its files go to out_dir/seed-<seed>/.
    `record(scenario, out, timeout_s, seed, keep, msgtrace) -> (rc, message)` makes the real run
    (`rocketspec record`'s, given by its caller: this library does not import the CLI)."""
    from rocketspec.errors import UserError
    from rocketspec.spec.history import check_path

    from .store_contents import StoreReadError

    folder = Path(out_dir) / f"seed-{seed}"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    sc = generate(seed, small, pop, simple, kv)
    scenario = write(sc, folder / "scenario.json")
    trace, msgtrace, run = folder / "trace.jsonl", folder / "msgtrace.txt", folder / "run"
    t = time.monotonic()
    try:
        rc, message = record(str(scenario), str(trace), timeout_s, seed, str(run), str(msgtrace))
    except UserError as exc:
        # this run's own failure (a client program that broke the driver protocol, a scenario the
        # recorder refuses): counted as incomplete with its reason; the batch goes on
        rc, message = 2, f"the run could not be recorded: {exc}"
    res = RunResult(seed, "incomplete", folder=str(folder), note=message, recorder=recorder_digest(),
                    breaks=[f"{b['kind']}:{b['target']}" for b in sc.get("breaks", [])])
    if rc != 0:
        res.seconds = time.monotonic() - t
        return _save(res, folder)
    events = [json.loads(line) for line in trace.open()]
    res.events, res.ended = len(events), events[-1].get("reason")
    t0 = events[0]["ts"] if events and events[0]["kind"] == "trace_started" else None
    res.check_ids, check_json = _check(trace)
    (folder / "check.json").write_text(json.dumps(check_json, indent=1) + "\n")
    # the message traces as a user reads them (`rocketspec history --format msgtrace --groups`)
    groups_file = folder / "groups.json"
    groups_file.write_text(json.dumps(declared_groups(sc), indent=1) + "\n")
    try:
        plain = check_path(str(msgtrace), "msgtrace", None, declared_groups(sc))
        (folder / "history.json").write_text(json.dumps(plain.to_dict(), indent=1) + "\n")
        oracle = oracle_dict(oracle_report(sc, msgtrace, run / "store", t0, _settled(res, trace)))
    except (UserError, StoreReadError) as exc:
        # no oracle for this run (its message traces or store could not be read): not judged
        res.note = f"{_UNREAD}: {exc}"
        res.seconds = time.monotonic() - t
        return _save(res, folder)
    except Exception as exc:   # a bug in the judge: this run's class is "error", the batch goes on
        import traceback

        (folder / "oracle-error.txt").write_text(traceback.format_exc())
        res.cls, res.note = "error", f"the oracle failed (a bug in rocketspec): {exc!r}; see {folder / 'oracle-error.txt'}"
        res.seconds = time.monotonic() - t
        return _save(res, folder)
    (folder / "oracle.json").write_text(json.dumps(oracle, indent=1) + "\n")
    res.oracle_ids = [g["id"] for g in oracle["guarantees"] if g["status"] == "violated"]
    res.named = sorted(break_named(check_json, sc))
    res.cls, res.blamed = classify(res.check_ids, oracle, unseen_invariants(check_json, sc, oracle), res.named,
                                   break_unjudged(check_json, sc, oracle))
    res.oracle = ORACLE_VERSION
    res.seconds = time.monotonic() - t
    return _save(res, folder)


def _save(res: RunResult, folder: Path) -> RunResult:
    (folder / "result.json").write_text(json.dumps(res.to_dict(), indent=1) + "\n")
    return res


def run_many(record, runs: int, seed: int, out_dir, small: bool = False, timeout_s: float | None = None,
             progress=None, pop: bool = False, simple: bool = False, kv: bool = False) -> list[RunResult]:
    """run_one for seeds seed .. seed + runs - 1."""
    out = []
    for s in range(seed, seed + runs):
        res = run_one(record, s, out_dir, small, timeout_s, pop, simple, kv)
        out.append(res)
        if progress is not None:
            progress(res)
    return out


def summary(results: list[RunResult]) -> dict:
    by = collections.Counter(r.cls for r in results)
    per = {c: collections.defaultdict(list) for c in ("false alarm", "missed loss", "finding", BREAK)}
    for r in results:
        if r.cls in per:
            for b in r.blamed:
                per[r.cls][b].append(r.seed)
    return {"runs": len(results), **{c: by.get(c, 0) for c in CLASSES},
            "false_alarms_by_invariant": dict(sorted(per["false alarm"].items())),
            "missed_losses_by_guarantee": dict(sorted(per["missed loss"].items())),
            "findings_by_invariant": dict(sorted(per["finding"].items())),
            "expected_losses_by_invariant": dict(sorted(per[BREAK].items())),
            "breaks": {r.seed: r.breaks for r in results if r.breaks},
            "incomplete_seeds": [r.seed for r in results if r.cls == "incomplete"],
            "error_seeds": [r.seed for r in results if r.cls == "error"]}


def render_table(results: list[RunResult]) -> str:
    s = summary(results)
    lines = ["| runs | agreed | expected losses (breaks) | false alarms | missed losses | white-box-only findings "
             "| incomplete | errors |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|",
             f"| {s['runs']} | {s['agreed']} | {s[BREAK]} | {s['false alarm']} | {s['missed loss']} | {s['finding']} | "
             f"{s['incomplete']} | {s['error']} |", ""]
    for title, key in (("false alarms by invariant", "false_alarms_by_invariant"),
                       ("missed losses by guarantee", "missed_losses_by_guarantee"),
                       ("white-box-only findings by invariant", "findings_by_invariant"),
                       ("expected losses (breaks) by invariant", "expected_losses_by_invariant")):
        if s[key]:
            lines.append(f"{title}: " + ", ".join(f"{k} {len(v)} (seeds {', '.join(map(str, v))})"
                                                 for k, v in s[key].items()))
    for key in ("incomplete", "error"):
        if s[f"{key}_seeds"]:
            lines.append(f"{key}: seeds " + ", ".join(map(str, s[f"{key}_seeds"])))
    lines += ["", "| seed | class | breaks | check | cause named | oracle | events | ended | s |",
              "|---:|---|---|---|---|---|---:|---|---:|"]
    for r in results:
        chk = ", ".join(f"{k} {v}" for k, v in sorted(r.check_ids.items())) or "holds"
        orc = ", ".join(r.oracle_ids) or ("holds" if r.cls != "incomplete" else "-")
        brk = ", ".join(r.breaks) or "-"
        named = ", ".join(r.named) or "-"
        lines.append(f"| {r.seed} | {r.cls} | {brk} | {chk} | {named} | {orc} | {r.events} | {r.ended or '-'} "
                     f"| {r.seconds:.0f} |")
    return "\n".join(lines)


def exit_code(results: list[RunResult]) -> int:
    """1 a false alarm or a missed loss; else 3 when judging a run failed (a bug); else 4 when a
    run could not finish; else 0."""
    if any(r.cls in ("false alarm", "missed loss") for r in results):
        return 1
    if any(r.cls == "error" for r in results):
        return 3
    if any(r.cls == "incomplete" for r in results):
        return 4
    return 0


_UNREAD = "RocketMQ's records of the run could not be read"


def reclassify(out_dir) -> list[RunResult]:
    """The runs under `out_dir` (as `record --random` wrote them) classified again from their
    files, without running anything: after a change to the spec, the oracle or this module."""
    from rocketspec.errors import UserError

    from .store_contents import StoreReadError

    out = []
    for folder in sorted(Path(out_dir).glob("seed-*"), key=lambda p: int(p.name[5:])):
        if not (folder / "result.json").exists():
            out.append(RunResult(int(folder.name[5:]), "incomplete", note="no result.json: the run was interrupted",
                                 folder=str(folder)))
            continue
        res = RunResult(**{k if k != "class" else "cls": v for k, v in json.loads((folder / "result.json").read_text()).items()
                           if k in ("seed", "class", "events", "ended", "seconds", "note", "folder", "recorder")})
        # a run recorded whole whose records the oracle could not read then is judged again: the
        # reader may read them now (run 18234's empty offsets.json, read from its .bak since)
        unread = res.cls == "incomplete" and (res.note or "").startswith(_UNREAD) and (folder / "trace.jsonl").is_file()
        if res.cls not in ("incomplete", "error") or unread:
            sc = json.loads((folder / "scenario.json").read_text())
            res.check_ids, check_json = _check(folder / "trace.jsonl")
            (folder / "check.json").write_text(json.dumps(check_json, indent=1) + "\n")
            try:
                oracle = oracle_dict(oracle_report(sc, folder / "msgtrace.txt", folder / "run" / "store",
                                       _first_ts(folder / "trace.jsonl"), _settled(res, folder / "trace.jsonl")))
            except (UserError, StoreReadError) as exc:
                res.cls, res.note = "incomplete", f"{_UNREAD}: {exc}"
                out.append(_save(res, folder))
                continue
            if unread:
                res.note = f"{res.events} events, ended {res.ended}; RocketMQ's records read when judged again"
            (folder / "oracle.json").write_text(json.dumps(oracle, indent=1) + "\n")
            res.oracle_ids = [g["id"] for g in oracle["guarantees"] if g["status"] == "violated"]
            res.breaks = [f"{b['kind']}:{b['target']}" for b in sc.get("breaks", [])]
            res.named = sorted(break_named(check_json, sc))
            res.cls, res.blamed = classify(res.check_ids, oracle, unseen_invariants(check_json, sc, oracle), res.named,
                                           break_unjudged(check_json, sc, oracle))
            res.oracle = ORACLE_VERSION
        out.append(_save(res, folder))
    return out


def out_of_group_at_end(trace: Path) -> list[str]:
    """The live clients under test (a trace whose trace_started names a client_under_test) of
    remoting (PUSH) groups that the broker did not list in their group when the trace ended
    (client_started, not crashed nor stopped; the last consumer_registered or _unregistered of
    the client in its group). Such a client, dropped by the broker (its idle close), keeps its
    queues and its own offsets until it comes back at its next heartbeat, and may consume again
    what the group's commit passed: the run had not settled, whatever the trace's end says (the
    driver's quiescence waits for it since Membership.outOfGroup; random Go run 17164 ended
    "quiescent" before it did)."""
    live: dict = {}
    registered: set = set()
    under_test = False
    with trace.open() as fh:
        for line in fh:
            e = json.loads(line)
            kind = e.get("kind")
            if kind == "trace_started":
                under_test = bool((e.get("config") or {}).get("client_under_test"))
            elif kind == "client_started" and (e.get("config") or {}).get("client_type", "PUSH") == "PUSH":
                live[e["client"]] = e["group"]
            elif kind in ("client_crashed", "client_stopped"):
                live.pop(e["client"], None)
            elif kind == "consumer_registered":
                registered.add((e["group"], e["client"]))
            elif kind == "consumer_unregistered":
                registered.discard((e["group"], e["client"]))
    if not under_test:
        return []
    return sorted(c for c, g in live.items() if (g, c) not in registered)


def _settled(res: RunResult, trace: Path) -> bool:
    """Whether the run ended settled (the oracle is complete): it ended quiescent and no live
    client under test was out of its group then (out_of_group_at_end, named in the run's note)."""
    if res.ended != "quiescent":
        return False
    out = out_of_group_at_end(trace)
    tail = f" [ended quiescent with {', '.join(out)} out of their group: not settled, the oracle is not complete]"
    if out and tail not in res.note:
        res.note += tail
    return not out


def _first_ts(trace: Path) -> int | None:
    with trace.open() as fh:
        first = json.loads(fh.readline())
    return first["ts"] if first.get("kind") == "trace_started" else None
