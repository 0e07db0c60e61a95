"""Scalar bodies of elementwise ops: one small function per (op, float|int) pattern.

Used inside linalg.generic regions by `lower_to_linalg`.  Semantics follow torch:
NaN-propagating maximum/minimum, Python-style remainder, round half to even,
`ne` true for NaN.
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, math

from mlirc.dialects import shapes
from mlirc.errors import UnsupportedOpError
from mlirc.passes.base.special_math import SPECIAL_FLOAT_BODIES

Body = Callable[..., ir.Value]


def const(elem: ir.Type, value: float | int) -> ir.Value:
    if shapes.is_float(elem):
        return arith.ConstantOp(elem, ir.FloatAttr.get(elem, float(value))).result
    return arith.ConstantOp(elem, ir.IntegerAttr.get(elem, int(value))).result


def _float_sign(x: ir.Value) -> ir.Value:
    """ATen's (0 < x) - (x < 0): NaN and -0.0 give +0.0."""
    zero, one = const(x.type, 0), const(x.type, 1)
    neg = arith.select(arith.cmpf(arith.CmpFPredicate.OLT, x, zero), arith.negf(one), zero)
    return arith.select(arith.cmpf(arith.CmpFPredicate.OGT, x, zero), one, neg)


def _int_sign(x: ir.Value) -> ir.Value:
    zero, one = const(x.type, 0), const(x.type, 1)
    neg = arith.select(arith.cmpi(arith.CmpIPredicate.slt, x, zero), const(x.type, -1), zero)
    return arith.select(arith.cmpi(arith.CmpIPredicate.sgt, x, zero), one, neg)


def _float_remainder(a: ir.Value, b: ir.Value) -> ir.Value:
    # fmod's sign is a's, zeros included (NVPTX's frem loses a -0.0)
    r = math.copysign(arith.remf(a, b), a)
    zero = const(a.type, 0)
    fix = arith.andi(
        arith.cmpf(arith.CmpFPredicate.ONE, r, zero),
        arith.xori(arith.cmpf(arith.CmpFPredicate.OLT, r, zero), arith.cmpf(arith.CmpFPredicate.OLT, b, zero)),
    )
    return arith.select(fix, arith.addf(r, b), r)


def _safe_divisor(b: ir.Value) -> ir.Value:
    """x86 traps on a division by 0 and on INT_MIN / -1.  Divide by 1 there: a zero
    divisor is eager's ZeroDivisionError, raised by a run-time check
    (mlirc.frontend.lowerings.checks), and the -1 cases are fixed by the callers."""
    trapping = arith.ori(
        arith.cmpi(arith.CmpIPredicate.eq, b, const(b.type, 0)),
        arith.cmpi(arith.CmpIPredicate.eq, b, const(b.type, -1)),
    )
    return arith.select(trapping, const(b.type, 1), b)


def _int_quotient(divide: Body) -> Body:
    """a / -1 is -a, wrapping at INT_MIN as eager's does; a % -1 is 0, which the
    division by 1 of `_safe_divisor` already gives."""

    def body(a: ir.Value, b: ir.Value) -> ir.Value:
        quotient = divide(a, _safe_divisor(b))
        by_minus_one = arith.cmpi(arith.CmpIPredicate.eq, b, const(b.type, -1))
        return arith.select(by_minus_one, arith.subi(const(a.type, 0), quotient), quotient)

    return body


def _int_remainder(a: ir.Value, b: ir.Value) -> ir.Value:
    b = _safe_divisor(b)
    r = arith.remsi(a, b)
    zero = const(a.type, 0)
    fix = arith.andi(
        arith.cmpi(arith.CmpIPredicate.ne, r, zero),
        arith.xori(arith.cmpi(arith.CmpIPredicate.slt, r, zero), arith.cmpi(arith.CmpIPredicate.slt, b, zero)),
    )
    return arith.select(fix, arith.addi(r, b), r)


def _float_floor_div(a: ir.Value, b: ir.Value) -> ir.Value:
    """torch's div_floor_floating: floor((a - fmod(a, b)) / b) with its corrections.
    Its `!= 0` tests are C++'s, true for NaN (UNE), so NaN and inf inputs give NaN."""
    mod = arith.remf(a, b)
    zero, one, half = const(a.type, 0), const(a.type, 1), const(a.type, 0.5)
    div = arith.divf(arith.subf(a, mod), b)
    adjust = arith.andi(
        arith.cmpf(arith.CmpFPredicate.UNE, mod, zero),
        arith.xori(arith.cmpf(arith.CmpFPredicate.OLT, b, zero), arith.cmpf(arith.CmpFPredicate.OLT, mod, zero)),
    )
    div = arith.select(adjust, arith.subf(div, one), div)
    floored = math.floor(div)
    floored = arith.select(
        arith.cmpf(arith.CmpFPredicate.OGT, arith.subf(div, floored), half), arith.addf(floored, one), floored
    )
    nonzero = arith.cmpf(arith.CmpFPredicate.UNE, div, zero)
    result = arith.select(nonzero, floored, math.copysign(zero, arith.divf(a, b)))
    return arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, b, zero), arith.divf(a, b), result)


