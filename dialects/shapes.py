"""Shape and dtype rules of the mlirc dialect, in one place.

Element types are MLIR builtin types; torch dtypes map onto them through
`TORCH_TO_MLIR`.  A dynamic dimension is `None` here and `?` in the IR.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from mlir import ir

from mlirc.errors import VerificationError

Shape = tuple[int | None, ...]

# torch dtype -> MLIR element type spelling.  Integers are signless in MLIR; the
# ops that care about signedness (division, comparisons, casts) treat them as signed,
# which is why unsigned dtypes other than bool are left out.
TORCH_TO_MLIR: dict[torch.dtype, str] = {
    torch.float32: "f32",
    torch.float64: "f64",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.int16: "i16",
    torch.int8: "i8",
    torch.bool: "i1",
}
MLIR_TO_TORCH: dict[str, torch.dtype] = {v: k for k, v in TORCH_TO_MLIR.items()}


def is_supported_dtype(dtype: torch.dtype) -> bool:
    return dtype in TORCH_TO_MLIR


def scalar_fits(value: int | float, dtype: torch.dtype) -> bool:
    """Does a Python scalar convert to `dtype` without overflow, by c10's rule (the
    one eager applies to fill values: full, where, clamp, pad)?  Infinities and NaN
    fit a float type; a finite float beyond its range does not; nothing else than a
    finite value in range fits an integer type; anything fits bool."""
    if isinstance(value, bool) or dtype == torch.bool:
        return True
    if dtype.is_floating_point:
        info = torch.finfo(dtype)
        return not math.isfinite(value) or info.min <= value <= info.max
    if isinstance(value, float) and not math.isfinite(value):
        return False
    info = torch.iinfo(dtype)
    return info.min <= value <= info.max


def wrap_integer(value: int, width: int) -> int:
    """`value` modulo 2**width as a signed number: what eager's arithmetic makes of
    an out-of-range Python int (int64 + 2**63 wraps)."""
    if width == 1:
        return 1 if value else 0
    half = 1 << (width - 1)
    return (int(value) + half) % (1 << width) - half


def element_type(dtype: torch.dtype) -> ir.Type:
    return ir.Type.parse(TORCH_TO_MLIR[dtype])


def static_dim(size: int | torch.SymInt) -> int | None:
    """A torch size as a static dim: None where it is symbolic (Dynamo's `s0`, `2*s1`).
    Never `int()` on a SymInt: that would add a guard pinning its value."""
    if isinstance(size, torch.SymInt):
        expr = size.node.expr
        return int(expr) if expr.is_number else None
    return int(size)


def tensor_type(shape: Sequence[int | torch.SymInt | None], elem: ir.Type) -> ir.RankedTensorType:
    static = [None if d is None else static_dim(d) for d in shape]
    dims = [ir.ShapedType.get_dynamic_size() if d is None else d for d in static]
    return ir.RankedTensorType.get(dims, elem)


def torch_tensor_type(shape: Sequence[int | torch.SymInt | None], dtype: torch.dtype) -> ir.RankedTensorType:
    """The one place that turns a torch shape/dtype into an IR type (symbolic dims -> `?`)."""
    return tensor_type(shape, element_type(dtype))


def shape_of(value_or_type: ir.Value | ir.Type) -> Shape:
    t = value_or_type.type if isinstance(value_or_type, ir.Value) else value_or_type
    t = ir.RankedTensorType(t)
    return tuple(None if t.is_dynamic_dim(i) else t.shape[i] for i in range(t.rank))


def elem_of(value_or_type: ir.Value | ir.Type) -> ir.Type:
    t = value_or_type.type if isinstance(value_or_type, ir.Value) else value_or_type
    return ir.ShapedType(t).element_type


def is_float(elem: ir.Type) -> bool:
    return isinstance(elem, (ir.F16Type, ir.BF16Type, ir.F32Type, ir.F64Type))


def is_bool(elem: ir.Type) -> bool:
    return isinstance(elem, ir.IntegerType) and ir.IntegerType(elem).width == 1


def broadcast_shapes(*shapes: Shape) -> Shape:
    """numpy/torch broadcasting.  A symbolic dim (None) against a static one is
    symbolic, as torch's metadata has it (Dynamo guarded them equal)."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[int | None] = []
    for axis in range(rank):
        dim: int | None = 1
        for shape in shapes:
            i = axis - (rank - len(shape))
            if i < 0 or shape[i] == 1:
                continue
            if shape[i] is None or dim is None:
                dim = None
            elif dim == 1 or shape[i] == dim:
                dim = shape[i]
            else:
                raise VerificationError(f"shapes {list(shapes)} do not broadcast")
        out.append(dim)
    return tuple(out)


def normalize_dims(dims: Sequence[int], rank: int) -> tuple[int, ...]:
    return tuple(sorted({d % rank if rank else 0 for d in dims}))


def reduced_shape(shape: Shape, dims: Sequence[int], keepdim: bool) -> Shape:
    if keepdim:
        return tuple(1 if i in dims else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in dims)


def conv_output_size(size: int, kernel: int, stride: int, pad_lo: int, pad_hi: int, dilation: int) -> int:
    return (size + pad_lo + pad_hi - dilation * (kernel - 1) - 1) // stride + 1
