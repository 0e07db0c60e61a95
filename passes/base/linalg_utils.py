"""What the CPU and GPU passes both read from linalg-on-tensors kernels: the ops a
kernel body may hold besides its generics, fills in either spelling, and a
generic's loop ranges.  A leaf: it imports no pass, so a CPU pass that needs
these never imports a GPU pass (or the reverse)."""

from __future__ import annotations

from mlir import ir

from mlirc.errors import VerificationError

# Reshapes of contiguous buffers: the same memory, read through another shape.
RESHAPES = frozenset({"tensor.collapse_shape", "tensor.expand_shape"})
VIEWS = RESHAPES | {"tensor.extract_slice"}
# What a formed kernel holds around its generics.
KERNEL_PLUMBING = frozenset({"arith.constant", "tensor.empty", "linalg.fill", "linalg.generic", "func.return"})


def through_reshapes(value: ir.Value) -> ir.Value:
    """The value `value` reshapes (through any chain of RESHAPES): the same memory."""
    while not isinstance(value.owner, ir.Block) and value.owner.operation.name in RESHAPES:
        value = value.owner.operation.operands[0]
    return value


def scatter_of(kernel: ir.OpView) -> ir.Operation | None:
    """A scatter kernel's mlirc.scatter_add (mlirc-form-kernels: its root), or None."""
    found = [op.operation for op in kernel.entry_block.operations if op.operation.name == "mlirc.scatter_add"]
    return found[0] if found else None


def scatter_arguments(kernel: ir.OpView, scatter: ir.Operation) -> list[int] | None:
    """The kernel argument each of the scatter's operands reads (reshaped at most),
    or None where one is computed in the kernel."""
    args = list(kernel.entry_block.arguments)
    sources = [through_reshapes(v) for v in scatter.operands]
    return [args.index(v) for v in sources] if all(v in args for v in sources) else None


def dps_inputs(op: ir.Operation) -> list[ir.Value]:
    """A linalg op's inputs (its operands before the inits)."""
    return list(op.operands)[: len(op.operands) - len(op.results)]


def indexing_maps(op: ir.Operation) -> list[ir.AffineMap]:
    """A linalg op's indexing maps, operands in order."""
    return [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]


def set_indexing_maps(op: ir.Operation, maps: list[ir.AffineMap]) -> None:
    op.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])


def written_map(op: ir.Operation) -> ir.AffineMap | None:
    """The one map through which a generic writes all of its results, or None (another
    op, or results written through different maps)."""
    if op.name != "linalg.generic" or not op.results:
        return None
    outputs = indexing_maps(op)[len(op.operands) - len(op.results) :]
    return outputs[0] if all(m == outputs[0] for m in outputs) else None


def all_parallel(op: ir.Operation) -> bool:
    """Does the linalg op iterate over parallel loops only (no reduction)?"""
    return all(str(kind).endswith("<parallel>") for kind in ir.ArrayAttr(op.attributes["iterator_types"]))


def elem_bytes(elem: ir.Type) -> int:
    """Bytes per element (an i1 takes one; an index, 64-bit hosts', eight)."""
    if isinstance(elem, ir.IndexType):
        return 8
    if isinstance(elem, ir.IntegerType):
        return max(ir.IntegerType(elem).width // 8, 1)
    return ir.FloatType(elem).width // 8


# Combiners MLIR's vectorizer (and tile_reduction_using_for) knows the neutral element of.
COMBINERS = frozenset(
    {"arith.addf", "arith.mulf", "arith.maximumf", "arith.minimumf", "arith.addi", "arith.muli", "arith.ori",
     "arith.andi", "arith.xori", "arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui"}
)  # fmt: skip


def combines_accumulators(op: ir.Operation) -> bool:
    """Does a generic yield, for each result, one known combiner of that result's
    accumulator (what MLIR's vectorizer needs to vectorize a reduction)?"""
    body = op.regions[0].blocks[0]
    accumulators = list(body.arguments)[len(body.arguments) - len(op.results) :]
    for value, acc in zip(list(body.operations)[-1].operands, accumulators, strict=True):
        combiner = value.owner
        if isinstance(combiner, ir.Block) or combiner.name not in COMBINERS or acc not in list(combiner.operands):
            return False
    return True


def is_fill(op: ir.Operation) -> bool:
    """linalg.fill, or the generic that linalg-generalize-named-ops makes of one."""
    if op.name == "linalg.fill":
        return True
    if op.name != "linalg.generic" or len(op.operands) != 2 or isinstance(op.operands[0].type, ir.ShapedType):
        return False
    body = op.regions[0].blocks[0]
    body_ops = list(body.operations)
    return len(body_ops) == 1 and list(body_ops[0].operands) == [body.arguments[0]]


def loop_ranges(generic: ir.Operation) -> list[int]:
    """The size of each loop of a linalg.generic, read off the operands it indexes
    with a plain dim (the pass that calls this names itself in the error)."""
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(generic.attributes["indexing_maps"])]
    ranges: list[int | None] = [None] * maps[0].n_dims
    for operand, amap in zip(generic.operands, maps, strict=True):
        shape = list(ir.RankedTensorType(operand.type).shape) if isinstance(operand.type, ir.RankedTensorType) else []
        for expr, size in zip(amap.results, shape, strict=True):
            if isinstance(expr, ir.AffineDimExpr):
                ranges[ir.AffineDimExpr(expr).position] = size
    if any(r is None for r in ranges):
        raise VerificationError("a loop dim of a linalg.generic is not the plain dim of any operand")
    return ranges  # type: ignore[return-value]
