"""One-line mutants of upstream's rocketmq-client-go source, as data, and their builds.

Each mutant names a file inside the pinned module (clients/go/go.mod:
github.com/apache/rocketmq-client-go/v2), an anchor (an exact substring occurring exactly once in
that file), its replacement (which changes exactly one line), the mistake in words, the scenario
(examples/go-client/mutants/) it runs on and the invariant or guarantee id that must kill it.

Upstream code is never committed nor edited in place. A build copies the module out of the Go
module cache once (build/go-client/mutants/upstream/: `go build -overlay` refuses files under
GOMODCACHE), points the driver's module at the copy through a copied go.mod with a `replace`
directive (`-modfile`, so clients/go/go.mod is untouched), and overlays the one mutated file:

    build/go-client/mutants/<id>/<file>                 the mutated copy of the file
    build/go-client/mutants/<id>/overlay.json           `go build -overlay`
    build/go-client/mutants/<id>/rocketspec-go-client   the driver built against it
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from rocketspec.errors import UserError

ROOT = Path(__file__).resolve().parent.parent
GO_DIR = ROOT / "clients" / "go"
BUILD = ROOT / "build" / "go-client" / "mutants"
MODULE = "github.com/apache/rocketmq-client-go/v2"


@dataclass(frozen=True)
class LibMutant:
    id: str
    file: str          # inside the module
    anchor: str        # occurs exactly once in the file
    replacement: str
    scenario: str      # examples/go-client/mutants/
    kill: str          # the id that must kill it
    mistake: str


PC, PQ, DC = "consumer/push_consumer.go", "consumer/process_queue.go", "consumer/consumer.go"

MUTANTS: tuple[LibMutant, ...] = (
    LibMutant("lib-orderly-ack-before-listener", PC,
              "result, err := pc.consumeInner(ctx, msgs)",
              "go pc.consumeInner(ctx, msgs); result, err := ConsumeSuccess, error(nil)",
              "orderly-burst.toml", "H-ORDER-1",
              "consumeMessageOrderly starts the listener on its own goroutine and takes CONSUME_SUCCESS "
              "at once: the batch is committed before the listener returns"),
    LibMutant("lib-orderly-commit-failed-batch", PC,
              "pq.makeMessageToCosumeAgain(msgs...)",
              "commitOffset = pq.commit()",
              "orderly-burst.toml", "H-DELIVER-1",
              "an orderly batch the listener SUSPENDed (below the retry limit) is committed instead of "
              "being put back into the ProcessQueue"),
    LibMutant("lib-orderly-forget-requeue", PC,
              "pq.makeMessageToCosumeAgain(msgs...)",
              "_ = msgs",
              "orderly-burst.toml", "H-DELIVER-1",
              "a SUSPENDed orderly batch is left among the taken messages, not put back: the next "
              "successful batch's commit passes it"),
    LibMutant("lib-orderly-give-up-below-limit", PC,
              "} else {\n\t\t\t\tsuspend = true",
              "} else {\n\t\t\t\tsuspend = false",
              "orderly-burst.toml", "H-DELIVER-1",
              "checkReconsumeTimes answers 'do not suspend' for a message below maxReconsumeTimes: the "
              "failed batch is committed, neither retried nor dead-lettered"),
    LibMutant("lib-orderly-take-newest-first", PQ,
              "k, v := pq.msgCache.Min()",
              "k, v := pq.msgCache.Max()",
              "orderly-burst.toml", "H-ORDER-2",
              "takeMessages takes the highest cached offset first instead of the lowest"),
    LibMutant("lib-skip-send-back", PC,
              "if pc.sendMessageBack(mq.BrokerName, msg, concurrentCtx.DelayLevelWhenNextConsume) {",
              "if true {",
              "concurrent-fail-join.toml", "INV-OFFSET-3",
              "a failed concurrent message is counted as sent back without the CONSUMER_SEND_MSG_BACK "
              "call, and the offset moves past it"),
    LibMutant("lib-ack-before-listener", PC,
              "result, err = pc.consumeInner(ctx, subMsgs)",
              "go pc.consumeInner(ctx, subMsgs); result = ConsumeSuccess",
              "concurrent-fail-join.toml", "INV-OFFSET-3",
              "consumeMessageConcurrently takes CONSUME_SUCCESS before the listener returns (the "
              "listener runs on its own goroutine)"),
    LibMutant("lib-status-inverted", PC,
              "if result == ConsumeSuccess {\n\t\t\t\t\tpc.stat.increaseConsumeOKTPS",
              "if result != ConsumeSuccess {\n\t\t\t\t\tpc.stat.increaseConsumeOKTPS",
              "concurrent-fail-join.toml", "INV-OFFSET-3",
              "the concurrent result test is inverted: a failed batch is removed and committed as "
              "consumed, a consumed one sent back"),
    LibMutant("lib-commit-batch-max", PC,
              "offset := pq.removeMessage(msgBackSucceed...)",
              "offset := subMsgs[len(subMsgs)-1].QueueOffset + 1; pq.removeMessage(msgBackSucceed...)",
              "concurrent-fail-join.toml", "H-DELIVER-1",
              "the offset after the batch's last message is committed, not the ProcessQueue's lowest "
              "message still in flight"),
    LibMutant("lib-commit-pulled-max", PQ,
              "result = first.(int64)",
              "result = pq.queueOffsetMax + 1; _ = first",
              "concurrent-handover.toml", "H-DELIVER-1",
              "removeMessage returns the highest pulled offset + 1 even while lower messages wait in "
              "the ProcessQueue"),
    LibMutant("lib-keep-queue-on-rebalance", DC,
              "if !mqSet[mq] {\n\t\t\t\tpq.WithDropped(true)",
              "if !mqSet[mq] {\n\t\t\t\t_ = pq",
              "concurrent-handover.toml", "H-DUP-1",
              "a queue rebalanced to another consumer is removed from the table without dropping its "
              "ProcessQueue: its pull and consume loops go on"),
)

BY_ID = {m.id: m for m in MUTANTS}


class MutantBuildError(UserError):
    """The Go toolchain or the pinned module is missing: the environment's fault (exit 2)."""


