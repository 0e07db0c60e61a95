"""The CPU host wrapper for every size of a symbolic graph (backends/symbolic_wrapper.py
says how it works): CPU kernels take their sizes after their buffers
(passes/cpu/size_args.py)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from mlirc.backends.cpu.codegen import CompiledKernels
from mlirc.backends.cpu.runtime import CpuWrapperBuilder
from mlirc.backends.symbolic_wrapper import SymbolicWrapper


class SymbolicCpuWrapperBuilder(SymbolicWrapper, CpuWrapperBuilder):
    """A CPU wrapper whose sizes are expressions of the graph's symbols."""

    conv_shapes = 4  # its convolutions meet many input shapes

    def library_variant(self, library: str, operands: list[str]) -> str:
        """torch's own GEMMs (a packed linear weight or a timed choice is per row
        count); convolutions as a bound wrapper's, their sites keeping a reordered
        weight per input shape for the last few shapes (`conv_shapes`)."""
        return library if library in ("mm", "addmm") else super().library_variant(library, operands)


def builder_for(compiled: CompiledKernels) -> Callable[..., SymbolicCpuWrapperBuilder]:
    """The builder of the wrapper for every size over `compiled`: no scratch (a
    buffer's size changes from call to call), the kernels' size arguments."""
    return functools.partial(SymbolicCpuWrapperBuilder, scratch_limit_bytes=0, kernel_sizes=compiled.sizes)
