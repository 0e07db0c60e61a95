"""Lowerings of elementwise ATen ops: unary, binary, comparison and logical
tables, division with eager's integer semantics, where/clamp, casts, gelu/silu,
frexp.  Each lowering is one small function; families of ops share a factory.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable

import torch
import torch.fx as fx
from mlir import ir

from mlirc.dialects import builders as b
from mlirc.dialects import shapes
from mlirc.frontend.lowerings.api import (
    CHECKS,
    Lowering,
    LoweringContext,
    all_checks,
    arg,
    fill_values_fit,
    narrow_to_out,
    node_meta,
    opmath_dtype,
    out_dtype,
    register,
    result_dtype,
)
from mlirc.frontend.lowerings.checks import check_nonzero_divisor

aten = torch.ops.aten
prims = torch.ops.prims
# prims.fma is Inductor's prim (Dynamo emits it for addcmul_ and friends): defined
# when its module is imported, which Dynamo does only once it rewrites such a call.
importlib.import_module("torch._inductor.inductor_prims")

# ---------------------------------------------------------------- elementwise


def _unary(name: str) -> Lowering:
    """Computed in the result dtype (exp of an int tensor is float)."""

    def lower(lctx: LoweringContext, node: fx.Node) -> ir.Value:
        return b.elementwise(name, lctx.typed(node.args[0], out_dtype(node)))

    return lower


def _predicate(name: str) -> Lowering:
    """Computed in the input dtype, result bool."""

    def lower(lctx: LoweringContext, node: fx.Node) -> ir.Value:
        return b.elementwise(name, lctx.value(node.args[0]))

    return lower


INT_DIVISIONS = frozenset({"div", "floor_div", "remainder", "fmod"})


def _divide(lctx: LoweringContext, node: fx.Node, name: str, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    """An integer division raises eager's ZeroDivisionError on a zero divisor (the
    scalar bodies divide by 1 there, so nothing traps)."""
    if name in INT_DIVISIONS and not shapes.is_float(shapes.elem_of(rhs)):
        check_nonzero_divisor(lctx, node, rhs)
    return b.elementwise(name, lhs, rhs)


HALF_TYPES = (torch.float16, torch.bfloat16)
# Where the right operand is a scalar (a Python number or a 0-d tensor), ATen's CPU and
# CUDA kernels of these ops read it in opmath (float32) as it was given, not rounded to
# the half type: x * 0.1 scales by float32's 0.1, and x // 5.0506 of a float16 x floors
# float32's quotient (-42.00004 is -43).
OPMATH_SCALAR_OPS = frozenset({"mul", "div", "floor_div"})


def _is_scalar(arg: object) -> bool:
    if isinstance(arg, (int, float)):
        return True
    meta = node_meta(arg) if isinstance(arg, fx.Node) else None
    return isinstance(meta, torch.Tensor) and meta.dim() == 0


def _operands(lctx: LoweringContext, node: fx.Node, name: str) -> tuple[ir.Value, ir.Value, torch.dtype]:
    """(lhs, rhs, the dtype they are in): the result dtype's, or for a half-precision
    op of OPMATH_SCALAR_OPS with a scalar on the right, float32 with the scalar not
    rounded to the half type (the caller narrows the result)."""
    dtype = out_dtype(node)
    if dtype in HALF_TYPES and name in OPMATH_SCALAR_OPS and _is_scalar(node.args[1]):
        lhs = b.convert(lctx.typed(node.args[0], dtype), shapes.element_type(torch.float32))
        return lhs, lctx.typed(node.args[1], torch.float32), torch.float32
    return lctx.typed(node.args[0], dtype), lctx.typed(node.args[1], dtype), dtype


def _binary(name: str) -> Lowering:
    def lower(lctx: LoweringContext, node: fx.Node) -> ir.Value:
        lhs, rhs, _ = _operands(lctx, node, name)
        return narrow_to_out(_divide(lctx, node, name, lhs, rhs), node)

    return lower


def _compare(name: str) -> Lowering:
    def lower(lctx: LoweringContext, node: fx.Node) -> ir.Value:
        dtype = result_dtype(node.args[0], node.args[1])
        return b.elementwise(name, lctx.typed(node.args[0], dtype), lctx.typed(node.args[1], dtype))

    return lower


def _logical(name: str) -> Lowering:
    def lower(lctx: LoweringContext, node: fx.Node) -> ir.Value:
        operands = [lctx.typed(a, torch.bool) for a in node.args[: 1 if name == "logical_not" else 2]]
        return b.elementwise(name, *operands)

    return lower


UNARY_TABLE = {
    aten.neg.default: "neg",
    aten.abs.default: "abs",
    aten.exp.default: "exp",
    aten.exp2.default: "exp2",
    aten.expm1.default: "expm1",
    aten.log.default: "log",
    aten.log2.default: "log2",
    aten.log10.default: "log10",
    aten.log1p.default: "log1p",
    aten.sqrt.default: "sqrt",
    aten.rsqrt.default: "rsqrt",
    aten.sin.default: "sin",
    aten.cos.default: "cos",
    aten.tan.default: "tan",
    aten.asin.default: "asin",
    aten.acos.default: "acos",
    aten.atan.default: "atan",
    aten.sinh.default: "sinh",
    aten.cosh.default: "cosh",
    aten.tanh.default: "tanh",
    aten.asinh.default: "asinh",
    aten.acosh.default: "acosh",
    aten.atanh.default: "atanh",
    aten.sigmoid.default: "sigmoid",
    aten.erf.default: "erf",
    aten.erfc.default: "erfc",
    aten.floor.default: "floor",
    aten.ceil.default: "ceil",
    aten.round.default: "round",
    aten.trunc.default: "trunc",
    aten.sign.default: "sign",
    aten.reciprocal.default: "reciprocal",
    aten.bitwise_not.default: "bitwise_not",
    aten.relu.default: "relu",
    # special functions (passes/base/special_math.py)
    aten.lgamma.default: "lgamma",
    aten.digamma.default: "digamma",
    aten.erfinv.default: "erfinv",
    aten.special_erfcx.default: "erfcx",
    aten.i0.default: "i0",
    aten.special_modified_bessel_i0.default: "i0",
    aten.special_i0e.default: "i0e",
    aten.special_i1.default: "i1",
    aten.special_modified_bessel_i1.default: "i1",
    aten.special_i1e.default: "i1e",
    aten.special_ndtri.default: "ndtri",
    aten.special_spherical_bessel_j0.default: "spherical_bessel_j0",
}
PREDICATE_TABLE = {aten.isnan.default: "isnan", aten.isinf.default: "isinf", aten.signbit.default: "signbit"}
BINARY_TABLE = {
    aten.mul.Tensor: "mul",
    aten.mul.Scalar: "mul",
    aten.div.Tensor: "div",
    aten.div.Scalar: "div",
    # div's alias; Dynamo's float arithmetic on sizes made tensors (linspace, interpolate)
    aten.true_divide.Tensor: "div",
    aten.true_divide.Scalar: "div",
    aten.remainder.Tensor: "remainder",
    aten.remainder.Scalar: "remainder",
    aten.fmod.Tensor: "fmod",
    aten.fmod.Scalar: "fmod",
    aten.pow.Tensor_Tensor: "pow",
    aten.pow.Tensor_Scalar: "pow",
    aten.pow.Scalar: "pow",
    aten.maximum.default: "maximum",
    aten.minimum.default: "minimum",
    aten.atan2.default: "atan2",
    aten.bitwise_and.Tensor: "bitwise_and",
    aten.bitwise_or.Tensor: "bitwise_or",
    aten.bitwise_xor.Tensor: "bitwise_xor",
    aten.bitwise_and.Scalar: "bitwise_and",
    aten.bitwise_or.Scalar: "bitwise_or",
    aten.bitwise_xor.Scalar: "bitwise_xor",
    aten.copysign.Tensor: "copysign",
    aten.copysign.Scalar: "copysign",
    aten.fmax.default: "fmax",
    aten.fmin.default: "fmin",
    aten.hypot.default: "hypot",
    prims.fmax.default: "fmax",
    prims.fmin.default: "fmin",
    prims.hypot.default: "hypot",
    aten.special_zeta.default: "zeta",
    aten.special_zeta.self_scalar: "zeta",
    aten.special_zeta.other_scalar: "zeta",
    aten.nextafter.default: "nextafter",
}
COMPARE_TABLE = {getattr(aten, name).Tensor: name for name in ("eq", "ne", "lt", "le", "gt", "ge")} | {
    getattr(aten, name).Scalar: name for name in ("eq", "ne", "lt", "le", "gt", "ge")
}
LOGICAL_TABLE = {
    aten.logical_not.default: "logical_not",
    aten.logical_and.default: "logical_and",
    aten.logical_or.default: "logical_or",
    aten.logical_xor.default: "logical_xor",
}

for table, factory in (
    (UNARY_TABLE, _unary), (PREDICATE_TABLE, _predicate), (BINARY_TABLE, _binary),
    (COMPARE_TABLE, _compare), (LOGICAL_TABLE, _logical),
):  # fmt: skip
    for aten_op, mlirc_name in table.items():
        register(aten_op)(factory(mlirc_name))


def _no_bool_arith(node: fx.Node) -> str | None:
    return "bool arithmetic" if out_dtype(node) == torch.bool else None


for _op in (
    aten.abs.default,
    aten.neg.default,
    aten.sign.default,
    aten.pow.Tensor_Tensor,
    aten.pow.Scalar,
):
    CHECKS[_op] = _no_bool_arith


def _integer_negative_power(node: fx.Node) -> str | None:
    """ATen's pow rejects an integer (or bool) tensor to a negative integer scalar,
    whatever the values, even of an empty tensor: the node runs eagerly, to raise."""
    base, exponent = node_meta(node.args[0]), node.args[1]
    integral = not (base.dtype.is_floating_point or base.dtype.is_complex)
    if integral and isinstance(exponent, int) and exponent < 0:
        return "an integer tensor to a negative integer power (eager raises)"
    return None


CHECKS[aten.pow.Tensor_Scalar] = all_checks(_integer_negative_power, _no_bool_arith)


def _square(x: ir.Value) -> ir.Value:
    return b.elementwise("mul", x, x)


# ATen's pow of a float tensor by these exponents (CPU and CUDA) calls another kernel, whose
# special values differ from pow's: sqrt(-0) is -0 and sqrt(-inf) NaN, where
# pow(-0, 0.5) is +0 and pow(-inf, 0.5) inf; rsqrt(-0) is -inf, pow(-0, -0.5) inf.
POW_SHORTCUTS: dict[float, Callable[[ir.Value], ir.Value]] = {
    0.5: lambda x: b.elementwise("sqrt", x),
    -0.5: lambda x: b.elementwise("rsqrt", x),
    2.0: _square,
    3.0: lambda x: b.elementwise("mul", _square(x), x),
    -1.0: lambda x: b.elementwise("reciprocal", x),
    -2.0: lambda x: b.elementwise("reciprocal", _square(x)),
}


@register(aten.pow.Tensor_Scalar)
def _pow_scalar(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    dtype, exponent = out_dtype(node), node.args[1]
    x = lctx.typed(node.args[0], dtype)
    shortcut = POW_SHORTCUTS.get(exponent) if dtype.is_floating_point else None
    if shortcut is not None and not isinstance(exponent, bool):
        return shortcut(x)
    return b.elementwise("pow", x, lctx.typed(exponent, dtype))


@register(aten.add.Tensor, aten.add.Scalar, aten.sub.Tensor, aten.sub.Scalar, check=_no_bool_arith)
def _add_sub(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """x + alpha * y with one rounding, as ATen's kernel: for half types the operands
    and alpha are rounded to the type, the product and sum are float32's."""
    dtype = out_dtype(node)
    lhs, rhs = lctx.typed(node.args[0], dtype), lctx.typed(node.args[1], dtype)
    alpha = node.kwargs.get("alpha", 1)
    if alpha != 1:
        factor = lctx.typed(alpha, dtype)
        if dtype in HALF_TYPES:
            lhs, rhs, factor = (b.convert(v, shapes.element_type(torch.float32)) for v in (lhs, rhs, factor))
        rhs = b.elementwise("mul", rhs, factor)
    name = "add" if node.target in (aten.add.Tensor, aten.add.Scalar) else "sub"
    return narrow_to_out(b.elementwise(name, lhs, rhs), node)