def _extremum(beyond: str, ties_to_first: bool, ignore_nan: bool = False) -> Body:
    """ATen's maximum/minimum family (`beyond`: OGT for max, OLT for min).  Of two
    equal values (zeros of either sign) maximum/minimum return the second operand
    (their vector code is vmaxps a, b), fmax/fmin and relu the first.  A NaN
    operand is the result, or with `ignore_nan` (fmax, fmin) loses to the other."""
    predicate = getattr(arith.CmpFPredicate, beyond)

    def body(a: ir.Value, b: ir.Value) -> ir.Value:
        if ties_to_first:
            result = arith.select(arith.cmpf(predicate, b, a), b, a)
        else:
            result = arith.select(arith.cmpf(predicate, a, b), a, b)
        a_nan, b_nan = (arith.cmpf(arith.CmpFPredicate.UNO, v, v) for v in (a, b))
        if ignore_nan:
            return arith.select(a_nan, b, arith.select(b_nan, a, result))
        return arith.select(a_nan, a, arith.select(b_nan, b, result))

    return body


LN2 = 0.6931471805599453


def _asinh(x: ir.Value) -> ir.Value:
    """fdlibm's form, exact to a few ulp over the whole range: log1p(|x| + x^2 /
    (1 + sqrt(1 + x^2))), and log|x| + ln 2 past 2^28 where x^2 would overflow (SLEEF's
    vector asinh returns inf beyond 1.8e19).  The sign of x, -0.0 included."""
    ax = math.absf(x)
    one = const(x.type, 1)
    square = arith.mulf(ax, ax)
    near = math.log1p(arith.addf(ax, arith.divf(square, arith.addf(one, math.sqrt(arith.addf(one, square))))))
    far = arith.addf(math.log(ax), const(x.type, LN2))
    return math.copysign(arith.select(arith.cmpf(arith.CmpFPredicate.OGT, ax, const(x.type, 2.0**28)), far, near), x)


def _acosh(x: ir.Value) -> ir.Value:
    """log1p(t + sqrt(2t + t^2)) with t = x - 1 (exact near 1), log x + ln 2 past 2^28,
    NaN below 1."""
    t = arith.subf(x, const(x.type, 1))
    near = math.log1p(arith.addf(t, math.sqrt(arith.addf(arith.addf(t, t), arith.mulf(t, t)))))
    far = arith.addf(math.log(x), const(x.type, LN2))
    result = arith.select(arith.cmpf(arith.CmpFPredicate.OGT, x, const(x.type, 2.0**28)), far, near)
    return arith.select(arith.cmpf(arith.CmpFPredicate.OLT, x, const(x.type, 1)), const(x.type, float("nan")), result)


def _square_and_multiply(a: ir.Value, b: ir.Value) -> ir.Value:
    """a ** b for b >= 0, wrapping as eager's: one step per bit of b, unrolled (Triton
    has no math.ipowi; LLVM folds the steps away for a constant exponent)."""
    result, base = const(a.type, 1), a
    one = const(b.type, 1)
    for bit in range(ir.IntegerType(b.type).width - 1):
        set_here = arith.cmpi(
            arith.CmpIPredicate.ne, arith.andi(arith.shrsi(b, const(b.type, bit)), one), const(b.type, 0)
        )
        result = arith.select(set_here, arith.muli(result, base), result)
        base = arith.muli(base, base)
    return result


def _int_pow(a: ir.Value, b: ir.Value) -> ir.Value:
    """ATen's integer pow: a negative exponent gives 1 for a base of 1, +-1 for -1 and
    0 otherwise (math.ipowi would divide by a zero base there)."""
    zero, one = const(b.type, 0), const(a.type, 1)
    negative = arith.cmpi(arith.CmpIPredicate.slt, b, zero)
    power = _square_and_multiply(a, arith.select(negative, zero, b))
    odd = arith.cmpi(arith.CmpIPredicate.ne, arith.andi(b, const(b.type, 1)), const(b.type, 0))
    minus_one = arith.select(odd, const(a.type, -1), one)
    inverse = arith.select(arith.cmpi(arith.CmpIPredicate.eq, a, const(a.type, -1)), minus_one, const(a.type, 0))
    inverse = arith.select(arith.cmpi(arith.CmpIPredicate.eq, a, one), one, inverse)
    return arith.select(negative, inverse, power)


