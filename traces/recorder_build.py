"""Building the recorder (traces/recorder) for one RocketMQ release.

The recorder's sources are one set (`traces/recorder/src/`, written against 4.x's package names)
plus a small adapter per release line (`traces/recorder/releases/LINE/`: `Release.java` and
`TappedPullAPIWrapper.java`, the places where a hook moved). RocketMQ 5.0 moved the protocol
classes (`common.protocol` to `remoting.protocol`) and the schedule service (`store.schedule` to
`broker.schedule`): a line's `packages.txt` lists those moves, and the build rewrites the shared
sources' `import` lines with them before compiling. Each release builds into its own folder:

    build/recorder-RELEASE/src/       the sources as compiled (shared, rewritten, + the adapter)
                                      (RELEASE-proxy: + releases/LINE-proxy/, against the proxy's classpath)
    build/recorder-RELEASE/classes/   javac's output
    build/recorder-RELEASE/.built     the classpath and the sources' digest the classes are from

A line may also add to its release's logging configuration: `releases/LINE/rmq.logback.client-log.xml`
(5.x: the run's `rocketmq_client.log`, as 4.9.8 writes it) is appended to the release's own
`rmq.broker.logback.xml` (read from its broker jar) and installed as `classes/rmq.logback.xml`, the
first resource 5.x's logging looks for on the classpath (the driver's and every client JVM's).

    python3 traces/recorder_build.py RELEASE CLASSPATH   # the classes folder on stdout

Standard library only, so the Makefile can run it with the system Python before any virtualenv.
Exit codes: 0 built (or fresh); 1 javac failed (its messages); 2 bad input (no javac, no sources).
"""
from __future__ import annotations

import fcntl
import hashlib
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RECORDER = REPO / "traces" / "recorder"
SHARED = RECORDER / "src"
RELEASES = RECORDER / "releases"
BUILD = REPO / "build"
LOG_ADDITION = "rmq.logback.client-log.xml"   # a line's addition to its release's logging (releases/LINE/)
LOG_BASE = "rmq.broker.logback.xml"           # the release's own configuration, in its broker jar
LOG_RESOURCE = "rmq.logback.xml"              # 5.x's DefaultJoranConfiguratorExt looks for it first


