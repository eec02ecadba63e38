"""The import graph of rocketspec's packages, checked against a declared layer table.

    python -m bench.import_layers [--root DIR] [--modules] [--quiet]

Walks every import of every module under the folders setup.py maps onto the `rocketspec`
package tree (spec/, reference/, model_checks/, conformance/, traces/, rocketspec/). Every
import counts: top-level ones, lazy ones inside functions, ones under `if TYPE_CHECKING:`,
and `importlib.import_module("literal")`; relative imports are resolved against the importing
module. It prints:

  - the package-level edges with their counts (an edge per importing statement);
  - every simple cycle between packages, and the strongly connected components between
    modules (--modules lists their members);
  - every edge that points upward against LAYERS (module prefix -> layer number, the longest
    prefix wins; a module imports only its own layer or lower), and every edge between two
    packages of an INDEPENDENT layer (spec and reference never import each other);
  - modules the table does not place.

Exit 1 when an upward or sideways edge exists, 0 otherwise. The functions (discover,
import_edges, package_of, layer_of, violations, strongly_connected, simple_cycles) take the
folder map and the table as arguments, so a layer test can reuse them on any tree.
"""
from __future__ import annotations

import argparse
import ast
import os
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

# Package -> folder, as setup.py maps them (read from setup.py when it is there).
FOLDERS: dict[str, str] = {
    "rocketspec": "rocketspec",
    "rocketspec.spec": "spec",
    "rocketspec.reference": "reference",
    "rocketspec.model_checks": "model_checks",
    "rocketspec.conformance": "conformance",
    "rocketspec.traces": "traces",
}

# The layers (docs/architecture.md), bottom to top:
#   0 base utilities          1 RocketMQ facts          2 trace contract
#   3 spec | reference (independent: neither imports the other)
#   4 model checks, conformance and tools above the spec       5 the CLI
# A module is placed by the longest prefix here that names it.
BASE, FACTS, CONTRACT, MODELS, TOOLS, CLI = 0, 1, 2, 3, 4, 5
LAYERS: dict[str, int] = {
    # base utilities: errors, config files, output and JSON helpers, stdio
    "rocketspec.errors": BASE,
    "rocketspec.config_files": BASE,
    "rocketspec.jsonout": BASE,
    "rocketspec.outputs": BASE,
    "rocketspec.stdio": BASE,
    "rocketspec": BASE,  # the package's __init__
    # RocketMQ facts: profiles, config keys and defaults, the delay table, retry levels, topic
    # names, the lease margin, the filter language
    "rocketspec.rocketmq": FACTS,
    # the trace contract: schema, kind registry, readers, writers, history adapters
    "rocketspec.traces.schema": CONTRACT,
    "rocketspec.traces.io": CONTRACT,
    "rocketspec.traces.datasets": CONTRACT,
    "rocketspec.traces.parquet_trust": CONTRACT,
    "rocketspec.traces.scopes": CONTRACT,
    "rocketspec.traces.kinds": CONTRACT,
    "rocketspec.traces.history": CONTRACT,
    "rocketspec.traces": CONTRACT,  # the package's __init__
    # the two independent readings
    "rocketspec.spec": MODELS,
    "rocketspec.reference": MODELS,
    # above the spec: model checks, conformance, tools
    "rocketspec.model_checks": TOOLS,
    "rocketspec.conformance": TOOLS,
    "rocketspec.traces.explain": TOOLS,    # explain, timeline, narration, the HTML and PNG views
    "rocketspec.traces.minimize": TOOLS,   # the trace and history minimizers, the spec as oracle
    "rocketspec.traces.spark": TOOLS,      # Spark replay
    "rocketspec.traces.reports": TOOLS,    # stats, differential reports, verdict text, catalogue, mutants
    "rocketspec.traces.rocketmq_jars": TOOLS,   # the pinned jars' build tool (standard library only)
    "rocketspec.spec.docgen": TOOLS,
    # the command line
    "rocketspec.cli": CLI,
    "rocketspec.commands": CLI,
    "rocketspec.commands.replay_submit": CLI,   # spark-submit's entry point: `rocketspec replay`
}
# Units of the package view besides setup.py's folders and the packages LAYERS names: the CLI's
# entry module is not one of rocketspec's base modules.
CLI_UNITS: dict[str, str] = {"rocketspec.cli": "rocketspec", "rocketspec.commands": "rocketspec/commands"}


