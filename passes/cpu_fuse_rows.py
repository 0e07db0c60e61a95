"""mlirc-cpu-fuse-rows: consecutive kernels over the same rows become one row loop.

Softmax leaves four kernels (row max, exp, row sum, divide) and layer norm three;
run one after another, each streams the whole tensor through memory again.  A
row group (mlirc.passes.row_groups) is inlined into one kernel whose body is a
loop over rows: every member computes its row before the next row starts, so a
row is read from memory once and its intermediates live in row-sized buffers
that stay in L1 (one-shot-bufferize makes them allocations that
mlirc-cpu-bufferize's hoisting turns into one stack buffer per thread).

A group may start with a contraction (a narrow linear layer from
mlirc-cpu-skinny-matmul): a classifier's dot products, bias and log_softmax are
then one loop, each row's logits never leaving L1.

The loop runs over the rows flattened to one index, so that mlirc-cpu-parallelize
can split it across threads whatever the row dims' sizes; it is marked as the
kernel's parallel loop, and each member generic is left on row slices for
mlirc-cpu-vectorize to tile and vectorize as it would a whole kernel's.
"""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, func, linalg, scf, tensor

from mlirc.dialects.attributes import PARALLEL_LOOP_ATTR
from mlirc.passes.ir_utils import remap_operands
from mlirc.passes.linalg_utils import is_fill, loop_ranges
from mlirc.passes.registry import register_pass
from mlirc.passes.row_groups import fuse_row_groups

# Elements of the longest row a group holds: its intermediates (a few rows of
# this many elements) must stay in L1/L2 for the fusion to pay.
MAX_ROW = 8192
ROW_LOOP_OPS = frozenset({"tensor.empty", "linalg.fill", "linalg.generic"})


def _index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def _shape(value: ir.Value) -> list[int]:
    return list(ir.RankedTensorType(value.type).shape)


def _row_type(value: ir.Value, rows: int) -> ir.RankedTensorType:
    """The type of one row of a member's tensor (its leading row dims set to 1)."""
    t = ir.RankedTensorType(value.type)
    return ir.RankedTensorType.get([1] * rows + list(t.shape)[rows:], t.element_type)


class RowLoopBuilder:
    """Rewrites a fused kernel's body as one loop over its (flattened) rows."""

    def __init__(self, kernel: func.FuncOp, rows: int, row_sizes: list[int]) -> None:
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
            outs = [tensor.EmptyOp(_shape(v), ir.RankedTensorType(v.type).element_type).result for v in returned]
            count = math.prod(self.row_sizes)
            loop = scf.ForOp(_index(0), _index(count), _index(1), outs)
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
            op.erase()

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
        offsets, sizes = [], []
        exprs = list(amap.results) if amap is not None else [ir.AffineDimExpr.get(i) for i in range(len(shape))]
        for expr, size in zip(exprs, shape, strict=True):
            position = ir.AffineDimExpr(expr).position if isinstance(expr, ir.AffineDimExpr) else None
            if position is not None and position < self.rows:
                offsets.append(self.row_ivs[position])
                sizes.append(1)
            else:
                offsets.append(0)
                sizes.append(size)
        if sizes == shape:
            return value  # read whole by every row (a weight, a bias)
        key = (value, tuple(sizes), tuple(id(v) if isinstance(v, ir.Value) else v for v in offsets))
        if key not in self.slices:
            self.slices[key] = _extract_slice(value, offsets, sizes)
        return self.slices[key]

    def _insert(self, row: ir.Value, into: ir.Value) -> ir.Value:
        rank = len(_shape(into))
        offsets = [*self.row_ivs[: self.rows], *([0] * (rank - self.rows))]
        sizes = _shape(row)
        dynamic = [v for v in offsets if isinstance(v, ir.Value)]
        static = [ir.ShapedType.get_dynamic_size() if isinstance(v, ir.Value) else v for v in offsets]
        return tensor.InsertSliceOp(row, into, dynamic, [], [], static, sizes, [1] * rank).result

    def _emit(self, op: ir.Operation) -> None:
        if op.name == "tensor.empty":
            row_type = _row_type(op.results[0], self.rows)
            new = tensor.EmptyOp(list(row_type.shape), row_type.element_type).result
            self.inside[op.results[0]] = new
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


def _extract_slice(value: ir.Value, offsets: list, sizes: list[int]) -> ir.Value:
    t = ir.RankedTensorType(value.type)
    dynamic = [v for v in offsets if isinstance(v, ir.Value)]
    static = [ir.ShapedType.get_dynamic_size() if isinstance(v, ir.Value) else v for v in offsets]
    result = ir.RankedTensorType.get(sizes, t.element_type)
    return tensor.ExtractSliceOp(result, value, dynamic, [], [], static, sizes, [1] * len(sizes)).result


def tile_rows(kernel: func.FuncOp, rows: int) -> bool:
    """Rewrite `kernel` (a fused row group) as a loop over its rows; False if it cannot."""
    generics = [
        op.operation
        for op in kernel.entry_block.operations
        if op.operation.name == "linalg.generic" and not is_fill(op.operation)
    ]
    if not generics:
        return False
    builder = RowLoopBuilder(kernel, rows, loop_ranges(generics[0])[:rows])
    members = builder.members()
    if members is None:
        return False
    builder.build(members)
    return True


@register_pass("mlirc-cpu-fuse-rows", "CPU: fuse consecutive kernels over the same rows into one loop over rows")
def cpu_fuse_rows(module: ir.Operation) -> None:
    for kernel, rows in fuse_row_groups(module, MAX_ROW, contractions=True, row_elements=True):
        tile_rows(kernel, rows)
