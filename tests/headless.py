"""A real headless browser for tests: Debian's chromium, driven over the DevTools protocol on a
pipe (--remote-debugging-pipe: commands on fd 3, answers on fd 4, NUL-separated JSON). No
browser download, no network port, no internet: the page is a file:// URL.

`open_page(path)` loads a page, waits for `ready_js` to be true, evaluates `probe_js`, and
returns what the page reported plus every console message, uncaught exception, log entry and
network request the browser saw.
"""
from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

CANDIDATES = ("chromium", "chromium-browser")


def chromium() -> str | None:
    for name in CANDIDATES:
        p = shutil.which(name)
        if p:
            return p
    return None


@dataclass
class PageResult:
    value: object = None
    console: list = field(default_factory=list)      # (type, text)
    exceptions: list = field(default_factory=list)   # text
    log: list = field(default_factory=list)          # (level, source, text)
    requests: list = field(default_factory=list)     # urls

    def errors(self) -> list:
        """Console errors and warnings, uncaught exceptions, and error log entries."""
        out = [f"console.{t}: {x}" for t, x in self.console if t in ("error", "warning", "assert")]
        out += [f"exception: {x}" for x in self.exceptions]
        out += [f"log {lv} ({src}): {x}" for lv, src, x in self.log if lv in ("error", "warning")]
        return out


class _Pipe:
    def __init__(self, proc, w, r):
        self.proc, self.w, self.r = proc, w, r
        self.buf = b""
        self.next_id = 0
        self.events: list = []

    def send(self, method, params=None, session=None, timeout=30.0):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        want = self.next_id
        deadline = time.monotonic() + timeout
        while True:
            m = self._read(deadline)
            if m.get("id") == want:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, name, timeout=30.0):
        deadline = time.monotonic() + timeout
        for m in self.events:
            if m.get("method") == name:
                return m
        while True:
            m = self._read(deadline)
            self.events.append(m)
            if m.get("method") == name:
                return m

    def _read(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the browser did not answer in time")
            ready, _, _ = select.select([self.r], [], [], left)
            if ready:
                chunk = os.read(self.r, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"the browser closed its pipe (exit {self.proc.poll()})")
                self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)


def open_page(path, probe_js: str, ready_js: str = "document.readyState === 'complete'",
              timeout: float = 60.0) -> PageResult:
    exe = chromium()
    if exe is None:
        raise FileNotFoundError("chromium is not installed (apt-get install chromium)")
    cmd_r, cmd_w = os.pipe()      # we write, the browser reads on fd 3
    res_r, res_w = os.pipe()      # the browser writes on fd 4, we read
    hi_cmd = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10)
    hi_res = fcntl.fcntl(res_w, fcntl.F_DUPFD, 10)

    def child_fds():
        os.dup2(hi_cmd, 3)
        os.dup2(hi_res, 4)

    profile = tempfile.mkdtemp(prefix="rocketspec-chromium-")
    args = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
            "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
            "--disable-sync", "--disable-component-update", "--mute-audio", f"--user-data-dir={profile}",
            "about:blank"]
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            close_fds=False, preexec_fn=child_fds)
    for fd in (cmd_r, res_w, hi_cmd, hi_res):
        os.close(fd)
    pipe = _Pipe(proc, cmd_w, res_r)
    out = PageResult()
    try:
        target = pipe.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for m in ("Runtime.enable", "Log.enable", "Page.enable", "Network.enable"):
            pipe.send(m, session=session)
        url = "file://" + os.path.abspath(path)
        pipe.send("Page.navigate", {"url": url}, session=session)
        pipe.wait_event("Page.loadEventFired", timeout=timeout)
        deadline = time.monotonic() + timeout
        while True:
            r = pipe.send("Runtime.evaluate", {"expression": f"!!({ready_js})", "returnByValue": True},
                          session=session)
            if r.get("result", {}).get("value") is True:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"the page never became ready ({ready_js})")
            time.sleep(0.2)
        time.sleep(0.3)     # let late errors of the page's scripts arrive
        r = pipe.send("Runtime.evaluate", {"expression": probe_js, "returnByValue": True}, session=session)
        if "exceptionDetails" in r:
            raise RuntimeError(f"the probe failed: {r['exceptionDetails']}")
        out.value = r.get("result", {}).get("value")
        try:
            pipe.send("Browser.close", timeout=5)
        except (RuntimeError, TimeoutError):
            pass
    finally:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        os.close(cmd_w)
        os.close(res_r)
        shutil.rmtree(profile, ignore_errors=True)
    for m in pipe.events:
        meth, p = m.get("method"), m.get("params", {})
        if meth == "Runtime.consoleAPICalled":
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            out.console.append((p.get("type"), text))
        elif meth == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.exceptions.append(d.get("exception", {}).get("description") or d.get("text"))
        elif meth == "Log.entryAdded":
            e = p.get("entry", {})
            out.log.append((e.get("level"), e.get("source"), e.get("text")))
        elif meth == "Network.requestWillBeSent":
            out.requests.append(p.get("request", {}).get("url"))
    return out
