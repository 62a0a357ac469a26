"""Imports point down the layers and no modules import each other in a loop (STYLE.md, "Imports
point down"), read from the AST: every import counts, one inside a function or under
``TYPE_CHECKING`` too, so no edge hides from the check.

A package (or a top-level module) of ``ingestd`` may import only those after it in ``LAYERS``: the
CLI's commands over the daemon, the daemon (the composition root) over the HTTP app it assembles
(a leaf handed what it serves: it imports nothing of ``daemon``), the reports, ingestion, the
projections' rebuild and checks, retention, the store, the pure core, and the foundation modules.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import ingestd

LAYERS = (
    "__main__",
    "demo",
    "cli",
    "commands",
    "claude",
    "daemon",
    "http",
    "central",
    "report",
    "ingest",
    "projection",
    "retention",
    "store",
    "core",
    "settings",
    "files",
    "logs",
    "deepjson",
    "forward",
    "statusclient",
    "errors",
)

Edge = tuple[str, str, int]  # importing module, imported module, line


def _module(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (a.name for a in node.names)
        return
    if node.level:  # relative: resolved against the importing module's package
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        prefix = ".".join([*base, node.module] if node.module else base)
    else:
        prefix = node.module or ""
    yield prefix
    yield from (f"{prefix}.{a.name}" for a in node.names)


def import_edges(root: Path) -> tuple[set[str], list[Edge]]:
    """Every module under the package directory ``root`` and every import of one by another."""
    paths = {_module(root, p): p for p in sorted(root.rglob("*.py"))}
    edges: list[Edge] = []
    for module, path in paths.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            found: set[str] = set()
            for target in _targets(node, module, path.name == "__init__.py"):
                while target and target not in paths:  # a name imported from a module: the module
                    target = target.rpartition(".")[0]
                if target and target not in (module, root.name):
                    found.add(target)
            edges += [(module, t, node.lineno) for t in sorted(found)]
    return set(paths), edges


def layer_of(module: str) -> str:
    """``ingestd.store.writer`` -> ``store``; a top-level module is its own layer."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def climbing(edges: list[Edge], layers: tuple[str, ...]) -> list[str]:
    """The imports that do not point down ``layers`` (to a layer after the importer's)."""
    rank = {name: i for i, name in enumerate(layers)}
    return [
        f"{a}:{line} imports {b}"
        for a, b, line in edges
        if layer_of(a) != layer_of(b) and rank[layer_of(b)] <= rank[layer_of(a)]
    ]


def cycles(modules: set[str], edges: list[Edge]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for a, b, _ in edges:
        graph[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[v] = min(low[v], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


ROOT = Path(ingestd.__file__).parent


def test_every_package_has_a_layer() -> None:
    modules, _ = import_edges(ROOT)
    assert {layer_of(m) for m in modules} - {"ingestd"} == set(LAYERS)


def test_imports_point_down_the_layers() -> None:
    _, edges = import_edges(ROOT)
    assert climbing(edges, LAYERS) == []


def test_no_modules_import_each_other_in_a_loop() -> None:
    modules, edges = import_edges(ROOT)
    assert cycles(modules, edges) == []


def test_the_check_sees_a_climb_and_a_loop_in_a_function_and_a_relative_import(tmp_path: Path) -> None:
    pkg = tmp_path / "ingestd"
    (pkg / "low").mkdir(parents=True)
    (pkg / "high").mkdir()
    for f in ("__init__.py", "low/__init__.py", "high/__init__.py"):
        (pkg / f).write_text("")
    (pkg / "high" / "top.py").write_text("from ingestd.low import base\n")
    (pkg / "low" / "base.py").write_text("def f():\n    from ..high.top import g\n    return g\n")
    modules, edges = import_edges(pkg)
    assert climbing(edges, ("high", "low")) == ["ingestd.low.base:2 imports ingestd.high.top"]
    assert cycles(modules, edges) == [["ingestd.high.top", "ingestd.low.base"]]


def test_the_design_notes_name_every_module() -> None:
    """docs/DESIGN.md's layout names each module of ``ingestd`` (by file name, under its package)."""
    design = (ROOT.parent / "docs" / "DESIGN.md").read_text()
    layout = design[design.index("## Layout and ownership") : design.index("Schema changes:")]
    unnamed = [
        str(p.relative_to(ROOT))
        for p in sorted(ROOT.rglob("*.py"))
        if p.name != "__init__.py" and p.name not in layout and p.parent.name != "commands"
    ]
    assert unnamed == []
