"""The Triton lowering of a scatter kernel (mlirc.scatter_add), for mlirc-gpu-lower-to-tt.

x[T, R] with each update row src[k] added into row index[k]: the kernel is in place
(mlirc.in_place: its result buffer already holds x, mlirc-form-kernels), so each
program adds a [BLOCK_K, BLOCK_R] tile of updates with `tt.atomic_rmw` -- as
Inductor's scatter kernels, and unlike ATen's embedding backward (a sort, then a
segmented sum), updates to one row land in no fixed order: sums may differ from
eager's in the last bits.  Indices are checked on the host (eager's IndexError);
the clamp only keeps a bad one inside the buffer.  Offsets are i64: the kernel's
buffers are read as flat row-major memory, reshapes of its arguments included.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func

from mlirc.dialects import tt
from mlirc.passes.base.linalg_utils import scatter_arguments
from mlirc.passes.gpu.tt.tile_access import _fail

CMPI_SLT = 2
FADD, ADD = 5, 4  # tt.RMWOp
RELAXED, GPU = 1, 1  # tt.MemSemantic, tt.MemSyncScope
TILE_ELEMENTS = 2048  # updates' elements per program
MAX_BLOCK_R = 256


@dataclass
class ScatterPlan:
    """What _declare reads off a plan: the launch."""

    grid: list[int]
    num_warps: int
    block_k: int
    block_r: int


def _pow2_at_least(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def plan_scatter(updates: int, columns: int) -> ScatterPlan:
    block_r = min(_pow2_at_least(columns), MAX_BLOCK_R)
    block_k = min(max(TILE_ELEMENTS // block_r, 1), _pow2_at_least(updates))
    grid = [-(-updates // block_k), -(-columns // block_r), 1]
    return ScatterPlan(grid, 4, block_k, block_r)


class _Builder:
    """arith and tt ops on [BLOCK_K, BLOCK_R] tiles, in generic form."""

    def __init__(self) -> None:
        self.i32 = ir.IntegerType.get_signless(32)
        self.i64 = ir.IntegerType.get_signless(64)

    def const(self, value: int, element: ir.Type, shape: list[int]) -> ir.Value:
        scalar = tt.scalar_constant(value, element)
        return tt.splat(scalar, shape) if shape else scalar

    def binary(self, name: str, a: ir.Value, b: ir.Value, attrs: dict | None = None) -> ir.Value:
        shape = tt.shape_of(a)
        result = tt.tensor_type(shape, ir.IntegerType.get_signless(1)) if name == "arith.cmpi" else a.type
        return tt.one(name, [a, b], result, attrs)

    def less(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.binary("arith.cmpi", a, b, {"predicate": ir.IntegerAttr.get(self.i64, CMPI_SLT)})

    def lanes(self, axis: int, block: int) -> ir.Value:
        """This program's positions along `axis`: pid * block + [0, block), as i64."""
        start = tt.one("arith.extsi", [tt.program_id(axis)], self.i64)
        start = self.binary("arith.muli", start, self.const(block, self.i64, []))
        lane = tt.one("arith.extsi", [tt.make_range(block)], tt.tensor_type([block], self.i64))
        return self.binary("arith.addi", tt.splat(start, [block]), lane)

    def grid2(self, value: ir.Value, axis: int, shape: list[int]) -> ir.Value:
        return tt.broadcast(tt.expand_dims(value, 1 - axis), shape)


def emit_scatter(kernel: func.FuncOp, scatter: ir.Operation, plan: ScatterPlan, pointers: list[ir.Value]) -> None:
    """The tile code, at the insertion point (the tt.func's body); `pointers`: the
    kernel's arguments, then its result."""
    targets, columns = tt.shape_of(scatter.results[0])
    updates = tt.shape_of(scatter.operands[1])[0]
    positions = scatter_arguments(kernel, scatter)
    if positions is None:
        raise _fail(kernel.sym_name.value, "a scatter operand that is not an argument (reshaped at most)")
    index_ptr, src_ptr, out_ptr = pointers[positions[1]], pointers[positions[2]], pointers[-1]
    bld, shape = _Builder(), [plan.block_k, plan.block_r]
    ks, rs = bld.lanes(0, plan.block_k), bld.lanes(1, plan.block_r)
    k_ok = bld.less(ks, bld.const(updates, bld.i64, [plan.block_k]))
    r_ok = bld.less(rs, bld.const(columns, bld.i64, [plan.block_r]))
    index = tt.load(tt.addptr(tt.splat(index_ptr, [plan.block_k]), ks), k_ok)
    if tt.element_of(index) != bld.i64:
        index = tt.one("arith.extsi", [index], tt.tensor_type([plan.block_k], bld.i64))
    index = bld.binary("arith.maxsi", index, bld.const(0, bld.i64, [plan.block_k]))
    index = bld.binary("arith.minsi", index, bld.const(targets - 1, bld.i64, [plan.block_k]))
    width = bld.const(columns, bld.i64, shape)
    cols = bld.grid2(rs, 1, shape)
    target = bld.binary("arith.addi", bld.binary("arith.muli", bld.grid2(index, 0, shape), width), cols)
    source = bld.binary("arith.addi", bld.binary("arith.muli", bld.grid2(ks, 0, shape), width), cols)
    mask = bld.binary("arith.andi", bld.grid2(k_ok, 0, shape), bld.grid2(r_ok, 1, shape))
    values = tt.load(tt.addptr(tt.splat(src_ptr, shape), source), mask)
    element = tt.element_of(values)
    attrs = {
        "atomic_rmw_op": tt.i32(ADD if isinstance(element, ir.IntegerType) else FADD),
        "sem": tt.i32(RELAXED),
        "scope": tt.i32(GPU),
    }
    tt.one("tt.atomic_rmw", [tt.addptr(tt.splat(out_ptr, shape), target), values, mask], values.type, attrs)
