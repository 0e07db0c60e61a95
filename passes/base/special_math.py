"""Scalar bodies of special functions: lgamma, digamma, trigamma, erfinv, erfcx, the
modified Bessel functions I0/I1 (plain and exponentially scaled), hypot, copysign.

Each body computes in float64 whatever the element type and rounds back once, so
float32 results are as close as float32 can be and float64 results stay within
torch's float64 tolerances.  Every algorithm is loop-free -- series unrolled to a
fixed length, branches as selects -- so that the same linalg body vectorizes on the
CPU and lowers to Triton tiles on the GPU.  Edge values (poles, infinities, NaN)
follow torch's `aten/src/ATen/native/Math.h`.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, math

Body = Callable[..., ir.Value]

# Lanczos approximation, g = 7, n = 9 (Godfrey's coefficients): Gamma to ~1e-15.
LANCZOS = (
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
    12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
)  # fmt: skip
# digamma's asymptotic series in 1/x^2 (Bernoulli numbers B2k / 2k), highest power first.
DIGAMMA_SERIES = (
    8.33333333333333333333e-2, -2.10927960927960927961e-2, 7.57575757575757575758e-3, -4.16666666666666666667e-3,
    3.96825396825396825397e-3, -8.33333333333333333333e-3, 8.33333333333333333333e-2,
)  # fmt: skip
# Giles' single-precision erfinv approximation: a start for Newton's method.
ERFINV_CENTRAL = (
    2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
    -0.00417768164, 0.246640727, 1.50140941,
)  # fmt: skip
ERFINV_TAIL = (
    -0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
    0.00943887047, 1.00167406, 2.83297682,
)  # fmt: skip
# Hurwitz zeta's Euler-Maclaurin tail: (2k)! / B_2k (cephes' zeta.c table).
ZETA_TAIL = (
    12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
    -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
    1.8152105401943546773e17, -7.1661652561756670113e18,
)  # fmt: skip
ZETA_SHIFTS = 9  # terms summed before the tail, as cephes does for q > 0
MACHEP = 1.11022302462515654042e-16  # cephes' convergence threshold (2^-53)
# Abramowitz & Stegun 26.2.23: the normal quantile's tail to 4.5e-4, a start for Newton.
NDTRI_NUMERATOR = (0.010328, 0.802853, 2.515517)
NDTRI_DENOMINATOR = (0.001308, 0.189269, 1.432788, 1.0)
BESSEL_SERIES_TERMS = 60  # the power series is exact to 1 ulp up to |x| = 20 with 60 terms
BESSEL_ASYMPTOTIC_TERMS = 20  # and the asymptotic series from 20 on with 20
BESSEL_SWITCH = 20.0
ERFCX_SWITCH = 26.0  # erfc underflows past ~26.5: the asymptotic series takes over
INF = float("inf")


# ---------------------------------------------------------------- float64 helpers


def _f64() -> ir.Type:
    return ir.F64Type.get()


def c(value: float, like: ir.Value | None = None) -> ir.Value:
    """A float64 constant, or one of `like`'s type."""
    t = _f64() if like is None else like.type
    return arith.ConstantOp(t, ir.FloatAttr.get(t, value)).result


