"""Output files that cannot lose data (docs/cli-errors.md, "Outputs").

Three rules hold for every file a command writes:

- an output path that resolves to one of the command's inputs is refused before anything is
  read or written (`refuse_input_as_output`): through a symlink, a `..`, or a hard link;
- a file is written beside its destination under a hidden temporary name and renamed onto it
  only when complete (`AtomicFile`, `atomic_path`), so an interrupted or failed run leaves
  neither a prefix nor a damaged older file; standard output and special files (a FIFO,
  /dev/null) are written in place, as streams;
- a directory that many files go into (a dataset of runs) is claimed by one writer at a time
  (`claim_directory`).

While an output is open, SIGTERM ends the command as Ctrl-C does: the temporary file is removed
and the exit code is 143 (128 + SIGTERM), as shells report a terminated command.
"""
from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import sys
import tempfile
import threading

from rocketspec.errors import UserError

EXIT_TERMINATED = 128 + signal.SIGTERM
LOCK_NAME = ".rocketspec-writer.lock"


# ---------------------------------------------------------------- outputs that name inputs

def _is_stream(path) -> bool:
    return path is None or str(path) == "-"


def same_file(a, b) -> bool:
    """Whether paths `a` and `b` name one file: equal once symlinks and `..` are resolved, or
    one inode (a hard link)."""
    a, b = os.fspath(a), os.fspath(b)
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False        # one of them does not exist (yet): the resolved paths decided


def refuse_input_as_output(output, output_option: str, inputs) -> None:
    """Raise a UserError when `output` (given with `output_option`) names one of `inputs`:
    (option or argument name, path) pairs. Standard streams ("-") and None are skipped."""
    if _is_stream(output):
        return
    for name, path in inputs:
        if _is_stream(path):
            continue
        if same_file(output, path):
            raise UserError(f"{output_option} names the same file as {name} {path}, an input: writing it would "
                            f"destroy the input; give another output path", file=output)


# ---------------------------------------------------------------- SIGTERM as an interruption

_term_lock = threading.Lock()
_term_depth = 0
_term_previous = None


def _on_sigterm(signum, frame):
    # Raised where the main thread runs, so `finally` blocks and writers' cleanup run as for Ctrl-C.
    try:
        sys.stderr.write("Terminated.\n")
    except (OSError, ValueError):
        pass
    raise SystemExit(EXIT_TERMINATED)


@contextlib.contextmanager
def sigterm_interrupts():
    """Within the block, SIGTERM unwinds the main thread (SystemExit 143) instead of killing
    the process on the spot. Nests; does nothing outside the main thread or when a handler
    other than the default one is installed."""
    global _term_depth, _term_previous
    installed = False
    if threading.current_thread() is threading.main_thread():
        with _term_lock:
            if _term_depth == 0 and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
                _term_previous = signal.signal(signal.SIGTERM, _on_sigterm)
                installed = True
            elif _term_depth > 0:
                installed = True
            if installed:
                _term_depth += 1
    try:
        yield
    finally:
        if installed:
            with _term_lock:
                _term_depth -= 1
                if _term_depth == 0:
                    signal.signal(signal.SIGTERM, _term_previous)


# ---------------------------------------------------------------- files renamed when complete

def _umask() -> int:
    old = os.umask(0o022)
    os.umask(old)
    return old


def _write_error(path, exc: OSError) -> UserError:
    return UserError(f"cannot write: {exc.strerror or exc}", file=path)


