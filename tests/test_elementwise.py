"""Elementwise ops vs eager: odd shapes, broadcasting, dtypes, non-contiguous and 0-size inputs."""

import math

import pytest
import torch
from conftest import compile_and_compare, wrapper_source


def chain(x, y):
    a = x * y + 1.5
    b = torch.sigmoid(a) * torch.tanh(x)
    c = torch.abs(b) / (torch.exp(-x.abs()) + 1.0)
    return torch.where(x > 0, c, b - y)


@pytest.mark.parametrize("shape", [(1,), (7,), (13, 129), (3, 5, 17), (1024, 1024)])
def test_chain_shapes(shape):
    compile_and_compare(chain, torch.randn(shape), torch.randn(shape))


def test_chain_broadcast():
    compile_and_compare(chain, torch.randn(7, 33, 129), torch.randn(33, 1))


def test_non_contiguous_inputs():
    x = torch.randn(129, 33).t()
    y = torch.randn(33, 258)[:, ::2]
    assert not x.is_contiguous() and not y.is_contiguous()
    compile_and_compare(chain, x, y)


def value_and_mask(x, y):
    h = torch.relu(x * 2 + y)
    return h, h > 0.5


@pytest.mark.parametrize("shape", [(1,), (13, 129), (3, 5, 17), (256, 1024), (0, 5)])
@pytest.mark.parametrize("transposed", [False, True])
def test_a_value_and_its_mask(shape, transposed, tmp_path):
    """Two results of two widths (float and bool) from one kernel
    (mlirc-fuse-multi-output), vectorized at the float's lanes, not left scalar."""
    x, y = torch.randn(shape), torch.randn(shape)
    if transposed:
        reverse = list(reversed(range(len(shape))))
        x, y = torch.randn(shape[::-1]).permute(reverse), torch.randn(shape[::-1]).permute(reverse)
    compile_and_compare(value_and_mask, x, y)
    if math.prod(shape) >= 13 * 129 and not transposed:
        wrapper_source(value_and_mask, (x, y), tmp_path)
        (kernels,) = [p.read_text() for p in tmp_path.glob("*.cpu.mlir")]
        assert "vector<16xi8>" in kernels or "vector<8xi8>" in kernels, kernels


def test_zero_size():
    compile_and_compare(chain, torch.randn(0, 5), torch.randn(0, 5))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_float_dtypes(dtype):
    compile_and_compare(
        chain,
        torch.randn(17, 9, dtype=dtype),
        torch.randn(17, 9, dtype=dtype),
        rtol=1e-6 if dtype == torch.float64 else 1e-4,
    )


def test_int64_and_bool():
    def f(a, b):
        return (a * 3 - b) // 2, a % 5, (a > b) & (b != 0), torch.maximum(a, b)

    a = torch.randint(-50, 50, (19, 7))
    b = torch.randint(1, 20, (19, 7))
    compile_and_compare(f, a, b)


def test_bool_logic():
    def f(m, x):
        return torch.logical_not(m) | (x > 0.5), torch.where(m, x, -x)

    compile_and_compare(f, torch.rand(11, 3) > 0.5, torch.rand(11, 3))


def test_casts():
    def f(x):
        return x.to(torch.int64), (x * 10).to(torch.int32).to(torch.float64), x.to(torch.bool)

    compile_and_compare(f, torch.randn(31) * 4)


def test_nan_semantics():
    def f(x, y):
        return torch.maximum(x, y), torch.relu(x), x != y, torch.isnan(x)

    x = torch.tensor([float("nan"), 1.0, -2.0, float("inf")])
    y = torch.tensor([0.0, float("nan"), 3.0, 1.0])
    compile_and_compare(f, x, y)


