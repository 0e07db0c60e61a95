"""mlirc-cpu-vector-math: vector `math` ops become calls to SLEEF's vector functions,
or inline polynomials for the hottest float32 ones (exp, tanh, erf).

LLVM has no vector exp/tanh/erf of its own: left alone, `math.exp` on a vector
is scalarized into one libm call per lane, which makes any kernel with a
transcendental op several times slower than eager.  PyTorch's CPU kernels use
SLEEF, and libtorch_cpu exports it, so calling the same functions gives eager's
speed and eager's rounding (1.0 ULP variants).  The CPU codegen resolves the
`Sleef_*` symbols in the loaded libtorch_cpu.

Vectors of any shape are flattened, split into chunks of a SLEEF width for the
host (8 x f32 / 4 x f64 with AVX2, 16 / 8 with AVX-512; one that divides the count
where there is one) and put back together; a partial last chunk is padded.

f32 exp, tanh and erf are expanded inline instead: exp by range reduction and a
Taylor polynomial (0.92 ulp), tanh from that exp and an odd polynomial (1.5 ulp),
erf in ATen's rational form.  SLEEF's erff costs about three times as much per
vector and its tanhf more than three; and a call per vector spills every live
vector around it, where inline code keeps them in registers.  On 2 cores the
elementwise chain (sigmoid, tanh, exp) went from 1.5 to 0.72 ms, tanh of 1M floats
from 0.87 to 0.26 ms.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, func, vector
from mlir.dialects import math as math_d

from mlirc.dialects import shapes
from mlirc.passes.base.ir_utils import erase_op, nested_ops
from mlirc.passes.base.registry import register_pass

# math op -> (SLEEF function stem, accuracy suffix).  Names are `Sleef_<stem><f|d><lanes>_<ulp>`.
SLEEF_FUNCTIONS: dict[str, tuple[str, str]] = {
    "math.exp": ("exp", "u10"),
    "math.exp2": ("exp2", "u10"),
    "math.expm1": ("expm1", "u10"),
    "math.log": ("log", "u10"),
    "math.log2": ("log2", "u10"),
    "math.log10": ("log10", "u10"),
    "math.log1p": ("log1p", "u10"),
    "math.tanh": ("tanh", "u10"),
    "math.sinh": ("sinh", "u10"),
    "math.cosh": ("cosh", "u10"),
    "math.sin": ("sin", "u10"),
    "math.cos": ("cos", "u10"),
    "math.tan": ("tan", "u10"),
    "math.asin": ("asin", "u10"),
    "math.acos": ("acos", "u10"),
    "math.atan": ("atan", "u10"),
    "math.atanh": ("atanh", "u10"),
    "math.erf": ("erf", "u10"),
    "math.erfc": ("erfc", "u15"),
    "math.cbrt": ("cbrt", "u10"),
    "math.powf": ("pow", "u10"),
    "math.atan2": ("atan2", "u10"),
}


@functools.cache
def host_vector_bits() -> tuple[int, ...]:
    """SLEEF vector widths (bits) the host can run, widest first."""
    import llvmlite.binding as llvm

    features = llvm.get_host_cpu_features()
    widths = []
    if features.get("avx512f", False):
        widths.append(512)
    if features.get("avx2", False) or features.get("avx", False):
        widths.append(256)
    return tuple(widths)


def sleef_name(op_name: str, elem: ir.Type, lanes: int) -> str:
    stem, ulp = SLEEF_FUNCTIONS[op_name]
    kind = "f" if isinstance(elem, ir.F32Type) else "d"
    return f"Sleef_{stem}{kind}{lanes}_{ulp}"


def _chunk_lanes(count: int, elem_bits: int) -> int | None:
    """A SLEEF width that divides `count`, else the narrowest (its last chunk is padded)."""
    widths = [bits // elem_bits for bits in host_vector_bits()]
    for lanes in widths:
        if count % lanes == 0:
            return lanes
    return widths[-1] if widths else None


def _declare(module: ir.Operation, name: str, arity: int, vtype: ir.Type) -> None:
    table = ir.SymbolTable(module)
    if name in table:
        return
    with ir.InsertionPoint(module.regions[0].blocks[0]):
        decl = func.FuncOp(name, ir.FunctionType.get([vtype] * arity, [vtype]), visibility="private")
    # SLEEF functions are pure: LLVM may CSE, hoist and drop their calls (a row's
    # log(sum) in log_softmax was computed once per peeled part of the row).
    decl.attributes["llvm.readnone"] = ir.UnitAttr.get()
    decl.attributes["passthrough"] = ir.ArrayAttr.get([ir.StringAttr.get("nounwind"), ir.StringAttr.get("willreturn")])


def _splat(vtype: ir.VectorType, value: float) -> ir.Value:
    return arith.constant(vtype, ir.DenseElementsAttr.get_splat(vtype, ir.FloatAttr.get(vtype.element_type, value)))


def _rewrite(module: ir.Operation, op: ir.Operation, lanes: int) -> None:
    vtype = ir.VectorType(op.results[0].type)
    elem, count = vtype.element_type, functools.reduce(lambda a, b: a * b, vtype.shape, 1)
    flat_t = ir.VectorType.get([count], elem)
    chunk_t = ir.VectorType.get([lanes], elem)
    name = sleef_name(op.name, elem, lanes)
    _declare(module, name, len(op.operands), chunk_t)
    single = count <= lanes
    with ir.InsertionPoint(op), op.location:
        flat_args = [v if vtype.rank == 1 else vector.shape_cast(flat_t, v) for v in op.operands]
        result = None if single else _splat(flat_t, 0.0)
        for start in range(0, count, lanes):
            width = min(lanes, count - start)
            part_t = ir.VectorType.get([width], elem)
            args = (
                flat_args
                if single
                else [vector.extract_strided_slice(part_t, a, [start], [width], [1]) for a in flat_args]
            )
            if width < lanes:
                # A partial chunk (a peeled loop tail) padded with ones, which every
                # function here takes without a fault, rather than left to libm's
                # scalar calls or math-expand-ops' less exact forms.
                args = [vector.insert_strided_slice(a, _splat(chunk_t, 1.0), [0], [1]) for a in args]
            value = func.call([chunk_t], ir.FlatSymbolRefAttr.get(name), args)
            if width < lanes:
                value = vector.extract_strided_slice(part_t, value, [0], [width], [1])
            result = value if single else vector.insert_strided_slice(value, result, [start], [1])
        if vtype.rank != 1:
            result = vector.shape_cast(vtype, result)
    op.results[0].replace_all_uses_with(result)
    erase_op(op)


def _candidates(module: ir.Operation) -> list[tuple[ir.Operation, int]]:
    found: list[tuple[ir.Operation, int]] = []

    def walk(op: ir.Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    o = inner.operation
                    if o.name in SLEEF_FUNCTIONS and isinstance(o.results[0].type, ir.VectorType):
                        vtype = ir.VectorType(o.results[0].type)
                        elem = vtype.element_type
                        if isinstance(elem, ir.F32Type) or isinstance(elem, ir.F64Type):
                            count = functools.reduce(lambda a, b: a * b, vtype.shape, 1)
                            lanes = _chunk_lanes(count, 32 if isinstance(elem, ir.F32Type) else 64)
                            if lanes is not None and not vtype.scalable:
                                found.append((o, lanes))
                    walk(o)

    walk(module)
    return found


# erf(|x|) = 1 - t * P(t) * exp(-x^2), t = 1 / (1 + p |x|): Abramowitz & Stegun 7.1.26
# (absolute error below 1.5e-7), the form ATen's vectorized float erf uses.  SLEEF's
# erff costs about three times as much per vector, which made GELU slower than eager.
ERF_P = 0.3275911
ERF_COEFFS = (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)
# Below |x| = 0.5 that form loses all relative accuracy (1 - t P(t) exp(-x^2) cancels):
# the Maclaurin series 2/sqrt(pi) sum (-1)^k x^(2k+1) / (k! (2k+1)) is used there,
# exact to float32 rounding with these seven terms.
ERF_SMALL = 0.5
ERF_SERIES = tuple(2 / math.sqrt(math.pi) * (-1) ** k / (math.factorial(k) * (2 * k + 1)) for k in range(7))


# exp(y) inline: y = n ln2 + r with |r| <= ln2/2, exp(r) by its Taylor series to r^7
# (relative error below 1e-8), times 2^n built in the exponent bits.
LN2_HI, LN2_LO = 0.693145751953125, 1.428606765330187e-06  # ln 2 = hi + lo, hi exact in 12 bits
EXP_TAYLOR = tuple(1 / math.factorial(k) for k in range(8))
EXP_FLOOR = -87.0  # exp(-87) is still a normal float: 2^n needs one multiply (erf, tanh)
# The whole float range: exp(-104) rounds to 0 and exp(89) overflows; 2^n for n in
# [-150, 129] is two normal powers of two, so denormal results round once.
EXP_LOW, EXP_HIGH = -104.0, 89.0


def _splatter(vtype: ir.VectorType) -> Callable[[float], ir.Value]:
    def splat(value: float) -> ir.Value:
        attr = ir.DenseElementsAttr.get_splat(vtype, ir.FloatAttr.get(vtype.element_type, value))
        return arith.constant(vtype, attr)

    return splat


def _horner(x: ir.Value, coeffs: tuple[float, ...], splat: Callable[[float], ir.Value]) -> ir.Value:
    """sum(coeffs[k] * x^k), lowest degree first, as Horner steps of fused multiply-adds
    (LLVM does not contract a separate mul and add on its own)."""
    value = splat(coeffs[-1])
    for coeff in reversed(coeffs[:-1]):
        value = math_d.fma(value, x, splat(coeff))
    return value


def _inline_exp(y: ir.Value, vtype: ir.VectorType, full_range: bool = False) -> ir.Value:
    """exp(y); without full_range only for y <= 0, where exp(y) >= exp(EXP_FLOOR) or is
    not needed.  A NaN y gives NaN with full_range and an unspecified value without."""
    splat = _splatter(vtype)
    # select(y > low) rather than maximumf: one vmaxps, and a NaN becomes `low`, so
    # fptosi below never sees a NaN (its result would be poison).
    low = splat(EXP_LOW if full_range else EXP_FLOOR)
    clamped = arith.select(arith.cmpf(arith.CmpFPredicate.OGT, y, low), y, low)
    if full_range:
        below_high = arith.cmpf(arith.CmpFPredicate.OLT, clamped, splat(EXP_HIGH))
        clamped = arith.select(below_high, clamped, splat(EXP_HIGH))
    n = math_d.floor(math_d.fma(clamped, splat(1 / math.log(2)), splat(0.5)))
    r = math_d.fma(n, splat(-LN2_HI), clamped)
    r = math_d.fma(n, splat(-LN2_LO), r)
    poly = _horner(r, EXP_TAYLOR, splat)
    i32 = ir.VectorType.get(vtype.shape, ir.IntegerType.get_signless(32))

    def ints(value: int) -> ir.Value:
        return arith.constant(i32, ir.DenseElementsAttr.get_splat(i32, ir.IntegerAttr.get(i32.element_type, value)))

    def pow2(exponent: ir.Value) -> ir.Value:
        return arith.bitcast(vtype, arith.shli(arith.addi(exponent, ints(127)), ints(23)))

    exponent = arith.fptosi(i32, n)
    if not full_range:
        return arith.mulf(poly, pow2(exponent))
    half = arith.shrsi(exponent, ints(1))
    result = arith.mulf(arith.mulf(poly, pow2(half)), pow2(arith.subi(exponent, half)))
    return arith.select(arith.cmpf(arith.CmpFPredicate.UNO, y, y), y, result)


def _expand_f32_vector_exp(op: ir.Operation) -> None:
    vtype = ir.VectorType(op.results[0].type)
    with ir.InsertionPoint(op), op.location:
        result = _inline_exp(op.operands[0], vtype, full_range=True)
    op.results[0].replace_all_uses_with(result)
    erase_op(op)


def _expand_f32_vector_erf(op: ir.Operation) -> None:
    vtype = ir.VectorType(op.results[0].type)
    splat = _splatter(vtype)
    with ir.InsertionPoint(op), op.location:
        x = op.operands[0]
        ax = math_d.absf(x)
        # Horner steps as fused multiply-adds, as ATen's vectorized erf computes them.
        t = arith.divf(splat(1.0), math_d.fma(splat(ERF_P), ax, splat(1.0)))
        poly = _horner(t, ERF_COEFFS[::-1], splat)
        x2 = arith.mulf(x, x)
        gauss = _inline_exp(arith.negf(x2), vtype)
        erf_abs = arith.subf(splat(1.0), arith.mulf(arith.mulf(poly, t), gauss))
        result = math_d.copysign(erf_abs, x)
        if not _only_added_to_one(op):
            series = _horner(x2, ERF_SERIES, splat)
            small = arith.cmpf(arith.CmpFPredicate.OLT, ax, splat(ERF_SMALL))
            result = arith.select(small, arith.mulf(series, x), result)
    op.results[0].replace_all_uses_with(result)
    erase_op(op)


# tanh(x) = x + x^3 P(x^2) below |x| = TANH_SMALL, a near-minimax fit (relative error
# 1e-9, far under float32's rounding); above it sign(x) (1 - e) / (1 + e) with
# e = exp(-2|x|) <= 0.33 from the inline exp, where nothing cancels.  About 1.5 ulp
# against SLEEF's 1.0, at under half its cost: SLEEF's tanhf works in double-float
# pairs, and it was most of the elementwise chain's time.
TANH_SMALL = 0.55
TANH_POLY = (
    -0.33333317559598646,
    0.13332586135774438,
    -0.05385230959753746,
    0.021071677653794037,
    -0.0062742373863051565,
)


def _expand_f32_vector_tanh(op: ir.Operation) -> None:
    vtype = ir.VectorType(op.results[0].type)
    splat = _splatter(vtype)
    with ir.InsertionPoint(op), op.location:
        x = op.operands[0]
        ax = math_d.absf(x)
        x2 = arith.mulf(x, x)
        poly = _horner(x2, TANH_POLY, splat)
        small = math_d.fma(arith.mulf(x2, ax), poly, ax)
        e = _inline_exp(arith.mulf(ax, splat(-2.0)), vtype)
        large = arith.divf(arith.subf(splat(1.0), e), arith.addf(splat(1.0), e))
        # Unordered-or-less: a NaN takes the polynomial, which keeps it NaN.
        near_zero = arith.cmpf(arith.CmpFPredicate.ULT, ax, splat(TANH_SMALL))
        # tanh of |x|, then x's sign: tanh(-0.0) is -0.0, as eager's.
        result = math_d.copysign(arith.select(near_zero, small, large), x)
    op.results[0].replace_all_uses_with(result)
    erase_op(op)


def _only_added_to_one(op: ir.Operation) -> bool:
    """Is every use `erf(x) + 1` (GELU's)?  Then the rational form's absolute error
    is all that shows, and the small-|x| series (a third of GELU's time) is not needed;
    ATen's GELU computes this form alone."""
    uses = list(op.results[0].uses)
    return bool(uses) and all(_is_plus_one(use.owner.operation) for use in uses)


def _is_plus_one(user: ir.Operation) -> bool:
    if user.name != "arith.addf":
        return False
    for operand in user.operands:
        owner = operand.owner
        if not isinstance(owner, ir.Block) and owner.operation.name == "arith.constant":
            value = owner.operation.attributes["value"]
            if isinstance(value, ir.DenseFPElementsAttr) and value.is_splat:
                return ir.FloatAttr(value.get_splat_value()).value == 1.0
    return False


# f32 vector ops expanded inline instead of calling SLEEF.
INLINE_F32: dict[str, Callable[[ir.Operation], None]] = {
    "math.exp": _expand_f32_vector_exp,
    "math.erf": _expand_f32_vector_erf,
    "math.tanh": _expand_f32_vector_tanh,
}


def _inline_f32_candidates(module: ir.Operation) -> list[ir.Operation]:
    return [
        op
        for op in nested_ops(module)
        if op.name in INLINE_F32
        and isinstance(op.results[0].type, ir.VectorType)
        and isinstance(ir.VectorType(op.results[0].type).element_type, ir.F32Type)
    ]


# Scalar ops that convert-math-to-llvm would expand badly: expm1 as exp(x) - 1, which
# is 0 for tiny x (a one-element tensor's kernel is scalar).  libm's are exact there.
# (log1p as log(1 + x) is switched off with that pass's approximate-log1p=0.)
LIBM_SCALAR: dict[str, str] = {"math.expm1": "expm1"}


def _scalar_libm_call(module: ir.Operation, op: ir.Operation) -> None:
    """`op` on a scalar becomes libm's function; half types compute in f32, as
    math-extend-to-supported-types would have them."""
    elem, f32 = op.results[0].type, ir.F32Type.get()
    wide = elem if isinstance(elem, ir.F64Type) else f32
    name = LIBM_SCALAR[op.name] + ("" if isinstance(elem, ir.F64Type) else "f")
    _declare(module, name, len(op.operands), wide)
    with ir.InsertionPoint(op), op.location:
        args = [v if v.type == wide else arith.extf(wide, v) for v in op.operands]
        value = func.call([wide], ir.FlatSymbolRefAttr.get(name), args)
        if wide != elem:
            value = arith.truncf(elem, value)
    op.results[0].replace_all_uses_with(value)
    erase_op(op)


def _scalar_libm_candidates(module: ir.Operation) -> list[ir.Operation]:
    return [op for op in nested_ops(module) if op.name in LIBM_SCALAR and shapes.is_float(op.results[0].type)]


@register_pass(
    "mlirc-cpu-vector-math",
    "Vector math ops -> inline f32 exp/tanh/erf, SLEEF vector calls for the rest; scalar expm1 -> libm",
)
def cpu_vector_math(module: ir.Operation) -> None:
    for op in _inline_f32_candidates(module):
        INLINE_F32[op.name](op)
    for op, lanes in _candidates(module):
        _rewrite(module, op, lanes)
    for op in _scalar_libm_candidates(module):
        _scalar_libm_call(module, op)
