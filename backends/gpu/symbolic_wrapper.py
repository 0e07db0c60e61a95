"""The GPU host wrapper for every size of a symbolic graph (backends/symbolic_wrapper.py
says how it works): Triton kernels take their buffers' sizes after them and their
grids are expressions of the call's sizes (passes/gpu/lower_to_tt.py)."""

from __future__ import annotations

from mlirc.backends.gpu.runtime import GpuWrapperBuilder
from mlirc.backends.symbolic_wrapper import SymbolicWrapper


class SymbolicGpuWrapperBuilder(SymbolicWrapper, GpuWrapperBuilder):
    """A GPU wrapper whose sizes are expressions of the graph's symbols."""