def package_units(modules: dict[str, tuple[Path, bool]], folders: dict[str, str],
                  layers: dict[str, int]) -> dict[str, str]:
    """The nodes of the package view: setup.py's folders, every package the layer table names
    (each such subpackage is its own node: rocketspec.rocketmq, rocketspec.traces.history,
    rocketspec.traces.explain, ...) and the CLI's units. Keyed like `folders`."""
    units = dict(folders)
    for name in layers:
        if name in modules and modules[name][1]:
            units.setdefault(name, name)
    for name, folder in CLI_UNITS.items():
        units.setdefault(name, folder)
    return units
# Layers whose packages never import each other.
INDEPENDENT: frozenset[int] = frozenset({MODELS})


@dataclass(frozen=True)
class Edge:
    source: str   # importing module
    target: str   # imported module (the longest known module the import names)
    path: str     # file of the importing module
    line: int
    kind: str     # "top", "lazy" (inside a function), "type" (under TYPE_CHECKING), "dynamic"


def folders_from_setup(root: Path) -> dict[str, str]:
    """The FOLDERS literal of root/setup.py, or this module's copy when there is none."""
    setup = root / "setup.py"
    if setup.exists():
        for node in ast.walk(ast.parse(setup.read_text(), str(setup))):
            if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "FOLDERS" for t in node.targets)
                    and isinstance(node.value, ast.Dict)):
                return ast.literal_eval(node.value)
    return dict(FOLDERS)


def discover(root: Path, folders: dict[str, str]) -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, is_package) for every .py file under each mapped folder."""
    modules: dict[str, tuple[Path, bool]] = {}
    # Longer package names first, so a folder nested in another package's folder keeps its
    # own name (none is, today; the walk does not descend into another mapping's folder).
    mapped = {(root / f).resolve() for f in folders.values()}
    for pkg, folder in sorted(folders.items(), key=lambda kv: -len(kv[0])):
        base = (root / folder).resolve()
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            if any(p != base and p in mapped for p in path.parents):
                continue
            rel = path.relative_to(base).with_suffix("")
            parts = list(rel.parts)
            is_pkg = parts[-1] == "__init__"
            if is_pkg:
                parts = parts[:-1]
            if any(not p.isidentifier() for p in parts):
                continue
            modules[".".join([pkg, *parts])] = (path, is_pkg)
    return modules


def _resolve_relative(module: str, is_pkg: bool, level: int, name: str | None) -> str | None:
    parts = module.split(".") if is_pkg else module.split(".")[:-1]
    drop = level - 1
    if drop >= len(parts):
        return None
    base = parts[: len(parts) - drop]
    return ".".join(base + ([name] if name else []))


def _known(name: str, modules) -> str | None:
    """The longest known module that `name` is or lies inside."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_edges(modules: dict[str, tuple[Path, bool]], root: Path | None = None) -> list[Edge]:
    """Every import between known modules: one Edge per (statement, imported module)."""
    edges: list[Edge] = []
    for mod, (path, is_pkg) in sorted(modules.items()):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        shown = str(path.relative_to(root)) if root is not None and path.is_relative_to(root) else str(path)

        def add(target: str | None, node: ast.AST, kind: str) -> None:
            known = _known(target, modules) if target else None
            if known is not None and known != mod:
                edges.append(Edge(mod, known, shown, node.lineno, kind))

        def visit(node: ast.AST, kind: str) -> None:
            for child in ast.iter_child_nodes(node):
                k = kind
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and kind == "top":
                    k = "lazy"
                if isinstance(child, ast.If) and _is_type_checking(child.test):
                    for n in child.body:
                        visit_stmt(n, "type")
                    for n in child.orelse:
                        visit_stmt(n, k)
                    continue
                visit_stmt(child, k)

        def visit_stmt(child: ast.AST, k: str) -> None:
            if isinstance(child, ast.Import):
                for alias in child.names:
                    add(alias.name, child, k)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = _resolve_relative(mod, is_pkg, child.level, child.module)
                else:
                    base = child.module
                if base is None:
                    return
                seen = set()
                for alias in child.names:
                    # `from pkg import sub` imports the submodule when there is one.
                    sub = f"{base}.{alias.name}" if alias.name != "*" else base
                    target = sub if sub in modules else base
                    if target not in seen:
                        seen.add(target)
                        add(target, child, k)
            elif (isinstance(child, ast.Call) and child.args and isinstance(child.args[0], ast.Constant)
                  and isinstance(child.args[0].value, str)
                  and ((isinstance(child.func, ast.Attribute) and child.func.attr == "import_module")
                       or (isinstance(child.func, ast.Name) and child.func.id in ("import_module", "__import__")))):
                add(child.args[0].value, child, "dynamic")
            visit(child, k)

        visit(tree, "top")
    return edges


