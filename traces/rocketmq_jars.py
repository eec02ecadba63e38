"""Real RocketMQ releases as pinned jars from Maven Central (`make rocketmq-jars`).

Each pinned release has a folder `third_party/rocketmq/VERSION/` holding `pom.xml` (the
release's namesrv, broker, push consumer and admin client, with their runtime dependencies as the
release's own poms declare them) and `jars.lock` (every jar of that classpath: its coordinate,
its file name and its sha256, in classpath order, and the sha256 of the pom it was made from).

    python3 traces/rocketmq_jars.py install VERSION   # into build/rocketmq-VERSION/ (lib/, classpath.txt)
    python3 traces/rocketmq_jars.py lock VERSION      # write jars.lock from a fresh resolution
    python3 traces/rocketmq_jars.py releases          # the pinned releases, one a line

Beside the releases, a pin may name a folder below `third_party/rocketmq/` that is not a release of
its own (`5.5.0/proxy`: the release with its gRPC proxy; `client-java/5.2.0`: the Java gRPC
client); `install` and `lock` take it as they take a version, into `build/rocketmq-5.5.0-proxy/`
and `build/rocketmq-client-java-5.2.0/`.

`install` resolves with Maven (offline first, from ~/.m2, then from Maven Central), checks that
Maven resolved exactly the jars the lock names with exactly their sha256, copies them into
`build/rocketmq-VERSION/lib/`, writes `classpath.txt` (one line) and loads the namesrv, broker,
consumer and admin classes from it (`ClassProbe.java`). A stamp records the lock it was made
from; a later `install` with the same lock only re-hashes the copied jars (no Maven, no network).

Exit codes: 0 installed; 1 a jar differs from the lock (each one named) or a class does not load;
2 bad input (unknown release, a pom edited since its lock, no mvn/java); 75 Maven Central cannot
be reached and ~/.m2 does not hold the release.

Standard library only, so the Makefile can run it with the system Python before any virtualenv.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PINS = REPO / "third_party" / "rocketmq"
BUILD = REPO / "build"
PROBE = PINS / "ClassProbe.java"
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
# what a run needs to load: the namesrv and broker (their startup classes and controllers), the
# push consumer and the admin client the recorder uses; same names in 4.9.8 and 5.x
PROBED_CLASSES = (
    "org.apache.rocketmq.namesrv.NamesrvStartup",
    "org.apache.rocketmq.namesrv.NamesrvController",
    "org.apache.rocketmq.broker.BrokerStartup",
    "org.apache.rocketmq.broker.BrokerController",
    "org.apache.rocketmq.client.consumer.DefaultMQPushConsumer",
    "org.apache.rocketmq.tools.admin.DefaultMQAdminExt",
)
# the other pins' classes: the proxy the recorder starts in local mode, the gRPC client's consumer
PIN_PROBES = {
    "proxy": PROBED_CLASSES + ("org.apache.rocketmq.proxy.ProxyStartup",
                               "org.apache.rocketmq.proxy.processor.DefaultMessagingProcessor",
                               "org.apache.rocketmq.proxy.grpc.GrpcServerBuilder"),
    "client-java": ("org.apache.rocketmq.client.apis.ClientServiceProvider",
                    "org.apache.rocketmq.client.java.impl.consumer.SimpleConsumerImpl"),
}


def probed_classes(pin: str) -> tuple[str, ...]:
    """The classes a pin's classpath must load: a release's, or those of the pin's kind."""
    parts = pin.split("/")
    for kind in (parts[-1], parts[0]):
        if kind in PIN_PROBES:
            return PIN_PROBES[kind]
    return PROBED_CLASSES
# Maven's words when it could not talk to the repository (as opposed to a "Could not find", which
# is the repository's answer)
UNREACHABLE = re.compile(r"Could not transfer|UnknownHost|Unknown host|Network is unreachable|Connection refused|"
                         r"connect timed out|Connection timed out|Read timed out|No route to host|"
                         r"Temporary failure in name resolution")
