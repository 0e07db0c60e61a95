"""The package's layering: no import cycle, no CPU <-> GPU edge, every module
importable alone.

The import graph is read from the source (every `import mlirc...`, at module level
or inside a function: a lazy import is still a dependency), so a cycle cannot hide
behind import order.  The CPU/GPU rule is transitive: nothing a CPU pass or the CPU
backend imports, directly or not, is a GPU pass or the GPU backend, and the
reverse; shared helpers (passes/base/) import neither.  And the layers hold: no
module imports one of a higher layer (LAYERS).
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
    for target in ("cpu", "gpu"):
        for package in (f"mlirc.passes.{target}", f"mlirc.backends.{target}"):
            if module == package or module.startswith(f"{package}."):
                return target
    return None


# The layers, lowest first: a module may import its own layer and those below it.
LAYERS = (
    ("base", ("mlirc.config", "mlirc.errors")),
    ("dialects", ("mlirc.dialects",)),
    ("IR helpers", ("mlirc.passes.base",)),
    ("passes", ("mlirc.passes",)),
    ("backends", ("mlirc.backends",)),
    ("frontend", ("mlirc.frontend",)),
    ("tools", ("mlirc.tools", "mlirc.demo", "mlirc")),
)


def layer_of(module: str) -> int:
    """The index in LAYERS of the most specific prefix that names `module`."""
    best, best_length = len(LAYERS) - 1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(f"{prefix}.")) and len(prefix) > best_length:
                best, best_length = index, len(prefix)
    return best


def test_the_graph_reader_sees_every_kind_of_import():
    tree = ast.parse("import mlirc.a\nfrom mlirc.b import c\ndef f():\n    from mlirc.d import e\n")
    assert _imported_names(tree, {"mlirc.b.c"}) == {"mlirc.a", "mlirc.b.c", "mlirc.d"}
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert target_of("mlirc.passes.cpu.vectorize") == "cpu"
    assert target_of("mlirc.passes.gpu.tt.tiles") == "gpu"
    assert target_of("mlirc.backends.gpu.runtime") == "gpu"
    assert target_of("mlirc.passes.base.linalg_utils") is None
    assert [layer_of(m) for m in ("mlirc.errors", "mlirc.passes.base.ir_utils", "mlirc.passes.cpu.vectorize")] == [
        0,
        2,
        3,
    ]
    assert layer_of("mlirc.frontend.compile") == 5 and layer_of("mlirc") == 6


def test_layer_order():
    """dialects < IR helpers < passes < backends < frontend < tools: no import goes up
    (the package's own __init__, which registers the backend, is the top)."""
    graph = import_graph()
    upward = [
        f"{module} ({LAYERS[layer_of(module)][0]}) -> {other} ({LAYERS[layer_of(other)][0]})"
        for module, imported in graph.items()
        for other in sorted(imported)
        if layer_of(other) > layer_of(module)
    ]
    assert upward == []


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


def test_pass_name_file_and_lit_test_agree():
    """`passes/<target>/<name>.py` registers `mlirc-<target>-<name>` (a shared pass:
    `passes/<name>.py`, `mlirc-<name>`) and `lit/passes/<target>/<name>*.mlir` tests it."""
    import mlirc.passes  # noqa: F401 - registers every pass
    from mlirc.passes.base.registry import PASSES

    problems = []
    for name, info in sorted(PASSES.items()):
        if info.run is None:  # a named pipeline (stage)
            continue
        parts = info.run.__module__.split(".")[2:]
        target = parts[0] if len(parts) > 1 and parts[0] in ("cpu", "gpu") else None
        leaf = parts[-1].replace("_", "-")
        expected = f"mlirc-{target}-{leaf}" if target else f"mlirc-{leaf}"
        lit_folder = ROOT / "lit" / "passes" / (target or "")
        if name != expected:
            problems.append(f"{info.run.__module__} registers {name}, not {expected}")
        if not list(lit_folder.glob(f"{leaf}*.mlir")):
            problems.append(f"{name}: no lit test {lit_folder.relative_to(ROOT)}/{leaf}*.mlir")
    assert problems == []


def test_shared_passes_take_target_policy_as_options():
    """A shared pass never asks which target the module is for: where the CPU's and
    the GPU's policies differ, the pass takes an option that the backend fills
    (mlirc.backends.<target>.PASS_OPTIONS), so a repro command carries it."""
    asking = [
        path.relative_to(ROOT).as_posix()
        for path in sorted((ROOT / "passes").glob("*.py"))
        if "target_of" in path.read_text()
    ]
    assert asking == []


def test_the_frontend_reaches_backends_through_their_interface():
    """The frontend imports no module of a target's backend: it asks
    mlirc.backends.backend_for(device) for one (backends/base.py's interface)."""
    graph = import_graph()
    direct = [
        f"{module} -> {other}"
        for module, imported in graph.items()
        if module.startswith("mlirc.frontend")
        for other in sorted(imported)
        if other.startswith("mlirc.backends.") and target_of(other) is not None
    ]
    assert direct == []


def test_no_module_over_600_lines():
    """A module a reader can hold: past 600 lines one has grown a second concern."""
    long = {name: n for name, path in package_modules().items() if (n := len(path.read_text().splitlines())) > 600}
    assert long == {}