class AtomicFile:
    """A binary file for `path`, written under a hidden temporary name in the same directory
    (`.NAME.XXXX.tmp`, which dataset readers and Spark skip) and renamed onto `path` by
    `commit()`; `discard()` removes it and leaves `path` as it was. A symlink is written
    through (its target is replaced, the link kept). A path that exists and is not a regular
    file (a FIFO, a terminal, /dev/null) is written in place: renaming onto it would replace
    the device, not feed it.

    As a context manager: commit on success, discard on any exception (Ctrl-C included)."""

    def __init__(self, path, *, append: bool = False):
        self.path = os.fspath(path)
        target = os.path.realpath(self.path)
        self.tmp: str | None = None
        self._done = False
        try:
            st = os.stat(target)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise _write_error(self.path, exc) from None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise UserError("is a directory; expected the path of a file to write", file=self.path)
        self._target = target
        self._mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask()
        self._cm = sigterm_interrupts()
        self._cm.__enter__()
        try:
            if st is not None and not stat.S_ISREG(st.st_mode):
                self.fh = open(target, "ab" if append else "wb")
                return
            fd, self.tmp = tempfile.mkstemp(dir=os.path.dirname(target) or ".",
                                            prefix=f".{os.path.basename(target)}.", suffix=".tmp")
            self.fh = os.fdopen(fd, "wb")
            if append and st is not None:
                with open(target, "rb") as old:
                    while chunk := old.read(1 << 20):
                        self.fh.write(chunk)
        except OSError as exc:
            self._cm.__exit__(None, None, None)
            if self.tmp is not None:
                _unlink(self.tmp)
            raise _write_error(self.path, exc) from None
        except BaseException:
            self._cm.__exit__(None, None, None)
            if self.tmp is not None:
                _unlink(self.tmp)
            raise

    def write(self, data: bytes) -> int:
        return self.fh.write(data)

    def commit(self) -> None:
        """Make the written bytes the file at `path` (at once, whole)."""
        if self._done:
            return
        self._done = True
        try:
            if self.tmp is None:
                self.fh.close()
                return
            try:
                self.fh.flush()
                os.fsync(self.fh.fileno())   # the bytes are on disk before the name points at them
                self.fh.close()
                os.chmod(self.tmp, self._mode)
                os.replace(self.tmp, self._target)
            except OSError as exc:
                _unlink(self.tmp)
                raise _write_error(self.path, exc) from None
        finally:
            self._cm.__exit__(None, None, None)

    def discard(self) -> None:
        """Remove what was written; `path` stays as it was."""
        if self._done:
            return
        self._done = True
        try:
            with contextlib.suppress(OSError, ValueError):
                self.fh.close()
            if self.tmp is not None:
                _unlink(self.tmp)
        finally:
            self._cm.__exit__(None, None, None)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.commit()
        else:
            self.discard()
        return False


def _unlink(path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


@contextlib.contextmanager
def atomic_path(path, *, append: bool = False):
    """For a writer that wants a path (a plotting library, pyarrow): yields a temporary path in
    the destination's directory, renamed onto `path` when the block ends without an exception,
    removed otherwise. With `append`, the temporary file starts as a copy of the existing one."""
    f = AtomicFile(path, append=append)
    if f.tmp is None:
        # a special file: the writer writes to it in place
        f.fh.close()
        try:
            yield f._target
        finally:
            f._done = True
            f._cm.__exit__(None, None, None)
        return
    f.fh.close()
    try:
        yield f.tmp
    except BaseException:
        f.discard()
        raise
    f.fh = open(f.tmp, "ab")     # commit() fsyncs and closes it
    f.commit()


def write_bytes(path, data: bytes, *, append: bool = False) -> None:
    """`data` as the whole file at `path` (or appended to it), complete or not at all."""
    with AtomicFile(path, append=append) as f:
        f.write(data)


# ---------------------------------------------------------------- directories with one writer

@contextlib.contextmanager
def claim_directory(path, what: str = "this directory"):
    """Hold `path` (an existing directory) for this process alone: another writer that tries
    gets a UserError naming the holder's pid. The claim is an exclusive lock on a hidden file
    in the directory, released by the kernel even if the process is killed, and the file is
    removed at the end of the block."""
    import fcntl

    lock = os.path.join(os.fspath(path), LOCK_NAME)
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise _write_error(path, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _read_pid(fd)
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise _write_error(path, exc) from None
            raise UserError(f"{what} is being written by another process{f' (pid {holder})' if holder else ''}: "
                            f"wait for it to end, or give another directory", file=path) from None
        # The lock file may have been removed by the writer that held it just before we locked
        # it: then our lock guards nothing, so take the file that is there now.
        try:
            same = os.fstat(fd).st_ino == os.stat(lock).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        _unlink(lock)
        os.close(fd)


def _read_pid(fd) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        return int(text) if text.isdigit() else None
    except OSError:
        return None


__all__ = ["refuse_input_as_output", "same_file", "AtomicFile", "atomic_path", "write_bytes", "claim_directory",
           "sigterm_interrupts", "EXIT_TERMINATED", "LOCK_NAME"]
