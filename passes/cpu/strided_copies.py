"""mlirc-cpu-strided-copies: copies between buffers that are not contiguous run as loops.

Bufferization copies a slice it cannot view (the collapse of a strided slice), and
MLIR lowers `memref.copy` to a memcpy only where both buffers are contiguous; any
other copy becomes a call of `memrefCopy`, a function of MLIR's C runner library,
which this process does not have.  On static sizes such copies are contiguous or
absent; on `?` sizes (kernels compiled for every size) a slice's strides are
run-time values, contiguity cannot be shown, and the copy would call out.  Such a
copy becomes a `linalg.copy`, which convert-linalg-to-loops lowers to loops.
"""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import linalg

from mlirc.passes.base.ir_utils import erase_op, nested_ops
from mlirc.passes.base.registry import register_pass


def contiguous(t: ir.MemRefType) -> bool:
    """Does MLIR's copy lowering see `t` as contiguous (a memcpy will do)?  Its rule
    (memref::isStaticShapeAndContiguousRowMajor): an identity layout, or a static,
    non-empty shape whose inner dims have row-major strides and whose other dims are 1."""
    layout = t.layout
    if isinstance(layout, ir.AffineMapAttr) and ir.AffineMapAttr(layout).value == ir.AffineMap.get_identity(t.rank):
        return True
    if not t.has_static_shape or math.prod(t.shape) == 0:
        return False
    strides, _ = t.get_strides_and_offset()
    dim, running = t.rank - 1, 1
    while dim >= 0 and strides[dim] == running:
        running *= t.shape[dim]
        dim -= 1
    while dim >= 0 and t.shape[dim] == 1:
        dim -= 1
    return dim < 0


@register_pass(
    "mlirc-cpu-strided-copies", "CPU: copies between non-contiguous buffers become loops (no runtime library)"
)
def cpu_strided_copies(module: ir.Operation) -> None:
    for op in [o for o in nested_ops(module) if o.name == "memref.copy"]:
        source, target = op.operands
        if contiguous(ir.MemRefType(source.type)) and contiguous(ir.MemRefType(target.type)):
            continue
        with ir.InsertionPoint(op), op.location:
            linalg.copy(source, outs=[target])
        erase_op(op)