def _lt(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.cmpf(arith.CmpFPredicate.OLT, a, b)


def _le(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.cmpf(arith.CmpFPredicate.OLE, a, b)


def _eq(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.cmpf(arith.CmpFPredicate.OEQ, a, b)


def _horner(coefficients: tuple[float, ...], x: ir.Value) -> ir.Value:
    result = c(coefficients[0])
    for coefficient in coefficients[1:]:
        result = arith.addf(arith.mulf(result, x), c(coefficient))
    return result


def _is_inf(x: ir.Value) -> ir.Value:
    return _eq(math.absf(x), c(INF))


def _sin_pi_abs(x: ir.Value) -> ir.Value:
    """|sin(pi x)|, exact in its argument: x - round(x) loses nothing."""
    return math.absf(math.sin(arith.mulf(c(pymath.pi), arith.subf(x, math.roundeven(x)))))


def widened(body: Body, narrow_aware: bool = False) -> Body:
    """`body` on float64 operands, its result rounded to the operands' type.
    Half types go through float32 (as torch converts them), never f64 -> f16.
    A `narrow_aware` body also gets whether torch computes it in float32."""

    def wide(*xs: ir.Value) -> ir.Value:
        t = xs[0].type
        f32 = ir.F32Type.get()

        def up(x: ir.Value) -> ir.Value:
            if isinstance(x.type, ir.F64Type):
                return x
            return arith.extf(_f64(), x if isinstance(x.type, ir.F32Type) else arith.extf(f32, x))

        wide_xs = [up(x) for x in xs]
        result = body(*wide_xs, not isinstance(t, ir.F64Type)) if narrow_aware else body(*wide_xs)
        if isinstance(t, ir.F64Type):
            return result
        narrow = arith.truncf(f32, result)
        return narrow if isinstance(t, ir.F32Type) else arith.truncf(t, narrow)

    return wide


def at_least_float32(body: Body) -> Body:
    """`body` in the operand's precision, but half types in float32 (torch's opmath)."""

    def run(x: ir.Value) -> ir.Value:
        if isinstance(x.type, (ir.F32Type, ir.F64Type)):
            return body(x)
        return arith.truncf(x.type, body(arith.extf(ir.F32Type.get(), x)))

    return run


# ---------------------------------------------------------------- gamma family


def _lanczos_lgamma(z: ir.Value) -> ir.Value:
    """log Gamma(z) for z >= 0.5."""
    z1 = arith.subf(z, c(1.0))
    series = c(LANCZOS[0])
    for i, coefficient in enumerate(LANCZOS[1:], start=1):
        series = arith.addf(series, arith.divf(c(coefficient), arith.addf(z1, c(float(i)))))
    t = arith.addf(z1, c(7.5))
    result = arith.mulf(arith.addf(z1, c(0.5)), math.log(t))
    result = arith.addf(arith.subf(result, t), c(0.5 * pymath.log(2 * pymath.pi)))
    return arith.addf(result, math.log(series))


def lgamma(x: ir.Value) -> ir.Value:
    """log|Gamma(x)|; below 0.5 by reflection: log(pi / |sin(pi x)|) - lgamma(1 - x)."""
    reflect = _lt(x, c(0.5))
    direct = _lanczos_lgamma(arith.select(reflect, arith.subf(c(1.0), x), x))
    # log pi - log|sin(pi x)|: pi / sin(pi x) overflows for a denormal x
    reflected = arith.subf(arith.subf(c(pymath.log(pymath.pi)), math.log(_sin_pi_abs(x))), direct)
    result = arith.select(reflect, reflected, direct)
    pole = arith.andi(_le(x, c(0.0)), _eq(x, math.floor(x)))  # 0, -0.0 and the negative integers
    return arith.select(arith.ori(_is_inf(x), pole), c(INF), result)


def digamma(x: ir.Value) -> ir.Value:
    """torch's calc_digamma: recurrence up to 10, then the asymptotic series;
    below 0 by reflection; a pole (+-inf) at 0 and NaN at negative integers."""
    reflect = _lt(x, c(0.0))
    w = arith.select(reflect, arith.subf(c(1.0), x), x)
    shift = c(0.0)
    for _ in range(10):
        small = _lt(w, c(10.0))
        shift = arith.subf(shift, arith.select(small, arith.divf(c(1.0), w), c(0.0)))
        w = arith.addf(w, arith.select(small, c(1.0), c(0.0)))
    z = arith.divf(c(1.0), arith.mulf(w, w))
    tail = arith.mulf(z, _horner(DIGAMMA_SERIES, z))
    psi = arith.subf(arith.subf(arith.addf(shift, math.log(w)), arith.divf(c(0.5), w)), tail)
    fraction = arith.subf(x, math.trunc(x))
    reflected = arith.subf(psi, arith.divf(c(pymath.pi), math.tan(arith.mulf(c(pymath.pi), fraction))))
    result = arith.select(reflect, reflected, psi)
    negative_integer = arith.andi(reflect, _eq(fraction, c(0.0)))
    result = arith.select(negative_integer, c(float("nan")), result)
    pole = math.copysign(c(INF), arith.negf(x))
    return arith.select(_eq(x, c(0.0)), pole, result)


def trigamma(x: ir.Value) -> ir.Value:
    """torch's calc_trigamma (polygamma of order 1), in the input's own precision
    and with its literal sin(pi x): near the poles torch's answer is that rounding."""

    def k(value: float) -> ir.Value:
        return c(value, like=x)

    reflect = arith.cmpf(arith.CmpFPredicate.OLT, x, k(0.5))
    sin_pi = math.sin(arith.mulf(k(pymath.pi), x))
    result = arith.select(reflect, arith.negf(arith.divf(k(pymath.pi**2), arith.mulf(sin_pi, sin_pi))), k(0.0))
    w = arith.select(reflect, arith.subf(k(1.0), x), x)
    for _ in range(6):
        result = arith.addf(result, arith.divf(k(1.0), arith.mulf(w, w)))
        w = arith.addf(w, k(1.0))
    ixx = arith.divf(k(1.0), arith.mulf(w, w))
    inner = arith.subf(k(1 / 30), arith.mulf(ixx, k(1 / 42)))
    inner = arith.subf(k(1 / 6), arith.mulf(ixx, inner))
    series = arith.addf(arith.addf(k(1.0), arith.divf(k(1.0), arith.mulf(k(2.0), w))), arith.mulf(ixx, inner))
    result = arith.addf(result, arith.divf(series, w))
    return arith.select(reflect, arith.negf(result), result)


def _zeta_positive(s: ir.Value, q: ir.Value) -> ir.Value:
    """Hurwitz zeta(s, q) for q > 0: cephes' Euler-Maclaurin summation, unrolled."""
    minus_s = arith.negf(s)
    total = math.powf(q, minus_s)
    a = q
    b = total
    # cephes returns as soon as a term is below MACHEP of the sum: for a huge s the
    # tail below would be inf * 0 (NaN) where the first terms already say 0, 1 or inf.
    early, done = total, _lt(c(1.0), c(0.0))
    for _ in range(ZETA_SHIFTS):
        a = arith.addf(a, c(1.0))
        b = math.powf(a, minus_s)
        total = arith.addf(total, b)
        small = arith.andi(_lt(arith.mulf(c(-MACHEP), total), b), _lt(b, arith.mulf(c(MACHEP), total)))
        hit = arith.andi(small, arith.xori(done, _lt(c(0.0), c(1.0))))
        early = arith.select(hit, total, early)
        done = arith.ori(done, hit)
    w = a
    total = arith.addf(total, arith.divf(arith.mulf(b, w), arith.subf(s, c(1.0))))
    total = arith.subf(total, arith.mulf(c(0.5), b))
    factor, k = c(1.0), 0.0
    for coefficient in ZETA_TAIL:
        factor = arith.mulf(factor, arith.addf(s, c(k)))
        b = arith.divf(b, w)
        total = arith.addf(total, arith.divf(arith.mulf(factor, b), c(coefficient)))
        factor = arith.mulf(factor, arith.addf(s, c(k + 1)))
        b = arith.divf(b, w)
        k += 2
    return arith.select(done, early, total)


def zeta(s: ir.Value, q: ir.Value) -> ir.Value:
    """Hurwitz zeta as torch's: inf at s = 1 and at non-positive integer q, NaN for
    s < 1 and for q < 0 with s not an integer.  A negative q with an integer s is
    shifted by m = ceil(-q) onto a = q + m in (0, 1]: the m skipped terms are
    (-1)^s (zeta(s, 1 - a) - zeta(s, 1 - a + m)), all three zetas at positive q."""
    positive = _lt(c(0.0), q)
    m = math.ceil(arith.negf(q))
    shifted = arith.addf(q, m)
    mirror = arith.negf(arith.addf(q, arith.subf(m, c(1.0))))  # 1 - (q + m), exactly for tiny q
    safe = arith.select(positive, c(1.0), mirror)  # in (0, 1) for a negative non-integer q
    skipped = arith.subf(_zeta_positive(s, safe), _zeta_positive(s, arith.addf(safe, m)))
    odd = _eq(arith.subf(s, arith.mulf(c(2.0), math.floor(arith.mulf(s, c(0.5))))), c(1.0))
    skipped = arith.select(odd, arith.negf(skipped), skipped)
    negative = arith.addf(skipped, _zeta_positive(s, arith.select(positive, c(1.0), shifted)))
    result = arith.select(positive, _zeta_positive(s, arith.select(positive, q, c(1.0))), negative)
    nan = c(float("nan"))
    non_positive = _le(q, c(0.0))
    s_fraction = arith.cmpf(arith.CmpFPredicate.UNE, s, math.floor(s))
    # A negative q passes within 1/2 of a pole, whose term overflows past s = 1075
    # (cephes then returns inf; the reflection above would subtract infinities).
    huge_s = arith.andi(_lt(q, c(0.0)), _lt(c(1100.0), s))
    result = arith.select(huge_s, c(INF), result)
    result = arith.select(arith.andi(non_positive, s_fraction), nan, result)
    result = arith.select(arith.andi(non_positive, _eq(q, math.floor(q))), c(INF), result)
    result = arith.select(_lt(s, c(1.0)), nan, result)
    return arith.select(_eq(s, c(1.0)), c(INF), result)


def ndtri(p: ir.Value) -> ir.Value:
    """The standard normal quantile: Newton's method on log Phi in the lower half,
    from Abramowitz & Stegun's start; the upper half by symmetry (1 - p is exact)."""
    upper = _lt(c(0.5), p)
    q = arith.select(upper, arith.subf(c(1.0), p), p)
    t = math.sqrt(arith.mulf(c(-2.0), math.log(q)))
    ratio = arith.divf(_horner(NDTRI_NUMERATOR, t), _horner(NDTRI_DENOMINATOR, t))
    x = arith.subf(ratio, t)
    log_q = math.log(q)
    for _ in range(4):
        cdf = arith.mulf(c(0.5), math.erfc(arith.mulf(x, c(-1 / pymath.sqrt(2)))))
        pdf = arith.mulf(c(1 / pymath.sqrt(2 * pymath.pi)), math.exp(arith.mulf(c(-0.5), arith.mulf(x, x))))
        x = arith.subf(x, arith.divf(arith.mulf(arith.subf(math.log(cdf), log_q), cdf), pdf))
    x = arith.select(_eq(q, c(0.0)), c(-INF), x)
    x = arith.select(upper, arith.negf(x), x)
    outside = arith.ori(_lt(p, c(0.0)), _lt(c(1.0), p))
    return arith.select(outside, c(float("nan")), x)


# ---------------------------------------------------------------- error function family


def erfinv(y: ir.Value) -> ir.Value:
    """Giles' start, then Newton steps: on erf in the centre, and on log(erfc) in
    the tails, where erf cannot resolve 1 - |y| but erfc can."""
    a = math.absf(y)
    w = arith.negf(math.log(arith.mulf(arith.subf(c(1.0), a), arith.addf(c(1.0), a))))
    central = _horner(ERFINV_CENTRAL, arith.subf(w, c(2.5)))
    tail = _horner(ERFINV_TAIL, arith.subf(math.sqrt(w), c(3.0)))
    x = arith.mulf(arith.select(_lt(w, c(5.0)), central, tail), a)
    in_tail = _lt(c(0.5), a)
    for _ in range(4):
        slope = arith.mulf(c(2 / pymath.sqrt(pymath.pi)), math.exp(arith.negf(arith.mulf(x, x))))
        head = arith.subf(x, arith.divf(arith.subf(math.erf(x), a), slope))
        erfc = math.erfc(x)
        log_step = arith.mulf(arith.subf(math.log(erfc), math.log(arith.subf(c(1.0), a))), erfc)
        x = arith.select(in_tail, arith.addf(x, arith.divf(log_step, slope)), head)
    x = arith.select(_eq(a, c(1.0)), c(INF), x)
    return math.copysign(x, y)


def erfcx(x: ir.Value) -> ir.Value:
    """exp(x^2) erfc(x), with the asymptotic series where erfc underflows."""
    big = _lt(c(ERFCX_SWITCH), x)
    near = arith.select(big, c(1.0), x)
    direct = arith.mulf(math.exp(arith.mulf(near, near)), math.erfc(near))
    far = arith.select(big, x, c(2 * ERFCX_SWITCH))
    t = arith.divf(c(1.0), arith.mulf(c(2.0), arith.mulf(far, far)))
    term, total = c(1.0), c(1.0)
    for k in range(1, 12):
        term = arith.mulf(arith.negf(term), arith.mulf(c(2.0 * k - 1), t))
        total = arith.addf(total, term)
    asymptotic = arith.divf(total, arith.mulf(far, c(pymath.sqrt(pymath.pi))))
    return arith.select(big, asymptotic, direct)


def spherical_bessel_j0(x: ir.Value) -> ir.Value:
    """sin(x) / x, by its Taylor series below 0.5 (torch's coefficients); 0 at +-inf."""
    x2 = arith.mulf(x, x)
    series = _horner(tuple((-1) ** k / pymath.factorial(2 * k + 1) for k in range(6, -1, -1)), x2)
    direct = arith.divf(math.sin(x), x)
    result = arith.select(_lt(math.absf(x), c(0.5)), series, direct)
    return arith.select(_is_inf(x), c(0.0), result)


# ---------------------------------------------------------------- modified Bessel I0, I1


def _bessel_asymptotic_coefficients(order: int) -> list[float]:
    coefficients = [1.0]
    for k in range(1, BESSEL_ASYMPTOTIC_TERMS):
        coefficients.append(coefficients[-1] * -(4 * order * order - (2 * k - 1) ** 2) / (8 * k))
    return coefficients


def _bessel_series(ax: ir.Value, order: int) -> ir.Value:
    """I_order(ax) = sum_k (ax/2)^(2k+order) / (k! (k+order)!) for ax <= 20."""
    half = arith.mulf(ax, c(0.5))
    h = arith.mulf(half, half)
    term = half if order == 1 else c(1.0)
    total = term
    for k in range(1, BESSEL_SERIES_TERMS):
        term = arith.mulf(term, arith.mulf(h, c(1.0 / (k * (k + order)))))
        total = arith.addf(total, term)
    return total


def _bessel_scaled_asymptotic(ax: ir.Value, order: int) -> ir.Value:
    """exp(-ax) I_order(ax) for ax > 20."""
    inverse = arith.divf(c(1.0), ax)
    total = _horner(tuple(reversed(_bessel_asymptotic_coefficients(order))), inverse)
    # sqrt(2 pi) sqrt(ax): sqrt(2 pi ax) overflows for ax near the largest double
    return arith.divf(total, arith.mulf(c(pymath.sqrt(2 * pymath.pi)), math.sqrt(ax)))


def _bessel(order: int, scaled: bool) -> Body:
    def body(x: ir.Value, in_float32: bool) -> ir.Value:
        ax = math.absf(x)
        small = _le(ax, c(BESSEL_SWITCH))
        series = _bessel_series(arith.select(small, ax, c(0.0)), order)
        asymptotic = _bessel_scaled_asymptotic(arith.select(small, c(2 * BESSEL_SWITCH), ax), order)
        if scaled:
            result = arith.select(small, arith.mulf(series, math.exp(arith.negf(ax))), asymptotic)
        else:  # at +-inf this is 0 * inf = NaN, which is also torch's answer there
            growth = math.exp(ax)
            if in_float32:  # torch's float kernel overflows with exp(x) itself, past 88.7
                growth = arith.extf(_f64(), arith.truncf(ir.F32Type.get(), growth))
            result = arith.select(small, series, arith.mulf(asymptotic, growth))
        if order == 1:  # odd; i1(-0.0) is +0.0, as torch's
            return arith.select(_lt(x, c(0.0)), arith.negf(result), result)
        return result

    return body


# ---------------------------------------------------------------- binary


def hypot(a: ir.Value, b: ir.Value) -> ir.Value:
    """sqrt(a^2 + b^2) without overflow; inf if either is inf (even with a NaN)."""
    a, b = math.absf(a), math.absf(b)
    big, small = arith.maximumf(a, b), arith.minimumf(a, b)
    ratio = arith.divf(small, arith.select(_eq(big, c(0.0)), c(1.0), big))
    result = arith.mulf(big, math.sqrt(arith.addf(c(1.0), arith.mulf(ratio, ratio))))
    return arith.select(arith.ori(_is_inf(a), _is_inf(b)), c(INF), result)


SPECIAL_FLOAT_BODIES: dict[str, Body] = {
    "lgamma": widened(lgamma),
    "digamma": widened(digamma),
    "trigamma": at_least_float32(trigamma),
    "erfinv": widened(erfinv),
    "erfcx": widened(erfcx),
    "spherical_bessel_j0": widened(spherical_bessel_j0),
    "i0": widened(_bessel(0, scaled=False), narrow_aware=True),
    "i0e": widened(_bessel(0, scaled=True), narrow_aware=True),
    "i1": widened(_bessel(1, scaled=False), narrow_aware=True),
    "i1e": widened(_bessel(1, scaled=True), narrow_aware=True),
    "hypot": widened(hypot),
    "zeta": widened(zeta),
    "ndtri": widened(ndtri),
    "copysign": math.copysign,
}
