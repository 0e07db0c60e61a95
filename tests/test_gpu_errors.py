"""Eager's answer or eager's error on CUDA tensors (tests/test_eager_errors.py's
cases, where CUDA's eager behaves as the CPU's): a bad index is a device-side
assert reported at the next synchronization, as eager's CUDA kernels report it;
special values, casts, INT_MIN / -1, long sums and output strides match eager's.

Skipped without CUDA; `bash benchmarks/gpu_check.sh` runs it on the GPU host.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_same_outcome
from test_eager_errors import BAD_INDICES, GOOD_INDICES, VALUE_CHECKS

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _cuda(args):
    return tuple(a.cuda() if isinstance(a, torch.Tensor) else a for a in args)


@pytest.mark.parametrize("name", [c[0] for c in BAD_INDICES[:6]] + ["embedding", "scatter_add", "max_unpool_negative"])
def test_bad_index_is_a_device_assert(name):
    """In a child process: a device-side assert poisons the CUDA context."""
    code = textwrap.dedent(f"""
        import sys, torch, mlirc
        sys.path.insert(0, {str(__file__.rsplit("/", 1)[0])!r})
        from test_eager_errors import BAD_INDICES
        fn, args = next((f, a) for n, f, a in BAD_INDICES if n == {name!r})
        args = tuple(a.cuda() for a in args)
        try:
            torch.compile(fn, backend="mlirc")(*args)
            torch.cuda.synchronize()
        except RuntimeError as err:
            print("raised", "device-side assert" in str(err), mlirc.stats().fallback_nodes)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "raised True 0" in done.stdout, done.stdout + done.stderr[-3000:]


