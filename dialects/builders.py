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


def create(name: str, operands: Sequence[ir.Value], result_type: ir.Type, **attrs: object) -> ir.Value:
    """Create `mlirc.<name>`; the generic entry point the specific builders share."""
    if name not in OPS:
        raise VerificationError(f"unknown mlirc op '{name}'")
    op = ir.Operation.create(
        f"mlirc.{name}",
        results=[result_type],
        operands=list(operands),
        attributes={key: _attr(val) for key, val in attrs.items()},
    )
    return op.result


def elementwise(name: str, *operands: ir.Value) -> ir.Value:
    """Unary/binary/select ops: operands broadcast; compares and logical ops give i1."""
    shape = shapes.broadcast_shapes(*(shapes.shape_of(v) for v in operands))
    if name in COMPARE_OPS or name in LOGICAL_OPS:
        elem = ir.IntegerType.get_signless(1)
    else:
        elem = shapes.elem_of(operands[-1])
    if name not in UNARY_OPS and name != "select":
        lhs, rhs = (shapes.elem_of(v) for v in operands)
        if lhs != rhs:
            raise VerificationError(f"mlirc.{name}: operand element types differ ({lhs} vs {rhs})")
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


def reshape(value: ir.Value, shape: Sequence[int]) -> ir.Value:
    if tuple(shape) == shapes.shape_of(value):
        return value
    return create("reshape", [value], shapes.tensor_type(shape, shapes.elem_of(value)))


def broadcast(value: ir.Value, shape: Sequence[int]) -> ir.Value:
    if tuple(shape) == shapes.shape_of(value):
        return value
    return create("broadcast", [value], shapes.tensor_type(shape, shapes.elem_of(value)))


def permute(value: ir.Value, perm: Sequence[int]) -> ir.Value:
    shape = shapes.shape_of(value)
    if list(perm) == list(range(len(shape))):
        return value
    return create(
        "permute", [value], shapes.tensor_type([shape[p] for p in perm], shapes.elem_of(value)), perm=list(perm)
    )


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
