"""mlirc-cpu-fuse-rows: consecutive kernels over the same rows become one row loop.

Softmax leaves four kernels (row max, exp, row sum, divide) and layer norm three;
run one after another, each streams the whole tensor through memory again.  A
row group (mlirc.passes.base.row_groups) is inlined into one kernel whose body is a
loop over rows: every member computes its row before the next row starts, so a
row is read from memory once and its intermediates live in row-sized buffers
that stay in L1 (one-shot-bufferize makes them allocations that
mlirc-cpu-bufferize's hoisting turns into one stack buffer per thread).

A group may start with a contraction (a narrow linear layer from
mlirc-cpu-skinny-matmul): a classifier's dot products, bias and log_softmax are
then one loop, each row's logits never leaving L1.  Per-row work between the
sums joins it too, one element per row, with the reshapes of what the entry
returns moved after the group: a training layer norm, whose mean and rstd the
forward returns for the backward, is one kernel (with its residual add), where
the statistics' reshapes and the per-row kernels split it into five.

The loop runs over the rows flattened to one index, so that mlirc-cpu-parallelize
can split it across threads whatever the row dims' sizes; it is marked as the
kernel's parallel loop, and each member generic is left on row slices for
mlirc-cpu-vectorize to tile and vectorize as it would a whole kernel's.  On `?`
sizes (kernels compiled for every size) the row count, the delinearization and a
row's `?` length are run-time values, read where the kernel sizes its buffers.
"""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, func, linalg, scf, tensor

from mlirc.dialects.attributes import PARALLEL_LOOP_ATTR
from mlirc.passes.base import linalg_emit as le
from mlirc.passes.base.dim_sources import linalg_init
from mlirc.passes.base.ir_utils import erase_op, remap_operands
from mlirc.passes.base.linalg_utils import is_fill
from mlirc.passes.base.registry import register_pass
from mlirc.passes.base.row_groups import fuse_row_groups

# Elements of the longest row a group holds: its intermediates (a few rows of
# this many elements) must stay in L1/L2 for the fusion to pay.
MAX_ROW = 8192
ROW_LOOP_OPS = frozenset({"tensor.empty", "linalg.fill", "linalg.generic"})


# A size: static, or a value computed where the kernel sizes its buffers
Size = int | ir.Value
DYNAMIC = ir.ShapedType.get_dynamic_size()


def _index(value: Size) -> ir.Value:
    return value if isinstance(value, ir.Value) else arith.ConstantOp(ir.IndexType.get(), value).result


def _shape(value: ir.Value) -> list[int]:
    return list(ir.RankedTensorType(value.type).shape)


def _sizes_here(value: ir.Value) -> list[Size]:
    """`value`'s sizes, its `?` ones read with tensor.dim at the insertion point."""
    return [tensor.dim(value, _index(i)) if s == DYNAMIC else s for i, s in enumerate(_shape(value))]


def _buffer_sizes(value: ir.Value) -> list[Size] | None:
    """The sizes of a member's result as the kernel made its buffer: its `?` ones are
    the operands of the `tensor.empty` it was written into (through inits and fills),
    defined outside the row loop.  None where it was not."""
    while not isinstance(value.owner, ir.Block) and value.owner.name != "tensor.empty":
        value = linalg_init(value.owner, ir.OpResult(value).result_number)
        if value is None:
            return None
    if isinstance(value.owner, ir.Block):
        return None
    dynamic = iter(value.owner.operands)
    return [next(dynamic) if s == DYNAMIC else s for s in _shape(value)]


def _product(sizes: list[Size]) -> ir.Value:
    static = math.prod(s for s in sizes if isinstance(s, int))
    total = None if static == 1 else _index(static)
    for size in sizes:
        if isinstance(size, ir.Value):
            total = size if total is None else arith.muli(total, size)
    return _index(1) if total is None else total


def _empty(sizes: list[Size], element: ir.Type) -> ir.Value:
    return tensor.EmptyOp(sizes, element).result


def _row_type(value: ir.Value, rows: int) -> ir.RankedTensorType:
    """The type of one row of a member's tensor (its leading row dims set to 1)."""
    t = ir.RankedTensorType(value.type)
    return ir.RankedTensorType.get([1] * rows + list(t.shape)[rows:], t.element_type)


