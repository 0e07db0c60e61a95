"""mlirc-gpu-fuse-rows: consecutive kernels over the same rows become one kernel.

Softmax leaves four kernels (row max, exp, row sum, divide) and layer norm three;
each reads the whole tensor from memory again.  On a GPU one program can hold its
rows in registers instead, when a row fits in a tile (Inductor's persistent
reductions): then the group reads its inputs once and writes only the results
that someone outside the group reads.  Rows longer than a tile holds (MAX_ROW) and
rows of run-time length (a symbolic graph's kernels for every size) are grouped
too: their program walks each row in chunks, one pass per reduction
(passes/gpu/tt/row_loops.py).

Groups are found by mlirc.passes.base.row_groups; inside one, a kernel reads an earlier
member's result only in place, which is what keeps it in registers; per-row work
between the reductions (pointwise over the rows alone: logsumexp's guard on the row
maxima) joins too, and a reshape of a member's result between members (a batch
norm's statistics reshaped for the return) moves after the group.  The members are inlined into one kernel, which
`mlirc-gpu-lower-to-tt` lowers as a whole (TileEmitter.emit_rows).
"""

from __future__ import annotations

from mlir import ir

from mlirc.dialects.attributes import ROWS_ATTR
from mlirc.passes.base.registry import register_pass
from mlirc.passes.base.row_groups import fuse_row_groups
from mlirc.passes.gpu.tt.tile_plans import MAX_HELD_ROW

MAX_ROW = MAX_HELD_ROW  # elements of a row that one program keeps in registers
# Longer rows, up to this, are walked in chunks (passes/gpu/tt/row_loops.py), one pass per
# reduction; mlirc-split-reductions leaves them whole where there are many of them.
MAX_LOOPED_ROW = 65536


@register_pass("mlirc-gpu-fuse-rows", "GPU: fuse consecutive kernels over the same rows into one kernel")
def gpu_fuse_rows(module: ir.Operation) -> None:
    for kernel, rows in fuse_row_groups(module, MAX_LOOPED_ROW, per_row=True, across_reshapes=True):
        kernel.attributes[ROWS_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), rows)