@register(aten.angle.default, check=lambda n: "complex input" if out_dtype(n).is_complex else None)
def _angle(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """Of a real number: pi below zero, else 0; NaN stays NaN (as ATen)."""
    dtype = out_dtype(node)
    x = lctx.typed(node.args[0], dtype)
    zero = lctx.typed(0.0, dtype)
    angle = b.elementwise("select", b.elementwise("lt", x, zero), lctx.typed(math.pi, dtype), zero)
    return b.elementwise("select", b.elementwise("isnan", x), x, angle)


@register(aten.polygamma.default)
def _polygamma(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """As ATen: digamma, trigamma, then (-1)^(n+1) n! zeta(n + 1, x)."""
    order, dtype = node.args[0], out_dtype(node)
    x = lctx.typed(node.args[1], dtype)
    if order in (0, 1):
        return b.elementwise("digamma" if order == 0 else "trigamma", x)
    scale = (1.0 if order % 2 else -1.0) * math.exp(math.lgamma(order + 1.0))
    zeta = b.elementwise("zeta", lctx.typed(float(order + 1), dtype), x)
    return b.elementwise("mul", zeta, lctx.typed(scale, dtype))


@register(aten.round.decimals)
def _round_decimals(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """As ATen: round(x * 10^d) / 10^d, or round(x / 10^-d) * 10^-d for d < 0."""
    dtype = out_dtype(node)
    x = lctx.typed(node.args[0], dtype)
    decimals = arg(node, 1, "decimals", 0)
    scale = lctx.typed(10.0 ** abs(decimals), dtype)
    if decimals >= 0:
        return b.elementwise("div", b.elementwise("round", b.elementwise("mul", x, scale)), scale)
    return b.elementwise("mul", b.elementwise("round", b.elementwise("div", x, scale)), scale)


@register(aten.rsub.Scalar, aten.rsub.Tensor)
def _rsub(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    dtype = out_dtype(node)
    rhs = lctx.typed(node.args[1], dtype)
    alpha = node.kwargs.get("alpha", 1)
    lhs = lctx.typed(node.args[0], dtype)
    if alpha != 1:
        lhs = b.elementwise("mul", lhs, lctx.typed(alpha, dtype))
    return b.elementwise("sub", rhs, lhs)


def _div_mode_check(node: fx.Node) -> str | None:
    mode = node.kwargs.get("rounding_mode")
    return None if mode in (None, "trunc", "floor") else f"rounding_mode={mode}"


@register(aten.div.Tensor_mode, aten.div.Scalar_mode, check=_div_mode_check)
def _div_mode(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """A half-precision truncating division truncates the float32 quotient, rounded
    once after (as ATen's kernel): 2.9999 is 2, where a quotient rounded to float16
    first is 3.0."""
    mode = node.kwargs.get("rounding_mode")
    lhs, rhs, dtype = _operands(lctx, node, "floor_div" if mode == "floor" else "div")
    if mode == "floor":
        return narrow_to_out(_divide(lctx, node, "floor_div", lhs, rhs), node)
    if dtype in HALF_TYPES:
        lhs, rhs = (b.convert(v, shapes.element_type(torch.float32)) for v in (lhs, rhs))
    quotient = _divide(lctx, node, "div", lhs, rhs)
    return narrow_to_out(b.elementwise("trunc", quotient) if out_dtype(node).is_floating_point else quotient, node)


@register(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar, check=fill_values_fit)
def _where(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    dtype = out_dtype(node)
    cond = lctx.typed(node.args[0], torch.bool)
    return b.elementwise("select", cond, lctx.typed(node.args[1], dtype), lctx.typed(node.args[2], dtype))


@register(
    aten.clamp.default, aten.clamp.Tensor, aten.clamp_min.default, aten.clamp_max.default,
    check=all_checks(_no_bool_arith, fill_values_fit),
)  # fmt: skip
def _clamp(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    dtype = out_dtype(node)
    result = lctx.typed(node.args[0], dtype)
    if node.target == aten.clamp_max.default:
        low, high = None, node.args[1]
    else:
        low, high = arg(node, 1, "min"), arg(node, 2, "max")
    # As ATen's clamp: x unless strictly beyond a bound, so a NaN x and a tie with a
    # bound (zeros of either sign) keep x; a NaN bound gives NaN (as hardtanh's and
    # relu6's, which decompose to this clamp).
    for bound, beyond in ((low, "lt"), (high, "gt")):
        if bound is None:
            continue
        may_be_nan = dtype.is_floating_point and (isinstance(bound, fx.Node) or math.isnan(bound))
        bound = lctx.typed(bound, dtype)
        result = b.elementwise("select", b.elementwise(beyond, result, bound), bound, result)
        if may_be_nan:
            result = b.elementwise("select", b.elementwise("isnan", bound), bound, result)
    return result


@register(
    aten._to_copy.default,
    torch.ops.prims.convert_element_type.default,  # what decompositions emit under symbolic sizes
    check=lambda n: None if n.kwargs.get("device") in (None, node_meta(n.args[0]).device) else "device change",
)
def _to_copy(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    x, dtype = lctx.value(node.args[0]), out_dtype(node)
    if shapes.is_float(shapes.elem_of(x)) and not dtype.is_floating_point and dtype != torch.bool:
        return float_to_int(lctx, x, dtype, node_meta(node.args[0]).device.type)
    return b.convert(x, shapes.element_type(dtype))


def float_to_int(lctx: LoweringContext, x: ir.Value, dtype: torch.dtype, device: str) -> ir.Value:
    """A float -> integer cast with eager's answer where C leaves it undefined (NaN,
    +-inf, out of range; LLVM's fptosi gives poison there).  Both devices convert to
    int32 (int64 for int64) and keep the low bits for narrower types.  The CPU's is
    x86's "integer indefinite" (INT_MIN) for anything out of range; CUDA's cvt.rzi
    saturates, and gives NaN 0 from float32 to int32, INT_MIN otherwise."""
    elem = shapes.elem_of(x)
    via = torch.int64 if dtype == torch.int64 else torch.int32
    width = 64 if via == torch.int64 else 32
    low, high = -(2.0 ** (width - 1)), 2.0 ** (width - 1)

    def k(value: float) -> ir.Value:
        return b.scalar_constant(value, elem)

    def ik(value: int) -> ir.Value:
        return lctx.typed(value, via)

    cast = b.convert(x, shapes.element_type(via))
    too_low = b.elementwise("lt", x, k(low))
    too_high = b.elementwise("ge", x, k(high))
    nan = b.elementwise("isnan", x)
    if device == "cuda":
        cast = b.elementwise("select", too_low, ik(int(low)), cast)
        cast = b.elementwise("select", too_high, ik(int(high) - 1), cast)
        nan_value = 0 if isinstance(elem, ir.F32Type) and width == 32 else int(low)
        cast = b.elementwise("select", nan, ik(nan_value), cast)
    else:
        invalid = b.elementwise("logical_or", nan, b.elementwise("logical_or", too_low, too_high))
        cast = b.elementwise("select", invalid, ik(int(low)), cast)
    return b.convert(cast, shapes.element_type(dtype))


@register(aten.gelu.default)
def _gelu(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """In opmath (float32 for halves), rounded once, as eager's kernel."""
    dtype = opmath_dtype(node)
    x = lctx.typed(node.args[0], dtype)

    def c(v: float) -> ir.Value:
        return lctx.typed(v, dtype)

    if node.kwargs.get("approximate", "none") == "tanh":
        cube = b.elementwise("mul", b.elementwise("mul", x, x), x)
        # x + 0.044715 x^3 rounded once: ATen's CPU and CUDA kernels are built with FMA
        # contraction on, and a float64 1 + tanh(u) that cancels turned the second
        # rounding into 1e-11 relative (four inputs in 50,000 of [-7, -4])
        inner = b.elementwise("mul", b.elementwise("fma", cube, c(0.044715), x), c(0.7978845608028654))
        if dtype != torch.float64:
            # 0.5 x (1 + tanh(u)) is x * sigmoid(2u): for x < -3, 1 + tanh(u) cancels to
            # ~1e-4 and loses a dozen bits (our float32 tanh, an ulp off SLEEF's, moved
            # gelu by 1e-3 relative); 1 / (1 + exp(-2u)) has no cancellation.  float64
            # keeps eager's form: the same tanh (SLEEF's, libdevice's) cancels alike.
            return narrow_to_out(
                b.elementwise("mul", x, b.elementwise("sigmoid", b.elementwise("mul", inner, c(2.0)))), node
            )
        gate = b.elementwise("add", b.elementwise("tanh", inner), c(1.0))
    else:
        gate = b.elementwise("add", b.elementwise("erf", b.elementwise("mul", x, c(0.7071067811865476))), c(1.0))
    # x * 0.5 first, as ATen does: x * gate overflows for x near the float32 maximum
    return narrow_to_out(b.elementwise("mul", b.elementwise("mul", x, c(0.5)), gate), node)


@register(aten.silu.default)
def _silu(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    x = lctx.typed(node.args[0], opmath_dtype(node))
    return narrow_to_out(b.elementwise("mul", x, b.elementwise("sigmoid", x)), node)


def _float_addcdiv(node: fx.Node) -> str | None:
    return None if out_dtype(node).is_floating_point else "integer addcdiv (eager raises)"


def _numeric_addcmul(node: fx.Node) -> str | None:
    dtype = out_dtype(node)
    if dtype == torch.bool or (not dtype.is_floating_point and isinstance(arg(node, 3, "value", 1), float)):
        return "bool addcmul, or a float value on integers (eager raises)"
    return None


def _addcmul_addcdiv(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """self + value * t1 * t2 (or / t2), in eager's order and in opmath (float32 for
    halves), rounded once: the decomposition rounds each of its three ops."""
    dtype = opmath_dtype(node)
    self_, t1, t2 = (lctx.typed(a, dtype) for a in node.args[:3])
    value = arg(node, 3, "value", 1)
    scaled = t1 if value == 1 else b.elementwise("mul", lctx.typed(value, dtype), t1)
    combined = b.elementwise("div" if node.target == aten.addcdiv.default else "mul", scaled, t2)
    return narrow_to_out(b.elementwise("add", self_, combined), node)


register(aten.addcmul.default, check=_numeric_addcmul)(_addcmul_addcdiv)
register(aten.addcdiv.default, check=_float_addcdiv)(_addcmul_addcdiv)


@register(prims.fma.default, check=lambda n: None if out_dtype(n) != torch.bool else "bool fma")
def _fma(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """a * b + c with one rounding, as Inductor lowers this prim (Dynamo's rewrite of
    addcmul_ / addcdiv_ with a value, and of add_ with a tensor alpha, which the
    optimizers' steps use); integers multiply and add (exact, wrapping alike)."""
    dtype = opmath_dtype(node)
    a, b_, c = (lctx.typed(x, dtype) for x in node.args[:3])
    if not out_dtype(node).is_floating_point:
        return narrow_to_out(b.elementwise("add", b.elementwise("mul", a, b_), c), node)
    return narrow_to_out(b.elementwise("fma", a, b_, c), node)


@register(aten.frexp.Tensor, check=lambda n: None if out_dtype(n).is_floating_point else "integer frexp")
def _frexp(lctx: LoweringContext, node: fx.Node) -> tuple[ir.Value, ir.Value]:
    """x = mantissa * 2^exponent with 0.5 <= |mantissa| < 1, computed in float64 from
    log2 and corrected by one step; zeros, infinities and NaN keep exponent 0."""
    f64 = torch.float64
    x = lctx.typed(node.args[0], f64)

    def k(value: float) -> ir.Value:
        return lctx.typed(value, f64)

    exponent = b.elementwise("add", b.elementwise("floor", b.elementwise("log2", b.elementwise("abs", x))), k(1.0))
    half = b.elementwise("floor", b.elementwise("mul", exponent, k(0.5)))
    scale_a = b.elementwise("exp2", b.elementwise("neg", half))  # two factors: 2^-e may not be representable
    scale_b = b.elementwise("exp2", b.elementwise("neg", b.elementwise("sub", exponent, half)))
    mantissa = b.elementwise("mul", b.elementwise("mul", x, scale_a), scale_b)
    big = b.elementwise("ge", b.elementwise("abs", mantissa), k(1.0))
    small = b.elementwise("lt", b.elementwise("abs", mantissa), k(0.5))
    mantissa = b.elementwise("select", big, b.elementwise("mul", mantissa, k(0.5)), mantissa)
    mantissa = b.elementwise("select", small, b.elementwise("mul", mantissa, k(2.0)), mantissa)
    exponent = b.elementwise("add", exponent, b.elementwise("select", big, k(1.0), k(0.0)))
    exponent = b.elementwise("sub", exponent, b.elementwise("select", small, k(1.0), k(0.0)))
    special = b.elementwise(
        "logical_or",
        b.elementwise("eq", x, k(0.0)),
        b.elementwise("logical_or", b.elementwise("isinf", x), b.elementwise("isnan", x)),
    )
    mantissa = b.elementwise("select", special, x, mantissa)
    exponent = b.elementwise("select", special, k(0.0), exponent)
    dtype = out_dtype(node)
    return b.convert(mantissa, shapes.element_type(dtype)), b.convert(exponent, shapes.element_type(torch.int32))
