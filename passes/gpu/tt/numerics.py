"""What a generic's body ops become in a Triton tile, where Triton's own lowering
would not give eager's answer: libdevice calls, products and quotients rounded to
nearest, the identities masked lanes hold, and a ptxas miscompile kept away from
integer min/max (a helper of mlirc-gpu-lower-to-tt's emitter, passes/gpu/tt/tiles.py)."""

from __future__ import annotations

# Math ops Triton does not lower itself (checked against Triton 3.9 for sm_90): calls
# into CUDA's libdevice, `__nv_<name>f` for f32 and `__nv_<name>` for f64.
LIBDEVICE = {
    **{f"math.{n}": n for n in "atan cbrt cosh sinh tan tanh erfc expm1 log10 log1p round trunc".split()},
    **{f"math.{n}": n for n in "acos asin acosh asinh atanh atan2 copysign".split()},
    "math.roundeven": "rint",
    "math.powf": "pow",
    # exact, as eager's ::fmod: NVPTX expands frem as a - trunc(a / b) * b, which
    # overflows (inf) for a tiny divisor
    "arith.remf": "fmod",
}
# Triton lowers these natively in f32 only (fast approximations); in f64 they are
# libdevice calls (special functions compute in f64: passes/base/special_math.py).
LIBDEVICE_F64 = {f"math.{n}": n for n in "exp exp2 log log2 sin cos erf".split()}
# Products and quotients round to nearest, as in eager's one-op kernels: `__nv_fmul_rn`
# (`__nv_dmul_rn` in f64) is a mul.rn that ptxas never contracts into an FMA with its
# user (softmax(a * b) of a 4e29 product: x - max(x) was the product's rounding error,
# exp() of it inf, the row NaN), and Triton's f32 division is div.full, 2 ulp off.
ROUNDED = {"arith.mulf": "mul_rn", "arith.divf": "div_rn"}

_INF = float("inf")
# The combiner's identity: what masked lanes hold, so they never change a row's result.
FLOAT_IDENTITY = {
    "arith.addf": 0.0,
    "arith.mulf": 1.0,
    "arith.maximumf": -_INF,
    "arith.maxnumf": -_INF,
    "arith.minimumf": _INF,
    "arith.minnumf": _INF,
}
INT_IDENTITY = {  # width -> value
    "arith.addi": lambda w: 0,
    "arith.ori": lambda w: 0,
    "arith.xori": lambda w: 0,
    "arith.maxui": lambda w: 0,
    "arith.muli": lambda w: 1,
    "arith.andi": lambda w: -1 if w > 1 else 1,
    "arith.minui": lambda w: -1 if w > 1 else 1,
    "arith.maxsi": lambda w: -(1 << (w - 1)) if w > 1 else 0,
    "arith.minsi": lambda w: (1 << (w - 1)) - 1 if w > 1 else 0,
}

# ptxas (CUDA 12.8 and 12.9, at every -O level) folds an integer negation into an
# operand of the three-input min/max it forms (VIMNMX3) and drops it: on the H100,
# max(max(-a, -b), -c) of int32 came out as max(-a, b, -c) in SASS from correct PTX, and
# so did (-x).amax(1) (fuzzer graph 13302039914).  Operands of integer min/max, and of
# the comparisons LLVM turns into min/max, are computed as `x + z` where z is %ctaid.z
# (zero: grids are one-dimensional), which neither LLVM nor ptxas can fold away, so no
# negation reaches the min/max.  An integer add per operand; i1 is unaffected.
# 64-bit operands too: LLVM narrows a clamp of a small index (a pooling window's
# `min(max(2 * oh + kh - 1, 0), 79)`) to 16 bits, and ptxas packed two of them into a
# VIMNMX.S16x2 that came out wrong on the H100 from correct PTX (a channels-last max
# pool read one row of its padded windows as padding; unshielded, 1080 of 204800
# outputs of a [2, 64, 80, 80] pool were wrong, shielded none).
INTEGER_MIN_MAX = frozenset({"arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui"})
SHIELDED = INTEGER_MIN_MAX | {"arith.cmpi"}
