"""Builders for Triton's `tt` dialect as generic ops of an unregistered dialect.

Our bindings do not know Triton's dialect, so its ops are built with
`ir.Operation.create` in a context that allows unregistered dialects, and printed in
generic form; Triton's parser reads that form back (as any MLIR parser does).  The
attribute spellings follow what Triton prints for `@triton.jit` kernels, and hold for
Triton 3.6 (GPU host) and 3.9 (CI).  Only `tt` may be unregistered: see
`unknown_ops`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mlir import ir

DIALECT = "tt"
CACHE_NONE = 1  # tt.CacheModifier.NONE
EVICT_NORMAL = 1  # tt.EvictionPolicy.NORMAL
EVICT_LAST = 3  # tt.EvictionPolicy.EVICT_LAST: keep in L2, other programs read it too
ALIGNMENT = 16  # bytes: kernel pointer arguments are promised this alignment
TF32, IEEE = 0, 2  # tt.InputPrecision: how tt.dot multiplies f32 inputs


def unknown_ops(op: ir.Operation) -> list[ir.Operation]:
    """Unregistered ops outside the `tt` dialect: misspelt or foreign ops that a
    context allowing unregistered dialects would otherwise accept silently."""
    context = op.context
    found = []

    def walk(parent: ir.Operation) -> None:
        for region in parent.regions:
            for block in region.blocks:
                for inner in block.operations:
                    inner = inner.operation
                    if not inner.name.startswith(DIALECT + ".") and not context.is_registered_operation(inner.name):
                        found.append(inner)
                    walk(inner)

    walk(op)
    return found


def i32(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), value)


def ptr_type(element: ir.Type) -> ir.Type:
    return ir.Type.parse(f"!tt.ptr<{element}>")


def pointer_to(value: ir.Value) -> ir.Type:
    """The pointer a kernel takes for a buffer of `value`'s element type."""
    element = element_of(value)
    if isinstance(element, ir.IntegerType) and ir.IntegerType(element).width == 1:
        element = ir.IntegerType.get_signless(8)  # torch.bool is a byte
    return ptr_type(element)


def nested_module(top: ir.Block, name: str) -> ir.Block:
    """The body of a new module `name` at the end of `top` (a kernel's TTIR)."""
    with ir.InsertionPoint(top):
        module_op = create("builtin.module", [], [], {"sym_name": ir.StringAttr.get(name)}, regions=1)
    return module_op.regions[0].blocks.append()


def tensor_type(shape: Sequence[int], element: ir.Type) -> ir.Type:
    return ir.RankedTensorType.get(list(shape), element) if shape else element


def shape_of(value: ir.Value) -> list[int]:
    return list(ir.RankedTensorType(value.type).shape) if isinstance(value.type, ir.RankedTensorType) else []


def element_of(value_or_type: ir.Value | ir.Type) -> ir.Type:
    t = value_or_type.type if isinstance(value_or_type, ir.Value) else value_or_type
    return ir.RankedTensorType(t).element_type if isinstance(t, ir.RankedTensorType) else t


def create(
    name: str, operands: Sequence[ir.Value], results: Sequence[ir.Type], attrs: dict | None = None, regions: int = 0
):
    return ir.Operation.create(
        name, results=list(results), operands=list(operands), attributes=attrs or {}, regions=regions
    )


def one(name: str, operands: Sequence[ir.Value], result: ir.Type, attrs: dict | None = None) -> ir.Value:
    return create(name, operands, [result], attrs).results[0]


def constant(attr: ir.Attribute, result: ir.Type) -> ir.Value:
    return one("arith.constant", [], result, {"value": attr})


def scalar_constant(value: float | int | bool, element: ir.Type) -> ir.Value:
    if isinstance(element, ir.FloatType):
        return constant(ir.FloatAttr.get(element, float(value)), element)
    return constant(ir.IntegerAttr.get(element, int(value)), element)


def program_id(axis: int) -> ir.Value:
    return one("tt.get_program_id", [], ir.IntegerType.get_signless(32), {"axis": i32(axis)})


def make_range(size: int) -> ir.Value:
    result = ir.RankedTensorType.get([size], ir.IntegerType.get_signless(32))
    return one("tt.make_range", [], result, {"start": i32(0), "end": i32(size)})


