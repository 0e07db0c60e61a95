"""Which of a kernel's loops mlirc-cpu-parallelize may split into chunks: their
bounds, what each reads from outside it, and how much data the kernel moves."""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, func, memref

from mlirc.dialects.attributes import PARALLEL_LOOP_ATTR
from mlirc.passes.base.ir_utils import constant_index, nested_ops
from mlirc.passes.base.linalg_utils import elem_bytes

# Top-level ops that neither write memory nor escape a chunk: a chunk clones those its
# loop reads (allocations, with their deallocation, move into the chunk: one per thread).
CLONABLE = frozenset(
    {"arith.constant", "ub.poison", "memref.subview", "memref.expand_shape", "memref.collapse_shape",
     "memref.cast", "memref.reinterpret_cast", "memref.alloca", "memref.alloc", "memref.dealloc",
     "memref.get_global"}
)  # fmt: skip
ALLOCATIONS = ("memref.alloc", "memref.alloca")

# A loop bound: a constant, or a value the kernel computes before its loops from
# its arguments (sizes, mlirc-cpu-size-args: a row loop runs to a product of them).
Bound = int | ir.Value


def _bound(value: ir.Value) -> Bound | None:
    constant = constant_index(value)
    if constant is not None:
        return constant
    return value if _computed_from_arguments(value) else None


def _computed_from_arguments(value: ir.Value) -> bool:
    """Is `value` an argument of the kernel, or scalar arithmetic on arguments, sizes
    and constants at the top of its body (valid before its loops run)?"""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return isinstance(owner.owner, func.FuncOp)
    if owner.parent is None or owner.parent.name != "func.func" or not _pure_scalar(owner):
        return False
    return all(_computed_from_arguments(v) or constant_index(v) is not None for v in owner.operands if not _buffer(v))


def _pure_scalar(op: ir.Operation) -> bool:
    return (op.name.startswith("arith.") and op.name != "arith.constant") or op.name == "memref.dim"


def _invariant_scalar(op: ir.Operation) -> bool:
    """Scalar math before the loop on a 0-d input (mlirc-cpu-hoist-invariant-scalars:
    an optimizer's bias corrections): each chunk computes it again.  A 0-d buffer is
    never one the loop writes: the loop writes elements it indexes, and a buffer
    reused in place has its output's size."""
    if op.name.startswith("math."):
        return True
    return op.name == "memref.load" and ir.MemRefType(op.operands[0].type).rank == 0


def _buffer(value: ir.Value) -> bool:
    return isinstance(value.type, ir.MemRefType)


@dataclass
class Footprint:
    """What a kernel's buffers hold, in bytes: `static` plus, for each buffer of
    run-time size, its static part times its `?` dims."""

    static: int
    dynamic: list[tuple[ir.Value, int]]

    def large(self, min_bytes: int) -> bool:
        """`min_bytes` or more (or perhaps, at run time)?"""
        return bool(self.dynamic) or self.static >= min_bytes

    def emit(self) -> ir.Value:
        total = _index(self.static)
        for buffer, count in self.dynamic:
            product = _index(count)
            for dim in range(ir.MemRefType(buffer.type).rank):
                if ir.MemRefType(buffer.type).is_dynamic_dim(dim):
                    product = arith.muli(product, memref.dim(buffer, _index(dim)))
            total = arith.addi(total, product)
        return total


def _footprint(kernel: func.FuncOp, loop: ir.Operation | None = None) -> Footprint:
    """What the kernel's buffers hold, or (`loop`) those of them the loop reads or writes."""
    static, dynamic = 0, []
    within = None if loop is None else {loop, *nested_ops(loop), *_needed_outside(kernel, loop)}
    for arg in kernel.entry_block.arguments:
        if not isinstance(arg.type, ir.MemRefType):
            continue
        uses = [u.owner for u in arg.uses if u.owner.name == "memref.reinterpret_cast"]
        buffer = uses[0].results[0] if uses else arg  # a pointer and its sizes
        if within is not None and not any(_operation(u.owner) in within for u in buffer.uses):
            continue
        mtype = ir.MemRefType(buffer.type)
        sizes = [s for s in mtype.shape if not ir.ShapedType.is_dynamic_size(s)]
        count = math.prod(sizes) * elem_bytes(mtype.element_type)
        if len(sizes) == mtype.rank:
            static += count
        else:
            dynamic.append((buffer, count))
    return Footprint(static, dynamic)


