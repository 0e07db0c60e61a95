"""The GPU host wrapper: the CPU wrapper's code with Triton launches on the caller's
current CUDA stream (fetched once per call, as Inductor's wrapper does)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from mlir import ir
from mlir.dialects import func

from mlirc.backends.cpu.runtime import WrapperBuilder


class GpuWrapperBuilder(WrapperBuilder):
    def prologue(self) -> None:
        self.lines.append("    stream = get_stream(device_index)")

    def emit_kernel_call(self, callee: str, buffers: list[str]) -> None:
        self.lines.append(f"    kernels[{callee!r}](stream, {', '.join(buffers)})")


def build_wrapper(
    module: ir.Module, launchers: dict[str, Callable], result_dtypes: list[torch.dtype], device: torch.device
) -> tuple[Callable, str]:
    entry = next(op for op in module.body.operations if isinstance(op, func.FuncOp) and "mlirc.entry" in op.attributes)
    kernels = {op.sym_name.value: op for op in module.body.operations if isinstance(op, func.FuncOp)}
    source = GpuWrapperBuilder(entry, result_dtypes, kernels).build()
    index = device.index if device.index is not None else torch.cuda.current_device()
    scope = {
        "torch": torch,
        "kernels": launchers,
        "device": torch.device("cuda", index),
        "device_index": index,
        "get_stream": torch._C._cuda_getCurrentRawStream,
    }
    exec(compile(source, "<mlirc-gpu-wrapper>", "exec"), scope)  # noqa: S102 - generated host code
    return scope["call"], source
