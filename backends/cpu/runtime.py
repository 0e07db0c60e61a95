"""The CPU host wrapper: kernels are JIT-compiled functions called with raw pointers
(see mlirc.backends.host_wrapper for what the wrapper does around them)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from mlir import ir
from mlir.dialects import func

from mlirc.backends.cpu import gemm_choice
from mlirc.backends.cpu.codegen import CompiledKernels
from mlirc.backends.host_wrapper import WrapperBuilder, scratch_buffers, wrapper_scope
from mlirc.config import config
from mlirc.passes.ir_utils import entry_functions


class CpuWrapperBuilder(WrapperBuilder):
    def library_variant(self, library: str, operands: list[str]) -> str:
        metas = [self.meta.get(name) for name in operands]
        if library == "mm" and all(m is not None for m in metas):
            return gemm_choice.choose_mm(*metas)
        return library


def build_wrapper(
    module: ir.Module, compiled: CompiledKernels, result_dtypes: list[torch.dtype], device: torch.device
) -> tuple[Callable, str]:
    entry = entry_functions(module.body)[0]
    kernels = {op.sym_name.value: op for op in module.body.operations if isinstance(op, func.FuncOp)}
    builder = CpuWrapperBuilder(entry, result_dtypes, kernels, scratch_limit_bytes=config.scratch_mb << 20)
    source = builder.build()
    scope = {
        **wrapper_scope(device),
        "kernels": compiled.functions,
        "scratch_buffers": scratch_buffers(builder.scratch_metas, device),
        "onednn_mm": gemm_choice.onednn_mm,
    }
    exec(compile(source, "<mlirc-wrapper>", "exec"), scope)  # noqa: S102 - generated host code
    call = scope["call"]
    call._mlirc_engine = compiled  # keep the JIT'd code alive with the wrapper
    return call, source
