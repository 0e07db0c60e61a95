"""Block tiling plans for Triton kernels: how a linalg generic's iteration space is
split among programs (TilePlan), and where each operand's elements lie in memory
(Memory).  Used by the tile emitter (mlirc.passes.gpu.tt.tiles) and the GPU lowering.

A generic's loop dims split into the parallel dims P and the reduction dims R, each
flattened; a program computes BLOCK_P points of P (pointwise), or BLOCK_P rows as a
[BLOCK_P, BLOCK_R] tile that walks R in steps of BLOCK_R.

Sizes are ints, or for a kernel of run-time sizes sympy expressions of its size
arguments (passes/gpu/tt/sizes.py): the blocks are then chosen for large sizes (the
kernel serves every size; a hot size gets kernels of its own), offsets are i64, and
the grid is an expression the host evaluates at launch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import sympy
from mlir import ir
from torch.utils._sympy.functions import FloorDiv

from mlirc.errors import PipelineError
from mlirc.passes.base.linalg_utils import RESHAPES
from mlirc.passes.gpu.tt.sizes import PASS, KernelSizes, Size, is_static, known, static_value

POINTWISE_BLOCK = 1024  # as Inductor's large pointwise kernels: 4 warps x 8 elements per thread
TILE_ELEMENTS = 4096  # register budget of a reduction tile
RUNTIME_ROW_BLOCK = 512  # a reduction tile's width along a row of run-time length (a looped reduction)
MAX_ROWS_PER_PROGRAM = 64  # rows of a reduction tile: more leave too few programs to fill the GPU
ELEMENTS_PER_WARP = 256  # a warp's share of a tile: 8 per thread
MAX_WARPS = 8  # per program of a kernel with one generic
MAX_ROW_GROUP_WARPS = 16  # per program of a row group: its whole row stays in registers
SMALL_WINDOW = 64  # values of a gathered window (pooling) walked by each lane alone
MAX_HELD_ROW = 8192  # elements of a row group's row held whole in registers; longer ones loop
# A row group over longer static rows walks them in chunks (passes/gpu/tt/row_loops.py):
# a softmax's max and sum in one pass (online), then a pass that stores, reading the rows
# again, from L2 if the rows in flight fit there.  One row per program, 32 warps (two
# programs fill an SM): softmax over 4096 x 16384 at 98% of copy bandwidth on the H100
# (Inductor 98%), against 74% with 16 warps (91% for the three-pass form, whose extra
# pass reads L2) and 47% with 8 rows per 512-wide chunk.  Rows read across (a transposed
# input: a row's neighbours are the next rows) need a wide tile along the rows for
# coalesced loads: 32 x 256 with 32 warps at 57% (Inductor 48%); three passes with 16
# warps had 44%, other tile shapes 23-42%.
LONG_ROWS = (1, 2048)  # (BLOCK_P, BLOCK_R)
LONG_ROWS_ACROSS = (32, 256)
LONG_ROW_WARPS = 32
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
        if _gathers_windows(generic, reduction, size_r):  # a pooling window, summed lane by lane
            block_p, block_r = max(16, _block(size_p, POINTWISE_BLOCK)), 1
        elif inner_reduction:  # rows are contiguous: whole rows per program when they fit
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


Part = tuple[Size, Size]  # (size, stride): a run of elements `stride` apart


@dataclass
class Memory:
    """Where a tensor's elements are: base pointer + offset + strides (in elements).

    A dim that collapses dims lying apart in memory has no one stride: the rows of
    `x[:, :-1].reshape(-1, V)` are [B, T - 1] rows of a [B, T] buffer.  `splits` holds
    such a dim's parts, (size, stride) outer first, and its `strides` entry is None:
    an index of the dim reads each part at its row-major digit (division and
    remainder), the element that the host's copying reshape would put there."""

    pointer: ir.Value
    offset: Size
    shape: list[Size]
    strides: list[Size | None]
    splits: dict[int, list[Part]] = field(default_factory=dict)

    def parts(self, dim: int) -> list[Part]:
        """The dim's parts, outer first: itself, unless it is split."""
        stride = self.strides[dim]
        return self.splits[dim] if stride is None else [(self.shape[dim], stride)]

    def view(self, op: ir.Operation, shape: list[Size]) -> Memory | None:
        """The memory of a reshape or a static slice of this tensor, whose result has
        `shape` (None: not a view)."""
        if op.name in RESHAPES:
            groups = [[ir.IntegerAttr(i).value for i in g] for g in ir.ArrayAttr(op.attributes["reassociation"])]
            if op.name == "tensor.expand_shape":
                return self._expanded(groups, shape)
            return _from_parts(self, self.offset, shape, [[p for d in g for p in self.parts(d)] for g in groups])
        offsets, steps, sizes = (
            list(ir.DenseI64ArrayAttr(op.attributes[f"static_{k}"])) for k in ("offsets", "strides", "sizes")
        )
        if any(v < DYNAMIC for v in offsets + steps):
            return None  # `?` sizes are the result's (`shape`), `?` offsets are no static view
        kept = _kept_dims(sizes, shape)
        offset, parts = self.offset, []
        for dim, (start, step) in enumerate(zip(offsets, steps, strict=True)):
            size = shape[kept.index(dim)] if dim in kept else 1
            sliced = self._sliced(dim, start, step, size)
            if sliced is None:
                return None
            offset += sliced[0]
            if dim in kept:
                parts.append(sliced[1])
        return _from_parts(self, offset, shape, parts)

    def _expanded(self, groups: list[list[int]], shape: list[Size]) -> Memory | None:
        """Each source dim's parts split row-major into its group's dims."""
        parts: list[list[Part]] = [[] for _ in shape]
        for source_dim, group in enumerate(groups):
            split = _split(self.parts(source_dim), [shape[d] for d in group])
            if split is None:
                return None
            for dim, dim_parts in zip(group, split, strict=True):
                parts[dim] = dim_parts
        return _from_parts(self, self.offset, shape, parts)

    def _sliced(self, dim: int, start: int, step: int, size: Size) -> tuple[Size, list[Part]] | None:
        """A slice of `dim`, `size` elements from `start` `step` apart: the offset it
        adds and its parts.  A split dim is kept whole or read at one element."""
        stride = self.strides[dim]
        if stride is not None:
            return start * stride, [(size, stride * step)]
        if start == 0 and step == 1 and _same(size, self.shape[dim]):
            return 0, self.splits[dim]
        if not known(size, 1):
            return None
        offset = _digits_offset(start, self.splits[dim])
        return None if offset is None else (offset, [])


