"""The explorer of the reference compares states by the bytes of a canonical snapshot
(model_checks/world.py). Two worlds equal in value must give the same bytes, whatever objects
their equal strings and tuples happen to be: pickle writes a value it has met before (by
identity) as a back-reference, so without canonical identities a world whose dict key was made
by this step, and the same world with that key loaded from a snapshot, were two states."""
from __future__ import annotations

import pytest

from rocketspec.model_checks import world as W
from rocketspec.model_checks.refexplore import RefExplorer
from rocketspec.model_checks.scopes import load_scope


def _states(scope, n):
    ex = RefExplorer(load_scope(scope, consumers=2), "rocketmq-4.9.8")
    root, _ = ex._root()
    ex.horizon = root.run.scenario["drain_limit_ms"]
    snaps, seen, i = [W.snapshot(root)], set(), 0
    while len(snaps) < n and i < len(snaps):
        for _script, _f, _ended, fp, s, _steps in ex.expand(snaps[i]):
            if s is not None and fp not in seen:
                seen.add(fp)
                snaps.append(s)
        i += 1
    return snaps[::max(1, len(snaps) // 40)]


def _fresh(v):
    """An equal immutable value that is a new object (strings and tuples rebuilt)."""
    if type(v) is str and len(v) > 1:
        return (v + "\0")[:-1]
    if type(v) is tuple and v:
        return tuple(_fresh(e) for e in v)
    return v


def _unshare(root):
    """Make every str (of more than one character: CPython caches the others) and every tuple
    held by a dict, list or object a new object, in place: the world's value is unchanged."""
    seen, stack = set(), [root]
    while stack:
        x = stack.pop()
        t = type(x)
        if t in (int, bool, float, str, bytes, tuple, frozenset, type(None)) or id(x) in seen:
            continue
        seen.add(id(x))
        if t is dict:
            items = [(_fresh(k), _fresh(v)) for k, v in x.items()]
            x.clear()
            x.update(items)
            stack.extend(v for _, v in items)
        elif t is list:
            x[:] = [_fresh(v) for v in x]
            stack.extend(x)
        elif t.__name__ == "method":
            stack.append(x.__self__)
        elif t.__name__ in W._SKIP or t.__name__ == "partial" or isinstance(x, dict) or not hasattr(t, "__mro__"):
            continue
        else:
            d = getattr(x, "__dict__", None)
            if isinstance(d, dict):
                for k in list(d):
                    d[k] = _fresh(d[k])
                stack.extend(d.values())
            for klass in t.__mro__:
                for k in getattr(klass, "__slots__", ()):
                    if k != "__dict__" and hasattr(x, k):
                        try:
                            setattr(x, k, _fresh(getattr(x, k)))
                        except (AttributeError, TypeError):
                            pass
                        stack.append(getattr(x, k))
            for v in (x if t.__name__ == "deque" else ()):
                stack.append(v)


@pytest.fixture(scope="module")
def states():
    return _states("tiny", 120)


def test_snapshot_does_not_depend_on_which_equal_strings_and_tuples_are_one_object(states):
    assert len(states) >= 30
    changed = 0
    for snap in states:
        a = W.load(snap, None, W.BudgetChooser())
        b = W.load(snap, None, W.BudgetChooser())
        _unshare(b)
        plain_b = W.pickle.dumps(b, protocol=W.pickle.HIGHEST_PROTOCOL)
        changed += plain_b != snap          # the unsharing is visible to pickle
        assert W.snapshot(a) == W.snapshot(b)
    assert changed == len(states)


def test_a_snapshot_is_a_fixed_point(states):
    """Loading a canonical snapshot and taking it again gives the same bytes."""
    for snap in states:
        assert W.snapshot(W.load(snap, None, W.BudgetChooser())) == snap