def package_of(module: str, folders: dict[str, str]) -> str:
    """The mapped package a module belongs to (the longest mapped name it starts with)."""
    best = ""
    for pkg in folders:
        if (module == pkg or module.startswith(pkg + ".")) and len(pkg) > len(best):
            best = pkg
    return best or module


def layer_of(module: str, layers: dict[str, int]) -> int | None:
    """The layer of the longest prefix of `module` in the table, or None."""
    name = module
    while name:
        if name in layers:
            return layers[name]
        name = name.rpartition(".")[0]
    return None


def violations(edges: list[Edge], layers: dict[str, int], folders: dict[str, str],
               independent: frozenset[int] = frozenset()) -> tuple[list[Edge], list[Edge]]:
    """(upward edges, sideways edges between packages of an independent layer)."""
    up, side = [], []
    for e in edges:
        a, b = layer_of(e.source, layers), layer_of(e.target, layers)
        if a is None or b is None:
            continue
        if b > a:
            up.append(e)
        elif a == b and a in independent and package_of(e.source, folders) != package_of(e.target, folders):
            side.append(e)
    return up, side


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of more than one node, largest first (iterative: no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    nodes = sorted(set(graph) | {t for ts in graph.values() for t in ts})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out, key=lambda c: (-len(c), c))


def simple_cycles(graph: dict[str, set[str]], limit: int = 10_000) -> list[list[str]]:
    """Every simple cycle (each listed once, from its smallest node), up to `limit`."""
    cycles: list[list[str]] = []
    nodes = sorted(set(graph) | {t for ts in graph.values() for t in ts})
    for i, start in enumerate(nodes):
        allowed = set(nodes[i:])
        path = [start]
        iters = [iter(sorted(graph.get(start, set()) & allowed))]
        while iters and len(cycles) < limit:
            nxt = next(iters[-1], None)
            if nxt is None:
                iters.pop()
                path.pop()
                continue
            if nxt == start:
                cycles.append(list(path))
            elif nxt not in path:
                path.append(nxt)
                iters.append(iter(sorted(graph.get(nxt, set()) & allowed)))
    return cycles


def package_graph(edges: list[Edge], folders: dict[str, str]) -> Counter:
    """(source package, target package) -> number of import edges, across packages only."""
    c: Counter = Counter()
    for e in edges:
        a, b = package_of(e.source, folders), package_of(e.target, folders)
        if a != b:
            c[(a, b)] += 1
    return c


def _short(name: str) -> str:
    return name.removeprefix("rocketspec.") if name != "rocketspec" else name


