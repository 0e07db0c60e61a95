"""Patterns of `mlirc-lower-to-linalg` for reductions and the matmul/conv/pool family."""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from mlirc.dialects import dims, shapes
from mlirc.passes.base import linalg_emit as le
from mlirc.passes.base.linalg_emit import MlircOp, pattern
from mlirc.passes.base.scalar_math import const


def _extreme(elem: ir.Type, largest: bool) -> float | int:
    if shapes.is_float(elem):
        return float("inf") if largest else float("-inf")
    if shapes.is_bool(elem):  # i1, stored as 0/1 bytes
        return 1 if largest else 0
    width = ir.IntegerType(elem).width
    return (1 << (width - 1)) - 1 if largest else -(1 << (width - 1))


Combine = Callable[[ir.Value, ir.Value], ir.Value]

# (init value given the storage element type, combine for float, combine for int/i8-bool)
REDUCTIONS: dict[str, tuple[Callable[[ir.Type], float | int], Combine, Combine]] = {
    "reduce_sum": (lambda e: 0, arith.addf, arith.addi),
    "reduce_prod": (lambda e: 1, arith.mulf, arith.muli),
    "reduce_max": (lambda e: _extreme(e, False), arith.maximumf, arith.maxsi),
    "reduce_min": (lambda e: _extreme(e, True), arith.minimumf, arith.minsi),
    "reduce_any": (lambda e: 0, arith.maximumf, arith.ori),
    "reduce_all": (lambda e: 1, arith.minimumf, arith.andi),
}


def _reduction_maps(m: MlircOp) -> tuple[int, list[int], ir.AffineMap, list[str]]:
    in_shape = shapes.shape_of(m.operands[0])
    rank = len(in_shape)
    dims, keepdim = m.attr("dims"), m.attr("keepdim")
    exprs = []
    for d in range(rank):
        if d not in dims:
            exprs.append(ir.AffineDimExpr.get(d))
        elif keepdim:
            exprs.append(ir.AffineConstantExpr.get(0))
    iterators = [le.REDUCTION if d in dims else le.PARALLEL for d in range(rank)]
    return rank, dims, ir.AffineMap.get(rank, 0, exprs), iterators


@pattern(*REDUCTIONS)
def _reduce(m: MlircOp) -> ir.Value:
    name = m.op.name.split(".", 1)[1]
    init_of, float_combine, int_combine = REDUCTIONS[name]
    elem = le.storage_elem(m.out_elem)
    combine = float_combine if shapes.is_float(elem) else int_combine
    if shapes.is_bool(m.out_elem) and name in ("reduce_max", "reduce_min"):
        combine = arith.maxsi if name == "reduce_max" else arith.minsi  # 0/1 bytes
    rank, dims, _, iterators = _reduction_maps(m)
    # Reduce into the shape without the kept unit dims, then reshape: an output map
    # of plain dims is what split-reduction tiling (mlirc-cpu-vectorize) needs.
    reduced_dims = [size for d, size in enumerate(le.dims_of(m.operands[0])) if d not in dims]
    out_map = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(d) for d in range(rank) if d not in dims])
    init = le.fill(const(elem, init_of(m.out_elem)), le.empty(reduced_dims, elem))
    body = lambda a: [combine(a[0], a[1])]  # noqa: E731
    reduced = le.generic(m.operands, [le.identity_map(rank)], [init], [out_map], iterators, body)[0]
    return reduced if len(m.out_shape) == len(reduced_dims) else le.reshape(reduced, m.out_dims, unit_dims_only=True)


@pattern("argmax", "argmin")
def _arg_reduce(m: MlircOp) -> ir.Value:
    """First index of the max (min); NaN wins as torch does.  Order-independent combine."""
    is_max = m.op.name.endswith("argmax")
    x = m.operands[0]
    elem = le.storage_elem(shapes.elem_of(x))
    rank, dims, out_map, iterators = _reduction_maps(m)
    i64 = ir.IntegerType.get_signless(64)
    if rank == 0:  # a 0-d tensor is its own max, at index 0
        return le.fill(const(i64, 0), le.empty(m.out_dims, i64))
    dim = dims[0]
    value_init = le.fill(const(elem, _extreme(shapes.elem_of(m.in_types[0]), not is_max)), le.empty(m.out_dims, elem))
    index_init = le.fill(const(i64, (1 << 63) - 1), le.empty(m.out_dims, i64))

    def body(a: list[ir.Value]) -> list[ir.Value]:
        value, best, best_index = a
        idx = arith.index_cast(i64, le.index(dim))
        if shapes.is_float(elem):
            better = arith.cmpf(arith.CmpFPredicate.OGT if is_max else arith.CmpFPredicate.OLT, value, best)
            is_nan = arith.cmpf(arith.CmpFPredicate.UNO, value, value)
            best_nan = arith.cmpf(arith.CmpFPredicate.UNO, best, best)
            better = arith.ori(
                better, arith.andi(is_nan, arith.xori(best_nan, const(ir.IntegerType.get_signless(1), 1)))
            )
            tie = arith.ori(arith.cmpf(arith.CmpFPredicate.OEQ, value, best), arith.andi(is_nan, best_nan))
        else:
            better = arith.cmpi(arith.CmpIPredicate.sgt if is_max else arith.CmpIPredicate.slt, value, best)
            tie = arith.cmpi(arith.CmpIPredicate.eq, value, best)
        take = arith.ori(better, arith.andi(tie, arith.cmpi(arith.CmpIPredicate.slt, idx, best_index)))
        return [arith.select(take, value, best), arith.select(take, idx, best_index)]

    results = le.generic([x], [le.identity_map(rank)], [value_init, index_init], [out_map, out_map], iterators, body)
    return results[1]


