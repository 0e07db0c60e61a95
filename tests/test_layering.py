"""The package's layering: no import cycle, no CPU <-> GPU edge, every module
importable alone.

The import graph is read from the source (every `import mlirc...`, at module level
or inside a function: a lazy import is still a dependency), so a cycle cannot hide
behind import order.  The CPU/GPU rule is transitive: nothing a CPU pass or the CPU
backend imports, directly or not, is a GPU pass or the GPU backend, and the
reverse; shared helpers (passes/linalg_utils.py, passes/ir_utils.py, ...) import
neither.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIRS = ("frontend", "dialects", "passes", "backends", "tools")


def _module_name(path: Path) -> str:
    parts = ("mlirc", *path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules() -> dict[str, Path]:
    files = [ROOT / "__init__.py", ROOT / "config.py", ROOT / "errors.py", ROOT / "demo.py"]
    for folder in SOURCE_DIRS:
        files += sorted((ROOT / folder).rglob("*.py"))
    return {_module_name(f): f for f in files}


def _imported_names(tree: ast.AST, modules: set[str]) -> set[str]:
    """`from pkg import sub` is an edge to the module `sub`, not to `pkg`'s __init__."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = {f"{node.module}.{alias.name}" for alias in node.names} & modules
            names.update(subs)
            if len(subs) < len(node.names):
                names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def import_graph() -> dict[str, set[str]]:
    modules = package_modules()
    graph = {}
    for name, path in modules.items():
        imported = _imported_names(ast.parse(path.read_text()), set(modules))
        graph[name] = {m for m in imported if m in modules and m != name}
    return graph


# Modules whose job is to import every pass or lowering so that a table is complete
# (the pass registry's stages, the lowering table): importing one is not depending
# on each entry, so the CPU/GPU rule does not follow edges through them.
AGGREGATORS = frozenset({"mlirc.passes", "mlirc.passes.pipelines", "mlirc.frontend.lowerings"})


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for w in graph[todo.pop()]:
            if w not in seen and w not in AGGREGATORS:
                seen.add(w)
                todo.append(w)
    return seen


def target_of(module: str) -> str | None:
    """'cpu' or 'gpu' for a target's own pass or backend module, else None (shared)."""
    leaf = module.rsplit(".", 1)[-1]
    for target in ("cpu", "gpu"):
        if leaf.startswith(f"{target}_") and module.startswith("mlirc.passes."):
            return target
        if module == f"mlirc.backends.{target}" or module.startswith(f"mlirc.backends.{target}."):
            return target
    return None


def test_the_graph_reader_sees_every_kind_of_import():
    tree = ast.parse("import mlirc.a\nfrom mlirc.b import c\ndef f():\n    from mlirc.d import e\n")
    assert _imported_names(tree, {"mlirc.b.c"}) == {"mlirc.a", "mlirc.b.c", "mlirc.d"}
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert target_of("mlirc.passes.cpu_vectorize") == "cpu"
    assert target_of("mlirc.backends.gpu.runtime") == "gpu"
    assert target_of("mlirc.passes.linalg_utils") is None


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_no_cpu_gpu_edge():
    graph = import_graph()
    crossings = []
    for module in graph:
        own = target_of(module)
        if own is None:
            continue
        crossings += [
            f"{module} -> {other}" for other in sorted(reachable(graph, module)) if target_of(other) not in (None, own)
        ]
    assert crossings == []


def test_every_module_imports_alone():
    """Each module in a process that has imported no mlirc module before (a fork of
    one that imported only torch and MLIR, so the check takes seconds)."""
    script = textwrap.dedent(
        """
        import importlib, multiprocessing, sys, traceback
        import torch, torch._dynamo, mlir.ir  # third-party only: what every child shares

        def load(name):
            try:
                importlib.import_module(name)
            except Exception:
                return f"{name}: {traceback.format_exc(limit=3)}"
            return None

        if __name__ == "__main__":
            names = sys.argv[1:]
            with multiprocessing.get_context("fork").Pool(2, maxtasksperchild=1) as pool:
                failures = [f for f in pool.map(load, names, chunksize=1) if f]
            print("\\n".join(failures))
            sys.exit(1 if failures else 0)
        """
    )
    modules = sorted(package_modules())
    proc = subprocess.run([sys.executable, "-c", script, *modules], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
