"""mlirc-lower-to-linalg: mlirc dialect -> linalg/tensor/arith/math on tensors.

One function per op pattern, looked up in `PATTERNS` (linalg_emit) by op name;
the structured ops' patterns (reductions, matmul, conv, pool) live in
lower_to_linalg_structured.  Elementwise ops
become linalg.generic with broadcasting folded into indexing maps (no broadcast is
materialized), so upstream elementwise fusion sees one generic per op.
Bool tensors become i8 tensors (torch's storage) at this stage.

Ops that wait for static sizes (marked deferred by an earlier pass, or a window op
of symbolic shape) stay mlirc ops while they are marked; run again once the sizes
are bound (and the marks are off), the pass lowers them among the linalg ops around
them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, func, tensor
from mlir.dialects import math as math_d

from mlirc.dialects import shapes
from mlirc.dialects.mlirc_dialect import BINARY_OPS, UNARY_OPS
from mlirc.errors import MlircError, PipelineError, StaticSizesNeeded, UnsupportedOpError
from mlirc.passes import lower_to_linalg_structured  # noqa: F401  (registers reductions, matmul, conv, pool)
from mlirc.passes.base import linalg_emit as le
from mlirc.passes.base.ir_utils import defer, erase_op, is_deferred, resume_deferred
from mlirc.passes.base.linalg_emit import PATTERNS, MlircOp, pattern
from mlirc.passes.base.registry import register_pass
from mlirc.passes.base.scalar_math import const, convert_scalar, scalar_body

NAME = "mlirc-lower-to-linalg"


def _init(m: MlircOp) -> ir.Value:
    return le.empty(m.out_dims, le.storage_elem(m.out_elem))


def _pointwise(m: MlircOp, compute: Callable[[list[ir.Value]], ir.Value]) -> ir.Value:
    rank = len(m.out_shape)
    maps = [le.broadcast_map(shapes.shape_of(v), m.out_shape) for v in m.operands]

    def body(args: list[ir.Value]) -> list[ir.Value]:
        logical = [le.load(a, shapes.elem_of(t)) for a, t in zip(args, m.in_types, strict=False)]
        return [le.store(compute(logical))]

    return le.generic(m.operands, maps, [_init(m)], [le.identity_map(rank)], [le.PARALLEL] * rank, body)[0]


@pattern(*UNARY_OPS, *BINARY_OPS)
def _elementwise(m: MlircOp) -> ir.Value:
    name = m.op.name.split(".", 1)[1]
    fn = scalar_body(name, shapes.elem_of(m.in_types[0]), m.target)
    return _pointwise(m, lambda xs: fn(*xs))


@pattern("select")
def _select(m: MlircOp) -> ir.Value:
    return _pointwise(m, lambda xs: arith.select(*xs))


@pattern("fma")
def _fma(m: MlircOp) -> ir.Value:
    return _pointwise(m, lambda xs: math_d.fma(*xs))


@pattern("convert")
def _convert(m: MlircOp) -> ir.Value:
    return _pointwise(m, lambda xs: convert_scalar(xs[0], m.out_elem))


@pattern("broadcast")
def _broadcast(m: MlircOp) -> ir.Value:
    return _pointwise(m, lambda xs: xs[0])


@pattern("permute")
def _permute(m: MlircOp) -> ir.Value:
    perm = m.attr("perm")
    rank = len(perm)
    in_map = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(perm.index(j)) for j in range(rank)])
    return le.generic(
        m.operands, [in_map], [_init(m)], [le.identity_map(rank)], [le.PARALLEL] * rank, lambda a: [a[0]]
    )[0]


@pattern("reshape")
def _reshape(m: MlircOp) -> ir.Value:
    return le.reshape(m.operands[0], m.out_dims)


@pattern("slice")
def _slice(m: MlircOp) -> ir.Value:
    result_type = le.storage_type(m.out_type)
    starts, steps = m.attr("starts"), m.attr("steps")
    symbolic = [d for d in m.out_dims if isinstance(d, ir.Value)]
    sizes = [ir.ShapedType.get_dynamic_size() if n is None else n for n in m.out_shape]
    return tensor.ExtractSliceOp(result_type, m.operands[0], [], symbolic, [], starts, sizes, steps).result


@pattern("constant")
def _constant(m: MlircOp) -> ir.Value:
    value = ir.DenseElementsAttr(m.op.attributes["value"])
    if shapes.is_bool(m.out_elem):
        if not value.is_splat:
            raise UnsupportedOpError("mlirc.constant", "non-splat bool constants")
        splat = ir.IntegerAttr(value.get_splat_value()).value
        value = ir.DenseElementsAttr.get_splat(le.storage_type(m.out_type), ir.IntegerAttr.get(le.i8(), splat & 1))
    return arith.ConstantOp(value.type, value).result


@pattern("from_size")
def _from_size(m: MlircOp) -> ir.Value:
    i64 = ir.IntegerType.get_signless(64)
    size = convert_scalar(arith.index_cast(i64, m.op.operands[0]), m.out_elem)
    return tensor.from_elements(le.storage_type(m.out_type), [le.store(size)])


@pattern("iota")
def _iota(m: MlircOp) -> ir.Value:
    rank, dim = len(m.out_shape), m.attr("dim")

    def body(args: list[ir.Value]) -> list[ir.Value]:
        return [arith.index_cast(m.out_elem, le.index(dim))]

    return le.generic([], [], [_init(m)], [le.identity_map(rank)], [le.PARALLEL] * rank, body)[0]


def _gather_generic(
    m: MlircOp, inputs: Sequence[ir.Value], input_maps: Sequence[ir.AffineMap], read: Callable
) -> ir.Value:
    """A generic over the output whose body reads other tensors with tensor.extract."""
    rank = len(m.out_shape)

    def body(args: list[ir.Value]) -> list[ir.Value]:
        return [read([le.index(d) for d in range(rank)], args)]

    return le.generic(inputs, input_maps, [_init(m)], [le.identity_map(rank)], [le.PARALLEL] * rank, body)[0]


@pattern("concat")
def _concat(m: MlircOp) -> ir.Value:
    dim = m.attr("dim")
    sizes = [shapes.shape_of(v)[dim] for v in m.operands]

    def read(idx: list[ir.Value], _args: list[ir.Value]) -> ir.Value:
        result, offset = None, 0
        for value, size in zip(m.operands, sizes, strict=False):
            if size == 0 and (result is not None or any(sizes)):
                continue  # an empty piece holds nothing to read (and no element to clamp to)
            local = arith.subi(idx[dim], le.index_const(offset))
            here = [*idx[:dim], le.clamp_index(local, size), *idx[dim + 1 :]]
            element = tensor.extract(value, here)
            if result is None:
                result = element
            else:
                at_or_after = arith.cmpi(arith.CmpIPredicate.sge, idx[dim], le.index_const(offset))
                result = arith.select(at_or_after, element, result)
            offset += size
        return result

    return _gather_generic(m, [], [], read)


@pattern("pad")
def _pad(m: MlircOp) -> ir.Value:
    x, value = m.operands
    low, in_shape = m.attr("low"), shapes.shape_of(x)
    rank = len(in_shape)
    fill_map = ir.AffineMap.get(rank, 0, [])

    def read(idx: list[ir.Value], args: list[ir.Value]) -> ir.Value:
        inside, src = None, []
        for d in range(rank):
            local = arith.subi(idx[d], le.index_const(low[d]))
            ok = arith.andi(
                arith.cmpi(arith.CmpIPredicate.sge, local, le.index_const(0)),
                arith.cmpi(arith.CmpIPredicate.slt, local, le.index_const(in_shape[d])),
            )
            inside = ok if inside is None else arith.andi(inside, ok)
            src.append(le.clamp_index(local, in_shape[d]))
        if inside is None or any(s == 0 for s in in_shape):
            return args[0]
        return arith.select(inside, tensor.extract(x, src), args[0])

    return _gather_generic(m, [value], [fill_map], read)


@pattern("gather")
def _gather(m: MlircOp) -> ir.Value:
    x, index = m.operands
    dim, size = m.attr("dim"), shapes.shape_of(x)[m.attr("dim")]
    rank = len(m.out_shape)

    def read(idx: list[ir.Value], args: list[ir.Value]) -> ir.Value:
        return _read_at_index(x, idx, dim, size, args[0])

    return _gather_generic(m, [index], [le.identity_map(rank)], read)


def _read_at_index(x: ir.Value, idx: list[ir.Value], dim: int, size: int | None, index: ir.Value) -> ir.Value:
    """x at `idx` with dim `dim` replaced by `index`, clamped into it.  An empty dim
    has no element to clamp to: any index is out of range there, and the op's check
    raises, so nothing is read (a 0-size tensor's data pointer may be null).  Along a
    `?` dim (which may be empty, `s0 - 1`) the sizes are bound first."""
    if size is None:
        raise StaticSizesNeeded(NAME, "an index into a dim of symbolic size")
    if size == 0:
        return const(shapes.elem_of(x), 0)
    where = le.clamp_index(arith.index_cast(ir.IndexType.get(), index), size)
    return tensor.extract(x, [*idx[:dim], where, *idx[dim + 1 :]])


@pattern("index_select")
def _index_select(m: MlircOp) -> ir.Value:
    x, index = m.operands
    dim, size = m.attr("dim"), shapes.shape_of(x)[m.attr("dim")]
    rank = len(m.out_shape)
    index_map = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(dim)])

    def read(idx: list[ir.Value], args: list[ir.Value]) -> ir.Value:
        return _read_at_index(x, idx, dim, size, args[0])

    return _gather_generic(m, [index], [index_map], read)


def _convert_signature(fn: func.FuncOp) -> None:
    """Function arguments/results of bool type take their i8 storage type."""
    ftype = ir.FunctionType(fn.type.value if hasattr(fn.type, "value") else fn.attributes["function_type"].value)
    inputs = [le.storage_type(t) for t in ftype.inputs]
    results = [le.storage_type(t) for t in ftype.results]
    for arg, t in zip(fn.entry_block.arguments, inputs, strict=False):
        arg.set_type(t)
    fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, results))


# mlirc ops that no linalg op expresses, kept for the backends to lower in kernels of
# their own (as IREE keeps its LinalgExt scatter): a data-dependent write.
BACKEND_OPS = frozenset({"mlirc.scatter_add"})


def _mlirc_ops(fn: func.FuncOp, only: frozenset[str] | None = None) -> list[ir.Operation]:
    """The mlirc ops to lower (or, with `only`, those of these names)."""
    ops: list[ir.Operation] = []
    for block in fn.body.blocks:
        for op in block.operations:
            name = op.operation.name
            if name.startswith("mlirc.") and (name in only if only is not None else name not in BACKEND_OPS):
                ops.append(op.operation)
    return ops


def _any_symbolic(op: ir.Operation) -> bool:
    return any(None in shapes.shape_of(v) for v in [*_tensors(op), op.results[0]])


def _concat_along_symbolic(op: ir.Operation) -> bool:
    dim = ir.IntegerAttr(op.attributes["dim"]).value
    return any(shapes.shape_of(v)[dim] is None for v in _tensors(op))


def _symbolic_window(op: ir.Operation) -> bool:
    return None in shapes.shape_of(op.operands[1])[2:]


def _indexes_symbolic_dim(op: ir.Operation) -> bool:
    return shapes.shape_of(op.operands[0])[ir.IntegerAttr(op.attributes["dim"]).value] is None


# Lowerings that compute on static sizes, and when they need them: a convolution's
# window is its weight's (a graph argument may have `?` ones); a concatenation's
# pieces start at static offsets; a gather's reads are clamped into the indexed dim,
# which must not be empty (a `?` one may be: s0 - 1).
NEEDS_STATIC_SIZES: dict[str, Callable[[ir.Operation], bool]] = {
    "mlirc.conv2d": _symbolic_window,
    "mlirc.concat": _concat_along_symbolic,
    "mlirc.gather": _indexes_symbolic_dim,
    "mlirc.index_select": _indexes_symbolic_dim,
    # the backends' loops and grids are sized per kernel
    "mlirc.scatter_add": _any_symbolic,
}


def _waits_for_sizes(op: ir.Operation) -> bool:
    """Is `op` left for when the sizes are bound: deferred by an earlier pass, or one
    whose lowering needs static sizes it does not have?"""
    needs_static = NEEDS_STATIC_SIZES.get(op.name)
    if needs_static is not None and needs_static(op):
        defer(op, NAME)
    return is_deferred(op)


def _tensors(op: ir.Operation) -> list[ir.Value]:
    """An op's tensor operands: a sized op's `index` sizes are read through MlircOp.out_dims."""
    return [v for v in op.operands if not isinstance(v.type, ir.IndexType)]


def _empty_result(logical_type: ir.Type) -> ir.Value:
    t = ir.RankedTensorType(logical_type)
    return le.empty(t.shape, le.storage_elem(t.element_type))


NUMERICS = ("cpu", "cuda")


@dataclass(frozen=True)
class LowerToLinalgOptions:
    # whose eager kernels the scalar bodies follow where the devices' differ (ties of
    # signed zeros in maximum/relu): the backend's device
    numerics: str = "cpu"


@register_pass(NAME, "Lower mlirc dialect ops to linalg/tensor/arith/math on tensors", LowerToLinalgOptions)
def lower_to_linalg(module: ir.Operation, options: LowerToLinalgOptions) -> None:
    if options.numerics not in NUMERICS:
        raise PipelineError(NAME, f"option numerics={options.numerics!r} is not one of {', '.join(NUMERICS)}")
    resume_deferred(module, NAME)
    target = options.numerics
    for fn_op in module.regions[0].blocks[0].operations:
        if not isinstance(fn_op, func.FuncOp) or fn_op.is_external:
            continue
        ops = [op for op in _mlirc_ops(fn_op) if not _waits_for_sizes(op)]
        for kept in _mlirc_ops(fn_op, BACKEND_OPS):
            _waits_for_sizes(kept)  # marks it deferred while its sizes are `?`
        logical = [([v.type for v in _tensors(op)], op.results[0].type) for op in ops]
        _convert_signature(fn_op)
        for op, (in_types, out_type) in zip(ops, logical, strict=False):
            name = op.name.split(".", 1)[1]
            fn = PATTERNS.get(name)
            try:
                if fn is None:
                    raise UnsupportedOpError(op.name, "no linalg lowering")
                with ir.InsertionPoint(op), op.location:
                    if 0 in ir.RankedTensorType(out_type).shape:
                        new = _empty_result(out_type)  # nothing to compute, whatever the op
                    else:
                        new = fn(MlircOp(op, _tensors(op), in_types, out_type, target))
            except MlircError as err:
                err.location = getattr(err, "location", None) or op.location  # the diagnostic points at the op
                raise
            op.results[0].replace_all_uses_with(new)
            erase_op(op)
