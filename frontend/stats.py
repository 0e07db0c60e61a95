"""Compile statistics: how much of each graph mlirc compiled and what fell back.

`mlirc.stats()` returns the totals since the last `mlirc.reset_stats()`; the
OpInfo sweep and the tests read `fallback_nodes` from it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class CompileStats:
    graphs: int = 0
    compiled_regions: int = 0
    failed_regions: int = 0
    compiled_nodes: int = 0
    fallback_nodes: int = 0
    kernels: int = 0
    fallback_ops: Counter = field(default_factory=Counter)  # "aten.op: reason" -> count

    def summary(self) -> str:
        lines = [
            f"graphs={self.graphs} regions={self.compiled_regions} failed_regions={self.failed_regions}"
            f" compiled_nodes={self.compiled_nodes} fallback_nodes={self.fallback_nodes} kernels={self.kernels}"
        ]
        lines += [f"  fallback {op}: {n}" for op, n in self.fallback_ops.most_common()]
        return "\n".join(lines)


_stats = CompileStats()


def stats() -> CompileStats:
    return _stats


def reset_stats() -> None:
    global _stats
    _stats = CompileStats()