class MutantDefect(Exception):
    """A mutant no longer applies to the pinned module or does not build: the table's fault (exit 3)."""


def pinned_version() -> str:
    """The library's version in clients/go/go.mod."""
    gomod = GO_DIR / "go.mod"
    m = re.search(rf"^\s*(?:require\s+)?{re.escape(MODULE)}\s+(v\S+)", gomod.read_text(), re.M)
    if m is None:
        raise MutantBuildError(f"no `require {MODULE} vX.Y.Z` line", file=gomod)
    return m.group(1)


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise MutantBuildError("Go is not on PATH: the library mutants are built with `go build` "
                               "(install Go 1.21 or newer, then `make go-client`)")
    return go


def module_dir() -> Path:
    """The pinned module in the Go module cache (`make go-client` downloads it)."""
    go = _go()
    cache = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True, cwd=GO_DIR).stdout.strip()
    d = Path(cache) / "github.com" / "apache" / "rocketmq-client-go" / f"v2@{pinned_version()}"
    if not (d / "go.mod").is_file():
        raise MutantBuildError(f"the pinned module {MODULE}@{pinned_version()} is not in the Go module cache "
                               f"({d}): run `make go-client` first", file=d)
    return d


def apply(m: LibMutant, text: str) -> str:
    """The file's text with the mutant's anchor replaced; the anchor must occur exactly once."""
    n = text.count(m.anchor)
    if n != 1:
        raise MutantDefect(f"mutant {m.id}: its anchor {m.anchor!r} occurs {n} times in {m.file} "
                               f"(expected exactly once): the pinned library changed?")
    return text.replace(m.anchor, m.replacement, 1)


def changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    """The (old, new) lines that differ; both texts have as many lines."""
    a, b = before.splitlines(), after.splitlines()
    if len(a) != len(b):
        return [("<line count>", f"{len(a)} -> {len(b)}")]
    return [(x, y) for x, y in zip(a, b) if x != y]


def _upstream_copy(src: Path, into: Path) -> Path:
    """A writable copy of the module outside GOMODCACHE, made once per pinned version."""
    dst = into / "upstream"
    stamp = dst / ".rocketspec-source"
    if stamp.is_file() and stamp.read_text() == str(src):
        return dst
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    stamp.write_text(str(src))
    return dst


def _modfile(upstream: Path, into: Path) -> Path:
    """clients/go/go.mod with the library replaced by the copy (clients/go itself is untouched)."""
    mod, s = into / "go.mod", into / "go.sum"
    mod.write_text((GO_DIR / "go.mod").read_text() + f"\nreplace {MODULE} => {upstream}\n")
    shutil.copyfile(GO_DIR / "go.sum", s)
    return mod


def build(m: LibMutant, into: Path = BUILD) -> Path:
    """Build the driver against the library with `m` applied, under `into`; the program's path."""
    go, src = _go(), module_dir()
    into.mkdir(parents=True, exist_ok=True)
    upstream = _upstream_copy(src, into)
    mod = _modfile(upstream, into)
    original = (src / m.file).read_text()
    mutated = apply(m, original)
    diff = changed_lines(original, mutated)
    if len(diff) != 1:
        raise MutantDefect(f"mutant {m.id} changes {len(diff)} lines of {m.file}; a mutant changes one")
    out = into / m.id
    out.mkdir(parents=True, exist_ok=True)
    mfile = out / Path(m.file).name
    mfile.write_text(mutated)
    overlay = out / "overlay.json"
    overlay.write_text(json.dumps({"Replace": {str(upstream / m.file): str(mfile)}}, indent=1) + "\n")
    exe = out / "rocketspec-go-client"
    r = subprocess.run([go, "build", "-mod=readonly", "-modfile", str(mod), "-overlay", str(overlay),
                        "-o", str(exe), "."], capture_output=True, text=True, cwd=GO_DIR)
    if r.returncode != 0:
        raise MutantDefect(f"mutant {m.id} does not build ({mfile}): {' '.join(r.stderr.split())[-400:]}")
    return exe