@pytest.mark.parametrize("name", [c[0] for c in VALUE_CHECKS])
def test_value_check_is_a_device_assert(name):
    """Eager's checks on values (a probability outside [0, 1], a class past one_hot's
    count): compiled, a device-side assert in a child process, as eager's CUDA kernels
    assert (or raise, where eager reads the value back to the host)."""
    code = textwrap.dedent(f"""
        import sys, torch, mlirc
        sys.path.insert(0, {str(__file__.rsplit("/", 1)[0])!r})
        from test_eager_errors import VALUE_CHECKS
        fn, args = next((f, a) for n, f, a in VALUE_CHECKS if n == {name!r})
        args = tuple(a.cuda() for a in args)
        try:
            torch.compile(fn, backend="mlirc")(*args)
            torch.cuda.synchronize()
        except RuntimeError as err:
            print("raised", mlirc.stats().fallback_nodes)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "raised 0" in done.stdout, done.stdout + done.stderr[-3000:]


@pytest.mark.parametrize("name,fn,args", GOOD_INDICES, ids=[c[0] for c in GOOD_INDICES])
def test_edge_indices(name, fn, args):
    assert assert_same_outcome(fn, *_cuda(args)) is None


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_int_min_by_minus_one(dtype):
    info = torch.iinfo(dtype)
    a = torch.tensor([info.min, info.max, 7, -7, 0], dtype=dtype, device="cuda")
    b = torch.tensor([-1, -1, 2, -2, 3], dtype=dtype, device="cuda")
    for op in (lambda a, b: a // b, lambda a, b: a % b, torch.fmod):
        torch._dynamo.reset()
        assert_same_outcome(op, a, b)


SPECIAL = torch.tensor([float("nan"), float("inf"), -float("inf"), 7.0, -7.0, -0.0, 0.0, 1e-40, 3e38, 300.7, -2.5] * 3)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x // 3.0,
        torch.sign,
        lambda x: torch.relu(x),
        lambda x: x.clamp(min=0.0),
        lambda x: torch.maximum(x, x.flip(0)),
        F.gelu,
        torch.asinh,
        lambda x: (x.long(), x.int(), x.to(torch.int8)),  # CUDA's saturating casts
    ],
)
def test_float_special_values(fn):
    x = SPECIAL.cuda()
    expected, actual = fn(x), torch.compile(fn, backend="mlirc")(x)
    for e, a in zip(*(v if isinstance(v, tuple) else (v,) for v in (expected, actual)), strict=True):
        torch.testing.assert_close(a, e, equal_nan=True, rtol=4e-6, atol=0)


@pytest.mark.parametrize("n", [2**24, 2**26])
def test_long_sums(n):
    x = torch.full((n,), 0.1, device="cuda")
    exact = x.double().sum()
    compiled = torch.compile(lambda x: x.sum(), backend="mlirc")
    first, second = compiled(x), compiled(x)
    assert torch.equal(first, second)
    error = ((first.double() - exact) / exact).abs().item()
    eager_error = ((x.sum().double() - exact) / exact).abs().item()
    assert error <= max(eager_error, 2.0**-24), (error, eager_error)


@pytest.mark.parametrize(
    "fn,x",
    [
        (lambda x: x.t() * 2, torch.randn(5, 7)),
        (lambda x: torch.relu(x), torch.randn(2, 3, 5, 5).to(memory_format=torch.channels_last)),
        (lambda x: (x * 2).expand(4, 5), torch.randn(1, 5)),
        (lambda x: x + 1, torch.randn(1, 9).expand(6, 9)),  # an expanded input read in place
    ],
)
def test_output_strides(fn, x):
    x = x.cuda()
    expected, actual = fn(x), torch.compile(fn, backend="mlirc")(x)
    torch.testing.assert_close(actual, expected)
    assert actual.stride() == expected.stride()


# CUDA fuzzer findings.  With Triton's FP contraction on, (a * b) - ((a * b) + 0) is an
# FMA's residual, so var() of one element came out inf, not 0 / 0 = NaN: its deviation
# is now x * 0 (backends/gpu/compiler.py says why contraction stays on).  Average
# pooling's window sums are exact float32: as cuDNN convolutions they ran in TF32
# (relative errors up to 2.4, denormals flushed).
CUDA_FINDINGS = {
    "var_of_one_quotient": (lambda a, b: (b / a).var(), (torch.tensor(-1.3073505), torch.tensor(-87.334755))),
    "var_of_one_product": (lambda a, b: (b * a).var(), (torch.tensor(-1.3073505), torch.tensor(-87.334755))),
    # x - max(x) of a product fused into an FMA is the product's rounding error: for a
    # 4e29 product, exp() of it was inf and the row NaN (products are mul.rn now)
    "softmax_of_a_product": (
        lambda a, b: torch.softmax(a * b, -1),
        (torch.tensor([[1e30, 1.2494, -2.4578]]), torch.tensor([[0.38395759, 1.9586, 0.9304]])),
    ),
    "floor_of_a_quotient": (lambda a: torch.floor(a / a), (torch.randn(4099) * 1e3,)),
    # a whole-tensor sum of a permuted int32 input in one 4096-wide tile (i64 offsets)
    "sum_of_a_permuted_int": (
        lambda a: a.sum(),
        (torch.randint(-20, 20, (7, 5, 3, 31), dtype=torch.int32).permute(2, 0, 3, 1),),
    ),
    # ptxas dropped a negation folded into a three-input integer min/max (VIMNMX3)
    "amax_of_a_negation": (lambda a: (-a).amax(1), (torch.randint(-20, 20, (64, 5, 17, 31), dtype=torch.int32),)),
    "amin_of_a_negated_int16": (
        lambda a: (-a).amin(0),
        (torch.randint(-20, 20, (64, 5, 17, 31), dtype=torch.int16),),
    ),
    "maximum_of_three_negations": (
        lambda a, b, c: torch.maximum(torch.maximum(-a, -b), -c),
        tuple(torch.randint(-20, 20, (5, 17, 31), dtype=torch.int32) for _ in range(3)),
    ),
    "where_max_of_negations": (
        lambda a, b, c: torch.where(-a > -b, -a, -b).maximum(-c),
        tuple(torch.randint(-20, 20, (5, 17, 31), dtype=torch.int32) for _ in range(3)),
    ),
}


@pytest.mark.parametrize("name", sorted(CUDA_FINDINGS))
def test_cuda_findings(name):
    fn, args = CUDA_FINDINGS[name]
    args = _cuda(args)
    torch.testing.assert_close(torch.compile(fn, backend="mlirc")(*args), fn(*args), equal_nan=True)


def test_avg_pool_sums_are_float32():
    x = torch.randn(17, 13, 13, 17, device="cuda")
    x[0, 2, 12, 16] = 1e-40  # a ceil_mode corner window of one denormal
    fn = lambda x: F.avg_pool2d(x, 2, ceil_mode=True)  # noqa: E731
    actual, expected = torch.compile(fn, backend="mlirc")(x), fn(x)
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-6)  # TF32: ~5e-4
    assert actual[0, 2, 6, 8] == expected[0, 2, 6, 8] != 0


def test_cuda_fuzz_amax_of_an_expanded_int_input():
    """(-x).amax(1) of an int32 input: ptxas folded the negations into a VIMNMX3 and
    dropped one (mlirc 1, eager -1; the PTX was right)."""
    import fuzz_graphs

    assert fuzz_graphs.check(fuzz_graphs.generate(13302039914, "cuda")) is None


def test_cuda_fuzz_xor_of_a_cancelled_sum():
    """xor(t2, (t2 < y).double()) of a sum through +-1e30: eager's CUDA sum is 0, ours
    536 (the float64 sum 0 as well); the oracle moved the exact cast off 0 and so
    never saw the xor flip with the cancellation (an oracle gap)."""
    import fuzz_graphs

    assert fuzz_graphs.check(fuzz_graphs.generate(18300054905, "cuda")) is None