def _clonable(op: ir.Operation) -> bool:
    return op.name in CLONABLE or _pure_scalar(op) or _invariant_scalar(op)


def _marked_loop(op: ir.Operation) -> bool:
    return op.name == "scf.for" and PARALLEL_LOOP_ATTR in op.attributes and not op.results


def _chunkable_loops(kernel: func.FuncOp, min_bytes: int) -> list[tuple[ir.Operation, list[Bound]]] | None:
    """The kernel's marked loops, in order, each with its (lb, ub, step), when
    chunking them is safe: what a loop reads outside it is clonable, and no buffer
    allocated outside it is also used by another loop or by the kernel's serial ops
    (each chunk has its own); lb and step constants, ub a constant or computed from
    the arguments (_bound).  Of several loops (merged small kernels: an optimizer's
    biases), only those that move `min_bytes` themselves are chunked: a fork/join
    per small loop costs more than it saves; the others run serially in place."""
    top = [op.operation for op in kernel.entry_block.operations]
    loops = [o for o in top if _marked_loop(o)]
    if len(loops) > 1:
        loops = [o for o in loops if _footprint(kernel, o).large(min_bytes)]
    if not loops:
        return None
    serial = [o for o in top if o not in loops and not _clonable(o) and o.name != "func.return"]
    needed = {user: _needed_outside(kernel, user) for user in [*loops, *serial]}
    users: dict[ir.Operation, int] = {}
    for user, ops in needed.items():
        for op in ops:
            if user in loops and not _clonable(op):
                return None
            if op.name in ALLOCATIONS:
                users[op] = users.get(op, 0) + 1
    for loop in loops:
        if any(users[op] > 1 for op in needed[loop] if op.name in ALLOCATIONS):
            return None
        if any(_written_between(top, op, loop) for op in needed[loop] if op.name == "memref.load"):
            return None
    found = []
    for loop in loops:
        lb, ub, step = (_bound(v) for v in list(loop.operands)[:3])
        if not isinstance(lb, int) or not isinstance(step, int) or ub is None:
            return None
        if isinstance(ub, int) and (ub - lb + step - 1) // step < 2:
            return None
        found.append((loop, [lb, ub, step]))
    return found


def _written_between(top: list[ir.Operation], load: ir.Operation, loop: ir.Operation) -> bool:
    """Might memory change between a load and the loop that reads its value?  Each
    chunk loads again where the loop stood; an op or loop in between may write the
    loaded buffer, or one aliasing it (an output written over its input in place)."""
    between = top[top.index(load) + 1 : top.index(loop)]
    return any(not _clonable(o) for o in between)


def _operation(owner: ir.OpView | ir.Operation | ir.Block) -> ir.Operation | ir.Block:
    return owner.operation if isinstance(owner, ir.OpView) else owner


def _needed_outside(kernel: func.FuncOp, user: ir.Operation) -> set[ir.Operation]:
    """The ops at the top of the kernel's body that `user` reads, directly or through
    each other (constants, views, scalars, buffers and their deallocation)."""
    top = {op.operation for op in kernel.entry_block.operations}
    needed: set[ir.Operation] = set()
    pending = [user, *nested_ops(user)]
    while pending:
        for value in pending.pop().operands:
            owner = _operation(value.owner)
            if not isinstance(owner, ir.Block) and owner in top and owner not in needed:
                needed.add(owner)
                pending.append(owner)
    for op in top:
        if op.name == "memref.dealloc" and _operation(op.operands[0].owner) in needed:
            needed.add(op)
    return needed


def _index(value: Bound) -> ir.Value:
    if isinstance(value, ir.Value):
        return value
    return arith.ConstantOp(ir.IndexType.get(), ir.IntegerAttr.get(ir.IndexType.get(), value)).result
