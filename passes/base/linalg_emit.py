"""Helpers that build linalg/tensor IR on tensors for `lower_to_linalg`, and its
pattern registry (`MlircOp`, `pattern`, `PATTERNS`), which both of its files fill.

Bool tensors are stored as i8 (torch's byte layout): `storage_type` maps an
mlirc tensor type to its storage type, and generic bodies convert at the edges.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from mlirc.dialects import dims, shapes
from mlirc.passes.base.ir_utils import erase_op

PARALLEL = "parallel"
REDUCTION = "reduction"


def i8() -> ir.Type:
    return ir.IntegerType.get_signless(8)


def storage_elem(elem: ir.Type) -> ir.Type:
    return i8() if shapes.is_bool(elem) else elem


def storage_type(t: ir.Type) -> ir.Type:
    if not isinstance(t, ir.RankedTensorType):
        return t
    shape = shapes.shape_of(t)
    return shapes.tensor_type(shape, storage_elem(shapes.elem_of(t)))


def load(x: ir.Value, logical_elem: ir.Type) -> ir.Value:
    """A block argument in storage form -> the logical scalar (i8 -> i1)."""
    if shapes.is_bool(logical_elem) and x.type != logical_elem:
        return arith.trunci(logical_elem, x)
    return x


def store(x: ir.Value) -> ir.Value:
    """A logical scalar -> its storage form (i1 -> i8)."""
    if shapes.is_bool(x.type):
        return arith.extui(i8(), x)
    return x


def broadcast_map(in_shape: Sequence[int | None], out_shape: Sequence[int | None]) -> ir.AffineMap:
    """Index map reading a (numpy-)broadcast operand inside an `out_shape` loop nest.

    A size-1 dim reads index 0 only where it is really broadcast: a constant in a
    map where a plain dim would do makes the linalg vectorizer give up.
    """
    lead = len(out_shape) - len(in_shape)
    exprs = [
        ir.AffineConstantExpr.get(0) if size == 1 and out_shape[lead + i] != 1 else ir.AffineDimExpr.get(lead + i)
        for i, size in enumerate(in_shape)
    ]
    return ir.AffineMap.get(len(out_shape), 0, exprs)


def identity_map(rank: int) -> ir.AffineMap:
    return ir.AffineMap.get_identity(rank)


def empty(shape: Sequence[dims.Dim], elem: ir.Type) -> ir.Value:
    """A tensor to compute into: static dims as ints, symbolic ones as `index` values."""
    return tensor.EmptyOp([d if isinstance(d, ir.Value) else int(d) for d in shape], elem).result


def dims_of(value: ir.Value) -> list[dims.Dim]:
    return [dims.dim_of(value, d) for d in range(len(shapes.shape_of(value)))]


def extract_slice(value: ir.Value, offsets: Sequence[dims.Dim], sizes: Sequence[dims.Dim]) -> ir.Value:
    """`value`'s box at `offsets` of `sizes` (unit strides), each an int or an `index` value."""
    dynamic = ir.ShapedType.get_dynamic_size()
    static = [[dynamic if isinstance(v, ir.Value) else v for v in seq] for seq in (offsets, sizes)]
    values = [[v for v in seq if isinstance(v, ir.Value)] for seq in (offsets, sizes)]
    result = ir.RankedTensorType.get(static[1], ir.RankedTensorType(value.type).element_type)
    return tensor.ExtractSliceOp(result, value, *values, [], *static, [1] * len(sizes)).result


def fill(value: ir.Value, init: ir.Value) -> ir.Value:
    return linalg.fill(value, outs=[init])


