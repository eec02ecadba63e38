"""The Makefile's `browser` target (run by `make test`) with a fake apt-get on PATH: it waits for
the package manager's lock within a bound, and when the install still fails it says why and lets
the tests run (tests/test_explain_browser.py then skips, or fails under ROCKETSPEC_REQUIRE_REAL=1)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MAKE = shutil.which("make")
pytestmark = pytest.mark.skipif(MAKE is None, reason="needs make, to run the Makefile")

APT_GET = """#!/bin/sh
echo "apt-get $*" >> "$LOG"
case "$*" in
  *" update "*|*" update") what="$FAKE_UPDATE";;
  *) what="$FAKE_INSTALL";;
esac
case "$what" in
  ok) exit 0;;
  lock) echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)" >&2; exit 100;;
  *) echo "E: Failed to fetch http://deb.example/dists/stable/InRelease" >&2; exit 100;;
esac
"""


def make_browser(tmp_path, *, uid="0", update="ok", install="ok", chromium=False, timeout=7):
    bin_ = tmp_path / "bin"
    bin_.mkdir(exist_ok=True)
    log = tmp_path / "calls.log"
    log.write_text("")
    scripts = {"apt-get": APT_GET, "id": '#!/bin/sh\necho "$FAKE_UID"\n',
               "sleep": '#!/bin/sh\necho "sleep $*" >> "$LOG"\n'}
    if chromium:
        scripts["chromium"] = "#!/bin/sh\nexit 0\n"
    for name, text in scripts.items():
        (bin_ / name).write_text(text)
        (bin_ / name).chmod(0o755)
    env = {"PATH": str(bin_), "LOG": str(log), "FAKE_UID": uid, "FAKE_UPDATE": update, "FAKE_INSTALL": install,
           "HOME": str(tmp_path)}
    r = subprocess.run([MAKE, "-s", "-C", str(REPO), "browser", f"APT_LOCK_TIMEOUT={timeout}"], env=env,
                       capture_output=True, text=True, timeout=60)
    return r, log.read_text().splitlines()


def test_a_locked_install_waits_within_its_bound_then_lets_the_tests_run(tmp_path):
    r, calls = make_browser(tmp_path, install="lock")
    assert r.returncode == 0, r.stdout + r.stderr
    applied = [c for c in calls if c.startswith("apt-get")]
    assert len(applied) == 2
    assert all("-o DPkg::Lock::Timeout=7" in c for c in applied), applied
    assert "Could not get lock" in r.stderr          # apt's own words stay visible
    assert "note: chromium could not be installed" in r.stdout
    assert "tests/test_explain_browser.py will skip (and fail under ROCKETSPEC_REQUIRE_REAL=1)" in r.stdout


def test_locked_package_lists_are_retried_within_the_bound_then_the_install_is_tried(tmp_path):
    r, calls = make_browser(tmp_path, update="lock", install="ok", timeout=12)
    assert r.returncode == 0, r.stdout + r.stderr
    updates = [c for c in calls if " update" in c]
    sleeps = [c for c in calls if c.startswith("sleep")]
    assert len(updates) == 3 and sleeps == ["sleep 5", "sleep 5"]      # 5 s apart, no longer than 12 s
    assert "stayed locked for 12 s" in r.stdout
    assert any(" install " in c for c in calls)
    assert "could not be installed" not in r.stdout


def test_an_update_that_fails_otherwise_is_not_retried(tmp_path):
    r, calls = make_browser(tmp_path, update="net", install="net")
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(calls) == 2 and " update" in calls[0] and " install " in calls[1]
    assert not [c for c in calls if c.startswith("sleep")]
    assert "note: apt-get update failed" in r.stdout and "note: chromium could not be installed" in r.stdout


def test_a_clean_install_says_nothing_more(tmp_path):
    r, calls = make_browser(tmp_path)
    assert r.returncode == 0 and "note:" not in r.stdout
    assert len(calls) == 2


def test_without_root_nothing_is_installed_and_the_skip_is_said(tmp_path):
    r, calls = make_browser(tmp_path, uid="1000")
    assert r.returncode == 0 and calls == []
    assert "note: chromium is missing" in r.stdout and "will skip" in r.stdout


def test_an_installed_chromium_is_left_alone(tmp_path):
    r, calls = make_browser(tmp_path, chromium=True)
    assert r.returncode == 0 and calls == [] and r.stdout == ""
