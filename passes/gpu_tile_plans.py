"""Block tiling plans for Triton kernels: how a linalg generic's iteration space is
split among programs (TilePlan), and where each operand's elements lie in memory
(Memory).  Used by the tile emitter (mlirc.passes.gpu_tiles) and the GPU lowering.

A generic's loop dims split into the parallel dims P and the reduction dims R, each
flattened; a program computes BLOCK_P points of P (pointwise), or BLOCK_P rows as a
[BLOCK_P, BLOCK_R] tile that walks R in steps of BLOCK_R.

Sizes are ints, or for a kernel of run-time sizes sympy expressions of its size
arguments (passes/gpu_sizes.py): the blocks are then chosen for large sizes (the
kernel serves every size; a hot size gets kernels of its own), offsets are i64, and
the grid is an expression the host evaluates at launch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import sympy
from mlir import ir
from torch.utils._sympy.functions import FloorDiv

from mlirc.errors import PipelineError
from mlirc.passes.gpu_sizes import PASS, KernelSizes, Size, is_static, known, static_value
from mlirc.passes.linalg_utils import RESHAPES

POINTWISE_BLOCK = 1024  # as Inductor's large pointwise kernels: 4 warps x 8 elements per thread
TILE_ELEMENTS = 4096  # register budget of a reduction tile
RUNTIME_ROW_BLOCK = 512  # a reduction tile's width along a row of run-time length (a looped reduction)
MAX_ROWS_PER_PROGRAM = 64  # rows of a reduction tile: more leave too few programs to fill the GPU
ELEMENTS_PER_WARP = 256  # a warp's share of a tile: 8 per thread
MAX_WARPS = 8  # per program of a kernel with one generic
MAX_ROW_GROUP_WARPS = 16  # per program of a row group: its whole row stays in registers
MAX_HELD_ROW = 8192  # elements of a row group's row held whole in registers; longer ones loop
# A row group over longer static rows walks them in chunks, a pass per reduction
# (passes/gpu_row_loops.py); its later passes read the rows again, from L2 if the rows
# in flight fit there.  One row per program (16 warps: 4 programs per SM) keeps ~34 MB
# of 16384-long rows in flight: softmax / layer norm over 4096 x 16384 at 90 / 98% of
# copy bandwidth on the H100, against 47 / 50% with 8 rows per 512-wide chunk.  Rows
# read across (a transposed input: a row's neighbours are the next rows) need a wide
# tile along the rows for coalesced loads: 32 x 256 ran at 43% (Inductor 47%), 8 x 512
# at 35%, 1 x 4096 at 11%.
LONG_ROWS = (1, 2048)  # (BLOCK_P, BLOCK_R)
LONG_ROWS_ACROSS = (32, 256)
I32_LIMIT = 2**31  # a tensor with this many elements or more needs i64 offsets
DYNAMIC = -(2**62)  # below this, a static_* entry is ShapedType's dynamic marker


def _next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _block(size: Size, cap: int) -> int:
    """A tile's length along `size`: the power of two covering it, at most `cap`
    (`cap` for a run-time size)."""
    value = static_value(size)
    return cap if value is None else min(cap, _next_pow2(value))


def loop_sizes(generic: ir.Operation, sizes: KernelSizes) -> list[Size]:
    """Each loop's size, read off an operand that indexes it with a plain dim."""
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(generic.attributes["indexing_maps"])]
    ranges: list[Size | None] = [None] * maps[0].n_dims
    for operand, amap in zip([*generic.operands], maps, strict=True):
        for expr, size in zip(amap.results, sizes.shape(operand), strict=False):
            d = ir.AffineDimExpr(expr).position if isinstance(expr, ir.AffineDimExpr) else None
            if d is not None and (ranges[d] is None or (is_static(size) and not is_static(ranges[d]))):
                ranges[d] = size
    if any(r is None for r in ranges):
        raise PipelineError(PASS, "a loop dim of a linalg.generic is not the plain dim of any operand")
    return ranges  # type: ignore[return-value]


