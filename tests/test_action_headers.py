"""Each action of spec.actions opens with two lines naming the RocketMQ code it stands for and
who acts, as the kind registry (traces.kinds) states them; the package keeps one module per
mechanism, each of a size one can read."""
import inspect
from pathlib import Path

from rocketspec.spec.actions import HANDLERS
from rocketspec.traces.kinds import KINDS

MODULES = {"directory", "pull", "consume", "offsets", "retry", "locks", "pop"}


def test_every_action_header_names_the_registry_mechanism_and_actor():
    wrong = []
    for name, kind in KINDS.items():
        doc = inspect.getdoc(HANDLERS[name]) or ""
        want = [f"RocketMQ: {kind.mechanism}.", f"Actor: {kind.actor}."]
        if doc.splitlines()[:2] != want:
            wrong.append(f"{name}: header {doc.splitlines()[:2]}, registry says {want}")
    assert not wrong, "\n".join(wrong)


def test_each_action_lives_in_its_mechanism_module():
    where = {name: f.__module__.rsplit(".", 1)[1] for name, f in HANDLERS.items()}
    assert set(where.values()) <= MODULES, set(where.values()) - MODULES


def test_no_module_of_the_actions_is_over_800_lines():
    import rocketspec.spec.actions as pkg

    sizes = {p.name: len(p.read_text().splitlines()) for p in Path(pkg.__file__).parent.glob("*.py")}
    assert {"__init__.py", "common.py"} | {m + ".py" for m in MODULES} <= set(sizes)
    assert max(sizes.values()) <= 800, sizes
