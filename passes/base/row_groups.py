"""Row groups: runs of consecutive kernel calls over the same rows, shared by the
CPU and GPU row fusions (mlirc-cpu-fuse-rows, mlirc-gpu-fuse-rows).

A group is a run of consecutive calls whose kernels are one generic each, over the
same rows P and row elements R: pointwise kernels over P x R, and reductions of
R into P.  Inside the group a kernel may read an earlier member's result only in
place -- a P x R tile through the identity map, a row vector through (P) -- so
that one row of every member can be computed before the next row starts.

Where the caller allows it, a group may also hold pointwise kernels over P alone:
per-row work between reductions (logsumexp's `where(isinf(max), 0, max)` on the
row maxima, the log after its sum, a training layer norm's mean and rstd, which
the forward returns for the backward), computed on the row values a GPU program
holds, or on one element per row in a CPU row loop.  Outside a group each is a
kernel of its own, and splits the group in two.  Where a group so formed around a
narrow linear layer (its rows, its bias add per row) would keep the next
reduction from taking both as the start of a longer group, the longer one wins.

Where the caller allows it (the CPU), a group may also start with contractions:
kernels whose result is a whole P x R tile, reduced over further dims (a narrow
linear layer, P x N summed over K; see mlirc-cpu-skinny-matmul), reading nothing
the group computes.  Each row of their result is a row of dot products.

On `?` sizes (kernels formed for every size) two kernels' ranges are the same only
where the calls' sizes are provably equal: a `?` range is keyed by the size of the
call's operand that the kernel reads it from (passes/base/size_keys.py), and a range
no size key reaches keeps its kernel out of any group.  A row of `?` length is
taken to fit max_row: a sum over one is bounded by mlirc-split-reductions'
assumption (softmax, norms), a group without a sum is not bounded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func

from mlirc.dialects.attributes import KERNEL_ATTR, LIBRARY_ATTR
from mlirc.passes.base.dim_sources import dim_source
from mlirc.passes.base.ir_utils import entry_functions, erase_uncalled_kernels, functions, fuse_calls
from mlirc.passes.base.linalg_utils import KERNEL_PLUMBING, RESHAPES, VIEWS, is_fill, loop_ranges, through_reshapes
from mlirc.passes.base.size_keys import SizeKeys

SIZE_READS = frozenset({"tensor.dim"})  # a kernel formed on `?` dims reads its sizes


@dataclass(frozen=True)
class SymbolicRange:
    """A `?` loop range, as the key of the call's size it equals (SizeKeys)."""

    key: int


Range = int | SymbolicRange


@dataclass(frozen=True)
class RowShape:
    """A kernel's loop ranges and how many of them (the leading ones) are rows."""

    ranges: tuple[Range, ...]
    rows: int | None  # None: pointwise, any split fits

    def tile(self) -> tuple[Range, ...]:
        """The loop ranges of the result."""
        return self.ranges if self.rows is None else self.ranges[: self.rows]

    def row_elements(self) -> int:
        """Elements of a row, its `?` dims counted as 1."""
        return math.prod(r for r in self.ranges[self.rows :] if isinstance(r, int))


def single_generic(kernel: func.FuncOp) -> ir.Operation | None:
    ops = [op.operation for op in kernel.entry_block.operations]
    if any(op.name not in KERNEL_PLUMBING | VIEWS | SIZE_READS for op in ops):
        return None
    generics = [op for op in ops if op.name == "linalg.generic" and not is_fill(op)]
    return generics[0] if len(generics) == 1 and len(generics[0].results) == 1 else None


def row_shape(kernel: func.FuncOp) -> RowShape | None:
    generic = single_generic(kernel)
    if generic is None:
        return None
    ranges = tuple(loop_ranges(generic))
    iters = ["reduction" in str(k) for k in ir.ArrayAttr(generic.attributes["iterator_types"])]
    if not any(iters):
        return RowShape(ranges, None)
    rows = iters.index(True)
    if any(not r for r in iters[rows:]) or rows == 0:
        return None  # reductions over leading or interleaved dims are not row reductions
    out_map = ir.AffineMapAttr(list(ir.ArrayAttr(generic.attributes["indexing_maps"]))[-1]).value
    if [str(e) for e in out_map.results] != [f"d{i}" for i in range(rows)]:
        return None
    return RowShape(ranges, rows)


def _map_reads_in_place(amap: ir.AffineMap, dims: int, rows: int | None = None) -> bool:
    """Does `amap` read a `dims`-d tile where it lies?  With `rows`, a constant past
    the row dims passes too: a fixed element of the same row (its first)."""
    if len(amap.results) != dims:
        return False
    for i, expr in enumerate(amap.results):
        if isinstance(expr, ir.AffineDimExpr) and ir.AffineDimExpr(expr).position == i:
            continue
        if rows is None or i < rows or not isinstance(expr, ir.AffineConstantExpr):
            return False
    return True


