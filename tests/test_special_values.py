"""Every elementwise lowering against eager on IEEE special values: +-0, +-denormal,
+-1, +-inf, NaN, huge and tiny for float32/float64; 0, +-1, INT_MIN, INT_MAX for
integers (binary ops: every pair).  Eager's value, or eager's exception type.

The table comes from the lowering table itself, so a new elementwise op is tested
the day it is added.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from mlirc.frontend.lowerings import elementwise as table

FLOATS = {
    torch.float32: [0.0, -0.0, 1e-40, -1e-40, 1.0, -1.0, float("inf"), -float("inf"), float("nan"), 3e38, -3e38,
                    1e-30, 0.5, -2.5, 7.0],
    torch.float64: [0.0, -0.0, 1e-310, -1e-310, 1.0, -1.0, float("inf"), -float("inf"), float("nan"), 1e308,
                    -1e308, 1e-300, 0.5, -2.5, 7.0],
}  # fmt: skip
INTS = {
    dtype: [0, 1, -1, 7, -7, torch.iinfo(dtype).min, torch.iinfo(dtype).max] for dtype in (torch.int32, torch.int64)
}

# Accuracy of the transcendental bodies against eager's (SLEEF / libm): a few ulp.
RTOL = {torch.float32: 4e-6, torch.float64: 1e-13}
# Special functions: series and asymptotic forms, checked over their domains in
# tests/test_special_functions.py; here only the special values' classes must match.
LOOSE = {"lgamma", "digamma", "erfinv", "erfcx", "i0", "i0e", "i1", "i1e", "ndtri", "spherical_bessel_j0", "zeta"}
# Float-only ops and ops eager does not define on integers.
FLOAT_ONLY = {
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "asin", "acos",
    "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "erf", "erfc", "reciprocal", "atan2",
    "copysign", "hypot", "nextafter", "isnan", "isinf", "signbit", "fmax", "fmin", "div", "pow", *LOOSE,
}  # fmt: skip

UNARY = sorted({(op, name) for op, name in table.UNARY_TABLE.items()} | set(table.PREDICATE_TABLE.items()), key=str)
BINARY = sorted(
    {(op, name) for op, name in table.BINARY_TABLE.items() if "Scalar" not in str(op) and "_scalar" not in str(op)}
    | {(op, name) for op, name in table.COMPARE_TABLE.items() if "Scalar" not in str(op)}
    | {(torch.ops.aten.add.Tensor, "add"), (torch.ops.aten.sub.Tensor, "sub")},
    key=str,
)


def _outcome(fn, *args):
    try:
        return fn(*args), None
    except Exception as err:  # noqa: BLE001 - the type is compared
        return None, err


def _compare(fn, name: str, args: list[torch.Tensor]) -> None:
    expected, expected_error = _outcome(fn, *args)
    actual, actual_error = _outcome(torch.compile(fn, backend="mlirc"), *args)
    if expected_error is not None:
        assert actual_error is not None and type(actual_error) is type(expected_error), (expected_error, actual_error)
        return
    assert actual_error is None, actual_error
    if name in LOOSE:  # same NaN/inf/finite classes and signs of infinities
        for got, want in ((actual, expected),):
            assert torch.equal(got.isnan(), want.isnan()), (args, got, want)
            assert torch.equal(got.isinf() & (got > 0), want.isinf() & (want > 0)), (args, got, want)
        return
    rtol = RTOL.get(expected.dtype, 0)
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=0, equal_nan=True, msg=lambda m: f"{args}\n{m}")
    if expected.is_floating_point():  # the sign of zero too (a NaN's sign bit means nothing)
        actual, expected = actual.cpu(), expected.cpu()
        zeros = expected == 0
        assert torch.equal(actual[zeros].signbit(), expected[zeros].signbit()), (args, actual, expected)


def _values(dtype: torch.dtype) -> list:
    return FLOATS[dtype] if dtype.is_floating_point else INTS[dtype]


DTYPES = [torch.float32, torch.float64, torch.int32, torch.int64]
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op,name", UNARY, ids=[n for _, n in UNARY])
def test_unary(op, name, dtype, device):
    if not dtype.is_floating_point and name in FLOAT_ONLY:
        pytest.skip(f"{name} on integers: computed in float (tested there)")
    if dtype.is_floating_point and name == "bitwise_not":
        pytest.skip("bitwise_not has no float form")
    x = torch.tensor(_values(dtype), dtype=dtype, device=device)
    _compare(lambda x: op(x), name, [x])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op,name", BINARY, ids=[n for _, n in BINARY])
def test_binary(op, name, dtype, device):
    if not dtype.is_floating_point and name in FLOAT_ONLY:
        pytest.skip(f"{name} on integers: computed in float (tested there)")
    if dtype.is_floating_point and name.startswith("bitwise"):
        pytest.skip("no float form")
    values = _values(dtype)
    pairs = list(itertools.product(values, values))
    a = torch.tensor([p[0] for p in pairs], dtype=dtype)
    b = torch.tensor([p[1] for p in pairs], dtype=dtype)
    if name in ("remainder", "fmod", "floor_div", "div") and not dtype.is_floating_point:
        b = torch.where(b == 0, torch.ones_like(b), b)  # a zero divisor raises (tests/test_eager_errors.py)
    if name in ("remainder", "fmod") and dtype.is_floating_point:
        # Where a / b overflows, eager's vector code (a - trunc(a / b) * b) gives NaN and its
        # scalar code (the last elements of a tensor, std::fmod) the exact remainder, as mlirc does.
        finite = a.isfinite() & b.isfinite() & (b != 0)
        overflow = finite & (a.double() / b.double()).abs().gt(torch.finfo(dtype).max)
        a, b = a[~overflow], b[~overflow]
    _compare(lambda a, b: op(a, b), name, [a.to(device), b.to(device)])


# Exponents ATen's pow by a scalar sends to another kernel (sqrt, rsqrt, x*x, ...),
# whose special values differ from pow's; and two that go to pow itself.
POW_EXPONENTS = [0.5, -0.5, 2.0, 3.0, -1.0, -2.0, 1.5, -3.0]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("exponent", POW_EXPONENTS)
def test_pow_by_a_scalar(exponent, dtype, device):
    x = torch.tensor(_values(dtype), dtype=dtype, device=device)
    _compare(lambda x: torch.pow(x, exponent), "pow", [x])


NAN = float("nan")
_BOUNDED = torch.tensor([-2.0, -0.0, 0.0, 0.5, 3.0, NAN, float("inf"), -float("inf")] * 5)
# A NaN bound gives NaN (scalar or tensor, either side, and the ops that lower through
# a clamp); a NaN x stays NaN; ties and zeros of either sign keep x.
NAN_BOUNDS = {
    "min": lambda x, b: x.clamp(min=NAN),
    "max": lambda x, b: x.clamp(max=NAN),
    "both": lambda x, b: x.clamp(NAN, 1.0),
    "clip_max": lambda x, b: x.clip(-1.0, NAN),
    "clamp_min": lambda x, b: torch.clamp_min(x, NAN),
    "clamp_max": lambda x, b: torch.clamp_max(x, NAN),
    "tensor_min": lambda x, b: x.clamp(min=b),
    "tensor_max": lambda x, b: x.clamp(max=b),
    "tensor_both": lambda x, b: x.clamp(b, b + 1),
    "hardtanh": lambda x, b: torch.nn.functional.hardtanh(x, NAN, 1.0),
    "hardtanh_max": lambda x, b: torch.nn.functional.hardtanh(x, -1.0, NAN),
    "relu6": lambda x, b: torch.nn.functional.relu6(x),
    "zero_bound": lambda x, b: x.clamp(min=0.0, max=-0.0),
    "half": lambda x, b: x.half().clamp(max=NAN) + b.half().clamp(min=b.half()),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", list(NAN_BOUNDS))
def test_nan_as_a_bound(case, device):
    bound = torch.randn(_BOUNDED.shape)
    bound[::3] = NAN
    _compare(NAN_BOUNDS[case], "clamp", [_BOUNDED.to(device), bound.to(device)])