def report(root: Path, layers=LAYERS, independent=INDEPENDENT, show_modules: bool = False,
           quiet: bool = False, show_edges: bool = False, out=sys.stdout) -> int:
    folders = folders_from_setup(root)
    modules = discover(root, folders)
    edges = import_edges(modules, root)
    pg = package_graph(edges, package_units(modules, folders, layers))

    def p(*a):
        print(*a, file=out)

    kinds = Counter(e.kind for e in edges)
    p(f"{len(modules)} modules, {len(edges)} import edges between them "
      f"({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))})")
    if not quiet:
        p("\npackage edges (importing -> imported: edges):")
        for (a, b), n in sorted(pg.items(), key=lambda kv: (_short(kv[0][0]), -kv[1])):
            p(f"  {_short(a):14} -> {_short(b):14} {n:4}")
    if show_edges:
        p("\nevery edge between packages:")
        for e in sorted(edges, key=lambda e: (package_of(e.source, folders), package_of(e.target, folders), e.path, e.line)):
            if package_of(e.source, folders) != package_of(e.target, folders):
                p(f"  {e.path}:{e.line}  {_short(e.source)} -> {_short(e.target)}  [{e.kind}]")
    # The packages: setup.py's folders, each package the table names, and the CLI apart from
    # rocketspec's base modules (errors, config files, outputs), which everything may use.
    units = package_units(modules, folders, layers)
    pgraph: dict[str, set[str]] = defaultdict(set)
    for a, b in package_graph(edges, units):
        pgraph[a].add(b)
    cycles = simple_cycles(pgraph)
    p(f"\ncycles between packages: {len(cycles)} ({len(units)} packages: the folders, the packages "
      f"the layer table names, the CLI)")
    if not quiet:
        for c in sorted(cycles, key=lambda c: (len(c), c)):
            p("  " + " -> ".join(_short(x) for x in c + c[:1]))
    for comp in strongly_connected(pgraph):
        p(f"  strongly connected: {', '.join(_short(x) for x in comp)}")
    mgraph: dict[str, set[str]] = defaultdict(set)
    for e in edges:
        mgraph[e.source].add(e.target)
    sccs = strongly_connected(mgraph)
    p(f"\nstrongly connected components between modules: {len(sccs)}"
      + (f" (sizes {', '.join(str(len(c)) for c in sccs)})" if sccs else ""))
    if show_modules or not quiet:
        for comp in sccs:
            shown = comp if show_modules or len(comp) <= 12 else comp[:12] + [f"... {len(comp) - 12} more"]
            p(f"  [{len(comp)}] " + ", ".join(_short(x) for x in shown))
    unplaced = sorted(m for m in modules if layer_of(m, layers) is None)
    if unplaced:
        p(f"\nmodules the layer table does not place: {len(unplaced)}")
        for m in unplaced:
            p(f"  {m}")
    up, side = violations(edges, layers, folders, independent)
    p(f"\nupward edges against the layer table: {len(up)}")
    for e in sorted(up, key=lambda e: (e.path, e.line)):
        p(f"  {e.path}:{e.line}  {_short(e.source)} (L{layer_of(e.source, layers)}) -> "
          f"{_short(e.target)} (L{layer_of(e.target, layers)})  [{e.kind}]")
    if independent:
        p(f"\nedges between independent packages (layers {', '.join(map(str, sorted(independent)))}): {len(side)}")
        for e in sorted(side, key=lambda e: (e.path, e.line)):
            p(f"  {e.path}:{e.line}  {_short(e.source)} -> {_short(e.target)}  [{e.kind}]")
    return 1 if up or side or cycles else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.import_layers", description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parent.parent),
                    help="the repository (the folder holding setup.py); default: this checkout")
    ap.add_argument("--modules", action="store_true", help="list every member of each module component")
    ap.add_argument("--quiet", action="store_true", help="counts and violations only")
    ap.add_argument("--edges", action="store_true", help="list every edge between packages, with file:line")
    a = ap.parse_args(argv)
    try:
        return report(Path(a.root).resolve(), show_modules=a.modules, quiet=a.quiet, show_edges=a.edges)
    except BrokenPipeError:
        # the reader (`| head`) has gone: the rest of the report is not wanted
        sys.stdout = open(os.devnull, "w")
        return 1


if __name__ == "__main__":
    sys.exit(main())
