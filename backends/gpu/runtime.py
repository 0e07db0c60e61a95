"""The GPU host wrapper: the shared wrapper code (mlirc.backends.host_wrapper) with
Triton launches on the caller's current CUDA stream, fetched once per call as
Inductor's wrapper does.

Each launch line calls Triton's launcher with the kernel's grid, function handle
and metadata bound as constants of the generated code, so a launch costs one
Python call; kernels with an empty grid (0-size tensors) are left out entirely.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from mlir import ir
from mlir.dialects import func

from mlirc.backends.gpu.compiler import Launcher
from mlirc.backends.host_wrapper import WrapperBuilder, wrapper_scope
from mlirc.dialects import tt
from mlirc.dialects.attributes import GRID_ATTR
from mlirc.passes.ir_utils import entry_functions


class GpuWrapperBuilder(WrapperBuilder):
    """Kernels are compiled for 16-byte aligned pointers (tt.ALIGNMENT): arguments
    are copied when they are not, as are views whose offset breaks it.  Results are
    never written over operands: the TTIR lowering was not checked for it."""

    def in_place(self, op, callee, logical):  # noqa: ANN001, ANN201 - the base's signature
        return None

    def entry_arg(self, a: str) -> str:
        return (
            f"    {a} = {a} if {a}.is_contiguous() and not {a}.data_ptr() % {tt.ALIGNMENT}"
            f" else {a}.clone(memory_format=torch.contiguous_format)"
        )

    def prologue(self) -> None:
        self.lines.append("    stream = get_stream(device_index)")

    def emit_check(self, flag: str, check) -> None:  # noqa: ANN001 - the base's signature
        """A device-side assert: reading the flag would wait for the GPU, so the
        error surfaces at the next synchronization, as eager's CUDA kernels report it."""
        self.lines.append(f"    torch._assert_async({flag}, {(check.error + ': ' + check.message)!r})")

    def emit_kernel_call(self, op: ir.Operation, callee: str, buffers: list[str]) -> None:
        gx, gy, gz = ir.DenseI64ArrayAttr(self.kernels[callee].attributes[GRID_ATTR])
        if gx * gy * gz == 0:
            return
        buffers = [b if self.aligned(b, tt.ALIGNMENT) else f"aligned({b})" for b in buffers]
        k = f"k_{callee}"
        self.lines.append(
            f"    {k}.run({gx}, {gy}, {gz}, stream, {k}.function, {k}.metadata, None, None, None, {', '.join(buffers)})"
        )


def aligned(x: torch.Tensor) -> torch.Tensor:
    """A kernel input whose address breaks the alignment kernels assume, copied."""
    return x if not x.data_ptr() % tt.ALIGNMENT else x.clone(memory_format=torch.contiguous_format)


def _on_device(call: Callable, index: int) -> Callable:
    """Allocation and launches go to the current device: switch to the graph's
    device for a call made while another one is current."""
    get_device = torch._C._cuda_getDevice

    def call_on_device(*args: torch.Tensor) -> tuple:
        if get_device() == index:
            return call(*args)
        with torch.cuda.device(index):
            return call(*args)

    return call_on_device


def build_wrapper(
    module: ir.Module, launchers: dict[str, Launcher], result_dtypes: list[torch.dtype], device: torch.device
) -> tuple[Callable, str]:
    entry = entry_functions(module.body)[0]
    kernels = {op.sym_name.value: op for op in module.body.operations if isinstance(op, func.FuncOp)}
    source = GpuWrapperBuilder(entry, result_dtypes, kernels).build()
    index = device.index if device.index is not None else torch.cuda.current_device()
    scope = {
        **wrapper_scope(torch.device("cuda", index)),
        **{f"k_{name}": launcher for name, launcher in launchers.items()},
        "device_index": index,
        "aligned": aligned,
        "get_stream": torch._C._cuda_getCurrentRawStream,
    }
    exec(compile(source, "<mlirc-gpu-wrapper>", "exec"), scope)  # noqa: S102 - generated host code
    return _on_device(scope["call"], index), source