class Grouper:
    """Finds the groups among the entry's calls."""

    def __init__(
        self,
        kernels: dict[str, func.FuncOp],
        max_row: int,
        contractions: bool = False,
        row_elements: bool = False,
        per_row: bool = False,
        across_reshapes: bool = False,
    ) -> None:
        self.kernels = kernels
        self.max_row = max_row  # elements of the longest row a group may hold
        self.contractions = contractions  # may a group start with contractions?
        self.per_row = per_row  # may a group hold pointwise kernels over P alone?
        # May a member read a fixed element of an earlier member's row?  A CPU row
        # loop holds the row in a buffer; a GPU program holds it across its lanes.
        self.row_elements = row_elements
        # May reshapes lie between members (moved after the group's call where they
        # reshape its results)?  A batch norm's statistics are reshaped for the return
        # between the per-channel kernels that would join their last sum, a training
        # layer norm's mean and rstd between its sums.
        self.across_reshapes = across_reshapes
        self.keys = SizeKeys()  # the `?` sizes of the entry being grouped

    def call_shape(self, call: ir.Operation) -> RowShape | None:
        """The row shape of `call`'s kernel, its `?` ranges keyed by the call's sizes."""
        kernel = self.kernel_of(call)
        shape = row_shape(kernel) if kernel is not None else None
        if shape is None or not any(ir.ShapedType.is_dynamic_size(r) for r in shape.ranges):
            return shape
        ranges: list[Range] = []
        for dim, size in enumerate(shape.ranges):
            key = self._range_key(kernel, call, dim) if ir.ShapedType.is_dynamic_size(size) else size
            if key is None:
                return None
            ranges.append(key)
        return RowShape(tuple(ranges), shape.rows)

    def _range_key(self, kernel: func.FuncOp, call: ir.Operation, dim: int) -> SymbolicRange | None:
        """The key of loop `dim`'s `?` range: the size of the call operand (and dim) the
        kernel reads it from, through any operand that spans the loop."""
        generic = single_generic(kernel)
        maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(generic.attributes["indexing_maps"])]
        for operand, amap in zip(generic.operands, maps, strict=True):
            for position, expr in enumerate(amap.results):
                if not isinstance(expr, ir.AffineDimExpr) or ir.AffineDimExpr(expr).position != dim:
                    continue
                source = dim_source(operand, position, kernel)
                if isinstance(source, tuple):
                    key = self.keys.dim(call.operands[source[0]], source[1])
                    if key is not None:
                        return SymbolicRange(key)
        return None

    def kernel_of(self, op: ir.Operation) -> func.FuncOp | None:
        if op.name != "func.call":
            return None
        kernel = self.kernels.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
        if kernel is None or LIBRARY_ATTR in kernel.attributes or KERNEL_ATTR not in kernel.attributes:
            return None
        return kernel

    def fits(self, members: list[ir.Operation], call: ir.Operation, ranges: tuple[Range, ...], rows: int) -> bool:
        """May `call` join `members` (rows split at `rows`)?"""
        kernel = self.kernel_of(call)
        shape = self.call_shape(call)
        if shape is None:
            return False
        produced = {r: self.kernel_of(m) for m in members for r in m.results}
        if self._is_contraction(shape, ranges, rows):
            return not members  # first, so it reads nothing the group computes
        per_row = self.per_row and shape.rows is None and rows < len(ranges) and shape.ranges == ranges[:rows]
        if not per_row and (shape.ranges != ranges or shape.rows not in (None, rows)):
            return False
        generic = single_generic(kernel)
        args = list(kernel.entry_block.arguments)
        maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(generic.attributes["indexing_maps"])]
        inputs = ir.DenseI32ArrayAttr(generic.attributes["operandSegmentSizes"])[0]
        for operand, arg in zip(call.operands, args, strict=True):
            if operand not in produced and through_reshapes(operand) in produced:
                return False  # a member's result reshaped: no longer where the member wrote it
            if operand not in produced:
                continue
            uses = [(u.owner.operation, u.operand_number) for u in arg.uses]
            width = len(row_shape(produced[operand]).tile())
            for owner, index in uses:  # only in place, as an input of the generic
                in_row = _map_reads_in_place(maps[index], width, rows if self.row_elements else None)
                if owner != generic or index >= inputs or not in_row:
                    return False
        return True

    def _is_contraction(self, shape: RowShape, ranges: tuple[Range, ...], rows: int) -> bool:
        """Is `shape` a whole P x R tile of `ranges`, summed over more dims?"""
        return self.contractions and shape.rows is not None and shape.rows > rows and shape.tile() == ranges

    def groups(self, calls: list[ir.Operation]) -> list[list[ir.Operation]]:
        # Work on sizes between calls (a size assertion, mlirc-split-reductions') reads
        # no kernel's result: it splits no run of calls.
        calls = [op for op in calls if not _size_work(op) and not (self.across_reshapes and op.name in RESHAPES)]
        # Keys of this function as it is now: fusing an earlier entry's groups erased
        # ops, whose values' addresses may come back as other values.
        self.keys = SizeKeys()
        found, floor, i = [], 0, 0
        while i < len(calls):
            shape = self._seed_shape(calls[i])
            if shape is None:
                i += 1
                continue
            group = self.grow(calls, floor, i, shape)
            if self._longer_from_next_seed(calls, floor, i, group):
                i += 1
                continue
            if len(group) > 1:
                found.append(group)
                floor = calls.index(group[-1]) + 1
            i = max(i + 1, floor)
        return found

    def _seed_shape(self, call: ir.Operation) -> RowShape | None:
        """The row shape of a reduction a group may grow around."""
        shape = self.call_shape(call)
        if shape is None or shape.rows is None or shape.row_elements() > self.max_row:
            return None
        return shape

    def _longer_from_next_seed(self, calls: list[ir.Operation], floor: int, at: int, group: list[ir.Operation]) -> bool:
        """Would the next reduction's group take `calls[at]` in a longer group?  A
        narrow linear layer seeds a group of its own rows, which its bias add joins as
        per-row work; the row max after it takes both, the contraction first, as
        rows of a longer group."""
        if not (self.per_row and self.contractions):
            return False
        end = calls.index(group[-1]) + 1
        for k in range(end, len(calls)):
            shape = self._seed_shape(calls[k])
            if shape is not None:
                other = self.grow(calls, floor, k, shape)
                return calls[at] in other and len(other) > len(group)
        return False

    def grow(self, calls: list[ir.Operation], floor: int, at: int, shape: RowShape) -> list[ir.Operation]:
        """The longest run around the reduction at `at`: pointwise producers before
        it (back to `floor`), then every member that fits after it."""
        start = at
        while start > floor and self.fits([], calls[start - 1], shape.ranges, shape.rows):
            start -= 1
        group = [calls[at]]
        for first in range(start, at + 1):
            candidate = self.run(calls[first : at + 1], shape)
            if candidate is not None:
                group = candidate
                break
        end = at + 1
        while end < len(calls) and self.fits(group, calls[end], shape.ranges, shape.rows):
            group.append(calls[end])
            end += 1
        return group

    def run(self, calls: list[ir.Operation], shape: RowShape) -> list[ir.Operation] | None:
        group = [calls[0]]
        for call in calls[1:]:
            if not self.fits(group, call, shape.ranges, shape.rows):
                return None
            group.append(call)
        return group