def test_unary_math():
    def f(x):
        return (
            torch.log1p(x.abs())
            + torch.erf(x)
            + torch.sqrt(x.abs())
            + torch.sin(x) * torch.cos(x)
            + torch.floor(x)
            + torch.round(x)
        )

    compile_and_compare(f, torch.randn(5, 37))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_vector_math_special_values(dtype):
    """The SLEEF vector path (mlirc-cpu-vector-math) and its libm tail agree with eager
    on infinities, NaN, huge and tiny inputs; 67 elements = full vectors plus a tail."""

    def f(x):
        return torch.exp(x), torch.tanh(x), torch.log(x.abs()), torch.erf(x), torch.sigmoid(x), torch.pow(x.abs(), 0.7)

    special = torch.tensor([float("inf"), float("-inf"), float("nan"), 0.0, -0.0, 88.0, -104.0, 1e-30, 710.0])
    x = torch.cat([special, torch.randn(58) * 5]).to(dtype)
    compile_and_compare(f, x, rtol=1e-6 if dtype == torch.float64 else 1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("length", [1, 3, 5, 9, 13, 129])
def test_peeled_vector_tails(dtype, length):
    """Odd widths end in a peeled partial vector: it is computed exactly and its
    transcendental calls keep SLEEF's accuracy (a padded chunk), 0 ** 0 included."""

    def f(x, y):
        return torch.exp(x) * torch.atan2(x, y), torch.pow(x.abs() * (x > 0), y.abs() * (y > 0)), torch.tanh(x) + 1

    x, y = torch.randn(3, length, dtype=dtype), torch.randn(3, length, dtype=dtype)
    compile_and_compare(f, x, y, rtol=1e-6 if dtype == torch.float64 else 1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_zero_dim_pow_of_zero(dtype):
    """A 0-d pow is a scalar libm call: math-expand-ops' exp(y log x) gave NaN for 0 ** 0."""
    zero = torch.tensor(0.0, dtype=dtype)
    compile_and_compare(torch.pow, zero, zero)
    compile_and_compare(torch.pow, torch.tensor(2.5, dtype=dtype), torch.tensor(-1.5, dtype=dtype))


@pytest.mark.parametrize("llvm_opt", [0, 2])
def test_llvm_middle_end_levels(llvm_opt, monkeypatch):
    """The kernels give eager's results with LLVM's middle end off or at -O2 as well
    as at the default -O3 (every other test): it must not change numerics."""
    from mlirc.config import config

    monkeypatch.setattr(config, "llvm_opt", llvm_opt)

    def f(x, y):
        return torch.log_softmax(x + y, -1), chain(x, y)

    compile_and_compare(f, torch.randn(5, 37), torch.randn(37))


def _ulps_from_float64(actual: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
    """|actual - exact| in units of the float32 spacing at the exact value."""
    rounded = exact.float().abs()
    spacing = torch.nextafter(rounded, torch.tensor(float("inf"))) - rounded
    return (actual.double() - exact).abs() / spacing.double()


@pytest.mark.parametrize("op", [torch.exp, torch.tanh])
def test_inline_f32_exp_tanh_over_the_float_range(op):
    """f32 exp and tanh are expanded inline (mlirc-cpu-vector-math), not SLEEF's: every
    131st float32 from 1e-40 (denormal) to 120, both signs, stays within 2 ulp of the
    float64 result, and overflow, underflow, denormal results, NaN and -0.0 are eager's."""
    low = torch.tensor([1e-40]).view(torch.int32).item()
    high = torch.tensor([120.0]).view(torch.int32).item()
    grid = torch.arange(low, high, 131, dtype=torch.int32).view(torch.float32)
    edges = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 88.72283, 88.72284, -103.28, -104.5, 0.55]
    x = torch.cat([grid, -grid, torch.tensor(edges)])
    actual = torch.compile(op, backend="mlirc")(x)
    expected = op(x)
    exact = op(x.double())
    finite = torch.isfinite(exact.float()) & (exact.float() != 0)
    assert _ulps_from_float64(actual, exact)[finite].max().item() <= 2.0
    special = ~finite
    torch.testing.assert_close(actual[special], expected[special], rtol=0, atol=0, equal_nan=True)
    numbers = ~torch.isnan(expected)
    assert torch.equal(torch.signbit(actual[numbers]), torch.signbit(expected[numbers]))
