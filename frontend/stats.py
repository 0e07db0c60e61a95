"""Compile statistics: how much of each graph mlirc compiled and what fell back.

`mlirc.stats()` returns the totals since the last `mlirc.reset_stats()`; the
OpInfo sweep and the tests read `fallback_nodes` from it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass
class CompileStats:
    graphs: int = 0
    compiled_regions: int = 0
    failed_regions: int = 0
    compiled_nodes: int = 0
    fallback_nodes: int = 0
    kernels: int = 0
    fallback_ops: Counter = field(default_factory=Counter)  # "aten.op: reason" -> count
    library_nodes: int = 0  # library kernels called on purpose (LAPACK, FFT): not fallback
    library_ops: Counter = field(default_factory=Counter)
    # graphs of symbolic sizes Dynamo handed over, and those of them imported once and
    # bound at each size (frontend/compile.py SymbolicRegion; the others are specialized
    # per size from their FX graph); each size's compile counts in `graphs`
    symbolic_graphs: int = 0
    symbolic_imports: int = 0
    symbolic_binds: int = 0  # sizes compiled from a symbolic import (the rest: from the FX graph)
    symbolic_lowered: int = 0  # symbolic imports lowered to linalg once, bound after that stage or later
    symbolic_kernels: int = 0  # ... whose kernels were formed on symbolic sizes too, bound after that
    symbolic_shared: int = 0  # ... whose CPU kernels were compiled once, for every size
    symbolic_every_size: int = 0  # ... with one host wrapper for every size too (no compile per size)
    symbolic_unbound_sizes: int = 0  # sizes that wrapper served from their first call
    symbolic_hot_binds: int = 0  # ... bound to their sizes once hot (counted in binds too)
    # hot-size compiles: a size bound once hot, or a bound size given its own kernels
    symbolic_hot_sizes: int = 0
    symbolic_hot_static: int = 0  # ... where that compile was faster and serves the size
    symbolic_assumption_misses: int = 0  # sizes that broke a size assumption (compiled from a second lowering)
    symbolic_bind_failures: int = 0  # sizes such an import failed to compile at (then specialized per size)
    # regions whose work on parameters alone runs once, cached until one changes (passes/hoist_frozen.py)
    prepared_regions: int = 0

    @property
    def compiled_sizes(self) -> int:
        """Sizes that ran compiled: a graph compiled for one size (static, or a
        symbolic one bound), or a size a wrapper for every size served unbound."""
        return self.graphs - self.symbolic_every_size + self.symbolic_unbound_sizes - self.symbolic_hot_binds

    @property
    def symbolic_sizes(self) -> int:
        """Sizes a symbolic import served: bound to them, or unbound by its wrapper for
        every size."""
        return self.symbolic_binds + self.symbolic_unbound_sizes - self.symbolic_hot_binds

    @property
    def fully_compiled(self) -> bool:
        """Some compute was compiled (or is a library kernel) and none fell back to eager."""
        has_compute = self.compiled_nodes > 0 or self.library_nodes > 0
        return has_compute and self.fallback_nodes == 0 and self.failed_regions == 0

    def summary(self) -> str:
        lines = [
            f"graphs={self.graphs} regions={self.compiled_regions} failed_regions={self.failed_regions}"
            f" compiled_nodes={self.compiled_nodes} fallback_nodes={self.fallback_nodes} kernels={self.kernels}"
            + (f" library_nodes={self.library_nodes}" if self.library_nodes else "")
            + (
                f" symbolic_imports={self.symbolic_imports}/{self.symbolic_graphs} binds={self.symbolic_binds}"
                f" lowered={self.symbolic_lowered} formed={self.symbolic_kernels} shared={self.symbolic_shared}"
                f" every_size={self.symbolic_every_size} unbound_sizes={self.symbolic_unbound_sizes}"
                f" hot_binds={self.symbolic_hot_binds} hot_sizes={self.symbolic_hot_sizes} hot_static={self.symbolic_hot_static}"
                f" assumption_misses={self.symbolic_assumption_misses} bind_failures={self.symbolic_bind_failures}"
                if self.symbolic_graphs
                else ""
            )
        ]
        lines += [f"  fallback {op}: {n}" for op, n in self.fallback_ops.most_common()]
        return "\n".join(lines)


_totals = CompileStats()
# explain()'s own stats, for the compiles in its context only (another thread's compile
# keeps counting into the totals)
_explaining: ContextVar[CompileStats | None] = ContextVar("mlirc_explaining", default=None)


def stats() -> CompileStats:
    explaining = _explaining.get()
    return explaining if explaining is not None else _totals


def reset_stats() -> None:
    global _totals
    _totals = CompileStats()


def explain(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, CompileStats]:
    """Compile `fn` with mlirc from scratch, call it once; return (result, its stats).

    The global `stats()` is left as it was; Dynamo's caches are reset first so the
    stats describe this function alone.
    """
    import torch

    own = CompileStats()
    token = _explaining.set(own)
    try:
        torch._dynamo.reset()
        result = torch.compile(fn, backend="mlirc")(*args, **kwargs)
        return result, own
    finally:
        _explaining.reset(token)