def splat(value: ir.Value, shape: Sequence[int]) -> ir.Value:
    return one("tt.splat", [value], tensor_type(shape, value.type))


def expand_dims(value: ir.Value, axis: int) -> ir.Value:
    shape = shape_of(value)
    shape.insert(axis, 1)
    return one("tt.expand_dims", [value], tensor_type(shape, element_of(value)), {"axis": i32(axis)})


def broadcast(value: ir.Value, shape: Sequence[int]) -> ir.Value:
    if shape_of(value) == list(shape):
        return value
    return one("tt.broadcast", [value], tensor_type(shape, element_of(value)))


def addptr(pointers: ir.Value, offsets: ir.Value) -> ir.Value:
    return one("tt.addptr", [pointers, offsets], pointers.type)


def load(
    pointers: ir.Value, mask: ir.Value | None, other: ir.Value | None = None, evict: int | None = None
) -> ir.Value:
    """Masked-off lanes read `other` (a tensor like the result), else are undefined."""
    element = ir.Type.parse(str(element_of(pointers)).removeprefix("!tt.ptr<").removesuffix(">"))
    segments = ir.DenseI32ArrayAttr.get([1, 1 if mask is not None else 0, 1 if other is not None else 0])
    attrs = {
        "cache": i32(CACHE_NONE),
        "evict": i32(EVICT_NORMAL if evict is None else evict),
        "isVolatile": ir.BoolAttr.get(False),
        "operandSegmentSizes": segments,
    }
    operands = [pointers] + ([mask] if mask is not None else []) + ([other] if other is not None else [])
    return one("tt.load", operands, tensor_type(shape_of(pointers), element), attrs)


def store(pointers: ir.Value, value: ir.Value, mask: ir.Value | None) -> None:
    operands = [pointers, value] + ([mask] if mask is not None else [])
    create("tt.store", operands, [], {"cache": i32(CACHE_NONE), "evict": i32(EVICT_NORMAL)})


def dot(a: ir.Value, b: ir.Value, acc: ir.Value, precision: int) -> ir.Value:
    """acc + a @ b on tensor cores; `precision` is an INPUT_PRECISION value (f32 inputs)."""
    attrs = {"inputPrecision": i32(precision), "maxNumImpreciseAcc": i32(0)}
    return one("tt.dot", [a, b, acc], acc.type, attrs)


def reduce(value: ir.Value, axis: int, combine: Callable[[ir.Value, ir.Value], ir.Value]) -> ir.Value:
    """`tt.reduce` along `axis`; `combine` builds the scalar combiner in its region."""
    shape = shape_of(value)
    del shape[axis]
    element = element_of(value)
    op = create("tt.reduce", [value], [tensor_type(shape, element)], {"axis": i32(axis)}, regions=1)
    block = op.regions[0].blocks.append(element, element)
    with ir.InsertionPoint(block):
        create("tt.reduce.return", [combine(*block.arguments)], [])
    return op.results[0]


def func(name: str, arg_types: Sequence[ir.Type], aligned: bool = False) -> tuple[ir.Operation, ir.Block]:
    """A `tt.func`; `aligned`: every pointer argument is 16-byte aligned (what
    @triton.jit specializes on), which lets loads vectorize and tt.dot pipeline.
    Integer arguments (run-time sizes) are promised nothing."""
    ftype = ir.FunctionType.get(list(arg_types), [])
    attrs = {
        "sym_name": ir.StringAttr.get(name),
        "function_type": ir.TypeAttr.get(ftype),
        "sym_visibility": ir.StringAttr.get("public"),
        "noinline": ir.BoolAttr.get(False),
    }
    if aligned:
        divisible = ir.DictAttr.get({"tt.divisibility": i32(ALIGNMENT)})
        attrs["arg_attrs"] = ir.ArrayAttr.get(
            [ir.DictAttr.get({}) if isinstance(t, ir.IntegerType) else divisible for t in arg_types]
        )
    op = create("tt.func", [], [], attrs, regions=1)
    return op, op.regions[0].blocks.append(*arg_types)


def ret() -> None:
    create("tt.return", [], [])
