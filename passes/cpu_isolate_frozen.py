"""mlirc-cpu-isolate-frozen: work on frozen arguments alone becomes its own kernel
before fusion, so that mlirc-hoist-frozen can move it into the prepare function.

Elementwise fusion fuses a producer into each of its consumers, so a batch norm's
per-channel `rsqrt(var + eps)` (64 values) fused into the normalization that reads it
broadcast was recomputed for every element of the activation (a 3.3M-element ResNet
layer: 3.3M square roots and divisions per call), and nothing was left for the
prepare function to hoist.  Here each linalg op of the entry that reads only frozen
arguments (parameters, buffers, lifted constants: `mlirc.frozen`) and constants, and
whose result some other op reads, is outlined into a kernel (`frozen_<n>`) first:
fusion does not cross a call, and mlirc-hoist-frozen then runs the kernel once, in
prepare.  Results larger than the op's largest input (a parameter broadcast to an
activation's shape) are left to fusion: hoisting would keep them per call.

CPU only: the GPU pipeline has no prepare function, and a kernel of its own would be
one more launch per call.
"""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import func

from mlirc.dialects import shapes
from mlirc.dialects.attributes import FROZEN_ATTR
from mlirc.passes.form_kernels import Outliner, values_used
from mlirc.passes.ir_utils import entry_functions
from mlirc.passes.registry import register_pass

# Ops whose results depend on no argument: they neither freeze nor thaw a reader.
CONSTANT_OPS = frozenset({"arith.constant", "tensor.empty"})


def _elements(value: ir.Value) -> int | None:
    if not isinstance(value.type, ir.RankedTensorType):
        return 0
    shape = shapes.shape_of(value)
    return math.prod(shape) if all(isinstance(d, int) for d in shape) else None


def _is_linalg_root(op: ir.Operation) -> bool:
    return op.name.startswith("linalg.") and op.name not in ("linalg.fill", "linalg.yield", "linalg.index")


def _frozen_roots(entry: func.FuncOp) -> list[ir.Operation]:
    args = list(entry.entry_block.arguments)
    frozen = {args[i] for i in ir.DenseI64ArrayAttr(entry.attributes[FROZEN_ATTR]) if i < len(args)}
    constant: set = set()
    frozen_only: set = set()
    for op in entry.entry_block.operations:
        op = op.operation
        operands = values_used(op)  # a gather's captured tensors too
        if op.name in CONSTANT_OPS or (operands and all(v in constant for v in operands)):
            constant.update(op.results)
        elif operands and all(v in frozen or v in constant for v in operands) and op.name != "func.return":
            frozen.update(op.results)
            frozen_only.add(op)
    roots = []
    for op in frozen_only:
        if not _is_linalg_root(op) or len(op.results) != 1:
            continue
        readers = [u.owner.operation for u in op.results[0].uses]
        if all(r in frozen_only for r in readers):
            continue  # its readers are isolated; it stays their producer, a kernel of its own
        size = _elements(op.results[0])
        inputs = list(op.operands)[: len(op.operands) - len(op.results)]  # not the init
        largest = max((_elements(v) or 0 for v in inputs), default=0)
        if size is not None and size <= largest:
            roots.append(op)
    return roots


@register_pass(
    "mlirc-cpu-isolate-frozen",
    "Outline work on frozen arguments alone into kernels before fusion (CPU: hoisted into prepare)",
)
def cpu_isolate_frozen(module: ir.Operation) -> None:
    for entry in entry_functions(module.regions[0].blocks[0]):
        if FROZEN_ATTR not in entry.attributes:
            continue
        outliner = Outliner(entry, prefix="frozen")
        order = {op.operation: i for i, op in enumerate(entry.entry_block.operations)}
        for root in sorted(_frozen_roots(entry), key=order.__getitem__):
            outliner.outline(root)
            root.erase()
