"""bench/import_layers.py on a small synthetic tree: the functions issue 41's layer test reuses."""
import io
import textwrap

from bench import import_layers as il

FOLDERS = {"pkg": "pkg", "pkg.low": "low", "pkg.high": "high", "pkg.left": "left", "pkg.right": "right"}
LAYERS = {"pkg": 0, "pkg.low": 1, "pkg.left": 2, "pkg.right": 2, "pkg.high": 3}


def write(root, rel, text=""):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def tree(root, *, lazy_upward=True):
    write(root, "setup.py", f"FOLDERS = {FOLDERS!r}\n")
    write(root, "pkg/__init__.py")
    write(root, "pkg/errors.py", "class E(Exception): pass\n")
    write(root, "low/__init__.py")
    write(root, "low/util.py", """\
        from pkg.errors import E

        def helper():
            %s
            return 1
        """ % ("from pkg.high.a import thing" if lazy_upward else "pass"))
    write(root, "high/__init__.py")
    write(root, "high/a.py", """\
        from . import b
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from pkg.left.l import L
        thing = 1
        """)
    write(root, "high/b.py", "import pkg.low.util\n")
    write(root, "high/sub/__init__.py")
    write(root, "high/sub/c.py", "from ...low.util import helper\nfrom .. import b\n")
    write(root, "left/__init__.py")
    write(root, "left/l.py", "from pkg.low import util\nclass L: pass\n")
    write(root, "right/__init__.py")
    write(root, "right/r.py", "import importlib\nimportlib.import_module('pkg.left.l')\n")


def edges_of(root):
    modules = il.discover(root, il.folders_from_setup(root))
    return modules, il.import_edges(modules, root)


def find(edges, source, target):
    return [e for e in edges if e.source == source and e.target == target]


def test_modules_are_named_by_the_folder_map(tmp_path):
    tree(tmp_path)
    modules, _ = edges_of(tmp_path)
    assert {"pkg", "pkg.errors", "pkg.low", "pkg.low.util", "pkg.high.a", "pkg.high.sub", "pkg.high.sub.c",
            "pkg.left.l", "pkg.right.r"} <= set(modules)
    assert modules["pkg.high.sub"][1] is True and modules["pkg.high.sub.c"][1] is False


def test_a_lazy_import_counts_and_is_an_upward_edge(tmp_path):
    tree(tmp_path)
    _, edges = edges_of(tmp_path)
    (e,) = find(edges, "pkg.low.util", "pkg.high.a")
    assert e.kind == "lazy" and e.line == 4 and e.path == "low/util.py"
    up, side = il.violations(edges, LAYERS, FOLDERS, frozenset({2}))
    assert [(u.source, u.target) for u in up] == [("pkg.low.util", "pkg.high.a")]
    # Downward edges (high -> low, low -> base) are not reported.
    assert find(edges, "pkg.high.b", "pkg.low.util") and find(edges, "pkg.low.util", "pkg.errors")


def test_relative_imports_resolve(tmp_path):
    tree(tmp_path)
    _, edges = edges_of(tmp_path)
    assert find(edges, "pkg.high.a", "pkg.high.b")            # from . import b (a submodule)
    assert find(edges, "pkg.high.sub.c", "pkg.low.util")      # from ...low.util import helper
    assert find(edges, "pkg.high.sub.c", "pkg.high.b")        # from .. import b


def test_type_checking_and_dynamic_imports_count(tmp_path):
    tree(tmp_path)
    _, edges = edges_of(tmp_path)
    assert [e.kind for e in find(edges, "pkg.high.a", "pkg.left.l")] == ["type"]
    assert [e.kind for e in find(edges, "pkg.right.r", "pkg.left.l")] == ["dynamic"]


def test_packages_of_an_independent_layer_do_not_import_each_other(tmp_path):
    tree(tmp_path)
    _, edges = edges_of(tmp_path)
    _, side = il.violations(edges, LAYERS, FOLDERS, frozenset({2}))
    assert [(s.source, s.target) for s in side] == [("pkg.right.r", "pkg.left.l")]
    _, side = il.violations(edges, LAYERS, FOLDERS, frozenset())
    assert side == []


def test_cycles_between_packages_and_modules(tmp_path):
    tree(tmp_path)
    _, edges = edges_of(tmp_path)
    graph = {}
    for (a, b) in il.package_graph(edges, FOLDERS):
        graph.setdefault(a, set()).add(b)
    assert ["pkg.high", "pkg.low"] in il.simple_cycles(graph)
    mgraph = {}
    for e in edges:
        mgraph.setdefault(e.source, set()).add(e.target)
    # high.a -> high.b -> low.util -> (lazily) high.a, and high.a -> left.l -> low.util.
    assert il.strongly_connected(mgraph) == [["pkg.high.a", "pkg.high.b", "pkg.left.l", "pkg.low.util"]]


def test_report_exits_1_on_an_upward_edge_and_0_without(tmp_path):
    tree(tmp_path)
    out = io.StringIO()
    assert il.report(tmp_path, layers=LAYERS, independent=frozenset(), out=out) == 1
    assert "low/util.py:4  pkg.low.util (L1) -> pkg.high.a (L3)  [lazy]" in out.getvalue()
    tree(tmp_path, lazy_upward=False)
    out = io.StringIO()
    assert il.report(tmp_path, layers=LAYERS, independent=frozenset(), out=out) == 0
    assert "upward edges against the layer table: 0" in out.getvalue()
    assert "cycles between packages: 0" in out.getvalue()


def test_simple_cycles_lists_each_cycle_once():
    g = {"a": {"b", "c"}, "b": {"a", "c"}, "c": {"a"}}
    cycles = il.simple_cycles(g)
    assert sorted(cycles) == sorted([["a", "b"], ["a", "b", "c"], ["a", "c"]])
    assert il.strongly_connected({"x": {"y"}, "y": set()}) == []
