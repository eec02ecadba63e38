"""What `rocketspec replay` checks before it starts Spark: the Java it would launch, the master
it would connect to, and the paths it would read and write. Each fault is a UserError (exit 2,
one line) within seconds, instead of a JVM that never comes up or a driver that retries a
master for a minute and then fails as an internal error."""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess

from ...errors import UserError

JAVA_MIN = 17                   # PySpark 4.x runs on Java 17 or 21
JAVA_TIMEOUT_S = 20.0           # `java -version` on a loaded machine
CONNECT_TIMEOUT_S = 3.0         # per master address: a standalone master accepts at once

# The masters Spark itself takes (SparkContext / SparkSubmit), by form.
_LOCAL = re.compile(r"local(\[(\*|[1-9]\d*)(,\s*[1-9]\d*)?\])?$")
_LOCAL_CLUSTER = re.compile(r"local-cluster\[\s*[1-9]\d*\s*,\s*[1-9]\d*\s*,\s*[1-9]\d*\s*\]$")
_HOST_PORT = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$")
MASTER_FORMS = "local, local[N], local[*], spark://HOST:PORT[,HOST:PORT...], yarn or k8s://https://HOST:PORT"

# A URL scheme: hdfs://, s3a://, gs://, abfs://, file://, ... (not a Windows drive letter)
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+)://")


def java_command() -> str:
    """The `java` Spark would launch: $JAVA_HOME/bin/java when JAVA_HOME is set (as
    spark-class does), else the first on PATH. UserError when there is none."""
    home = os.environ.get("JAVA_HOME")
    if home:
        java = os.path.join(home, "bin", "java")
        if not (os.path.isfile(java) and os.access(java, os.X_OK)):
            raise UserError(f"JAVA_HOME={home} has no executable bin/java: Spark needs Java {JAVA_MIN} or later; "
                            f"set JAVA_HOME to a Java {JAVA_MIN}+ installation or unset it to use `java` on PATH")
        return java
    java = shutil.which("java")
    if java is None:
        raise UserError(f"no Java found (no JAVA_HOME and no `java` on PATH): `replay` runs on Spark, which needs "
                        f"Java {JAVA_MIN} or later (e.g. apt-get install openjdk-{JAVA_MIN}-jre-headless)")
    return java


def java_major(text: str) -> int | None:
    """The major version in `java -version`'s output ("1.8.0_392" is 8, "17.0.15" is 17)."""
    m = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if m is None:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def check_java() -> str:
    """The java command, once it has answered `-version` with Java 17 or later."""
    java = java_command()
    try:
        p = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=JAVA_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise UserError(f"{java} -version did not answer within {JAVA_TIMEOUT_S:g} s: Spark cannot start "
                        f"that Java") from None
    except OSError as exc:
        raise UserError(f"{java} cannot be run ({exc.strerror}): Spark needs Java {JAVA_MIN} or later") from None
    said = (p.stderr or "") + (p.stdout or "")
    major = java_major(said)
    if p.returncode != 0 or major is None:
        first = said.strip().splitlines()[0] if said.strip() else f"exit code {p.returncode}"
        raise UserError(f"{java} -version failed ({first}): Spark needs a working Java {JAVA_MIN} or later")
    if major < JAVA_MIN:
        raise UserError(f"{java} is Java {major}: Spark 4 needs Java {JAVA_MIN} or later (set JAVA_HOME)")
    return java


def master_addresses(master: str) -> list[tuple[str, int]] | None:
    """The (host, port) pairs of a spark:// master, [] for a master with nothing to connect to
    here (local, yarn, k8s), or None for a malformed master."""
    m = master.strip()
    if _LOCAL.match(m) or _LOCAL_CLUSTER.match(m) or m == "yarn":
        return []
    if m.startswith("k8s://"):
        rest = m[len("k8s://"):]
        return [] if re.match(r"(https?://)?[^/\s:]+(:\d{1,5})?/?$", rest) else None
    if m.startswith("spark://"):
        out = []
        for part in m[len("spark://"):].split(","):
            hp = _HOST_PORT.match(part.strip())
            if hp is None or not 0 < int(hp.group(2)) < 65536:
                return None
            out.append((hp.group(1).strip("[]"), int(hp.group(2))))
        return out
    return None


def check_master(master: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """A master Spark takes, and for spark://, one of its addresses accepting connections
    (a bounded connect each). For yarn, the Hadoop configuration Spark needs to find it."""
    addrs = master_addresses(master)
    if addrs is None:
        raise UserError(f"--master {master!r}: not a Spark master; expected {MASTER_FORMS}")
    if master.strip() == "yarn" and not (os.environ.get("HADOOP_CONF_DIR") or os.environ.get("YARN_CONF_DIR")):
        raise UserError("--master yarn: set HADOOP_CONF_DIR or YARN_CONF_DIR to the cluster's Hadoop "
                        "configuration (docs/replay.md, YARN)")
    why = []
    for host, port in addrs:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except socket.timeout:
            why.append(f"{host}:{port} did not answer within {timeout:g} s")
        except OSError as exc:
            why.append(f"{host}:{port}: {exc.strerror or exc}")
    if why:
        raise UserError(f"--master {master}: no standalone master reachable ({'; '.join(why)}); "
                        f"start it or correct the address")


def local_path(p: str, what: str = "input") -> str:
    """A path `replay` can use: a local path as given, file:///abs as /abs; a URL of another
    file system (hdfs://, s3a://, ...) is refused with what to do instead."""
    s = str(p)
    m = _SCHEME.match(s)
    if m is None:
        return s
    scheme = m.group(1).lower()
    if scheme == "file":
        rest = s[len(m.group(0)):]
        host, sep, path = rest.partition("/")
        if host not in ("", "localhost"):
            raise UserError(f"a file:// URL names host {host!r}: expected file:///ABSOLUTE/PATH (a path on this "
                            f"machine and, on a cluster, on every executor's)", file=s)
        return "/" + path if sep else "/"
    raise UserError(f"{scheme}:// {what}: replay reads and writes traces through the local file system of the "
                    f"driver and every executor; mount it (e.g. an HDFS NFS gateway, mountpoint-s3 or s3fs) and "
                    f"give the mounted path, or copy it to a shared path (docs/replay.md, HDFS and S3)", file=s)
