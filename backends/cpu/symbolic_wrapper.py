"""The CPU host wrapper for every size of a symbolic graph (backends/symbolic_wrapper.py
says how it works): CPU kernels take their sizes after their buffers
(passes/cpu_size_args.py)."""

from __future__ import annotations

from collections.abc import Callable

import sympy
import torch
from mlir import ir

from mlirc.backends.cpu.codegen import CompiledKernels
from mlirc.backends.cpu.runtime import CpuWrapperBuilder, build_wrapper
from mlirc.backends.symbolic_sizes import SymbolicSizes
from mlirc.backends.symbolic_wrapper import SymbolicWrapper, every_size_source
from mlirc.errors import SizeAssumptionFailed


class SymbolicCpuWrapperBuilder(SymbolicWrapper, CpuWrapperBuilder):
    """A CPU wrapper whose sizes are expressions of the graph's symbols."""

    conv_shapes = 4  # its convolutions meet many input shapes

    def library_variant(self, library: str, operands: list[str]) -> str:
        """torch's own GEMMs (a packed linear weight or a timed choice is per row
        count); convolutions as a bound wrapper's, their sites keeping a reordered
        weight per input shape for the last few shapes (`conv_shapes`)."""
        return library if library == "mm" else super().library_variant(library, operands)


def build_every_size_wrapper(
    module: ir.Module,
    compiled: CompiledKernels,
    result_dtypes: list[torch.dtype],
    device: torch.device,
    sizes: SymbolicSizes,
    eager: list,
    sources: dict[sympy.Symbol, str],
    placeholders: int,
) -> tuple[Callable, Callable[..., bool], str]:
    """(call, fits, source): the wrapper over `module`'s unbound entry, and whether a
    call's sizes hold the entry's size assertions.  `sizes`: the entry's sizes as
    expressions of the graph's symbols; `sources`: symbol ->
    how the wrapper reads it from its arguments (`arg4.shape[0]`); `placeholders`:
    how many of the entry's arguments a caller passes (the rest are prepared)."""
    holder: dict = {}

    def builder(entry: object, dtypes: list, kernels: dict) -> CpuWrapperBuilder:
        made = SymbolicCpuWrapperBuilder(entry, dtypes, kernels, scratch_limit_bytes=0, kernel_sizes=compiled.sizes)
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
