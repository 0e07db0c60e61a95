"""mlirc-cpu-drop-host: keep the functions the CPU compiles, the kernels.

The entry (the graph's host-side function, which the host wrapper runs as Python)
and the library kernels (torch.mm, conv2d: calls the wrapper makes) are not
compiled to machine code, so the CPU stage drops them first.  With this pass at
its head, mlirc-stage-cpu takes a whole kernels module, the previous stage's
output as it was dumped, and any stage's IR stays a valid mlirc-opt input.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import func

from mlirc.dialects.attributes import KERNEL_ATTR, LIBRARY_ATTR
from mlirc.passes.base.ir_utils import erase_op
from mlirc.passes.base.registry import register_pass


def compiled_kernel(op: ir.Operation) -> bool:
    return isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes and LIBRARY_ATTR not in op.attributes


@register_pass("mlirc-cpu-drop-host", "CPU: keep only the kernels to compile (not the entry, not library calls)")
def cpu_drop_host(module: ir.Operation) -> None:
    for op in list(module.regions[0].blocks[0].operations):
        if isinstance(op, func.FuncOp) and not compiled_kernel(op):
            erase_op(op.operation)
