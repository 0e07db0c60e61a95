"""mlirc-split-column-sums: sums that the memory layout made long columns, cut in two.

mlirc-split-reductions decides on the logical (NCHW) shape, before mlirc-channels-last
places activations in NHWC memory.  A batch norm's statistics, a sum over (N, H, W)
of an NCHW activation, look short there (H x W contiguous, N strided and small), but
in NHWC memory they are a column sum: N x H x W rows of C values, each row one
vector step of a single chain per lane, with only C outputs to spread over threads.
On the CPU a float64 sum of an 8x32x32x16 activation took 55 us on one thread
(9 GB/s), in a training step that made ~3 of its ~12 ms of kernel time.

Here, after the layout passes, each float sum is looked at in its physical loop
order (its largest operand's, read through its indexing map as a permutation of all
the loops).  A run of reduced loops that are adjacent in memory, with columns inside
them, and longer than the limit for strided sums (`longest-column`, as split-reductions' `strided-chunk`) is cut
between two of its loops: the inner ones, at most the limit long, are summed into a partial
tensor that keeps the outer ones (in memory order, so that its writes are as
contiguous as the input's reads), then a second generic sums the partials over the
outer loops, into the original init.  That second sum is checked the same way, so a
long run is cut again.  A cut at a loop boundary needs no reshape or slice: the body,
with its elementwise producers fused later, stays one generic whose loops do not
change, only which of them reduce.  The partial tensor's parallel loops are what
mlirc-cpu-parallelize splits across threads (for the batch norm: N x H rows).

It runs in both layout stages, with each target's limits (a GPU program sums a
1024-row column in one tile where a CPU chain stops at 128).  Only sums (`arith.addf`
into the init, read nowhere else) of f32 / f64 with static loop ranges are cut: on the
CPU a half accumulator is f32 by now (mlirc-cpu-widen-halves; a GPU's bf16 sums are
left as they are), and a symbolic graph's layout stages do not run again once its
sizes are bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, linalg

from mlirc.dialects import shapes
from mlirc.errors import VerificationError
from mlirc.passes.base import linalg_emit as le
from mlirc.passes.base.ir_utils import erase_op, nested_ops
from mlirc.passes.base.linalg_utils import indexing_maps, loop_ranges
from mlirc.passes.base.registry import register_pass

NAME = "mlirc-split-column-sums"
ACCUMULATORS = (ir.F32Type, ir.F64Type)


def _static_loop_ranges(generic: ir.Operation) -> list[int] | None:
    """Each loop's size; None where one is symbolic or read by no operand."""
    try:
        ranges = loop_ranges(generic)
    except VerificationError:
        return None
    return None if any(r < 0 for r in ranges) else ranges


def _is_float_sum(generic: ir.Operation) -> bool:
    """A one-result float sum (`yield addf(x, init)`, the init read nowhere else)?"""
    if len(generic.results) != 1 or not isinstance(shapes.elem_of(generic.results[0]), ACCUMULATORS):
        return False
    body = generic.regions[0].blocks[0]
    acc = body.arguments[len(body.arguments) - 1]
    total = body.operations[len(body.operations) - 1].operands[0].owner
    if isinstance(total, ir.Block) or total.name != "arith.addf" or acc not in list(total.operands):
        return False
    return len(list(acc.uses)) == 1


def _memory_order(generic: ir.Operation) -> list[int] | None:
    """The loops in the order of the largest input's dims (outermost first), where
    that input reads every loop through a plain dim."""
    n_loops = indexing_maps(generic)[0].n_dims
    inputs = list(zip(generic.operands, indexing_maps(generic), strict=True))[:-1]
    tensors = [(math.prod(shapes.shape_of(v)), m) for v, m in inputs if isinstance(v.type, ir.RankedTensorType)]
    if not tensors:
        return None
    _, amap = max(tensors, key=lambda t: t[0])
    order = [ir.AffineDimExpr(e).position for e in amap.results if isinstance(e, ir.AffineDimExpr)]
    return order if sorted(order) == list(range(n_loops)) else None


