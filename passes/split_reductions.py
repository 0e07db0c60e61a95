"""mlirc-split-reductions: long floating-point sums as a cascade of short ones.

A vectorized sum keeps a few dozen partial sums, each of which adds up K / lanes
values one after the other: its rounding error grows with that chain.  Over 2^24
float32 values the result was off by 2.5e-3 (eager's cascade sum: 5e-7).  Here a
sum over a dim longer than a few chunks becomes a sum of chunk sums: the dim
splits into [K // C, C], the chunks are summed, then their sums (recursively,
while they are still many), and the K % C left over are one more short sum added
at the end.  Every chain is then short whatever K is, the order is fixed (the
same result from call to call), and the chunk loop is a parallel dim that
threads share, where a whole-tensor sum used to run on one.

It works on the mlirc dialect, before lowering, so both targets get it.  A sum
over several dims is taken one dim at a time (runs of adjacent dims merged first).
A dim whose later dims are all 1 is the contiguous, vectorized one: its chunks are
long; a chunk of any other dim is one sequential add per step in every lane, so
its chunks are short.
"""

from __future__ import annotations

from mlir import ir

from mlirc.dialects import builders as b
from mlirc.dialects import shapes
from mlirc.passes.ir_utils import defer, nested_ops, resume_deferred
from mlirc.passes.registry import register_pass

NAME = "mlirc-split-reductions"

# (chunk, split when longer than).  A contiguous dim's chunk is 16 steps of a 32-lane
# vector block (AVX-512 f32, unrolled 4 x 16, is 64 lanes: 8 steps); a step of any
# other dim adds one value to every lane: its chunks are short (eager's cascade
# sum adds 16 values per level on such columns).
CONTIGUOUS = (512, 2048)
STRIDED = (16, 128)


def _split_dim(x: ir.Value, dim: int) -> ir.Value:
    """The sum of `x` over `dim`, kept as a size-1 dim, as a cascade of short sums."""
    shape = list(shapes.shape_of(x))
    size = shape[dim]
    if not _splits(shape, dim):
        return b.reduce("reduce_sum", x, [dim], True)
    chunk, _ = CONTIGUOUS if all(d == 1 for d in shape[dim + 1 :]) else STRIDED
    count, rest = divmod(size, chunk)
    head = _slice(x, dim, 0, count * chunk)
    head = b.reshape(head, [*shape[:dim], count, chunk, *shape[dim + 1 :]])
    total = _split_dim(b.reduce("reduce_sum", head, [dim + 1], False), dim)
    if rest:
        tail = b.reduce("reduce_sum", _slice(x, dim, count * chunk, size), [dim], True)
        total = b.elementwise("add", total, tail)
    return total


def _slice(x: ir.Value, dim: int, start: int, stop: int) -> ir.Value:
    shape = list(shapes.shape_of(x))
    if (start, stop) == (0, shape[dim]):
        return x
    rank = len(shape)
    starts = [0] * rank
    starts[dim] = start
    shape[dim] = stop - start
    return b.create("slice", [x], shapes.tensor_type(shape, shapes.elem_of(x)), starts=starts, steps=[1] * rank)


def _merged(shape: list[int], dims: list[int]) -> tuple[list[int], list[int]]:
    """The shape with each run of adjacent reduced dims collapsed into one, and the
    reduced dims in it."""
    new_shape: list[int] = []
    new_dims: list[int] = []
    for d, size in enumerate(shape):
        if d in dims and d - 1 in dims:
            new_shape[-1] *= size
            continue
        if d in dims:
            new_dims.append(len(new_shape))
        new_shape.append(size)
    return new_shape, new_dims


def _splits(shape: list[int], dim: int) -> bool:
    _, longest = CONTIGUOUS if all(d == 1 for d in shape[dim + 1 :]) else STRIDED
    return shape[dim] > longest


def _long_float_sum(op: ir.Operation) -> bool:
    """Is `op` a float sum to split?  One whose split depends on symbolic sizes is
    marked deferred instead (False), and split once they are bound."""
    if op.name != "mlirc.reduce_sum" or not shapes.is_float(shapes.elem_of(op.results[0])):
        return False
    shape = list(shapes.shape_of(op.operands[0]))
    dims = sorted(ir.DenseI64ArrayAttr(op.attributes["dims"]))
    # How a sum splits depends on its length and on the dims after it (a derived `?`
    # dim, s0 - 1, may be 1), and the cascade's reshapes and slices take static
    # shapes: decided once the sizes are bound.
    if dims and None in shape[dims[0] :]:
        _defer_with_broadcast(op)
        return False
    merged, merged_dims = _merged(shape, dims)
    splits = any(_splits(merged, d) for d in merged_dims)
    if splits and None in shape:
        _defer_with_broadcast(op)
        return False
    return splits


def _defer_with_broadcast(op: ir.Operation) -> None:
    """A broadcast that the sum reads waits too: the cascade's slices of it become
    broadcasts of slices (mlirc-slice-broadcasts), not slices of a materialized one."""
    defer(op, NAME)
    owner = op.operands[0].owner
    if not isinstance(owner, ir.Block) and owner.operation.name == "mlirc.broadcast":
        defer(owner.operation, NAME)


def _cascade(op: ir.Operation) -> ir.Value:
    shape, dims = _merged(list(shapes.shape_of(op.operands[0])), sorted(ir.DenseI64ArrayAttr(op.attributes["dims"])))
    x = b.reshape(op.operands[0], shape)
    elem = shapes.elem_of(x)
    half = isinstance(elem, (ir.BF16Type, ir.F16Type))
    if half:  # eager sums halves in float32 and rounds once: the partial sums stay f32
        x = b.convert(x, ir.F32Type.get())
    for dim in reversed(dims):  # innermost first: its sums are the contiguous ones
        x = _split_dim(x, dim)
    x = b.convert(x, elem) if half else x
    return b.reshape(x, shapes.shape_of(op.results[0]))


@register_pass(NAME, "Long floating-point sums as a cascade of short, fixed-order sums")
def split_reductions(module: ir.Operation) -> None:
    resume_deferred(module, NAME)
    for op in [op for op in nested_ops(module) if _long_float_sum(op)]:
        with ir.InsertionPoint(op), op.location:
            total = _cascade(op)
        op.results[0].replace_all_uses_with(total)
        op.erase()
