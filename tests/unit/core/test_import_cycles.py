"""No import cycle between the modules of ``pipelines``.

The imports are read from the sources (``ast``), not by importing: every ``import`` and
``from ... import`` of a ``pipelines`` module, at module level and inside functions alike. An
import moved into a function hides a cycle from Python, not from the design, so it counts; a
lazy import of a heavy library (pyspark, dbt, great_expectations) for start-up speed is not an
edge between kaudit's modules and is unaffected. Importing ``pipelines.a.b`` also runs the
package ``pipelines.a`` (its ``__init__``): an edge too, unless the importer lives in it.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "pipelines"


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imported_names(path: Path, name: str) -> set[str]:
    """The dotted names ``path`` (module ``name``) imports, anywhere in it; for ``from X import
    Y`` both ``X.Y`` (when a module) and ``X``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return out


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    mods = modules(package)
    root = package.name
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 2)}
        edges = set()
        for imported in imported_names(path, name):
            parts = imported.split(".")
            for i in range(2, len(parts) + 1):  # the module and the packages it runs on the way
                target = ".".join(parts[:i])
                if target in mods and target not in own and target != root:
                    edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (as a path ``a -> b -> ... -> a``) per strongly connected component."""
    found, state, stack = [], {}, []

    def visit(v: str) -> None:
        state[v] = "open"
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if state.get(w) == "open":
                found.append([*stack[stack.index(w) :], w])
            elif w not in state:
                visit(w)
        stack.pop()
        state[v] = "done"

    for v in sorted(graph):
        if v not in state:
            visit(v)
    return found


def test_the_walker_sees_every_kind_of_import(tmp_path):
    """The walker itself, on a package written here: a cycle through a function-level import, a
    relative import and a package ``__init__`` are found; a lazy third-party import is not an edge."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg import b\n")
    (pkg / "b.py").write_text("def f():\n    from pkg.a import x\n    import pyspark\n")
    (pkg / "sub" / "__init__.py").write_text("from . import c\n")
    (pkg / "sub" / "c.py").write_text("from ..d import y\n")
    (pkg / "d.py").write_text("import pkg.sub.e\n")
    (pkg / "sub" / "e.py").write_text("")
    graph = import_graph(pkg)
    assert graph["pkg.b"] == {"pkg.a"}
    assert graph["pkg.sub.c"] == {"pkg.d"}
    assert graph["pkg.d"] == {"pkg.sub", "pkg.sub.e"}
    assert sorted(map(tuple, cycles(graph))) == [
        ("pkg.a", "pkg.b", "pkg.a"),
        ("pkg.d", "pkg.sub", "pkg.sub.c", "pkg.d"),
    ]


def test_pipelines_has_no_import_cycle():
    graph = import_graph()
    assert len(graph) > 50 and graph["pipelines.runner"] >= {"pipelines.config", "pipelines.steps"}
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)
