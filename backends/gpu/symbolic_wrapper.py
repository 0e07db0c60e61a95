"""The GPU host wrapper for every size of a symbolic graph (backends/symbolic_wrapper.py
says how it works): Triton kernels take their buffers' sizes after them and their
grids are expressions of the call's sizes (passes/gpu_lower_to_tt.py)."""

from __future__ import annotations

from collections.abc import Callable

import sympy
import torch
from mlir import ir

from mlirc.backends.gpu.runtime import GpuKernels, GpuWrapperBuilder, build_wrapper
from mlirc.backends.symbolic_sizes import SymbolicSizes
from mlirc.backends.symbolic_wrapper import SymbolicWrapper, every_size_source
from mlirc.errors import SizeAssumptionFailed


class SymbolicGpuWrapperBuilder(SymbolicWrapper, GpuWrapperBuilder):
    """A GPU wrapper whose sizes are expressions of the graph's symbols."""


def build_every_size_wrapper(
    module: ir.Module,
    compiled: GpuKernels,
    result_dtypes: list[torch.dtype],
    device: torch.device,
    sizes: SymbolicSizes,
    eager: list,
    sources: dict[sympy.Symbol, str],
    placeholders: int,
) -> tuple[Callable, Callable[..., bool], str]:
    """(call, fits, source), as the CPU's (backends/cpu/symbolic_wrapper.py)."""
    holder: dict = {}

    def builder(entry: object, dtypes: list, kernels: dict) -> GpuWrapperBuilder:
        made = SymbolicGpuWrapperBuilder(entry, dtypes, kernels)
        made.symbolic(sizes, eager)
        holder["builder"] = made
        return made

    def finish(source: str) -> str:
        return every_size_source(holder["builder"], source, sources, placeholders)

    call, source, scope = build_wrapper(
        module, compiled, result_dtypes, device, builder=builder, finish=finish,
        extra_scope={"SizeAssumptionFailed": SizeAssumptionFailed},
    )  # fmt: skip
    return call, scope["fits"], source
