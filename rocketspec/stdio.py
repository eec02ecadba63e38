"""Standard input and output as the environment gives them, faults included.

A full disk under standard output (`> /dev/full`), a reader that went away (EPIPE) or a closed
standard input (`<&-`) are faults of the environment, not bugs in rocketspec: the command line
reports them as bad input (exit 2, one line naming ``<stdout>`` or ``<stdin>``), or, for a reader
that went away, stops quietly. `guard()` installs stand-ins for `sys.stdout` and `sys.stdin` that
turn those faults into `StreamError`, whichever code writes or reads, and `finish()` flushes
standard output inside the command line's error path, so that Python's own flush at exit never
meets a fault it would only print and exit 120 on.
"""
from __future__ import annotations

import errno
import io
import os
import sys

from rocketspec.errors import UserError

STDOUT, STDIN = "<stdout>", "<stdin>"


class StreamError(UserError):
    """Standard output could not be written, or standard input read: the environment's fault."""


class ReaderGone(Exception):
    """Standard output's reader went away (EPIPE): stop quietly, as `head` expects."""


def _fault(exc: OSError) -> Exception:
    if isinstance(exc, BrokenPipeError) or exc.errno == errno.EPIPE:
        return ReaderGone()
    return StreamError(f"cannot write: {exc.strerror or exc}", file=STDOUT)


class _Guarded:
    """`sys.stdout` (and, as its `buffer`, `sys.stdout.buffer`) whose write faults are
    `StreamError` or `ReaderGone`."""

    def __init__(self, raw, text=True):
        self._raw = raw
        if text:
            buf = getattr(raw, "buffer", None)
            self.buffer = _Guarded(buf, text=False) if buf is not None else None

    def write(self, data):
        try:
            return self._raw.write(data)
        except OSError as exc:
            raise _fault(exc) from None

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        try:
            return self._raw.flush()
        except OSError as exc:
            raise _fault(exc) from None

    def __getattr__(self, name):
        return getattr(self._raw, name)


class _ClosedStdin(io.RawIOBase):
    """Standard input when file descriptor 0 is closed: reading it is a located error."""

    def readable(self):
        return True

    def _refuse(self):
        raise StreamError("standard input is closed; give the input on standard input or as a file",
                          file=STDIN)

    def read(self, size=-1):
        if size == 0:  # a probe for the stream's type, not a read
            return b""
        self._refuse()

    def readinto(self, b):
        self._refuse()

    def readline(self, size=-1):
        self._refuse()

    def readlines(self, hint=-1):
        self._refuse()

    def __iter__(self):
        self._refuse()

    def fileno(self):
        raise OSError(errno.EBADF, "standard input is closed")

    def isatty(self):
        return False

    @property
    def buffer(self):
        return self

    encoding = "utf-8"
    errors = "strict"


def _fd_open(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


def guard() -> None:
    """Install the stand-ins (once)."""
    if not isinstance(sys.stdin, _ClosedStdin) and (sys.stdin is None or not _fd_open(0)):
        sys.stdin = _ClosedStdin()
    if sys.stdout is not None and not isinstance(sys.stdout, _Guarded):
        sys.stdout = _Guarded(sys.stdout)


def finish() -> None:
    """Flush standard output now, where a fault can still be reported."""
    if sys.stdout is not None:
        sys.stdout.flush()


def silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null and drop what is buffered, so that the flush at
    exit cannot fail again after a fault was reported."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    except OSError:
        pass
    out = sys.stdout
    real = getattr(out, "_real", out)
    try:
        real.flush()  # now into /dev/null
    except (OSError, ValueError):
        pass