class BuildError(Exception):
    """A build that cannot be done or failed; the message is what the user reads."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


def line_of(release: str) -> str:
    """The release line whose adapter a release uses: its major version (4.9.8 -> 4)."""
    return release.split(".", 1)[0]


def out_dir(release: str) -> Path:
    return BUILD / f"recorder-{release}"


def package_moves(line: str) -> list[tuple[str, str]]:
    """(4.x prefix, this line's prefix) pairs from the line's packages.txt (none for 4)."""
    path = RELEASES / line / "packages.txt"
    if not path.is_file():
        return []
    moves = []
    for n, text in enumerate(path.read_text().splitlines(), 1):
        text = text.split("#", 1)[0].strip()
        if not text:
            continue
        parts = text.split()
        if len(parts) != 2:
            raise BuildError(f"{path}:{n}: expected 'OLD.PACKAGE NEW.PACKAGE', got {text!r}", 2)
        moves.append((parts[0], parts[1]))
    return moves


def rewrite_imports(source: str, moves: list[tuple[str, str]]) -> str:
    """The source with each `import` line's package moved; nothing else is touched."""
    if not moves:
        return source

    def move(m: re.Match) -> str:
        name = m.group(2)
        for old, new in moves:
            if name == old or name.startswith(old + "."):
                name = new + name[len(old):]
                break
        return m.group(1) + name + m.group(3)

    return re.sub(r"^(import\s+(?:static\s+)?)([\w.]+)(\s*;)", move, source, flags=re.M)


def sources(release: str) -> dict[str, str]:
    """Relative path -> text of every source the release compiles (adapter after the shared ones)."""
    line = line_of(release)
    adapter = RELEASES / line
    if not (adapter / "rocketspec" / "recorder" / "Release.java").is_file():
        known = sorted(p.name for p in RELEASES.iterdir() if p.is_dir()) if RELEASES.is_dir() else []
        raise BuildError(f"no recorder adapter for RocketMQ {release}: {adapter}/rocketspec/recorder/Release.java "
                         f"is missing (release lines with one: {', '.join(known) or 'none'})", 2)
    moves = package_moves(line)
    out = {}
    # a build against the release with its gRPC proxy (RELEASE-proxy, record's classpath for
    # SimpleConsumers) adds the line's proxy sources (releases/LINE-proxy/), which import the proxy
    roots = (SHARED, adapter) + ((RELEASES / f"{line}-proxy",) if release.endswith("-proxy") else ())
    for root in roots:
        for p in sorted(root.rglob("*.java")):
            out[str(p.relative_to(root))] = rewrite_imports(p.read_text(encoding="utf-8"), moves)
    if not any(k.endswith("Driver.java") for k in out):
        raise BuildError(f"recorder sources missing under {SHARED}", 2)
    return out


def log_addition(release: str) -> str | None:
    """The line's addition to its release's logging configuration, or None (4.x has none)."""
    path = RELEASES / line_of(release) / LOG_ADDITION
    return path.read_text(encoding="utf-8") if path.is_file() else None


def logging_config(release: str, classpath: str) -> str | None:
    """The release's own logging configuration (LOG_BASE, from the first jar of the classpath that
    holds it) with the line's addition's elements appended inside it; None without an addition."""
    addition = log_addition(release)
    if addition is None:
        return None
    body = re.search(r"<configuration[^>]*>(.*)</configuration>", addition, re.S)
    if body is None:
        raise BuildError(f"{RELEASES / line_of(release) / LOG_ADDITION}: expected a <configuration> element", 2)
    for entry in classpath.split(":"):
        if not entry.endswith(".jar") or not Path(entry).is_file():
            continue
        with zipfile.ZipFile(entry) as jar:
            if LOG_BASE in jar.namelist():
                base = jar.read(LOG_BASE).decode("utf-8")
                close = base.rfind("</configuration>")
                if close < 0:
                    raise BuildError(f"{entry}!/{LOG_BASE}: no </configuration> to add the recorder's appender to", 2)
                return base[:close] + "    <!-- added by the recorder: " + LOG_ADDITION + " -->" + body[1] + base[close:]
    raise BuildError(f"no jar of RocketMQ {release}'s classpath holds {LOG_BASE} (the broker's logging "
                     f"configuration the recorder adds {LOG_ADDITION} to)", 2)


def digest(classpath: str, srcs: dict[str, str], addition: str | None = None) -> str:
    h = hashlib.sha256(classpath.strip().encode())
    for path in sorted(srcs):
        h.update(b"\0" + path.encode() + b"\0" + srcs[path].encode())
    if addition is not None:
        h.update(b"\0" + LOG_ADDITION.encode() + b"\0" + addition.encode())
    return h.hexdigest()


def build(release: str, classpath: str) -> Path:
    """The release's compiled recorder classes, rebuilt when a source or the classpath changed."""
    srcs = sources(release)
    want = digest(classpath, srcs, log_addition(release))
    out = out_dir(release)
    stamp = out / ".built"
    classes = out / "classes"

    def fresh() -> bool:
        return stamp.is_file() and stamp.read_text().strip() == want and (classes / "rocketspec").is_dir()

    if fresh():
        return classes
    javac = shutil.which("javac")
    if javac is None:
        raise BuildError("javac not found on PATH: building the recorder needs a JDK 17", 2)
    BUILD.mkdir(parents=True, exist_ok=True)
    # one build per release at a time: recordings on two test workers would wipe each other's classes
    with open(BUILD / f"recorder-{release}.lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        if fresh():
            return classes
        shutil.rmtree(out, ignore_errors=True)
        for rel, text in srcs.items():
            p = out / "src" / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
        classes.mkdir(parents=True)
        files = [str(out / "src" / rel) for rel in srcs]
        r = subprocess.run([javac, "-nowarn", "-encoding", "UTF-8", "-d", str(classes), "-cp", classpath, *files],
                           capture_output=True, text=True)
        if r.returncode != 0:
            shutil.rmtree(classes, ignore_errors=True)
            msg = "\n".join(x for x in (r.stdout + r.stderr).splitlines() if not x.startswith("Note:"))
            raise BuildError(f"building the recorder for RocketMQ {release} failed (sources as compiled: "
                             f"{out / 'src'}):\n{msg}", 1)
        config = logging_config(release, classpath)
        if config is not None:
            (classes / LOG_RESOURCE).write_text(config, encoding="utf-8")
        stamp.write_text(want + "\n")
    return classes


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: recorder_build.py RELEASE CLASSPATH", file=sys.stderr)
        return 2
    try:
        print(build(argv[0], argv[1]))
    except BuildError as e:
        print(f"recorder_build: {e}", file=sys.stderr)
        return e.code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
