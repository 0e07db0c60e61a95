"""bfloat16/float16 on the CPU (compiled by default; MLIRC_CPU_HALF=0 runs them eagerly): eager computes each
half op in float32 and rounds its result once, and sums in float32; so does mlirc
(mlirc-cpu-widen-halves, split sums with float32 partials, composite ops in opmath)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from conftest import compile_and_compare

from mlirc.config import config

CASES = {
    "sum_with_a_tail": lambda x, y: x.flatten().sum(),  # 2107 = 4 x 512 + 59: split, then a tail
    "mean": lambda x, y: x.mean(),
    "row_sum": lambda x, y: (x * 3).sum(1),
    "var": lambda x, y: x.var(1),
    "gelu": lambda x, y: F.gelu(x) * y,
    "gelu_tanh": lambda x, y: F.gelu(x, approximate="tanh"),
    "silu": lambda x, y: F.silu(x) + y,
    "layer_norm": lambda x, y: F.layer_norm(x, (301,), y[0], y[1]),
    "softmax": lambda x, y: torch.softmax(x, -1),
    "logsumexp": lambda x, y: torch.logsumexp(x, 1),
    "fmod": lambda x, y: torch.fmod(x * 100, y),
    "to_int": lambda x, y: (x * 3).to(torch.int32),
    "explicit_cast": lambda x, y: (x.float() * 1.001).to(x.dtype) + y,
    "cumsum": lambda x, y: x.cumsum(1),
}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("case", list(CASES))
def test_half_ops_match_eager(case, dtype):
    torch.manual_seed(0)
    x, y = torch.randn(7, 301, dtype=dtype), torch.randn(7, 301, dtype=dtype)
    # torch.testing's own tolerances for the dtype (rtol 1.6e-2 / 1e-3, atol 1e-5)
    compile_and_compare(CASES[case], x, y, rtol=None, atol=None)


# Within an ulp or two of eager: torch.testing's float16 rtol (1e-3) is under one ulp
# (2**-10), and an exp within 2 ulp of SLEEF's moves a rare softmax element by one.
HALF_TOLERANCES = {torch.bfloat16: {"rtol": 1.6e-2, "atol": 1e-5}, torch.float16: {"rtol": 2e-3, "atol": 1e-5}}
ODD_SHAPES = [(1, 1), (3, 5), (2, 31), (4, 64), (5, 97)]
VECTOR_CASES = {
    "gelu_times": lambda x, y: F.gelu(x) * y,
    "softmax": lambda x, y: torch.softmax(x, -1),
    "row_sum": lambda x, y: x.sum(-1),
    "column_sum": lambda x, y: x.sum(0),
    "broadcast_add": lambda x, y: x + y[:1],
    "transposed": lambda x, y: x.t().exp() * 2,
}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", ODD_SHAPES, ids=str)
@pytest.mark.parametrize("case", list(VECTOR_CASES))
def test_vectorized_half_kernels_on_odd_shapes(case, shape, dtype):
    """Vector kernels on half types: whole vectors, masked or peeled tails, one element."""
    torch.manual_seed(1)
    x, y = torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)
    compile_and_compare(VECTOR_CASES[case], x, y, **HALF_TOLERANCES[dtype])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_types_on_symbolic_sizes(monkeypatch, dtype):
    """Sums of run-time length accumulate in float32 too (they summed in bf16: a row
    of 1000 was 40% off eager's)."""
    monkeypatch.setattr(config, "strict", True)

    def fn(x):
        return x.sum(-1), torch.softmax(x, -1), F.gelu(x).mean(0)

    compiled = torch.compile(fn, backend="mlirc", dynamic=True)
    for shape in [(7, 301), (33, 1000), (2, 5)]:
        x = torch.randn(shape, dtype=dtype)
        torch.testing.assert_close(compiled(x), fn(x), **HALF_TOLERANCES[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_softmax_of_a_0d_tensor(dtype):
    for value in [0.5, float("inf"), float("nan")]:
        x = torch.tensor(value, dtype=dtype)
        compile_and_compare(lambda t: (torch.softmax(t, 0), torch.log_softmax(t, -1)), x)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_addcmul_addcdiv_round_once(dtype):
    """Eager computes self + value * t1 * t2 (or / t2) in float32 and rounds once; the
    decomposition's three rounded ops were an ulp off on 1 element in 100."""
    torch.manual_seed(2)
    a, b, c = (torch.randn(40, 50, dtype=dtype) for _ in range(3))
    compile_and_compare(lambda a, b, c: a.addcmul(b, c, value=3.14), a, b, c, rtol=0, atol=0)
    compile_and_compare(lambda a, b, c: torch.addcdiv(a, b, c), a, b, c, rtol=0, atol=0)


def test_bf16_bit_arithmetic_stays_scalar():
    """nextafter works on a bf16 value's bits; its vector form crashed LLVM's x86 code
    generation (an assertion: the process aborted)."""
    x = torch.randn(10, 5, dtype=torch.bfloat16)
    compile_and_compare(torch.nextafter, x, torch.randn((), dtype=torch.bfloat16), rtol=0, atol=0)
    compile_and_compare(torch.nextafter, x[:, 0], x[:, 1], rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [(1, 64), (10, 300), (2, 7, 33)], ids=str)
def test_linear_layers_round_once_as_eager(shape, dtype):
    """A linear layer's bias goes into the library GEMM (added to its float32 sums,
    one rounding, as eager's addmm): bit for bit eager's result.  Added after the
    GEMM's rounded result, about a quarter of the elements were an ulp off."""
    torch.manual_seed(3)
    layer = torch.nn.Linear(shape[-1], 257).to(dtype)
    with torch.no_grad():
        compile_and_compare(layer, torch.randn(shape, dtype=dtype), rtol=0, atol=0)
        compile_and_compare(lambda x: F.gelu(layer(x)) + 1, torch.randn(shape, dtype=dtype), rtol=0, atol=0)


def test_gemm_read_twice_keeps_its_bias_add_apart():
    torch.manual_seed(4)
    x, w, b = torch.randn(7, 33), torch.randn(20, 33), torch.randn(20)
    x, w, b = (t.to(torch.bfloat16) for t in (x, w, b))

    def fn(x, w, b):
        product = x @ w.t()
        return product + b, product * 2  # eager rounds the product here too

    compile_and_compare(fn, x, w, b, rtol=0, atol=0)
    compile_and_compare(lambda x, w, b: x @ w.t() + b, x, w, b, rtol=0, atol=0)  # two ops in eager too


def test_contractions_run_eagerly_without_library_gemms(monkeypatch):
    """MLIRC_LIBRARY_GEMM=0 generates GEMMs as named linalg ops, which would sum in the
    half type: half GEMMs and convolutions then run eagerly, the rest compiles."""
    monkeypatch.setattr(config, "library_gemm", False)
    x, w = torch.randn(6, 33, dtype=torch.bfloat16), torch.randn(20, 33, dtype=torch.bfloat16)
    stats = compile_and_compare(lambda x, w: (x @ w.t()).relu() * 2, x, w, expect_no_fallback=False, rtol=0, atol=0)
    assert stats.fallback_nodes == 1 and "contraction" in " ".join(stats.fallback_ops), stats.summary()


def test_linear_layers_on_symbolic_batch_sizes(monkeypatch):
    monkeypatch.setattr(config, "strict", True)
    layer = torch.nn.Linear(40, 24).to(torch.bfloat16)
    compiled = torch.compile(layer, backend="mlirc", dynamic=True)
    with torch.no_grad():
        for rows in (3, 17, 1):
            x = torch.randn(rows, 40, dtype=torch.bfloat16)
            torch.testing.assert_close(compiled(x), layer(x), rtol=0, atol=0)