def generic(
    inputs: Sequence[ir.Value],
    input_maps: Sequence[ir.AffineMap],
    inits: Sequence[ir.Value],
    init_maps: Sequence[ir.AffineMap],
    iterators: Sequence[str],
    body: Callable[[list[ir.Value]], Sequence[ir.Value]],
) -> list[ir.Value]:
    """A linalg.generic; `body` receives the block arguments and returns yielded values.

    Where no loop reduces (a sum of a 0-d tensor has no loops at all), inits the body
    reads are passed as inputs and the results written to fresh tensors: upstream's
    elementwise fusion takes an all-parallel op for a pure function of its inputs, and
    fused into a consumer's loops, `out = in + out` ran once per consumer iteration
    (x.sum() of a 0-d x, broadcast into a row sum, was added 4 times)."""
    op = _generic(inputs, input_maps, inits, init_maps, iterators, body)
    block = op.regions[0].blocks[0]
    read = [i for i, arg in enumerate(list(block.arguments)[len(inputs) :]) if list(arg.uses)]
    if not read or REDUCTION in iterators:
        return list(op.results)
    erase_op(op.operation)
    moved = [inits[i] for i in read]
    fresh = [empty(dims_of(v), shapes.elem_of(v)) for v in inits]
    arity = len(inputs) + len(moved)

    def rewired(args: list[ir.Value]) -> Sequence[ir.Value]:  # the caller's view: its inits where they were
        as_inits = [args[len(inputs) + read.index(i)] if i in read else args[arity + i] for i in range(len(inits))]
        return body(args[: len(inputs)] + as_inits)

    moved_maps = [init_maps[i] for i in read]
    return list(_generic([*inputs, *moved], [*input_maps, *moved_maps], fresh, init_maps, iterators, rewired).results)


def _generic(
    inputs: Sequence[ir.Value],
    input_maps: Sequence[ir.AffineMap],
    inits: Sequence[ir.Value],
    init_maps: Sequence[ir.AffineMap],
    iterators: Sequence[str],
    body: Callable[[list[ir.Value]], Sequence[ir.Value]],
) -> linalg.GenericOp:
    maps = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in [*input_maps, *init_maps]])
    iters = ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{it}>") for it in iterators])
    op = linalg.GenericOp([v.type for v in inits], list(inputs), list(inits), maps, iters)
    block = op.regions[0].blocks.append(*[shapes.elem_of(v) for v in [*inputs, *inits]])
    with ir.InsertionPoint(block):
        linalg.YieldOp(list(body(list(block.arguments))))
    return op


def index(dim: int) -> ir.Value:
    return linalg.IndexOp(ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dim)).result