@dataclass
class TilePlan:
    """Block tiling of one generic: the launch and the tile shape."""

    ranges: list[Size]
    parallel: list[int]  # loop dims in loop order
    reduction: list[int]
    block_p: int
    block_r: int  # 0: pointwise
    num_warps: int
    wide_offsets: bool  # i64 offsets: some tensor has 2**31 elements or more

    @property
    def size_p(self) -> Size:
        return math.prod(self.ranges[d] for d in self.parallel)

    @property
    def size_r(self) -> Size:
        return math.prod(self.ranges[d] for d in self.reduction)

    @property
    def grid(self) -> list[Size]:
        """Programs along each axis: ints, or an expression of the size arguments."""
        size = self.size_p
        if is_static(size):
            return [-(-int(size) // self.block_p), 1, 1]
        return [FloorDiv(sympy.sympify(size) + self.block_p - 1, self.block_p), 1, 1]


def plan_tiles(generic: ir.Operation, sizes: KernelSizes, wide: bool) -> TilePlan:
    """`wide`: the kernel needs i64 offsets anyway (some buffer it reads, sliced or
    not, may have 2**31 elements or more)."""
    ranges = loop_sizes(generic, sizes)
    kinds = [str(k) for k in ir.ArrayAttr(generic.attributes["iterator_types"])]
    parallel = [d for d, k in enumerate(kinds) if "parallel" in k]
    reduction = [d for d, k in enumerate(kinds) if "reduction" in k]
    size_p = math.prod(ranges[d] for d in parallel)
    if not reduction:
        block_p = max(16, _block(size_p, POINTWISE_BLOCK))
        block_r = 0
        tile = block_p
    else:
        size_r = math.prod(ranges[d] for d in reduction)
        inner_reduction = bool(reduction) and reduction[-1] == len(ranges) - 1
        if inner_reduction:  # rows are contiguous: whole rows per program when they fit
            block_r = _block(size_r, TILE_ELEMENTS if is_static(size_r) else RUNTIME_ROW_BLOCK)
            block_p = max(1, min(_block(size_p, MAX_ROWS_PER_PROGRAM), TILE_ELEMENTS // block_r))
        else:  # columns: neighbouring programs read neighbouring columns
            block_p = _block(size_p, MAX_ROWS_PER_PROGRAM)
            block_r = max(1, _block(size_r, TILE_ELEMENTS // block_p))
        tile = block_p * block_r
    num_warps = max(1, min(MAX_WARPS, tile // ELEMENTS_PER_WARP))
    # i64 offsets, too, for a full-width tile whose reduction index is unflattened into
    # several dims: with i32 ones Triton 3.6 summed a permuted int32 [3, 7, 31, 5] wrong
    # on the H100 (fuzzer graph 12208036648; right with i64 offsets or 2048-wide tiles,
    # the cause inside Triton not found).
    wide = wide or (len(reduction) > 1 and block_r >= TILE_ELEMENTS)
    return TilePlan(ranges, parallel, reduction, block_p, block_r, num_warps, wide)


def row_major(shape: list[Size]) -> list[Size]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return strides[::-1]


@dataclass
class Memory:
    """Where a tensor's elements are: base pointer + offset + strides (in elements)."""

    pointer: ir.Value
    offset: Size
    shape: list[Size]
    strides: list[Size]

    def _expanded_strides(self, groups: list[list[int]], shape: list[Size]) -> list[Size]:
        """Each source dim splits row-major into its group, scaled by its stride."""
        strides = [0] * len(shape)
        for source_dim, group in enumerate(groups):
            sizes = [shape[d] for d in group]
            for dim, stride in zip(group, _group_strides(self.strides[source_dim], sizes), strict=True):
                strides[dim] = stride
        return strides

    def _collapsed_strides(self, groups: list[list[int]]) -> list[Size] | None:
        """A group merges when its (non-unit) dims are contiguous with each other."""
        strides = []
        for group in groups:
            dims = [d for d in group if not known(self.shape[d], 1)]
            for outer, inner in zip(dims, dims[1:], strict=False):
                if self.strides[outer] != self.strides[inner] * self.shape[inner]:
                    return None
            strides.append(self.strides[dims[-1]] if dims else 1)
        return strides

    def view(self, op: ir.Operation, shape: list[Size]) -> Memory | None:
        """The memory of a reshape or a static slice of this tensor, whose result has
        `shape` (None: not a view)."""
        if op.name in RESHAPES:
            groups = [[ir.IntegerAttr(i).value for i in g] for g in ir.ArrayAttr(op.attributes["reassociation"])]
            if op.name == "tensor.expand_shape":
                return Memory(self.pointer, self.offset, shape, self._expanded_strides(groups, shape))
            strides = self._collapsed_strides(groups)
            return None if strides is None else Memory(self.pointer, self.offset, shape, strides)
        offsets, steps, sizes = (
            list(ir.DenseI64ArrayAttr(op.attributes[f"static_{k}"])) for k in ("offsets", "strides", "sizes")
        )
        if any(v < DYNAMIC for v in offsets + steps):
            return None  # `?` sizes are the result's (`shape`), `?` offsets are no static view
        offset = self.offset + sum(o * st for o, st in zip(offsets, self.strides, strict=True))
        strides = [st * step for st, step in zip(self.strides, steps, strict=True)]
        kept = _kept_dims(sizes, shape)
        return Memory(self.pointer, offset, shape, [strides[i] for i in kept])


def _group_strides(outer_stride: Size, sizes: list[Size]) -> list[Size]:
    return [outer_stride * st for st in row_major(sizes)]


def _kept_dims(sizes: list[int], shape: list[Size]) -> list[int]:
    """The slice dims a rank-reducing slice keeps.  Only unit dims are dropped, and
    unit dims are interchangeable (their index is always 0), so the first ones go."""
    extra, kept = len(sizes) - len(shape), []
    for i, n in enumerate(sizes):
        if extra > 0 and n == 1:
            extra -= 1
            continue
        kept.append(i)
    return kept


def plan_rows(generics: list[ir.Operation], rows: int, sizes: KernelSizes, wide: bool) -> TilePlan:
    """One tile holds whole rows: BLOCK_R covers R, BLOCK_P fills the budget."""
    # the ranges of a member over the rows and their elements, not of a per-row one
    ranges = max((loop_sizes(g, sizes) for g in generics), key=len)
    size_p, size_r = math.prod(ranges[:rows]), math.prod(ranges[rows:])
    # rows of run-time length, or longer than a tile holds, are walked in chunks
    # (passes/gpu_row_loops.py)
    whole = is_static(size_r) and size_r <= MAX_HELD_ROW
    if whole or not is_static(size_r):
        block_r = _next_pow2(int(size_r)) if whole else RUNTIME_ROW_BLOCK
        block_p = max(1, min(_block(size_p, MAX_ROWS_PER_PROGRAM), TILE_ELEMENTS // block_r))
        warps = max(1, min(MAX_ROW_GROUP_WARPS, block_p * block_r // ELEMENTS_PER_WARP))
    else:
        block_p, block_r = LONG_ROWS_ACROSS if _reads_rows_across(generics, rows) else LONG_ROWS
        block_p = min(block_p, _block(size_p, MAX_ROWS_PER_PROGRAM))
        warps = MAX_ROW_GROUP_WARPS
    return TilePlan(ranges, list(range(rows)), list(range(rows, len(ranges))), block_p, block_r, warps, wide)


def _reads_rows_across(generics: list[ir.Operation], rows: int) -> bool:
    """Does a member read a kernel argument whose innermost dim is a row dim (the rows
    of a transposed input lie next to each other in memory, their elements apart)?"""
    for generic in generics:
        maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(generic.attributes["indexing_maps"])]
        inputs = ir.DenseI32ArrayAttr(generic.attributes["operandSegmentSizes"])[0]
        for operand, amap in zip(list(generic.operands)[:inputs], maps, strict=False):
            if not isinstance(operand.owner, ir.Block) or not amap.results:
                continue
            last = amap.results[-1]
            if isinstance(last, ir.AffineDimExpr) and ir.AffineDimExpr(last).position < rows:
                return True
    return False