def _zero_init(m: MlircOp) -> ir.Value:
    return le.fill(const(m.out_elem, 0), le.empty(m.out_dims, m.out_elem))


@pattern("matmul")
def _matmul(m: MlircOp) -> ir.Value:
    return linalg.matmul(*m.operands, outs=[_zero_init(m)])


@pattern("batch_matmul")
def _batch_matmul(m: MlircOp) -> ir.Value:
    return linalg.batch_matmul(*m.operands, outs=[_zero_init(m)])


def _pad_spatial(x: ir.Value, padding: list[int], value: float) -> ir.Value:
    """Spatial padding as a gather-style generic (tensor.pad would bufferize to copies)."""
    if not any(padding):
        return x
    n, c, h, w = le.dims_of(x)
    ph, pw = padding
    elem = shapes.elem_of(x)
    init = le.empty([n, c, dims.add(h, 2 * ph), dims.add(w, 2 * pw)], elem)

    def body(_args: list[ir.Value]) -> list[ir.Value]:
        idx = [le.index(d) for d in range(4)]
        src, inside = list(idx[:2]), None
        for d, (low, size) in zip((2, 3), ((ph, h), (pw, w)), strict=False):
            local = arith.subi(idx[d], le.index_const(low))
            ok = arith.andi(
                arith.cmpi(arith.CmpIPredicate.sge, local, le.index_const(0)),
                arith.cmpi(arith.CmpIPredicate.slt, local, dims.as_index(size)),
            )
            inside = ok if inside is None else arith.andi(inside, ok)
            src.append(le.clamp_index(local, size))
        return [arith.select(inside, tensor.extract(x, src), const(elem, value))]

    return le.generic([], [], [init], [le.identity_map(4)], [le.PARALLEL] * 4, body)[0]


@pattern("conv2d")
def _conv2d(m: MlircOp) -> ir.Value:
    x, weight = m.operands
    x = _pad_spatial(x, m.attr("padding"), 0.0)
    strides, dilations, groups = m.attr("stride"), m.attr("dilation"), m.attr("groups")
    if groups == 1:
        return linalg.conv_2d_nchw_fchw(x, weight, outs=[_zero_init(m)], strides=strides, dilations=dilations)
    n, c, h, w = le.dims_of(x)
    f, cg, kh, kw = shapes.shape_of(weight)
    _, _, oh, ow = m.out_dims
    xg = le.reshape(x, [n, groups, c // groups, h, w])
    wg = le.reshape(weight, [groups, f // groups, cg, kh, kw])
    init = le.fill(const(m.out_elem, 0), le.empty([n, groups, f // groups, oh, ow], m.out_elem))
    out = linalg.conv_2d_ngchw_gfchw(xg, wg, outs=[init], strides=strides, dilations=dilations)
    return le.reshape(out, m.out_dims)


@pattern("max_pool2d")
def _max_pool2d(m: MlircOp) -> ir.Value:
    elem = m.out_elem
    # the lowest value: -inf, or a (signed: the frontend refuses unsigned) integer's
    lowest = -(1 << (ir.IntegerType(elem).width - 1)) if isinstance(elem, ir.IntegerType) else float("-inf")
    x = _pad_spatial(m.operands[0], m.attr("padding"), lowest)
    kernel = m.attr("kernel")
    window = le.empty(kernel, elem)
    init = le.fill(const(elem, lowest), le.empty(m.out_dims, elem))
    return linalg.pooling_nchw_max(x, window, outs=[init], strides=m.attr("stride"), dilations=m.attr("dilation"))
