"""Python builders for mlirc ops: compute result types with `shapes` and create the op.

Builders must be called inside an active Context, Location and InsertionPoint.
"""

from __future__ import annotations

from collections.abc import Sequence

from mlir import ir

from mlirc.dialects import shapes
from mlirc.dialects.mlirc_dialect import OPS, UNARY_OPS
from mlirc.errors import VerificationError

COMPARE_OPS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})
LOGICAL_OPS = frozenset({"logical_and", "logical_or", "logical_xor", "logical_not", "isnan", "isinf", "signbit"})


def i64_array(values: Sequence[int]) -> ir.Attribute:
    return ir.DenseI64ArrayAttr.get([int(v) for v in values])


def _attr(value: object) -> ir.Attribute:
    if isinstance(value, ir.Attribute):
        return value
    if isinstance(value, bool):
        return ir.BoolAttr.get(value)
    if isinstance(value, int):
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)
    if isinstance(value, (list, tuple)):
        return i64_array(value)
    raise VerificationError(f"cannot make an attribute from {value!r}")


# A shape whose symbolic dims are given by their sizes at run time (`index` values):
# what a sized op (reshape, broadcast, iota) is built from.
MixedShape = Sequence[int | ir.Value]


def split_mixed(dims: MixedShape) -> tuple[list[int | None], list[ir.Value]]:
    """A mixed shape as the static shape of its type (None: `?`) and the sizes of its `?` dims."""
    for d in dims:
        if not isinstance(d, (int, ir.Value)):
            raise VerificationError(f"a sized op's dim must be an int or an index value, not {d!r}")
    static = [d if isinstance(d, int) else None for d in dims]
    return static, [d for d in dims if isinstance(d, ir.Value)]


def create(
    name: str, operands: Sequence[ir.Value], result_type: ir.Type, sizes: Sequence[ir.Value] = (), **attrs: object
) -> ir.Value:
    """Create `mlirc.<name>`; the generic entry point the specific builders share.
    `sizes`: a sized op's `?` result dims, in order."""
    if name not in OPS:
        raise VerificationError(f"unknown mlirc op '{name}'")
    op = ir.Operation.create(
        f"mlirc.{name}",
        results=[result_type],
        operands=[*operands, *sizes],
        attributes={key: _attr(val) for key, val in attrs.items()},
    )
    return op.result


def elementwise(name: str, *operands: ir.Value) -> ir.Value:
    """Unary/binary/select/fma ops: operands broadcast; compares and logical ops give i1."""
    shape = shapes.broadcast_shapes(*(shapes.shape_of(v) for v in operands))
    if name in COMPARE_OPS or name in LOGICAL_OPS:
        elem = ir.IntegerType.get_signless(1)
    else:
        elem = shapes.elem_of(operands[-1])
    if name not in UNARY_OPS and name != "select":
        elems = [shapes.elem_of(v) for v in operands]
        if any(e != elems[0] for e in elems):
            raise VerificationError(f"mlirc.{name}: operand element types differ ({' vs '.join(map(str, elems))})")
    return create(name, operands, shapes.tensor_type(shape, elem))


def convert(value: ir.Value, elem: ir.Type) -> ir.Value:
    if shapes.elem_of(value) == elem:
        return value
    return create("convert", [value], shapes.tensor_type(shapes.shape_of(value), elem))


def reduce(name: str, value: ir.Value, dims: Sequence[int], keepdim: bool, elem: ir.Type | None = None) -> ir.Value:
    shape = shapes.shape_of(value)
    dims = shapes.normalize_dims(dims, len(shape))
    out_shape = shapes.reduced_shape(shape, dims, keepdim)
    if elem is None:
        elem = ir.IntegerType.get_signless(64) if name in ("argmax", "argmin") else shapes.elem_of(value)
    return create(name, [value], shapes.tensor_type(out_shape, elem), dims=list(dims), keepdim=keepdim)


def reshape(value: ir.Value, shape: MixedShape) -> ir.Value:
    """`value` viewed as `shape`: ints, or the `index` sizes of its symbolic dims."""
    static, sizes = split_mixed(shape)
    if not sizes and tuple(static) == shapes.shape_of(value):
        return value
    return create("reshape", [value], shapes.tensor_type(static, shapes.elem_of(value)), sizes)


def broadcast(value: ir.Value, shape: MixedShape) -> ir.Value:
    """`value` expanded to `shape` (ints, or the `index` sizes of its symbolic dims)."""
    static, sizes = split_mixed(shape)
    if tuple(static) == shapes.shape_of(value) and None not in static:
        return value
    return create("broadcast", [value], shapes.tensor_type(static, shapes.elem_of(value)), sizes)


def permute(value: ir.Value, perm: Sequence[int]) -> ir.Value:
    shape = shapes.shape_of(value)
    if list(perm) == list(range(len(shape))):
        return value
    return create(
        "permute", [value], shapes.tensor_type([shape[p] for p in perm], shapes.elem_of(value)), perm=list(perm)
    )


def slice_(value: ir.Value, starts: Sequence[int], steps: Sequence[int], shape: MixedShape) -> ir.Value:
    """Elements `starts[d] + i * steps[d]` of `value`, `shape[d]` of them along each dim
    (an int, or the `index` size of a symbolic one)."""
    static, sizes = split_mixed(shape)
    return create(
        "slice",
        [value],
        shapes.tensor_type(static, shapes.elem_of(value)),
        sizes,
        starts=list(starts),
        steps=list(steps),
    )


def iota(shape: MixedShape, dim: int, elem: ir.Type) -> ir.Value:
    """Indices along `dim` of a tensor of `shape` (ints, or the sizes of symbolic dims)."""
    static, sizes = split_mixed(shape)
    return create("iota", [], shapes.tensor_type(static, elem), sizes, dim=dim)


def from_size(size: int | ir.Value, elem: ir.Type) -> ir.Value:
    """A size as a 0-d tensor of `elem`: a constant where it is static."""
    if isinstance(size, int):
        return scalar_constant(size, elem)
    return create("from_size", [size], shapes.tensor_type([], elem))


def constant(attr: ir.DenseElementsAttr) -> ir.Value:
    return create("constant", [], attr.type, value=attr)


def scalar_constant(value: float | int | bool, elem: ir.Type) -> ir.Value:
    """A 0-d constant tensor; broadcasting makes it usable with any elementwise op."""
    tensor_t = shapes.tensor_type([], elem)
    if shapes.is_float(elem):
        scalar = ir.FloatAttr.get(elem, float(value))
    elif shapes.is_bool(elem):
        scalar = ir.IntegerAttr.get(elem, 1 if value else 0)
    else:
        scalar = ir.IntegerAttr.get(elem, shapes.wrap_integer(int(value), ir.IntegerType(elem).width))
    return constant(ir.DenseElementsAttr.get_splat(tensor_t, scalar))
