"""Block tiling plans for Triton kernels: how a linalg generic's iteration space is
split among programs (TilePlan), and where each operand's elements lie in memory
(Memory).  Used by the tile emitter (mlirc.passes.gpu_tiles) and the GPU lowering.

A generic's loop dims split into the parallel dims P and the reduction dims R, each
flattened; a program computes BLOCK_P points of P (pointwise), or BLOCK_P rows as a
[BLOCK_P, BLOCK_R] tile that walks R in steps of BLOCK_R.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir

from mlirc.dialects import tt
from mlirc.passes.linalg_utils import RESHAPES, loop_ranges

POINTWISE_BLOCK = 1024  # as Inductor's large pointwise kernels: 4 warps x 8 elements per thread
TILE_ELEMENTS = 4096  # register budget of a reduction tile
MAX_ROWS_PER_PROGRAM = 64  # rows of a reduction tile: more leave too few programs to fill the GPU
ELEMENTS_PER_WARP = 256  # a warp's share of a tile: 8 per thread
MAX_WARPS = 8  # per program of a kernel with one generic
MAX_ROW_GROUP_WARPS = 16  # per program of a row group: its whole row stays in registers
I32_LIMIT = 2**31  # a tensor with this many elements or more needs i64 offsets
DYNAMIC = -(2**62)  # below this, a static_* entry is ShapedType's dynamic marker


def _next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


@dataclass
class TilePlan:
    """Block tiling of one generic: the launch and the tile shape."""

    ranges: list[int]
    parallel: list[int]  # loop dims in loop order
    reduction: list[int]
    block_p: int
    block_r: int  # 0: pointwise
    num_warps: int
    wide_offsets: bool  # i64 offsets: some tensor has 2**31 elements or more

    @property
    def size_p(self) -> int:
        return math.prod(self.ranges[d] for d in self.parallel)

    @property
    def size_r(self) -> int:
        return math.prod(self.ranges[d] for d in self.reduction)

    @property
    def grid(self) -> list[int]:
        return [-(-self.size_p // self.block_p), 1, 1]


def plan_tiles(generic: ir.Operation) -> TilePlan:
    ranges = loop_ranges(generic)
    kinds = [str(k) for k in ir.ArrayAttr(generic.attributes["iterator_types"])]
    parallel = [d for d, k in enumerate(kinds) if "parallel" in k]
    reduction = [d for d, k in enumerate(kinds) if "reduction" in k]
    biggest = max([math.prod(tt.shape_of(v)) for v in [*generic.operands, *generic.results]] + [1])
    size_p = math.prod(ranges[d] for d in parallel)
    if not reduction:
        block_p = min(POINTWISE_BLOCK, max(16, _next_pow2(size_p)))
        block_r = 0
        tile = block_p
    else:
        size_r = math.prod(ranges[d] for d in reduction)
        inner_reduction = bool(reduction) and reduction[-1] == len(ranges) - 1
        if inner_reduction:  # rows are contiguous: whole rows per program when they fit
            block_r = min(_next_pow2(size_r), TILE_ELEMENTS)
            block_p = max(1, min(_next_pow2(size_p), TILE_ELEMENTS // block_r, MAX_ROWS_PER_PROGRAM))
        else:  # columns: neighbouring programs read neighbouring columns
            block_p = min(_next_pow2(size_p), MAX_ROWS_PER_PROGRAM)
            block_r = max(1, min(_next_pow2(size_r), TILE_ELEMENTS // block_p))
        tile = block_p * block_r
    num_warps = max(1, min(MAX_WARPS, tile // ELEMENTS_PER_WARP))
    # i64 offsets, too, for a full-width tile whose reduction index is unflattened into
    # several dims: with i32 ones Triton 3.6 summed a permuted int32 [3, 7, 31, 5] wrong
    # on the H100 (fuzzer graph 12208036648; right with i64 offsets or 2048-wide tiles,
    # the cause inside Triton not found).
    wide = biggest >= I32_LIMIT or (len(reduction) > 1 and block_r >= TILE_ELEMENTS)
    return TilePlan(ranges, parallel, reduction, block_p, block_r, num_warps, wide)


def row_major(shape: list[int]) -> list[int]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return strides[::-1]


@dataclass
class Memory:
    """Where a tensor's elements are: base pointer + offset + strides (in elements)."""

    pointer: ir.Value
    offset: int
    shape: list[int]
    strides: list[int]

    @property
    def contiguous(self) -> bool:
        return all(a == b for a, b, n in zip(self.strides, row_major(self.shape), self.shape, strict=True) if n != 1)

    def _expanded_strides(self, groups: list[list[int]], shape: list[int]) -> list[int]:
        """Each source dim splits row-major into its group, scaled by its stride."""
        strides = [0] * len(shape)
        for source_dim, group in enumerate(groups):
            sizes = [shape[d] for d in group]
            for dim, stride in zip(group, _group_strides(self.strides[source_dim], sizes), strict=True):
                strides[dim] = stride
        return strides

    def _collapsed_strides(self, groups: list[list[int]]) -> list[int] | None:
        """A group merges when its (non-unit) dims are contiguous with each other."""
        strides = []
        for group in groups:
            dims = [d for d in group if self.shape[d] != 1]
            for outer, inner in zip(dims, dims[1:], strict=False):
                if self.strides[outer] != self.strides[inner] * self.shape[inner]:
                    return None
            strides.append(self.strides[dims[-1]] if dims else 1)
        return strides

    def view(self, op: ir.Operation) -> Memory | None:
        """The memory of a reshape or a static slice of this tensor (None: not a view)."""
        shape = tt.shape_of(op.results[0])
        if op.name in RESHAPES:
            groups = [[ir.IntegerAttr(i).value for i in g] for g in ir.ArrayAttr(op.attributes["reassociation"])]
            if op.name == "tensor.expand_shape":
                return Memory(self.pointer, self.offset, shape, self._expanded_strides(groups, shape))
            strides = self._collapsed_strides(groups)
            return None if strides is None else Memory(self.pointer, self.offset, shape, strides)
        offsets, steps, sizes = (
            list(ir.DenseI64ArrayAttr(op.attributes[f"static_{k}"])) for k in ("offsets", "strides", "sizes")
        )
        if any(v < DYNAMIC for v in offsets + steps + sizes):
            return None
        offset = self.offset + sum(o * st for o, st in zip(offsets, self.strides, strict=True))
        strides = [st * step for st, step in zip(self.strides, steps, strict=True)]
        kept = _kept_dims(sizes, shape)
        return Memory(self.pointer, offset, shape, [strides[i] for i in kept])


