"""What keeps a linalg op from vectorizing (it traps, aborts MLIR or LLVM, or
vectorizes wrong) or from running on threads (it moves too little)."""

from __future__ import annotations

import math

from mlir import ir

from mlirc.dialects import shapes
from mlirc.passes.base.ir_utils import nested_ops
from mlirc.passes.base.linalg_utils import all_parallel, combines_accumulators, elem_bytes, written_map
from mlirc.passes.cpu.schedule.loops import iterator_types


def has_gather(op: ir.Operation) -> bool:
    """Does the body, at any depth, read a tensor through `tensor.extract` (a gather, a pad)?"""
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                if inner.operation.name == "tensor.extract" or has_gather(inner.operation):
                    return True
    return False


# Integer divisions trap (SIGFPE) on x86 for a 0 divisor.  Vectorized with masks, the
# lanes past a row's end are read as poison, and LLVM may fold the guard that makes a 0
# divisor 1 (select(poison, ...)) away: a permuted a // b died of SIGFPE.  x86 has no
# vector integer division anyway (LLVM scalarizes it), so these stay scalar.
INTEGER_DIVISIONS = frozenset(
    {"arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi", "arith.ceildivsi",
     "arith.ceildivui"}
)  # fmt: skip


def divides_integers(op: ir.Operation) -> bool:
    """Does `op` divide by anything but a constant (a constant other than 0 and -1
    cannot trap, whatever the dividend: index arithmetic `% size` stays vectorized)?"""
    for inner in nested_ops(op):
        if inner.name not in INTEGER_DIVISIONS:
            continue
        divisor = inner.operands[1].owner
        if isinstance(divisor, ir.Block) or divisor.name != "arith.constant":
            return True
        value = divisor.attributes["value"]
        if not isinstance(value, ir.IntegerAttr) or ir.IntegerAttr(value).value in (0, -1):
            return True
    return False


def contracts_into_a_scalar(op: ir.Operation) -> bool:
    """A whole reduction (a 0-d result) of operands read through different maps, as
    (x * w).sum() with w broadcast along the rows: vectorized, MLIR's
    reduction_to_contract makes it a vector.contract into a scalar accumulator, whose
    outer-product lowering casts that scalar to a vector and aborts the process.
    These stay scalar loops (a large one is split into partial sums before, by
    mlirc-split-reductions, and only its last, short stage is a whole reduction)."""
    if op.name != "linalg.generic" or any(shapes.shape_of(r) for r in op.results):
        return False
    maps = ir.ArrayAttr(op.attributes["indexing_maps"])
    read = {str(m) for m in list(maps)[: len(op.operands) - len(op.results)] if ir.AffineMapAttr(m).value.results}
    return len(read) > 1


# A generic that loads and stores fewer bytes than this in all runs on one thread
# (its loop is not marked for mlirc-cpu-parallelize): a fork and join costs more.
MIN_PARALLEL_BYTES = 16 << 10


def moves_little(op: ir.Operation, sizes: list[int | None]) -> bool:
    """Does the generic move fewer than MIN_PARALLEL_BYTES: each of its iterations
    loads one element of each input and stores one of each result, through whatever
    maps?  mlirc-cpu-parallelize sizes a kernel by its buffers, which overstates a
    read through constant indices: a variance's pivot row, 24 elements of a 275 KB
    activation, forked onto 16 threads."""
    if op.name != "linalg.generic" or any(s is None for s in sizes):
        return False
    per_iteration = sum(elem_bytes(shapes.elem_of(v)) for v in op.operands if isinstance(v.type, ir.ShapedType))
    return math.prod(sizes) * per_iteration < MIN_PARALLEL_BYTES


def reduces_an_invariant(op: ir.Operation) -> bool:
    """A reduction whose yielded values depend on no input element and no index
    (`acc + 1` once a comparison folds to true): MLIR's vectorizer combines such a
    scalar into the accumulator once instead of once per element, so it stays scalar."""
    if op.name != "linalg.generic" or not any(it.endswith("<reduction>") for it in iterator_types(op)):
        return False
    body = op.regions[0].blocks[0]
    varying = {arg for arg in list(body.arguments)[: len(op.operands) - len(op.results)]}
    for inner in body.operations:
        if inner.name == "linalg.index" or any(v in varying for v in inner.operands):
            varying.update(inner.results)
    yielded = list(body.operations)[-1].operands
    return not all(v in varying for v in yielded)


def computes_on_bf16(op: ir.Operation) -> bool:
    """bf16 vectors only as loads, stores and casts to and from f32: x86 code generation
    of other bf16 vector ops (a select, a bitcast, a compare) asserts in LLVM 20.  A
    widened generic (mlirc-cpu-widen-halves) computes in f32 and qualifies; a body left
    in bf16 (nextafter's bit arithmetic), or a named contraction on bf16, stays scalar."""
    if op.name == "linalg.copy":
        return False
    if op.name != "linalg.generic":
        return any(isinstance(shapes.elem_of(v), ir.BF16Type) for v in [*op.operands, *op.results])
    for inner in op.regions[0].blocks[0].operations:
        if inner.name in ("arith.extf", "arith.truncf", "linalg.yield"):
            continue
        if any(isinstance(v.type, ir.BF16Type) for v in [*inner.operands, *inner.results]):
            return True
    return False


def one_result_or_elementwise(op: ir.Operation) -> bool:
    """One result, or several written together: all loops parallel, every result
    through one permutation (the loop's element, or channels-last's;
    mlirc-fuse-multi-output), or column sums through one map
    (mlirc-fuse-sibling-reductions, planned by plans._column_plan).  Of several element
    widths (a ReLU and its mask) the vector length is the widest's lanes: the
    narrower results store part of a register."""
    if len(op.results) == 1:
        return True
    written = written_map(op)
    if written is None:
        return False
    return (written.is_permutation and all_parallel(op)) or combines_accumulators(op)


def has_no_iterations(op: ir.Operation) -> bool:
    """An operand of a static size 0: the loops run no trip (a sum over an empty dim
    only leaves its init), and MLIR's tiling asserts on a loop of size 0."""
    return any(isinstance(v.type, ir.ShapedType) and 0 in shapes.shape_of(v) for v in op.operands)