def _atan2(a: ir.Value, b: ir.Value) -> ir.Value:
    """atan2 with both zeros spelled out: MLIR folds a constant atan2(0, 0) to NaN,
    where libm (and eager) give +-0 or +-pi by the signs."""
    zero = const(a.type, 0)
    both_zero = arith.andi(arith.cmpf(arith.CmpFPredicate.OEQ, a, zero), arith.cmpf(arith.CmpFPredicate.OEQ, b, zero))
    b_negative = _float_signbit(b)
    at_zero = math.copysign(arith.select(b_negative, const(a.type, 3.141592653589793), zero), a)
    return arith.select(both_zero, at_zero, math.atan2(a, b))


def _sigmoid(x: ir.Value) -> ir.Value:
    one = const(x.type, 1)
    return arith.divf(one, arith.addf(one, math.exp(arith.negf(x))))


def _float_isinf(x: ir.Value) -> ir.Value:
    return arith.cmpf(arith.CmpFPredicate.OEQ, math.absf(x), const(x.type, float("inf")))


def _float_signbit(x: ir.Value) -> ir.Value:
    """The sign bit itself: true for -0.0 and for a NaN with its sign set."""
    if not isinstance(x.type, (ir.F32Type, ir.F64Type)):
        x = arith.extf(ir.F32Type.get(), x)  # keeps the sign of zeros and NaNs
    width = 64 if isinstance(x.type, ir.F64Type) else 32
    bits = arith.bitcast(ir.IntegerType.get_signless(width), x)
    return arith.cmpi(arith.CmpIPredicate.slt, bits, const(bits.type, 0))


def _float_nextafter(x: ir.Value, y: ir.Value) -> ir.Value:
    """The next float after x towards y: one step of the bit pattern, which is
    monotonic in magnitude; from zero, the smallest subnormal with y's sign."""
    bits_type = ir.IntegerType.get_signless(_float_width(x.type))
    bits = arith.bitcast(bits_type, x)
    zero = const(x.type, 0)
    away = arith.xori(_fcmp("OLT")(x, y), _fcmp("OGT")(x, zero))  # 0: the magnitude grows
    step = arith.select(away, const(bits_type, -1), const(bits_type, 1))
    result = arith.bitcast(x.type, arith.addi(bits, step))
    tiny = math.copysign(arith.bitcast(x.type, const(bits_type, 1)), y)
    result = arith.select(_fcmp("OEQ")(x, zero), tiny, result)
    result = arith.select(_fcmp("OEQ")(x, y), y, result)
    return arith.select(_fcmp("UNO")(x, y), arith.addf(x, y), result)


def _fcmp(pred: str) -> Body:
    return lambda a, b: arith.cmpf(getattr(arith.CmpFPredicate, pred), a, b)


def _icmp(pred: str) -> Body:
    return lambda a, b: arith.cmpi(getattr(arith.CmpIPredicate, pred), a, b)


FLOAT_BODIES: dict[str, Body] = {
    "neg": arith.negf, "abs": math.absf, "exp": math.exp, "exp2": math.exp2, "expm1": math.expm1,
    "log": math.log, "log2": math.log2, "log10": math.log10, "log1p": math.log1p, "sqrt": math.sqrt,
    "rsqrt": math.rsqrt, "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin,
    "acos": math.acos, "atan": math.atan, "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh,
    "asinh": _asinh, "acosh": _acosh, "atanh": math.atanh, "erf": math.erf, "erfc": math.erfc, "floor": math.floor,
    "ceil": math.ceil, "round": math.roundeven, "trunc": math.trunc, "sign": _float_sign,
    "reciprocal": lambda x: arith.divf(const(x.type, 1), x), "sigmoid": _sigmoid,
    "relu": lambda x: _extremum("OGT", ties_to_first=True)(x, const(x.type, 0)),
    "isnan": lambda x: arith.cmpf(arith.CmpFPredicate.UNO, x, x), "isinf": _float_isinf,
    "add": arith.addf, "sub": arith.subf, "mul": arith.mulf, "div": arith.divf, "floor_div": _float_floor_div,
    "remainder": _float_remainder, "fmod": lambda a, b: math.copysign(arith.remf(a, b), a), "pow": math.powf, "maximum": _extremum("OGT", False),
    "minimum": _extremum("OLT", False), "fmax": _extremum("OGT", True, True), "fmin": _extremum("OLT", True, True),
    "atan2": _atan2,
    "eq": _fcmp("OEQ"), "ne": _fcmp("UNE"), "lt": _fcmp("OLT"), "le": _fcmp("OLE"), "gt": _fcmp("OGT"), "ge": _fcmp("OGE"),
    "signbit": _float_signbit,
    "nextafter": _float_nextafter,
    **SPECIAL_FLOAT_BODIES,
}  # fmt: skip

