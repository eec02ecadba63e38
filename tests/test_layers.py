"""The layers of docs/architecture.md hold for every import of the checkout (lazy ones too):
no upward edge against bench.import_layers.LAYERS, no edge between spec and reference, no cycle
between packages (the folders, every package the table names, the CLI), every module placed.
The same check on a small tree with one deliberate upward import must fail."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from bench import import_layers as il

ROOT = Path(__file__).resolve().parent.parent


def problems(root: Path, layers=il.LAYERS, independent=il.INDEPENDENT) -> list[str]:
    folders = il.folders_from_setup(root)
    modules = il.discover(root, folders)
    edges = il.import_edges(modules, root)
    out = [f"not placed by the layer table: {m}" for m in sorted(modules) if il.layer_of(m, layers) is None]
    up, side = il.violations(edges, layers, folders, independent)
    out += [f"upward: {e.path}:{e.line} {e.source} (L{il.layer_of(e.source, layers)}) -> "
            f"{e.target} (L{il.layer_of(e.target, layers)}) [{e.kind}]" for e in up]
    out += [f"between independent packages: {e.path}:{e.line} {e.source} -> {e.target}" for e in side]
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in il.package_graph(edges, il.package_units(modules, folders, layers)):
        graph[a].add(b)
    out += ["cycle between packages: " + " -> ".join(c + c[:1]) for c in il.simple_cycles(graph)]
    return out


def test_the_checkout_is_layered():
    assert problems(ROOT) == []


def _write(root: Path, rel: str, text: str = "") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_one_upward_import_fails(tmp_path):
    folders = {"pkg": "pkg", "pkg.low": "low", "pkg.high": "high"}
    _write(tmp_path, "setup.py", f"FOLDERS = {folders!r}\n")
    _write(tmp_path, "pkg/__init__.py")
    _write(tmp_path, "low/__init__.py")
    _write(tmp_path, "high/__init__.py")
    _write(tmp_path, "high/tool.py", "from pkg.low import util\n")
    layers = {"pkg": 0, "pkg.low": 1, "pkg.high": 2}
    _write(tmp_path, "low/util.py", "def f():\n    return 1\n")
    assert problems(tmp_path, layers, frozenset()) == []
    # the deliberate upward import: lazy, inside a function
    _write(tmp_path, "low/util.py", "def f():\n    from pkg.high import tool\n    return tool\n")
    found = problems(tmp_path, layers, frozenset())
    assert any(p.startswith("upward: ") and "pkg.low.util (L1) -> pkg.high.tool (L2)" in p for p in found), found
    assert any(p.startswith("cycle between packages: ") for p in found), found
    # and a module the table does not place
    _write(tmp_path, "pkg/stray.py", "")
    assert "not placed by the layer table: pkg.stray" in problems(tmp_path, {"pkg.low": 1, "pkg.high": 2}, frozenset())