def _same(a: Size, b: Size) -> bool:
    return sympy.expand(sympy.sympify(a) - sympy.sympify(b)) == 0


def _from_parts(memory: Memory, offset: Size, shape: list[Size], parts: list[list[Part]]) -> Memory:
    """A view of `memory` whose dims are made of these parts (outer first): a dim of
    one part is a stride as before, one of several contiguous parts is their merged
    stride, and one that stays in pieces is split."""
    strides: list[Size | None] = []
    splits: dict[int, list[Part]] = {}
    for dim, dim_parts in enumerate(parts):
        merged = dim_parts if len(dim_parts) == 1 else _merged(dim_parts)
        if len(merged) > 1:
            splits[dim] = merged
        strides.append(None if len(merged) > 1 else merged[0][1] if merged else 1)
    return Memory(memory.pointer, offset, shape, strides, splits)


def _merged(parts: list[Part]) -> list[Part]:
    """Unit parts dropped, each part merged into its outer neighbour where they are
    contiguous (the neighbour's stride spans the whole part)."""
    merged: list[Part] = []
    for size, stride in parts:
        if known(size, 1):
            continue
        if merged and _same(merged[-1][1], stride * size):
            merged[-1] = (merged[-1][0] * size, stride)
        else:
            merged.append((size, stride))
    return merged


def _split(parts: list[Part], sizes: list[Size]) -> list[list[Part]] | None:
    """The parts of each of `sizes` (a dim of `parts` expanded into them, outer
    first), taken from the innermost: a size covers whole parts, or the inner digits
    of one (which then keeps its outer ones).  None: a size straddles two parts."""
    if len(parts) == 1:  # one run: its dims are row-major in it
        stride = parts[0][1]
        return [[(n, stride * st)] for n, st in zip(sizes, row_major(sizes), strict=True)]
    left, split = list(parts), []
    for size in reversed(sizes):
        mine: list[Part] = []
        while not known(size, 1):
            if not left:
                return None
            n, stride = left.pop()
            whole, inner = _quotient(size, n), _quotient(n, size)
            if whole is not None:  # the part is this dim's inner digits
                mine.insert(0, (n, stride))
                size = whole
            elif inner is not None:  # this dim is the part's inner digits
                mine.insert(0, (size, stride))
                left.append((inner, stride * size))
                size = 1
            else:
                return None
        split.insert(0, mine)
    return split if all(known(n, 1) for n, _ in left) else None


