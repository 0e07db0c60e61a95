"""mlirc-cpu-reread-stored: a parallel loop reads back what the serial code stored,
instead of using the stored value itself.

Merged kernels (mlirc-cpu-merge-small-kernels with `large`) pass values between their
members through the kernel's output buffers: a batch norm's per-channel mean and
rstd, written by serial code, read by the normalization's loop.  Canonicalization on
tensors forwards a store to the loads that follow it (a vector tail's transfer_read
of the tensor just written folds to the written vector), so after bufferization the
loop uses an SSA value computed on the caller's thread, and mlirc-cpu-parallelize,
which moves the loop into a chunk function of the kernel's own arguments, must leave
it serial.  Here each such use inside a marked loop reads the value again from the
output buffer it was stored to, at the top of the loop's body, which makes the loop
self-contained again (a few vector loads per outer trip).

Sound only where nothing writes that buffer between the store and the loop or inside
the loop: checked on the buffer's root argument.  Two written arguments never alias
(an output is placed over an input in place, never over another output), so writes
rooted at other arguments cannot change it; an op whose effects are not known here
(a call) writes everything.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, func, memref

from mlirc.dialects.attributes import KERNEL_ATTR, PARALLEL_LOOP_ATTR
from mlirc.passes.base.ir_utils import defining_op, entry_block_argument, nested_ops
from mlirc.passes.base.registry import register_pass

VIEWS = ("memref.subview", "memref.cast", "memref.expand_shape", "memref.collapse_shape", "memref.reinterpret_cast")
# Ops that read memory or none; everything else with a buffer operand may write it.
READ_ONLY = ("vector.transfer_read", "memref.load", "vector.load", "memref.dim", "memref.alloca", "memref.alloc",
             "memref.dealloc", *VIEWS)  # fmt: skip
# Where each store's buffer operand is; the first two this pass can read back.
WRITTEN_OPERAND = {"vector.transfer_write": 1, "memref.store": 1, "memref.copy": 1, "vector.store": 1}
STORES = ("vector.transfer_write", "memref.store")
EVERYTHING = -1  # a root standing for every buffer


def _root(value: ir.Value) -> int | None:
    """The kernel argument a buffer is a view of; None for a local allocation."""
    while True:
        argument = entry_block_argument(value)
        if argument is not None:
            return argument
        owner = defining_op(value)
        if owner is None or owner.name not in VIEWS:
            return None
        value = owner.operands[0]


def _buffers(op: ir.Operation) -> list[ir.Value]:
    return [v for v in op.operands if isinstance(v.type, ir.MemRefType)]


def _written_roots(ops: list[ir.Operation]) -> set[int | None]:
    """The roots `ops` (and the ops nested in them) may write; EVERYTHING for a call."""
    roots: set[int | None] = set()
    for op in [o for top in ops for o in (top, *nested_ops(top))]:
        if op.name in WRITTEN_OPERAND:
            roots.add(_root(op.operands[WRITTEN_OPERAND[op.name]]))
        elif op.name.startswith("func.call"):
            roots.add(EVERYTHING)
        elif op.name not in READ_ONLY:
            roots |= {_root(b) for b in _buffers(op)}
    return roots


def _inside(op: ir.Operation, loop: ir.Operation) -> bool:
    while op is not None:
        if op == loop:
            return True
        parent = op.parent
        op = parent.operation if parent is not None else None
    return False


def _reread(store: ir.Operation, at: ir.InsertionPoint) -> ir.Value | None:
    """A load of what `store` wrote, built at `at`; None for a store that writes only
    part of its value (a masked or out-of-bounds transfer)."""
    value, buffer, *indices = store.operands
    if store.name == "memref.store":
        return memref.LoadOp(buffer, indices, ip=at).result
    if "in_bounds" not in store.attributes or not all(ir.BoolAttr(b).value for b in store.attributes["in_bounds"]):
        return None
    if len(store.operands) != 2 + ir.MemRefType(buffer.type).rank:  # a mask
        return None
    element = ir.VectorType(value.type).element_type
    padding = arith.ConstantOp(element, 0 if isinstance(element, ir.IntegerType) else 0.0, ip=at).result
    read = ir.Operation.create(
        "vector.transfer_read",
        results=[value.type],
        operands=[buffer, *indices, padding],
        attributes={
            "permutation_map": store.attributes["permutation_map"],
            "in_bounds": store.attributes["in_bounds"],
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, len(indices), 1, 0]),
        },
        loc=store.location,
        ip=at,
    )
    return read.results[0]


def _reread_in(loop: ir.Operation, top: list[ir.Operation]) -> None:
    position = top.index(loop)
    inside_writes = _written_roots([loop])
    body = loop.regions[0].blocks[0]
    for store in reversed(top[:position]):
        if store.name not in STORES:
            continue
        value, buffer = store.operands[0], store.operands[WRITTEN_OPERAND[store.name]]
        root = _root(buffer)
        uses = [(u.owner, u.operand_number) for u in value.uses if _inside(u.owner.operation, loop)]
        if root is None or not uses:
            continue
        between = _written_roots(top[top.index(store) + 1 : position])
        if {root, EVERYTHING} & (between | inside_writes):
            continue
        with loop.location:
            reread = _reread(store, ir.InsertionPoint.at_block_begin(body))
        if reread is None:
            continue
        for owner, number in uses:
            owner.operands[number] = reread


@register_pass(
    "mlirc-cpu-reread-stored", "CPU: parallel loops read stored values back, not the serial code's SSA values"
)
def cpu_reread_stored(module: ir.Operation) -> None:
    for op in module.regions[0].blocks[0].operations:
        if not isinstance(op, func.FuncOp) or KERNEL_ATTR not in op.attributes or op.is_external:
            continue
        top = [o.operation for o in op.entry_block.operations]
        for loop in top:
            if loop.name == "scf.for" and PARALLEL_LOOP_ATTR in loop.attributes:
                _reread_in(loop, top)