def _cut(generic: ir.Operation, ranges: list[int], longest: int) -> tuple[list[int], list[int]] | None:
    """(memory order, outer loops) of the first run of reduced loops that
    is too long and strided (columns inside it): the inner ones are the longest tail of
    the run within the limit (the innermost loop alone where none is), summed first.
    A contiguous run is the same in memory as in the logical shape: split-reductions
    has decided it (a GPU keeps long rows whole on purpose)."""
    order = None if 0 in ranges else _memory_order(generic)
    if order is None:
        return None
    reducing = [str(kind).endswith("<reduction>") for kind in ir.ArrayAttr(generic.attributes["iterator_types"])]
    start = 0
    while start < len(order):
        if not reducing[order[start]]:
            start += 1
            continue
        stop = start
        while stop < len(order) and reducing[order[stop]]:
            stop += 1
        run, later = order[start:stop], order[stop:]
        columns = math.prod(ranges[d] for d in later)
        if columns > 1 and math.prod(ranges[d] for d in run) > longest and len(run) > 1:
            cut = next(
                (c for c in range(1, len(run)) if math.prod(ranges[d] for d in run[c:]) <= longest), len(run) - 1
            )
            return order, run[:cut]
        start = stop
    return None


def _partial_sums(
    generic: ir.Operation, ranges: list[int], order: list[int], outer: list[int]
) -> tuple[ir.Value, list[int]]:
    """The generic with `outer` parallel: its sums per outer index, in a tensor whose
    dims are the kept loops in memory order (and those loops)."""
    maps = indexing_maps(generic)
    n_loops = maps[0].n_dims
    out_map = maps[-1]
    kept = [d for d in order if d in outer or d in _dims_of(out_map)]
    elem = shapes.elem_of(generic.results[0])
    init = le.fill(arith.ConstantOp(elem, 0.0).result, le.empty([ranges[d] for d in kept], elem))
    iterators = [
        "parallel" if d in outer else str(kind).split("<")[-1].rstrip(">")
        for d, kind in enumerate(ir.ArrayAttr(generic.attributes["iterator_types"]))
    ]
    new_maps = [*maps[:-1], ir.AffineMap.get(n_loops, 0, [ir.AffineDimExpr.get(d) for d in kept])]
    inputs = list(generic.operands)[:-1]
    partial = linalg.GenericOp(
        [init.type], inputs, [init],
        ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in new_maps]),
        ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{it}>") for it in iterators]),
    )  # fmt: skip
    old = generic.regions[0].blocks[0]
    block = partial.regions[0].blocks.append(*[a.type for a in old.arguments])
    for old_arg, new_arg in zip(old.arguments, block.arguments, strict=True):
        old_arg.replace_all_uses_with(new_arg)
    for op in list(old.operations):
        block.append(op)
    return partial.results[0], kept


def _dims_of(amap: ir.AffineMap) -> list[int]:
    return [ir.AffineDimExpr(e).position for e in amap.results if isinstance(e, ir.AffineDimExpr)]


def _total(partial: ir.Value, kept: list[int], outer: list[int], generic: ir.Operation) -> ir.Value:
    """The partial sums summed over the outer loops into the original init."""
    out_map = indexing_maps(generic)[-1]
    results = []
    for e in out_map.results:
        if isinstance(e, ir.AffineDimExpr):
            results.append(ir.AffineDimExpr.get(kept.index(ir.AffineDimExpr(e).position)))
        else:
            results.append(e)
    rank = len(kept)
    return le.generic(
        [partial], [le.identity_map(rank)], [generic.operands[len(generic.operands) - 1]],
        [ir.AffineMap.get(rank, 0, results)],
        ["reduction" if d in outer else "parallel" for d in kept],
        lambda args: [arith.addf(args[0], args[1])],
    )[0]  # fmt: skip


def split(generic: ir.Operation, longest: int) -> list[ir.Operation]:
    """Cut one too-long run of `generic`'s sum; the generics that replace it (to be
    looked at again), or [] where it stays."""
    if not _is_float_sum(generic):
        return []
    if any(not isinstance(e, (ir.AffineDimExpr, ir.AffineConstantExpr)) for e in indexing_maps(generic)[-1].results):
        return []
    ranges = _static_loop_ranges(generic)
    cut = None if ranges is None else _cut(generic, ranges, longest)
    if cut is None:
        return []
    order, outer = cut
    with ir.InsertionPoint(generic), generic.location:
        partial, kept = _partial_sums(generic, ranges, order, outer)
        total = _total(partial, kept, outer, generic)
    generic.results[0].replace_all_uses_with(total)
    erase_op(generic)
    return [partial.owner, total.owner]


@dataclass(frozen=True)
class SplitColumnSumsOptions:
    # a run of reduced loops longer than this is cut: split-reductions' strided
    # limit (its `strided-chunk`'s second number), the backend's
    longest_column: int = 128


@register_pass(
    NAME,
    "Float sums that the layout made long columns: cut at a loop boundary into partial sums",
    SplitColumnSumsOptions,
)
def split_column_sums(module: ir.Operation, options: SplitColumnSumsOptions) -> None:
    work = [op for op in nested_ops(module) if op.name == "linalg.generic"]
    while work:
        work.extend(split(work.pop(), options.longest_column))
