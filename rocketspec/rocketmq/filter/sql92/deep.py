"""Running the recursive parts of the filter (parser, evaluation, printing) on deep input.

RocketMQ's parser recurses once per parenthesis and per unary operator and its trees are as
deep as the selector, so the filter must handle nesting a few thousand levels deep (see
:data:`.parser.JAVA_MAX_NESTING`). Python's default recursion limit is 1000; the calls here
run in a helper thread with a large stack and a raised recursion limit instead, only when
the input is deep (shallow input stays on the caller's thread, at no cost)."""
from __future__ import annotations

import sys
import threading

# Nodes or parentheses deeper than this go to the helper thread.
SHALLOW = 100
_STACK_BYTES = 512 * 1024 * 1024
# Enough for the deepest tree a selector within MAX_EXPR_LENGTH makes (about 131,000 levels,
# a few Python frames each); the C stack of the helper thread has room for it.
_RECURSION_LIMIT = 600_000
_LOCK = threading.Lock()


def run_deep(fn, *args):
    """fn(*args) on a thread with a 512 MiB stack and a recursion limit of 600,000; its
    result, or its exception re-raised here."""
    out: dict = {}

    def target():
        try:
            out["value"] = fn(*args)
        except BaseException as exc:   # handed back to the caller's thread
            out["error"] = exc

    with _LOCK:
        old_size = threading.stack_size()
        old_limit = sys.getrecursionlimit()
        threading.stack_size(_STACK_BYTES)
        try:
            sys.setrecursionlimit(max(old_limit, _RECURSION_LIMIT))
            t = threading.Thread(target=target, name="sql92-deep", daemon=True)
            t.start()
            t.join()
        finally:
            threading.stack_size(old_size)
            sys.setrecursionlimit(old_limit)
    if "error" in out:
        raise out["error"]
    return out["value"]