def index_const(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def clamp_index(idx: ir.Value, size: dims.Dim) -> ir.Value:
    """Clamp into [0, size-1] so speculative or bad reads stay in bounds."""
    if isinstance(size, int):
        upper = index_const(max(size - 1, 0))
    else:
        upper = arith.maxsi(arith.subi(size, index_const(1)), index_const(0))
    return arith.minsi(arith.maxsi(idx, index_const(0)), upper)


def reassociation(src: Sequence[int], dst: Sequence[int]) -> list[list[int]] | None:
    """Groups of consecutive `src` dims whose products are the `dst` dims, or None."""
    if not dst:
        return [] if all(d == 1 for d in src) else None
    groups: list[list[int]] = []
    i = 0
    for k, size in enumerate(dst):
        if i >= len(src):
            return None
        group, product = [i], src[i]
        i += 1
        last = k == len(dst) - 1
        while product != size or (last and i < len(src)):
            if i >= len(src):
                return None
            product *= src[i]
            group.append(i)
            i += 1
        groups.append(group)
    return groups


def reshape(value: ir.Value, dst_shape: Sequence[dims.Dim], unit_dims_only: bool = False) -> ir.Value:
    """`value` as `dst_shape` (static dims as ints, symbolic ones as `index` values):
    a collapse or an expand of its dims where groups of them match, else both,
    through one dim.  `unit_dims_only`: the caller knows that only unit dims come or
    go (a reduction's keepdim), so its symbolic dims pair in order."""
    src_static = list(shapes.shape_of(value))
    dst_static = [d if isinstance(d, int) else None for d in dst_shape]
    elem = shapes.elem_of(value)
    if src_static == dst_static and None not in dst_static:
        return value
    result_type = shapes.tensor_type(dst_static, elem)
    # One symbolic dim on each side is the same size where the static dims around it
    # group alike (the element counts agree); several pair in order where the caller
    # knows only unit dims come or go.  Otherwise which is which is unknown (`?` is
    # any size: [s0, s1] -> [s1, s0] has the same types).
    if src_static.count(None) == dst_static.count(None) and (unit_dims_only or src_static.count(None) <= 1):
        src_key, dst_key = _tokens(src_static), _tokens(dst_static)
        if len(dst_key) <= len(src_key):
            groups = reassociation(src_key, dst_key)
            if groups is not None:
                return tensor.CollapseShapeOp(result_type, value, _groups_attr(groups)).result
        if len(dst_key) >= len(src_key):
            groups = reassociation(dst_key, src_key)
            if groups is not None:
                return _expand(result_type, value, groups, dst_shape)
    if None not in src_static and None not in dst_static:
        return reshape(reshape(value, [math.prod(src_static)]), dst_static)
    # Through one dim: [?] holds any shape, and [?] expands to any with its sizes.
    flat_type = shapes.tensor_type([None], elem)
    if len(src_static) != 1:
        value = tensor.CollapseShapeOp(flat_type, value, _groups_attr([list(range(len(src_static)))])).result
    elif src_static != [None]:
        value = tensor.CastOp(flat_type, value).result
    if not dst_static:
        return tensor.CollapseShapeOp(
            result_type, tensor.CastOp(shapes.tensor_type([1], elem), value).result, []
        ).result
    return _expand(result_type, value, [list(range(len(dst_static)))], dst_shape)


def _tokens(shape: list[int | None]) -> list[int]:
    """A shape for `reassociation`: its k-th symbolic dim as -k-1, which only itself matches."""
    symbolic = iter(range(1, len(shape) + 1))
    return [-next(symbolic) if d is None else d for d in shape]


def _expand(result_type: ir.Type, value: ir.Value, groups: list[list[int]], dst: Sequence[dims.Dim]) -> ir.Value:
    dynamic = [d for d in dst if isinstance(d, ir.Value)]
    static = [ir.ShapedType.get_dynamic_size() if isinstance(d, ir.Value) else d for d in dst]
    return tensor.ExpandShapeOp(result_type, value, _groups_attr(groups), dynamic, static).result


def _groups_attr(groups: list[list[int]]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in g]) for g in groups])


@dataclass
class MlircOp:
    """An mlirc op as the pattern sees it: storage-typed operands, logical types."""

    op: ir.Operation
    operands: list[ir.Value]
    in_types: list[ir.Type]
    out_type: ir.Type
    target: str = "cpu"  # whose eager numerics: mlirc-lower-to-linalg{numerics=...}

    def attr(self, name: str) -> list[int] | int | ir.Attribute:
        a = self.op.attributes[name]
        if isinstance(a, ir.DenseI64ArrayAttr):
            return list(ir.DenseI64ArrayAttr(a))
        if isinstance(a, ir.BoolAttr):
            return ir.BoolAttr(a).value
        if isinstance(a, ir.IntegerAttr):
            return ir.IntegerAttr(a).value
        return a

    @property
    def out_shape(self) -> tuple[int, ...]:
        return shapes.shape_of(self.out_type)  # type: ignore[return-value]

    @functools.cached_property
    def out_dims(self) -> list[dims.Dim]:
        """The result's dims: ints, and `index` values where symbolic (dialects/dims.py)."""
        return dims.result_dims(self.op, self.operands)

    @property
    def out_elem(self) -> ir.Type:
        return shapes.elem_of(self.out_type)


Pattern = Callable[[MlircOp], ir.Value]
PATTERNS: dict[str, Pattern] = {}


def pattern(*names: str) -> Callable[[Pattern], Pattern]:
    def wrap(fn: Pattern) -> Pattern:
        for name in names:
            PATTERNS[name] = fn
        return fn

    return wrap