class RowLoopBuilder:
    """Rewrites a fused kernel's body as one loop over its (flattened) rows."""

    def __init__(self, kernel: func.FuncOp, rows: int, row_sizes: list[Size]) -> None:
        self.kernel = kernel
        self.rows = rows
        self.row_sizes = row_sizes
        self.inside: dict[ir.Value, ir.Value] = {}  # member value -> its row, inside the loop
        self.row_ivs: list[ir.Value] = []
        self.slices: dict[tuple, ir.Value] = {}  # one slice per (value, row window)

    def members(self) -> list[ir.Operation] | None:
        """The ops that move into the loop, or None when the body has others."""
        ops = [op.operation for op in self.kernel.entry_block.operations]
        moving = [op for op in ops if op.name in ROW_LOOP_OPS]
        for op in moving:
            if op.name == "linalg.generic" and not is_fill(op) and not self._sliceable(op):
                return None
        moved = {r for op in moving for r in op.results}
        for value in ops[-1].operands:  # a result's `?` sizes must be known outside the loop
            static = ir.RankedTensorType(value.type).has_static_shape
            if value in moved and not static and _buffer_sizes(value) is None:
                return None
        return moving

    def _sliceable(self, generic: ir.Operation) -> bool:
        """Can every operand be cut to one row through its indexing map?"""
        for inner in generic.regions[0].blocks[0].operations:
            if inner.operation.name in ("linalg.index", "tensor.extract"):
                return False  # bodies that compute positions would see row-local ones
        maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(generic.attributes["indexing_maps"])]
        for amap in maps:
            for expr in amap.results:
                if not (isinstance(expr, ir.AffineDimExpr) or isinstance(expr, ir.AffineConstantExpr)):
                    return False
        out_map = maps[-1]
        return [str(e) for e in out_map.results][: self.rows] == [f"d{i}" for i in range(self.rows)]

    def build(self, members: list[ir.Operation]) -> None:
        block = self.kernel.entry_block
        ret = list(block.operations)[-1]
        returned = list(ret.operands)
        member_results = {r for op in members for r in op.results}
        with ir.InsertionPoint(ret), ret.location:
            outs = [
                _empty(_buffer_sizes(v) or _sizes_here(v), ir.RankedTensorType(v.type).element_type) for v in returned
            ]
            loop = scf.ForOp(_index(0), _product(self.row_sizes), _index(1), outs)
        loop.operation.attributes[PARALLEL_LOOP_ATTR] = ir.UnitAttr.get()
        with ir.InsertionPoint(loop.body), ret.location:
            self.row_ivs = self._delinearize(loop.induction_variable)
            for op in members:
                self._emit(op)
            written = [
                self._insert(self.inside[v], acc) if v in member_results else acc
                for v, acc in zip(returned, loop.inner_iter_args, strict=True)
            ]
            scf.YieldOp(written)
        for i, v in enumerate(returned):
            if v in member_results:
                ret.operands[i] = loop.results[i]
        for op in reversed(members):
            erase_op(op)

    def _delinearize(self, flat: ir.Value) -> list[ir.Value]:
        ivs: list[ir.Value] = []
        for size in reversed(self.row_sizes[1:]):
            ivs.append(arith.remui(flat, _index(size)))
            flat = arith.divui(flat, _index(size))
        return [flat, *reversed(ivs)]

    def _row_of(self, value: ir.Value, amap: ir.AffineMap | None) -> ir.Value:
        """`value`'s row inside the loop: a member's own row, or a slice of an outside
        tensor through the map that reads it (a broadcast operand keeps its dims)."""
        if value in self.inside:
            return self.inside[value]
        if not isinstance(value.type, ir.RankedTensorType):
            return value
        shape = _shape(value)
        offsets: list[Size] = []
        sizes: list[Size] = []
        exprs = list(amap.results) if amap is not None else [ir.AffineDimExpr.get(i) for i in range(len(shape))]
        for expr, size in zip(exprs, shape, strict=True):
            position = ir.AffineDimExpr(expr).position if isinstance(expr, ir.AffineDimExpr) else None
            if position is not None and position < self.rows:
                offsets.append(self.row_ivs[position])
                sizes.append(1)
            else:
                offsets.append(0)
                sizes.append(size)
        if all(o == 0 for o in offsets):
            return value  # read whole by every row (a weight, a bias)
        key = (value, tuple(sizes), tuple(id(v) if isinstance(v, ir.Value) else v for v in offsets))
        if key not in self.slices:
            row = self._row_through_collapse(value, exprs)
            if row is None:
                sizes = [tensor.dim(value, _index(i)) if s == DYNAMIC else s for i, s in enumerate(sizes)]
                row = le.extract_slice(value, offsets, sizes)
            self.slices[key] = row
        return self.slices[key]

    def _row_through_collapse(self, value: ir.Value, exprs: list[ir.AffineExpr]) -> ir.Value | None:
        """A row of a collapsed tensor, sliced from the tensor before the collapse
        (the row index delinearized over the dims it merged) and collapsed alone.  A
        collapse of a slice (a loss over `logits[:, :-1]`) is no view of a buffer:
        rows cut after it made bufferization copy the whole slice first, outside the
        loop, where that copy kept the kernel off threads (mlirc-cpu-parallelize)."""
        collapse = value.owner
        if isinstance(collapse, ir.Block) or collapse.operation.name != "tensor.collapse_shape":
            return None
        source = collapse.operands[0]
        if not ir.RankedTensorType(source.type).has_static_shape:
            return None
        shape = _shape(source)
        reassociation = collapse.attributes["reassociation"]
        groups = [[ir.IntegerAttr(d).value for d in ir.ArrayAttr(g)] for g in ir.ArrayAttr(reassociation)]
        offsets: list[Size] = []
        sizes: list[int] = []
        for expr, group in zip(exprs, groups, strict=True):
            position = ir.AffineDimExpr(expr).position if isinstance(expr, ir.AffineDimExpr) else None
            if position is None or position >= self.rows:
                offsets += [0] * len(group)
                sizes += [shape[d] for d in group]
                continue
            flat, inner = self.row_ivs[position], []
            for d in reversed(group[1:]):
                inner.append(arith.remui(flat, _index(shape[d])))
                flat = arith.divui(flat, _index(shape[d]))
            offsets += [flat, *reversed(inner)]
            sizes += [1] * len(group)
        row = le.extract_slice(source, offsets, sizes)
        collapsed = [math.prod(sizes[d] for d in group) for group in groups]
        row_type = ir.RankedTensorType.get(collapsed, ir.RankedTensorType(value.type).element_type)
        return tensor.CollapseShapeOp(row_type, row, reassociation).result

    def _insert(self, row: ir.Value, into: ir.Value) -> ir.Value:
        rank = len(_shape(into))
        offsets = [*self.row_ivs[: self.rows], *([0] * (rank - self.rows))]
        sizes = _sizes_here(row)
        return tensor.InsertSliceOp(
            row, into, _values(offsets), _values(sizes), [], _static(offsets), _static(sizes), [1] * rank
        ).result

    def _emit(self, op: ir.Operation) -> None:
        if op.name == "tensor.empty":
            sizes = _buffer_sizes(op.results[0])
            element = ir.RankedTensorType(op.results[0].type).element_type
            self.inside[op.results[0]] = _empty([1] * self.rows + sizes[self.rows :], element)
            return
        if op.name == "linalg.fill":
            init = self._row_of(op.operands[1], None)
            self.inside[op.results[0]] = linalg.fill(op.operands[0], outs=[init])
            return
        self._emit_generic(op)

    def _emit_generic(self, op: ir.Operation) -> None:
        maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
        operands = [self._row_of(v, m) for v, m in zip(op.operands, maps, strict=True)]
        result_types = [_row_type(r, self.rows) for r in op.results]
        new = ir.Operation.create(
            "linalg.generic",
            results=result_types,
            operands=operands,
            attributes={name: op.attributes[name] for name in op.attributes},
            regions=1,
        )
        old_body = op.regions[0].blocks[0]
        body = new.regions[0].blocks.append(*[a.type for a in old_body.arguments])
        mapping = dict(zip(old_body.arguments, body.arguments, strict=True))
        for inner in old_body.operations:
            clone = inner.operation.clone(ir.InsertionPoint(body))
            remap_operands(clone, mapping)
            mapping.update(zip(inner.operation.results, clone.results, strict=True))
        for old, row in zip(op.results, new.results, strict=True):
            self.inside[old] = row