INT_BODIES: dict[str, Body] = {
    "neg": lambda x: arith.subi(const(x.type, 0), x), "abs": math.absi, "sign": _int_sign,
    "floor": lambda x: x, "ceil": lambda x: x, "round": lambda x: x, "trunc": lambda x: x,
    "relu": lambda x: arith.maxsi(x, const(x.type, 0)),
    "isnan": lambda x: const(ir.IntegerType.get_signless(1), 0),
    "isinf": lambda x: const(ir.IntegerType.get_signless(1), 0),
    "bitwise_not": lambda x: arith.xori(x, const(x.type, -1)),
    "logical_not": lambda x: arith.xori(x, const(x.type, 1)),
    "add": arith.addi, "sub": arith.subi, "mul": arith.muli,
    "div": _int_quotient(arith.divsi), "floor_div": _int_quotient(arith.floordivsi),
    "remainder": _int_remainder, "fmod": lambda a, b: arith.remsi(a, _safe_divisor(b)),
    "pow": _int_pow, "maximum": arith.maxsi, "minimum": arith.minsi, "fmax": arith.maxsi, "fmin": arith.minsi,
    "signbit": lambda x: arith.cmpi(arith.CmpIPredicate.slt, x, const(x.type, 0)),
    "bitwise_and": arith.andi, "bitwise_or": arith.ori, "bitwise_xor": arith.xori,
    "logical_and": arith.andi, "logical_or": arith.ori, "logical_xor": arith.xori,
    "eq": _icmp("eq"), "ne": _icmp("ne"), "lt": _icmp("slt"), "le": _icmp("sle"), "gt": _icmp("sgt"), "ge": _icmp("sge"),
}  # fmt: skip

# On i1, max/min are or/and and ordering compares are unsigned (true > false).
BOOL_BODIES: dict[str, Body] = {
    **INT_BODIES,
    "maximum": arith.ori, "minimum": arith.andi, "fmax": arith.ori, "fmin": arith.andi,
    "signbit": lambda x: const(ir.IntegerType.get_signless(1), 0),
    "lt": _icmp("ult"), "le": _icmp("ule"), "gt": _icmp("ugt"), "ge": _icmp("uge"),
}  # fmt: skip


# Where eager's CUDA kernels differ from its CPU ones: fmaxf/fminf-style extrema,
# which give +0.0 for any tie of zeros (CPU: one operand, sign and all).
CUDA_FLOAT_BODIES: dict[str, Body] = {
    "maximum": arith.maximumf, "minimum": arith.minimumf, "fmax": arith.maxnumf, "fmin": arith.minnumf,
    "relu": lambda x: arith.maximumf(x, const(x.type, 0)),
}  # fmt: skip


def scalar_body(name: str, operand_elem: ir.Type, target: str = "cpu") -> Body:
    if shapes.is_float(operand_elem) and target == "cuda" and name in CUDA_FLOAT_BODIES:
        return CUDA_FLOAT_BODIES[name]
    if shapes.is_float(operand_elem):
        table = FLOAT_BODIES
    elif shapes.is_bool(operand_elem):
        table = BOOL_BODIES
    else:
        table = INT_BODIES
    body = table.get(name)
    if body is None:
        raise UnsupportedOpError(f"mlirc.{name}", f"no scalar lowering for element type {operand_elem}")
    return body


def convert_scalar(x: ir.Value, dst: ir.Type) -> ir.Value:
    """torch's casting rules between float, signed int and bool scalars."""
    src = x.type
    if src == dst:
        return x
    src_float, dst_float = shapes.is_float(src), shapes.is_float(dst)
    f32 = ir.F32Type.get()
    if dst_float and _float_width(dst) == 16 and src != f32:
        # torch converts to half types through float (c10::Half(float)); LLVM would
        # call compiler-rt (__truncdfhf2, ...) which this process may not have.
        return convert_scalar(convert_scalar(x, f32), dst)
    if shapes.is_bool(dst):
        if src_float:
            return arith.cmpf(arith.CmpFPredicate.UNE, x, const(src, 0))
        return arith.cmpi(arith.CmpIPredicate.ne, x, const(src, 0))
    if src_float and dst_float:
        wider = _float_width(dst) > _float_width(src)
        return arith.extf(dst, x) if wider else arith.truncf(dst, x)
    if src_float:
        return arith.fptosi(dst, x)
    if dst_float:
        return arith.uitofp(dst, x) if shapes.is_bool(src) else arith.sitofp(dst, x)
    src_w, dst_w = ir.IntegerType(src).width, ir.IntegerType(dst).width
    if dst_w > src_w:
        return arith.extui(dst, x) if shapes.is_bool(src) else arith.extsi(dst, x)
    return arith.trunci(dst, x)


def _float_width(t: ir.Type) -> int:
    return {ir.F16Type: 16, ir.BF16Type: 16, ir.F32Type: 32, ir.F64Type: 64}[type(ir.Type(t).maybe_downcast())]