def _quotient(a: Size, b: Size) -> Size | None:
    """a / b where b divides a at every size (None: not known to)."""
    if _same(a, b):
        return 1
    if is_static(a) and is_static(b) and int(b) != 0 and int(a) % int(b) == 0:
        return int(a) // int(b)
    return None


def _digits_offset(index: int, parts: list[Part]) -> Size | None:
    """The offset of element `index` of a split dim (None: its parts' sizes are
    not all known)."""
    if index == 0:
        return 0
    if not all(is_static(n) for n, _ in parts):
        return None
    offset: Size = 0
    for size, stride in reversed(parts):
        offset += (index % int(size)) * stride
        index //= int(size)
    return offset


def _kept_dims(sizes: list[int], shape: list[Size]) -> list[int]:
    """The slice dims a rank-reducing slice keeps.  Only unit dims are dropped, and
    unit dims are interchangeable (their index is always 0): one goes unless the
    result's next dim is a unit too, so that each kept dim is the result dim of its
    size (dropping the first unit dims would take [1, 3, 1, 2] to [1, 3, 2] as
    [3, 1, 2])."""
    extra, kept = len(sizes) - len(shape), []
    for i, n in enumerate(sizes):
        unit_next = len(kept) < len(shape) and known(shape[len(kept)], 1)
        if extra > 0 and n == 1 and not unit_next:
            extra -= 1
            continue
        kept.append(i)
    return kept


def _gathers_windows(generic: ir.Operation, reduction: list[int], size_r: Size) -> bool:
    """A short reduction (at most SMALL_WINDOW values) that no input reads through its
    map along the reduced dims: a pooling window, whose body gathers its values
    (tensor.extract).  A [BLOCK_P, 16] tile held 9 of them, 7 lanes in 16 masked off,
    64 outputs per program; one output per lane, the window walked in a loop, keeps
    every lane busy and the gathers of neighbouring channels coalesced (channels-last)."""
    if not is_static(size_r) or size_r > SMALL_WINDOW:
        return False
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(generic.attributes["indexing_maps"])]
    inputs = ir.DenseI32ArrayAttr(generic.attributes["operandSegmentSizes"])[0]
    body = generic.regions[0].blocks[0]
    for arg, amap in zip(list(body.arguments)[:inputs], maps, strict=False):
        if not any(True for _ in arg.uses):  # a window operand: only its shape counts
            continue
        if any(isinstance(e, ir.AffineDimExpr) and ir.AffineDimExpr(e).position in reduction for e in amap.results):
            return False
    return any(op.name == "tensor.extract" for op in body.operations)


def plan_rows(generics: list[ir.Operation], rows: int, sizes: KernelSizes, wide: bool) -> TilePlan:
    """One tile holds whole rows: BLOCK_R covers R, BLOCK_P fills the budget."""
    # the ranges of a member over the rows and their elements, not of a per-row one
    ranges = max((loop_sizes(g, sizes) for g in generics), key=len)
    size_p, size_r = math.prod(ranges[:rows]), math.prod(ranges[rows:])
    # rows of run-time length, or longer than a tile holds, are walked in chunks
    # (passes/gpu/tt/row_loops.py)
    whole = is_static(size_r) and size_r <= MAX_HELD_ROW
    if whole or not is_static(size_r):
        block_r = _next_pow2(int(size_r)) if whole else RUNTIME_ROW_BLOCK
        block_p = max(1, min(_block(size_p, MAX_ROWS_PER_PROGRAM), TILE_ELEMENTS // block_r))
        warps = max(1, min(MAX_ROW_GROUP_WARPS, block_p * block_r // ELEMENTS_PER_WARP))
    else:
        block_p, block_r = LONG_ROWS_ACROSS if _reads_rows_across(generics, rows) else LONG_ROWS
        block_p = min(block_p, _block(size_p, MAX_ROWS_PER_PROGRAM))
        warps = LONG_ROW_WARPS
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
