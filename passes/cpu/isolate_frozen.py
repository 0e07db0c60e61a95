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
prepare.  Left to fusion: results larger than the frozen values they read (a
parameter broadcast to an activation's shape: mlirc-hoist-frozen would keep it per
call, by the same rule), and pure data movement (a weight's transpose that a
generated contraction reads through its indexing map, mlirc-cpu-skinny-matmul: a
cached copy would be read with a stride).

CPU only: on the GPU a fused batch norm's factors cost nothing next to the memory
traffic of the kernel they are recomputed in, and a kernel of their own would be one
more launch per call (the GPU's prepare function takes what is a kernel of its own
already: a convolution weight's transpose).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import func

from mlirc.dialects.attributes import FROZEN_ATTR
from mlirc.passes.base.ir_utils import entry_functions, erase_op
from mlirc.passes.base.registry import register_pass
from mlirc.passes.form_kernels import VIEW_OPS, Outliner, is_root, values_used
from mlirc.passes.hoist_frozen import SMALL_ELEMENTS, elements

# Ops that read no argument's data (a constant, an empty init).
CONSTANT_OPS = frozenset({"arith.constant", "tensor.empty"})


def _moves_data_only(op: ir.Operation) -> bool:
    """Does the body yield its inputs unchanged (a transpose, a broadcast, a copy)?"""
    if op.name != "linalg.generic":
        return op.name == "linalg.copy"
    body = op.regions[0].blocks[0]
    return all(inner.name == "linalg.yield" for inner in body.operations)


def _readers(value: ir.Value) -> list[ir.Operation]:
    """The ops that read `value`, through reshapes and slices."""
    found = []
    for use in value.uses:
        user = use.owner.operation
        found += _readers(user.results[0]) if user.name in VIEW_OPS else [user]
    return found


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
        if not is_root(op) or len(op.results) != 1 or _moves_data_only(op):
            continue
        if all(r in frozen_only for r in _readers(op.results[0])):
            continue  # its readers are isolated; it stays their producer, a kernel of its own
        inputs = list(op.operands)[: len(op.operands) - len(op.results)]  # not the init
        sources = sum(max(elements(v), 0) for v in dict.fromkeys(inputs) if v in frozen)
        size = elements(op.results[0])
        if 0 < size <= max(sources, SMALL_ELEMENTS):  # what mlirc-hoist-frozen will take
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
            erase_op(root)
