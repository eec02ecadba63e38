"""What a history holds: produce and consume records, as a user of RocketMQ sees them.

A history is the black-box view of a run: no broker or client internals, only what producers
sent, what listeners were called with and returned, what landed in a dead-letter queue, and
(where the source records them) disruptions an operator sees: faults, consumers joining and
leaving, offset resets, retention. Every field a source may lack is optional (None); a check
declares the fields it needs (`History.has`) and is skipped where they are missing.

`complete` says whether an absent record means absent behaviour. A message-trace history is
lossy (AsyncTraceDispatcher drops records when its queue is full), so a message with no
consume record is *unobserved*, not *lost*, unless the history is declared complete.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# Listener results, as sources report them.
SUCCESS_STATUSES = frozenset({"CONSUME_SUCCESS", "SUCCESS", "COMMIT"})


@dataclass(slots=True)
class Produce:
    """A send. `id` is the message's identity across every copy RocketMQ makes of it (the
    client's unique key, UNIQ_KEY: what MessageExt.getMsgId returns on the consumer side)."""
    id: str
    topic: str | None
    ts: int | None
    ok: bool | None = True          # acknowledged (SEND_OK); None: outcome unknown
    queue: tuple | None = None      # (topic, broker, queue id) it was stored in
    offset: int | None = None
    tags: str | None = None
    keys: str | None = None
    props: dict | None = None
    sharding_key: str | None = None
    where: str | None = None        # file:line of the record
    stored_id: str | None = None    # the broker's id of the stored message (offsetMsgId)


@dataclass(slots=True)
class Consume:
    """One listener call's view of one message: delivered to `client` of `group` at `ts`, the
    call returned at `end` with `success`."""
    group: str
    id: str
    ts: int | None
    end: int | None = None
    client: str | None = None
    queue: tuple | None = None      # the queue it was pulled from (a retry copy: %RETRY%<group>)
    offset: int | None = None
    reconsume_times: int | None = None
    success: bool | None = None
    copy: str | None = None         # id of the stored copy (a retry copy has its own)
    batch: str | None = None        # one listener call
    where: str | None = None
    # POP: when the handle it was popped with expires (pop time + invisible time, as its last
    # change of invisible time left it): past it, revive puts the message back
    deadline: int | None = None
    # POP: the application's ack (or change) after the call was refused, the handle having run out
    # on its way (the client program's pop_settle_failed): the message comes back as if it expired
    settle_refused: bool = False


@dataclass(slots=True)
class DeadLetter:
    group: str
    id: str
    ts: int | None
    reconsume_times: int | None = None
    where: str | None = None


@dataclass(slots=True)
class Disruption:
    """Something an operator sees that may make RocketMQ redeliver: a fault (a crash, a pause,
    a broker restart, a lost call), a consumer joining or leaving its group."""
    ts: int
    what: str
    group: str | None = None
    client: str | None = None
    detail: str | None = None       # e.g. an OpenChaos fault's name


@dataclass(slots=True)
class Reset:
    """An operator reset a group's offset of a queue (None: every queue) to `offset`."""
    ts: int
    group: str
    queue: tuple | None = None
    offset: int | None = None


@dataclass(slots=True)
class Expired:
    """Retention removed every message of `queue` below `below` at `ts`."""
    ts: int
    queue: tuple
    below: int


@dataclass(slots=True)
class Group:
    name: str
    consume_mode: str | None = None          # CONCURRENTLY | ORDERLY
    message_model: str | None = None         # CLUSTERING | BROADCASTING
    subscriptions: dict | None = None        # topic -> (expr type, expr)
    subscriptions_inferred: bool = False     # from what the group consumed, filters unknown
    max_reconsume_times: int | None = None   # as configured (-1: the client's default)
    consume_timeout_ms: int | None = None
    consume_from_where: str | None = None    # where the group starts with no committed offset (declared)
    pop: str | None = None                   # consumes by POP: its client type (POP_PUSH, SIMPLE); None: by pull
    started_ts: int | None = None            # first consumer of the group started
    members: dict = field(default_factory=dict)  # client -> [joined ts, left ts or None]
    declared: set = field(default_factory=set)   # settings given by --groups: the source does not override them

    def learn(self, name: str, value) -> None:
        """Set what the source tells, unless --groups declared it."""
        if name not in self.declared:
            setattr(self, name, value)


@dataclass(slots=True)
class Problem:
    """A record an adapter could not read: reported, counted, never skipped silently."""
    file: str
    line: int
    message: str

    def __str__(self):
        return f"{self.file}:{self.line}: {self.message}"


# What a source can observe beyond produce and consume records: without "dead_letters" a
# message whose last delivery failed may be in the DLQ, unseen; without "disruptions" a
# redelivery cannot be told apart from one RocketMQ should not have made.
OBSERVABLES = ("dead_letters", "disruptions", "resets", "retention", "membership")


MAX_PROBLEMS_KEPT = 1000     # unparseable records listed; every one is counted


@dataclass
class History:
    """A history's header (what its adapter tells of the source) and, when it is read whole
    (`load_history`: tests, the minimizer), its records: `stream` in the order the source gave
    them, and by kind. `rocketspec history` streams the records instead (`judge.Judge`)."""
    source: str                               # file name
    format: str                               # trace | msgtrace | openchaos
    complete: bool | None                     # absent record = absent behaviour, run settled (None: not yet known)
    produces: list = field(default_factory=list)
    consumes: list = field(default_factory=list)
    dead_letters: list = field(default_factory=list)
    disruptions: list = field(default_factory=list)
    resets: list = field(default_factory=list)
    expired: list = field(default_factory=list)
    groups: dict = field(default_factory=dict)   # name -> Group
    observes: frozenset = frozenset()            # subset of OBSERVABLES
    problems: list = field(default_factory=list)  # Problem: the first MAX_PROBLEMS_KEPT
    records: int = 0
    notes: list = field(default_factory=list)     # what the adapter assumed or inferred
    stream: list = field(default_factory=list, repr=False)   # every record, in the source's order
    problem_count: int = 0                       # every unparseable record
    declared_complete: bool | None = None        # --complete / --lossy, over the source's default
    infer_subscriptions: bool = False            # subscriptions are not recorded: infer them from consumption
    # (group, message id) -> the highest reconsume count among its copies the store holds in
    # %RETRY%group (read from the broker's store by a caller that has it; empty otherwise)
    retried: dict = field(default_factory=dict)

    def group(self, name: str) -> Group:
        g = self.groups.get(name)
        if g is None:
            g = self.groups[name] = Group(name)
        return g

    def problem(self, file, line, message) -> None:
        """A record that cannot be read: counted, and listed up to MAX_PROBLEMS_KEPT."""
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS_KEPT:
            self.problems.append(Problem(str(file), line, message))

    def keep(self, rec) -> None:
        """Hold `rec` (reading a history whole)."""
        self.stream.append(rec)
        t = type(rec)
        {Produce: self.produces, Consume: self.consumes, DeadLetter: self.dead_letters, Disruption: self.disruptions,
         Reset: self.resets, Expired: self.expired}[t].append(rec)
