"""The command line's one error path (docs/cli-errors.md).

Every mistake in what a user gives rocketspec (a file, a line of it, a field, an option) is a
`UserError`: it names where (file, line, event, field path) and says what was expected, and the
command line reports it in one line with exit code 2. Anything else that escapes a command is a
bug in rocketspec: exit code 3, a request for a report, and the traceback kept in a file (or
printed with ``--debug`` / ``ROCKETSPEC_DEBUG=1``). With ``--json`` both are one JSON object on
standard output, with the same fields for every command.
"""
from __future__ import annotations

import errno
import os
import sys

EXIT_OK, EXIT_FINDING, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INCOMPLETE = 0, 1, 2, 3, 4
EXIT_INTERRUPTED = 130  # SIGINT, as shells report it; not 1, which would read as a finding

DEBUG_ENV = "ROCKETSPEC_DEBUG"
# Where a crash report goes: the project's issue tracker (the repository's `issues` list).
REPORT_TO = "the rocketspec issue tracker"


class UserError(Exception):
    """Bad input or configuration: `message` says what was wrong and what was expected.

    Location, each optional: `file` (a path, or a name such as ``builtin:basic``), `line`
    (1-based line of a text file, or row of a Parquet file), `event` (the event's seq),
    `field` (a field path such as ``groups[0].listener.duration_ms``)."""

    def __init__(self, message: str, *, file=None, line: int | None = None, event: int | None = None,
                 field: str | None = None):
        self.message = " ".join(str(message).split())  # one line, whatever the cause said
        self.file = None if file is None else str(file)
        self.line, self.event, self.field = line, event, field
        super().__init__(self.where_prefix() + self.message)

    def where_prefix(self) -> str:
        where = ""
        if self.file is not None:
            where = self.file if self.line is None else f"{self.file}:{self.line}"
        elif self.line is not None:
            where = f"line {self.line}"
        parts = [p for p in (where, f"event seq {self.event}" if self.event is not None else "",
                             self.field or "") if p]
        return "".join(p + ": " for p in parts)

    def to_json(self) -> dict:
        return {"error": str(self), "message": self.message, "file": self.file, "line": self.line,
                "event": self.event, "field": self.field}


def _user_error_from(exc: BaseException) -> UserError | None:
    """A user mistake that surfaced as something other than a UserError, or None."""
    import click

    if isinstance(exc, UserError):
        return exc
    if isinstance(exc, click.ClickException):
        msg = exc.format_message()
        if isinstance(exc, click.UsageError) and exc.ctx is not None:
            msg = f"{msg} (see `{exc.ctx.command_path} --help`)"
        return UserError(msg)
    if isinstance(exc, OSError) and getattr(exc, "filename", None) is not None and exc.strerror:
        # A path the user named could not be opened, read or written (a directory, no
        # permission, a full disk): about the environment and the input, not a bug.
        return UserError(f"cannot use this path: {exc.strerror}", file=exc.filename)
    if isinstance(exc, OSError):
        return _environment_error(exc)
    return None


# Faults of the machine, whichever file they struck: a full or read-only disk, a quota, a
# device error, no file descriptors left. Never a bug in rocketspec.
_ENVIRONMENT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO, errno.EMFILE,
                       errno.ENFILE}


def _environment_error(exc: OSError) -> UserError | None:
    text = str(exc.strerror or exc)
    if "No usable temporary directory" in text:
        # tempfile found no writable directory among TMPDIR, TEMP, TMP, /tmp, /var/tmp and the
        # current directory.
        where = os.environ.get("TMPDIR") or os.environ.get("TEMP") or os.environ.get("TMP") or "/tmp"
        return UserError("no writable temporary directory; set TMPDIR to a writable directory",
                         file=f"TMPDIR={where}")
    if exc.errno in _ENVIRONMENT_ERRNOS:
        return UserError(f"the environment refused a write or an open: {os.strerror(exc.errno)}")
    return None


def _write_traceback(exc: BaseException) -> str | None:
    import tempfile
    import traceback

    try:
        fd, path = tempfile.mkstemp(prefix="rocketspec-crash-", suffix=".txt")
        with os.fdopen(fd, "w") as fh:
            fh.write(f"command line: {' '.join(sys.argv)}\n\n")
            fh.write("".join(traceback.format_exception(exc)))
        return path
    except OSError:
        return None


def report_exception(exc: BaseException, *, command: str | None, as_json: bool, debug: bool) -> int:
    """Report an exception that ended a command; return the exit code."""
    import traceback

    user = _user_error_from(exc)
    if user is not None:
        if as_json:
            _emit({"ok": False, "verdict": "bad_input", "exit_code": EXIT_BAD_INPUT, "command": command,
                   **user.to_json()})
        else:
            sys.stderr.write(f"error: {user}\n")
        return EXIT_BAD_INPUT

    what = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:300]
    tb_file = None if debug else _write_traceback(exc)
    ask = (f"please report it to {REPORT_TO} with the command line and its input"
           + (f", and the traceback in {tb_file}" if tb_file else "")
           + ("" if debug else f" (or run with --debug or {DEBUG_ENV}=1 to print it)"))
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    if as_json:
        _emit({"ok": False, "verdict": "internal_error", "exit_code": EXIT_INTERNAL, "command": command,
               "error": f"internal error (a bug in rocketspec): {what}", "message": what, "file": None,
               "line": None, "event": None, "field": None, "report": {"to": REPORT_TO, "traceback": tb_file}})
    sys.stderr.write(f"error: internal error (a bug in rocketspec, not in your input): {what}\n  {ask}\n")
    return EXIT_INTERNAL


def _emit(obj: dict) -> None:
    import orjson

    try:
        sys.stdout.write(orjson.dumps(obj, default=str).decode() + "\n")
        sys.stdout.flush()
    except (OSError, ValueError):
        pass


def debug_requested() -> bool:
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


__all__ = ["UserError", "report_exception", "EXIT_OK", "EXIT_FINDING", "EXIT_BAD_INPUT", "EXIT_INTERNAL",
           "EXIT_INCOMPLETE", "EXIT_INTERRUPTED", "DEBUG_ENV"]