EXIT_MISMATCH, EXIT_USAGE, EXIT_UNREACHABLE = 1, 2, 75


class JarsError(Exception):
    """A failure with its exit code; the message is what the user reads."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Jar:
    coordinate: str  # group:artifact:type[:classifier]:version
    file: str        # file name in lib/
    sha256: str


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ------------------------------------------------------------------------------ the lock file
def releases() -> list[str]:
    return sorted((p.name for p in PINS.iterdir() if (p / "pom.xml").is_file()),
                  key=lambda v: [int(x) if x.isdigit() else x for x in re.split(r"[.-]", v)]) if PINS.is_dir() else []


# The release `rocketspec record` runs by default: built from ../shared/rocketmq (`make rocketmq`).
DEFAULT_RELEASE = "4.9.8"


def pinned_releases() -> list[str]:
    """The releases pinned as Maven Central jars (third_party/rocketmq/VERSION/jars.lock)."""
    return [v for v in releases() if (PINS / v / "jars.lock").is_file()]


def record_releases() -> list[str]:
    """Every release `record --release` knows: the default first, then the pinned ones."""
    return [DEFAULT_RELEASE] + [v for v in pinned_releases() if v != DEFAULT_RELEASE]


def release_dir(version: str) -> Path:
    d = PINS / version
    if ".." in Path(version).parts or not (d / "pom.xml").is_file():
        raise JarsError(f"{d / 'pom.xml'}: no such file; pinned releases: {', '.join(releases()) or 'none'}", EXIT_USAGE)
    return d


def read_lock(path: Path) -> tuple[str, list[Jar]]:
    """(the pom's sha256 the lock was made from, the jars in classpath order)."""
    if not path.is_file():
        raise JarsError(f"{path}: no such file (write it with `python3 traces/rocketmq_jars.py lock "
                        f"{path.parent.name}`)", EXIT_USAGE)
    pom_sha, jars = None, []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("# pom-sha256 "):
            pom_sha = line.split()[2]
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 3 or not re.fullmatch(r"[0-9a-f]{64}", parts[0]) or parts[1].count(":") not in (3, 4):
            raise JarsError(f"{path}:{n}: expected 'SHA256 GROUP:ARTIFACT:TYPE[:CLASSIFIER]:VERSION FILE', "
                            f"got {line!r}", EXIT_USAGE)
        jars.append(Jar(parts[1], parts[2], parts[0]))
    if pom_sha is None:
        raise JarsError(f"{path}: no '# pom-sha256' line", EXIT_USAGE)
    if not jars:
        raise JarsError(f"{path}: names no jar", EXIT_USAGE)
    return pom_sha, jars


def write_lock(path: Path, version: str, pom_sha: str, jars: list[Jar]) -> None:
    lines = [f"# Apache RocketMQ {version}: every jar of the classpath pom.xml resolves to, in classpath order.",
             f"# Written by `python3 traces/rocketmq_jars.py lock {version}`; checked by every install.",
             f"# pom-sha256 {pom_sha}",
             "# sha256 coordinate file"]
    lines += [f"{j.sha256} {j.coordinate} {j.file}" for j in jars]
    path.write_text("\n".join(lines) + "\n")


def compare(locked: list[Jar], found: dict[str, Path], lock_path: Path) -> list[str]:
    """What differs between the lock and the jars at hand (coordinate -> file), one line each."""
    problems = []
    wanted = {j.coordinate for j in locked}
    for j in locked:
        path = found.get(j.coordinate)
        if path is None:
            problems.append(f"{j.coordinate} ({j.file}): in {lock_path} but not resolved")
            continue
        got = sha256_file(path)
        if got != j.sha256:
            problems.append(f"{j.coordinate} ({path}): sha256 {got}, {lock_path} pins {j.sha256}")
    problems += [f"{c} ({p}): resolved but not in {lock_path}" for c, p in found.items() if c not in wanted]
    return problems


# ------------------------------------------------------------------------------ Maven
def parse_list(text: str) -> list[tuple[str, Path]]:
    """dependency:list's output (with absolute file names) as (coordinate, path), in its order."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if ":/" not in line or line.startswith("The following"):
            continue
        line = line.split(" -- module ")[0].strip()
        coord_scope, path = line.split(":/", 1)
        parts = coord_scope.split(":")
        if len(parts) < 5:
            continue
        out.append((":".join(parts[:-1]), Path("/" + path)))
    return out


def pom_beside(coordinate: str, jar: Path) -> Path:
    """The pom a resolved jar's dependencies were read from, in the local repository beside it."""
    parts = coordinate.split(":")
    return jar.parent / f"{parts[1]}-{parts[-1]}.pom"


def maven_resolve(pom: Path) -> list[tuple[str, Path]]:
    """The runtime classpath pom.xml resolves to, from ~/.m2 when it is all there, else Maven Central."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsError("mvn not found on PATH: resolving RocketMQ's jars needs Maven (Debian: apt-get install maven)",
                        EXIT_USAGE)
    with tempfile.TemporaryDirectory() as tmp:
        listing = Path(tmp) / "list.txt"
        base = [mvn, "-B", "-q", "-f", str(pom), f"{DEPENDENCY_PLUGIN}:list", "-DincludeScope=runtime",
                "-DoutputAbsoluteArtifactFilename=true", f"-DoutputFile={listing}",
                "-Dmaven.wagon.http.retryHandler.count=2"]
        log = ""
        for offline in (True, False):
            r = subprocess.run(base + (["-o"] if offline else []), capture_output=True, text=True, timeout=1800)
            log = r.stdout + r.stderr
            if r.returncode == 0 and listing.is_file():
                resolved = parse_list(listing.read_text())
                # a jar in ~/.m2 without its pom resolves with no dependencies at all (Maven only
                # warns, offline): such a classpath is never whole
                pomless = [c for c, p in resolved if not pom_beside(c, p).is_file()]
                if not pomless:
                    return resolved
                if not offline:
                    raise JarsError(f"mvn resolved {', '.join(pomless)} without its pom (no dependency information): "
                                    f"{pom} cannot be resolved whole", EXIT_MISMATCH)
        errors = [ln for ln in log.splitlines() if "[ERROR]" in ln] or log.splitlines()[-5:]
        detail = re.sub(r"\x1b\[[0-9;]*m", "", errors[0] if errors else "(no output)")[:600]
        if UNREACHABLE.search(log):
            raise JarsError(f"Maven Central cannot be reached and ~/.m2 does not hold {pom.parent.name}: {detail}",
                            EXIT_UNREACHABLE)
        raise JarsError(f"mvn could not resolve {pom}: {detail}", EXIT_MISMATCH)


# ------------------------------------------------------------------------------ commands
def shown(path: Path) -> str:
    """path relative to the checkout when it is inside it."""
    return os.path.relpath(path, REPO) if path.is_relative_to(REPO) else str(path)


def out_dir(version: str) -> Path:
    return BUILD / f"rocketmq-{version.replace('/', '-')}"


def probe(classpath: str, classes: tuple[str, ...] = PROBED_CLASSES) -> list[str]:
    """The probed classes that do not load from classpath, with why (empty: all load)."""
    java = shutil.which("java")
    if java is None:
        raise JarsError("java not found on PATH: checking RocketMQ's classes needs a JDK 17", EXIT_USAGE)
    r = subprocess.run([java, "-cp", classpath, str(PROBE), *classes], capture_output=True, text=True,
                       timeout=300)
    if r.returncode == 0:
        return []
    return r.stdout.strip().splitlines() or [f"the class probe failed: {r.stderr.strip()[-500:]}"]


def verify_installed(version: str) -> None:
    """Re-hash the installed jars against the lock (no Maven): a changed or missing jar is exit 1."""
    d = release_dir(version)
    _, jars = read_lock(d / "jars.lock")
    lib = out_dir(version) / "lib"
    found = {j.coordinate: lib / j.file for j in jars if (lib / j.file).is_file()}
    problems = compare(jars, found, d / "jars.lock")
    if problems:
        raise JarsError(f"{shown(out_dir(version))} differs from its lock (remove it to install again):\n  "
                        + "\n  ".join(problems), EXIT_MISMATCH)


def install(version: str) -> Path:
    d = release_dir(version)
    lock_path = d / "jars.lock"
    pom_sha, jars = read_lock(lock_path)
    if sha256_file(d / "pom.xml") != pom_sha:
        raise JarsError(f"{d / 'pom.xml'} changed since {lock_path} was written: run "
                        f"`python3 traces/rocketmq_jars.py lock {version}` and review the lock's diff", EXIT_USAGE)
    out = out_dir(version)
    stamp = out / ".installed"
    want = sha256_file(lock_path)
    BUILD.mkdir(parents=True, exist_ok=True)
    # one install per release at a time (tests on two workers may both ask)
    with open(BUILD / f"{out.name}.lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        if stamp.is_file() and stamp.read_text().strip() == want and (out / "classpath.txt").is_file():
            verify_installed(version)
            return out
        resolved = maven_resolve(d / "pom.xml")
        found = dict(resolved)
        problems = compare(jars, found, lock_path)
        if problems:
            raise JarsError(f"RocketMQ {version}: Maven's jars differ from the lock:\n  " + "\n  ".join(problems),
                            EXIT_MISMATCH)
        tmp = out.with_name(out.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        (tmp / "lib").mkdir(parents=True)
        for j in jars:
            shutil.copyfile(found[j.coordinate], tmp / "lib" / j.file)
        classpath = ":".join(str(out / "lib" / j.file) for j in jars)
        (tmp / "classpath.txt").write_text(classpath + "\n")
        shutil.rmtree(out, ignore_errors=True)
        tmp.rename(out)
        try:
            verify_installed(version)  # the copies, as the lock pins them
            classes = probed_classes(version)
            missing = probe(classpath) if classes == PROBED_CLASSES else probe(classpath, classes)
        except JarsError:
            shutil.rmtree(out, ignore_errors=True)
            raise
        if missing:
            shutil.rmtree(out, ignore_errors=True)
            raise JarsError(f"RocketMQ {version}: classes do not load from the pinned jars:\n  " + "\n  ".join(missing),
                            EXIT_MISMATCH)
        stamp.write_text(want + "\n")
        print(f"RocketMQ {version}: {len(jars)} jars checked against {shown(lock_path)} into {shown(out)}",
              file=sys.stderr)
    return out


def lock(version: str) -> Path:
    d = release_dir(version)
    resolved = maven_resolve(d / "pom.xml")
    names = [p.name for _, p in resolved]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise JarsError(f"two jars share a file name: {', '.join(dup)}", EXIT_USAGE)
    jars = [Jar(c, p.name, sha256_file(p)) for c, p in resolved]
    write_lock(d / "jars.lock", version, sha256_file(d / "pom.xml"), jars)
    print(f"wrote {shown(d / 'jars.lock')}: {len(jars)} jars", file=sys.stderr)
    return d / "jars.lock"


USAGE = "usage: rocketmq_jars.py install VERSION... | lock VERSION | releases"


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("install", "lock", "releases") or (argv[0] != "releases" and len(argv) < 2):
        print(USAGE, file=sys.stderr)
        return EXIT_USAGE
    try:
        if argv[0] == "releases":
            print("\n".join(releases()))
        elif argv[0] == "lock":
            lock(argv[1])
        else:
            for v in argv[1:]:
                install(v)
    except JarsError as e:
        print(f"rocketmq_jars: {e}", file=sys.stderr)
        return e.code
    except subprocess.TimeoutExpired as e:
        print(f"rocketmq_jars: {e.cmd[0]} ran past {e.timeout} s", file=sys.stderr)
        return EXIT_UNREACHABLE
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