def _group_strides(outer_stride: int, sizes: list[int]) -> list[int]:
    return [outer_stride * st for st in row_major(sizes)]


def _kept_dims(sizes: list[int], shape: list[int]) -> list[int]:
    """The slice dims a rank-reducing slice keeps.  Only unit dims are dropped, and
    unit dims are interchangeable (their index is always 0), so the first ones go."""
    extra, kept = len(sizes) - len(shape), []
    for i, n in enumerate(sizes):
        if extra > 0 and n == 1:
            extra -= 1
            continue
        kept.append(i)
    return kept


def plan_rows(generics: list[ir.Operation], rows: int) -> TilePlan:
    """One tile holds whole rows: BLOCK_R covers R, BLOCK_P fills the budget."""
    ranges = loop_ranges(generics[0])
    size_p, size_r = math.prod(ranges[:rows]), math.prod(ranges[rows:])
    block_r = _next_pow2(size_r)
    block_p = max(1, min(_next_pow2(size_p), TILE_ELEMENTS // block_r, MAX_ROWS_PER_PROGRAM))
    operands = [v for g in generics for v in [*g.operands, *g.results]]
    wide = max([math.prod(tt.shape_of(v)) for v in operands] + [1]) >= I32_LIMIT
    warps = max(1, min(MAX_ROW_GROUP_WARPS, block_p * block_r // ELEMENTS_PER_WARP))
    return TilePlan(ranges, list(range(rows)), list(range(rows, len(ranges))), block_p, block_r, warps, wide)