def _size_work(op: ir.Operation) -> bool:
    """An assertion, scalar arithmetic (on sizes) or an argument's size: nothing a row
    group reads or writes."""
    if op.name == "cf.assert":
        return True
    if op.name == "tensor.dim":
        return isinstance(op.operands[0].owner, ir.Block)
    values = [*op.operands, *op.results]
    return op.name.startswith("arith.") and not any(isinstance(v.type, ir.ShapedType) for v in values)


def fuse_row_groups(
    module: ir.Operation,
    max_row: int,
    contractions: bool = False,
    row_elements: bool = False,
    per_row: bool = False,
    across_reshapes: bool = False,
) -> list[tuple[func.FuncOp, int]]:
    """Inline every row group of the module's entries into one kernel `rows_N`;
    the fused kernels with their number of leading row dims."""
    top = module.regions[0].blocks[0]
    kernels = functions(top)
    grouper = Grouper(kernels, max_row, contractions, row_elements, per_row, across_reshapes)
    fused: list[tuple[func.FuncOp, int]] = []
    for entry in entry_functions(top):
        calls = [op.operation for op in entry.entry_block.operations]
        # reshapes found before any group is fused (fusing erases the members)
        for group, reshapes in [(g, _reshapes_of_results(calls, g)) for g in grouper.groups(calls)]:
            rows = min(r for r in (row_shape(grouper.kernel_of(c)).rows for c in group) if r)
            name = f"rows_{len(fused)}"
            fused.append((fuse_calls(group, kernels, name), rows))
            last = _call_of(entry, name) if reshapes else None  # in the last member's place
            for reshape in reshapes:
                reshape.move_after(last)
                last = reshape
    erase_uncalled_kernels(top, kernels)
    return fused


def _reshapes_of_results(calls: list[ir.Operation], group: list[ir.Operation]) -> list[ir.Operation]:
    """The reshapes between the group's first and last calls of its members' results."""
    inside = calls[calls.index(group[0]) : calls.index(group[-1])]
    produced = {r for member in group for r in member.results}
    return [op for op in inside if op.name in RESHAPES and through_reshapes(op.operands[0]) in produced]


def _call_of(entry: func.FuncOp, name: str) -> ir.Operation:
    return next(
        op.operation
        for op in entry.entry_block.operations
        if op.operation.name == "func.call" and ir.FlatSymbolRefAttr(op.attributes["callee"]).value == name
    )
