"""mlirc-gpu-loop-order: a generic's parallel loops in its result's memory order.

A GPU kernel spreads a generic's flattened parallel loops over its threads in loop
order (passes/gpu/tt/tile_plans.py): neighbouring threads take neighbouring points of
the last loop.  Where the result's indexing map permutes the loops -- an activation
kept channels-last (mlirc-channels-last: loops n, c, h, w writing n, h, w, c) --
neighbouring threads would store C elements apart, each store its own memory
transaction.  Here the parallel loops are renumbered so that the result's map is the
identity on them; reduction loops go last, in their order.  Operands read in the
result's layout (the previous activation) are then read contiguously too.  Bodies
change only where they read a loop's index (linalg.index).  The CPU vectorizes along
whichever loop its schedule picks, so this is the GPU's alone.

A short reduction before a parallel loop whose result is in order already, over few
columns (a split column sum's last stage, [N, C] summed into C) goes last too: then it is a row
reduction (passes/base/row_groups.py), which row fusion puts in one kernel with the
per-channel work after it (a batch norm's mean, its rsqrt) and with sibling sums of
the same shape.  Its tile reads each column's elements across the rows either way
(the tile emitter splits loops into parallel and reduction ones by kind, not
position); only a long one keeps the column plan of a reduction not innermost,
which spreads many columns over each program (gpu_tile_plans.plan_tiles).
"""

from __future__ import annotations

import math

from mlir import ir

from mlirc.dialects.attributes import LIBRARY_ATTR
from mlirc.passes.base.ir_utils import functions, nested_ops
from mlirc.passes.base.linalg_utils import indexing_maps, loop_ranges, set_indexing_maps
from mlirc.passes.base.registry import register_pass

# elements: rows of at most this many hold at least 16 columns per program
# (TILE_ELEMENTS // SHORT_REDUCTION), so a short column's loads stay contiguous
SHORT_REDUCTION = 256
# ... over at most this many columns (a few MB in all): a kernel whose launch costs more
# than its loads, where joining its neighbours pays and the tile plan hardly matters
FEW_COLUMNS = 4096


def result_order(generic: ir.Operation) -> list[int] | None:
    """The new loop order (old loop positions), or None where the loops are in it
    already or the result's map is not a permutation of the parallel loops."""
    iterators = [str(k) for k in ir.ArrayAttr(generic.attributes["iterator_types"])]
    parallel = [d for d, k in enumerate(iterators) if "parallel" in k]
    reduction = [d for d, k in enumerate(iterators) if "parallel" not in k]
    if len(generic.results) != 1:
        return None
    out_map = indexing_maps(generic)[-1]
    dims = [ir.AffineDimExpr(e).position if isinstance(e, ir.AffineDimExpr) else None for e in out_map.results]
    if None in dims or sorted(dims) != parallel:
        return None
    order = dims + reduction
    if dims == parallel and not _short(generic, reduction):
        return None  # a long column sum keeps its plan (passes/gpu/tt/tile_plans.py)
    return None if order == list(range(len(iterators))) else order


def _short(generic: ir.Operation, reduction: list[int]) -> bool:
    """Is the reduction static, at most SHORT_REDUCTION elements over at most
    FEW_COLUMNS columns?"""
    ranges = loop_ranges(generic)
    if not reduction or any(r < 0 for r in ranges):
        return False
    size_r = math.prod(ranges[d] for d in reduction)
    return size_r <= SHORT_REDUCTION and math.prod(ranges) <= SHORT_REDUCTION * FEW_COLUMNS


def reorder_loops(generic: ir.Operation, order: list[int]) -> None:
    """Loop i of the new generic is loop order[i] of the old one."""
    count = len(order)
    new_position = {old: new for new, old in enumerate(order)}
    # old loop d's value is new loop new_position[d]: substitute it into every map
    old_in_new = ir.AffineMap.get(count, 0, [ir.AffineDimExpr.get(new_position[d]) for d in range(count)])
    maps = [
        ir.AffineMap.get(count, m.n_symbols, [e.compose(old_in_new) for e in m.results]) for m in indexing_maps(generic)
    ]
    set_indexing_maps(generic, maps)
    iterators = list(ir.ArrayAttr(generic.attributes["iterator_types"]))
    generic.attributes["iterator_types"] = ir.ArrayAttr.get([iterators[d] for d in order])
    for op in nested_ops(generic):
        if op.name == "linalg.index":
            old = ir.IntegerAttr(op.attributes["dim"]).value
            op.attributes["dim"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), new_position[old])


@register_pass("mlirc-gpu-loop-order", "Renumber each generic's parallel loops into its result's memory order (GPU)")
def gpu_loop_order(module: ir.Operation) -> None:
    for kernel in functions(module.regions[0].blocks[0]).values():
        if LIBRARY_ATTR in kernel.attributes:
            continue  # a library call's body is the reference for mlirc-opt, never lowered
        for op in nested_ops(kernel.operation):
            if op.name == "linalg.generic":
                order = result_order(op)
                if order is not None:
                    reorder_loops(op, order)
