"""mlirc-gpu-sibling-reductions: reductions over the same rows are called one after
the other, so that row fusion makes them one kernel that reads what they share once.

A batch norm's backward sums two things per channel over (N, H, W) -- the output
gradient, and the gradient times the centred input -- and a layer norm's backward
sums two per row for the input's gradient.  AOTAutograd emits each pair apart, with
other work between (the first sum's second stage, after mlirc-split-column-sums), so
each sum was a kernel of its own reading the gradient from memory again; Inductor
computes such sums in one kernel.  Row fusion (mlirc-gpu-fuse-rows) groups runs of
consecutive calls over the same rows, members that read nothing of each other
included, and a program loads an input its members share once.

Here each reduction call with the row shape of an earlier one (row_groups.RowShape:
loop ranges, `?` ones by their size keys, and row dims), whose rows a program holds
whole (MAX_HELD_ROW) and whose operands are all computed before that one, moves to
just after it (after the siblings moved there before it).  Operands that are views
or size arithmetic of such values move with it, before the first sibling, so that
nothing lies between the calls.  Ops only move earlier: what they compute is
unchanged, and only the life of their results grows -- reductions, smaller than
what they read.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import func

from mlirc.passes.base.ir_utils import entry_functions, functions
from mlirc.passes.base.linalg_utils import VIEWS
from mlirc.passes.base.registry import register_pass
from mlirc.passes.base.row_groups import Grouper, RowShape
from mlirc.passes.base.size_keys import SizeKeys
from mlirc.passes.gpu.tt.tile_plans import MAX_HELD_ROW

NAME = "mlirc-gpu-sibling-reductions"
SIZE_OPS = frozenset({"tensor.dim"})  # besides scalar arith: a view's `?` sizes


def _movable(value: ir.Value, before: set[ir.Operation], chain: list[ir.Operation]) -> bool:
    """Is `value` computed by an op in `before` (or an argument), or by views and
    size arithmetic on such values?  Those to move are appended to `chain`, each
    after what it reads."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return True
    op = owner.operation
    if op in before or op in chain:
        return True
    scalar_arith = op.name.startswith("arith.") and not any(isinstance(r.type, ir.ShapedType) for r in op.results)
    if op.name not in VIEWS | SIZE_OPS and not scalar_arith:
        return False
    if not all(_movable(v, before, chain) for v in op.operands):
        return False
    chain.append(op)
    return True


def _gather_siblings(entry: func.FuncOp, grouper: Grouper) -> None:
    """Move the entry's sibling reductions next to the first of each set."""
    block = entry.entry_block
    shapes: dict[ir.Operation, RowShape] = {}
    for op in block.operations:
        op = op.operation
        shape = grouper.call_shape(op) if grouper.kernel_of(op) is not None else None
        if shape is not None and shape.rows is not None and shape.row_elements() <= MAX_HELD_ROW:
            shapes[op] = shape
    calls = list(shapes)
    placed: set[ir.Operation] = set()
    for i, anchor in enumerate(calls):
        if anchor in placed:
            continue
        last = anchor
        for later in calls[i + 1 :]:
            if later in placed or shapes[later] != shapes[anchor]:
                continue
            ops = [op.operation for op in block.operations]
            before = set(ops[: ops.index(anchor)])
            chain: list[ir.Operation] = []
            if not all(_movable(v, before, chain) for v in later.operands):
                continue
            for op in chain:  # views of values from before the siblings: before them too
                op.move_before(anchor)
            later.move_after(last)
            last = later
            placed.add(later)


@register_pass(NAME, "GPU: reductions over the same rows, independent of what lies between, called together")
def gpu_sibling_reductions(module: ir.Operation) -> None:
    top = module.regions[0].blocks[0]
    grouper = Grouper(functions(top), MAX_HELD_ROW)
    for entry in entry_functions(top):
        grouper.keys = SizeKeys()  # keys of this entry's values
        _gather_siblings(entry, grouper)