def _values(sizes: list[Size]) -> list[ir.Value]:
    return [v for v in sizes if isinstance(v, ir.Value)]


def _static(sizes: list[Size]) -> list[int]:
    return [DYNAMIC if isinstance(v, ir.Value) else v for v in sizes]


def tile_rows(kernel: func.FuncOp, rows: int) -> bool:
    """Rewrite `kernel` (a fused row group) as a loop over its rows; False if it cannot."""
    generics = [
        op.operation
        for op in kernel.entry_block.operations
        if op.operation.name == "linalg.generic" and not is_fill(op.operation)
    ]
    if not generics:
        return False
    # The rows' sizes, as the first member sized its result (a row group's results
    # lead with the rows)
    row_sizes = _buffer_sizes(generics[0].results[0])
    if row_sizes is None:
        return False
    builder = RowLoopBuilder(kernel, rows, row_sizes[:rows])
    members = builder.members()
    if members is None:
        return False
    builder.build(members)
    return True


@register_pass("mlirc-cpu-fuse-rows", "CPU: fuse consecutive kernels over the same rows into one loop over rows")
def cpu_fuse_rows(module: ir.Operation) -> None:
    for kernel, rows in fuse_row_groups(
        module, MAX_ROW, contractions=True, row_elements=True, per_row=True, across_reshapes=True
    ):
        tile_rows(kernel, rows)
