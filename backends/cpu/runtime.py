"""The CPU host wrapper: kernels are JIT-compiled functions called with raw pointers
(see mlirc.backends.host_wrapper for what the wrapper does around them)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from mlir import ir
from mlir.dialects import func

from mlirc.backends.cpu.codegen import CompiledKernels
from mlirc.backends.cpu.conv_layout import prefers_channels_last
from mlirc.backends.host_wrapper import WrapperBuilder, wrapper_scope
from mlirc.dialects import shapes


class CpuWrapperBuilder(WrapperBuilder):
    def library_variant(self, library: str, op: ir.Operation, fields: dict) -> str:
        if library != "conv2d":
            return library
        x, weight = (tuple(shapes.shape_of(v)) for v in list(op.operands)[:2])
        dtype = shapes.MLIR_TO_TORCH.get(str(shapes.elem_of(op.operands[0])))
        key = (tuple(fields["stride"]), tuple(fields["padding"]), tuple(fields["dilation"]), fields["groups"])
        return "conv2d_nhwc" if prefers_channels_last(x, weight, *key, dtype) else library


def build_wrapper(
    module: ir.Module, compiled: CompiledKernels, result_dtypes: list[torch.dtype], device: torch.device
) -> tuple[Callable, str]:
    entry = next(op for op in module.body.operations if isinstance(op, func.FuncOp) and "mlirc.entry" in op.attributes)
    kernels = {op.sym_name.value: op for op in module.body.operations if isinstance(op, func.FuncOp)}
    source = CpuWrapperBuilder(entry, result_dtypes, kernels).build()
    scope = {**wrapper_scope(device), "kernels": compiled.functions}
    exec(compile(source, "<mlirc-wrapper>", "exec"), scope)  # noqa: S102 - generated host code
    call = scope["call"]
    call._mlirc_engine = compiled  # keep the JIT'd code alive with the wrapper
    return call, source
