"""Half-precision reductions where eager's are: float16 and bfloat16 inputs whose sums
leave float16's range (300 x 4099 values), on the CPU and the GPU.

Eager sums (and divides, for a mean) in float32 and rounds each op's result once;
a sum rounded to float16 before its division is inf.  Where eager's own kernels
compute op by op in the input's dtype (mse_loss's square, logsumexp's sum), that
rounding is eager's answer too.  Each case runs against eager on fresh random
inputs, forward and (where it trains) backward, with no fallback.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import mlirc

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
DTYPES = [torch.float16, torch.bfloat16]
# about two ulps of the result (torch.testing's bfloat16 rtol; float16's 1e-3 is one ulp)
TOLERANCES = {torch.float16: {"rtol": 2e-3, "atol": 1e-3}, torch.bfloat16: {"rtol": 1.6e-2, "atol": 1e-2}}


def _big(*shape, loc=300.0, scale=100.0):
    """A float32 draw of values around `loc` (rounded once to the case's dtype)."""
    return lambda dtype, device: (torch.randn(*shape, device=device) * scale + loc).to(dtype)


def _extreme(dtype, device):
    """64 values at the top of the dtype's range: their mean is the value, their sum inf."""
    return torch.full((64,), 3e38 if dtype == torch.bfloat16 else 6e4, device=device).to(dtype)


def _beside(make):
    """Two inputs from `make`: an operand and a target."""
    return lambda dtype, device: (make(dtype, device), make(dtype, device))


# name: (fn, inputs(dtype, device) -> tensor or tuple)
CASES = {
    "mean": (lambda x: x.mean(), _big(4099)),
    "mean_rows": (lambda x: x.mean(-1, keepdim=True), _big(3, 4099)),
    "mean_columns": (lambda x: x.mean(0), _big(2053, 5)),
    "rms_norm_by_hand": (lambda x: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6), _big(4, 4096, loc=0, scale=10)),
    "rms_norm": (lambda x: F.rms_norm(x, (4096,)), _big(4, 4096, loc=0, scale=10)),
    "batch_norm_training": (lambda x: F.batch_norm(x, None, None, training=True), _big(4, 8, 31, 33)),
    "global_average_pool": (lambda x: F.adaptive_avg_pool2d(x, 1), _big(2, 4, 64, 64)),
    "average_pool_large_window": (lambda x: F.avg_pool2d(x, 16), _big(2, 4, 64, 64)),
    "var": (lambda x: x.var(-1), _big(3, 4099)),
    "std_mean": (lambda x: torch.std_mean(x, -1, correction=0), _big(3, 4099)),
    "var_of_extremes": (lambda x: x.var(), _extreme),
    "std_of_extremes": (lambda x: x.std(), _extreme),
    "layer_norm": (lambda x: F.layer_norm(x, (4099,)), _big(3, 4099)),
    "group_norm": (lambda x: F.group_norm(x, 2), _big(2, 4, 32, 32)),
    "norm": (lambda x: x.norm(dim=-1), _big(3, 4099)),
    "softmax_wide": (lambda x: torch.softmax(x, -1), _big(2, 70001, loc=0, scale=0.01)),
    "log_softmax_wide": (lambda x: torch.log_softmax(x, -1), _big(2, 70001, loc=0, scale=0.01)),
    # eager's composite rounds the sum of 70,001 exps to float16: inf
    "logsumexp_wide": (lambda x: torch.logsumexp(x, -1), _big(2, 70001, loc=0, scale=0.01)),
    "l1_loss": (lambda x, y: F.l1_loss(x, y), _beside(_big(4099, loc=0))),
    # eager squares in float16: a difference over 256 squares to inf, and so is the mean
    "mse_loss": (lambda x, y: F.mse_loss(x, y), _beside(_big(4099, loc=0))),
    "smooth_l1_loss": (lambda x, y: F.smooth_l1_loss(x, y, beta=1e4, reduction="none"), _beside(_big(257, loc=0))),
    "soft_margin_loss": (lambda x, y: F.soft_margin_loss(x, y.sign(), reduction="none"), _beside(_big(257, loc=0, scale=30))),
    "cross_entropy": (lambda x, y: F.cross_entropy(x, y.softmax(-1)), _beside(_big(2053, 10, loc=0, scale=3))),
}  # fmt: skip

# Gradients through the reductions (the forward's own sums, then the backward's).
BACKWARD = {
    "mean": (lambda x: x.mean(-1), _big(3, 4099)),
    "var": (lambda x: x.var(-1), _big(3, 4099)),
    "rms_norm_by_hand": (lambda x: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6), _big(4, 4096, loc=0, scale=10)),
    "batch_norm_training": (lambda x: F.batch_norm(x, None, None, training=True), _big(4, 8, 31, 33)),
    "layer_norm": (lambda x: F.layer_norm(x, (4099,)), _big(3, 4099)),
    "log_softmax_wide": (lambda x: torch.log_softmax(x, -1), _big(2, 70001, loc=0, scale=0.01)),
    "global_average_pool": (lambda x: F.adaptive_avg_pool2d(x, 1), _big(2, 4, 64, 64)),
}  # fmt: skip


def _inputs(make, dtype: torch.dtype, device: str) -> tuple[torch.Tensor, ...]:
    made = make(dtype, device)
    return made if isinstance(made, tuple) else (made,)


def _assert_compiled_whole() -> None:
    stats = mlirc.stats()
    assert stats.fallback_nodes == 0 and stats.failed_regions == 0, stats.summary()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", list(CASES))
def test_half_precision_reduction_matches_eager(case, dtype, device):
    fn, make = CASES[case]
    args = _inputs(make, dtype, device)
    expected = fn(*args)
    actual = torch.compile(fn, backend="mlirc")(*args)
    torch.testing.assert_close(actual, expected, equal_nan=True, **TOLERANCES[dtype])
    _assert_compiled_whole()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", list(BACKWARD))
def test_half_precision_reduction_gradients_match_eager(case, dtype, device):
    fn, make = BACKWARD[case]
    (x,) = _inputs(make, dtype, device)
    x.requires_grad_(True)
    expected = fn(x)
    grad_out = torch.randn(expected.shape, device=device).to(dtype)
    (expected_grad,) = torch.autograd.grad(expected, x, grad_out)
    actual = torch.compile(fn, backend="mlirc")(x)
    (actual_grad,) = torch.autograd.grad(actual, x, grad_out)
    torch.testing.assert_close(actual, expected, equal_nan=True, **TOLERANCES[dtype])
    torch.testing.assert_close(actual_grad, expected_grad, equal_nan=True, **TOLERANCES[dtype])
    _assert_compiled_whole()


SCALAR = 5.050590515136719  # not a float16 or bfloat16 number
# A scalar on the right of mul, div and floor division: eager reads it in float32, not
# rounded to the half type; truncating division rounds once.  Compared bit for bit.
# (add's alpha is rounded to the half type in eager's vector loop and not in its
# scalar tail: mlirc rounds it, as the loop over all but a tail does.)
SCALAR_CASES = {
    "mul": lambda x, s: x * s,
    "div": lambda x, s: x / s,
    "floor_divide": lambda x, s: x // s,
    "trunc_divide": lambda x, s: torch.div(x, s, rounding_mode="trunc"),
    "scalar_over_x": lambda x, s: 2.5 / x,
    "remainder": lambda x, s: x % s,  # rounded to the half type there, as eager rounds it
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("scalar", ["python", "0-d float32", "0-d float64"])
@pytest.mark.parametrize("case", list(SCALAR_CASES))
def test_scalar_operands_as_eager_reads_them(case, scalar, dtype, device):
    fn = SCALAR_CASES[case]
    x = (torch.randn(4099, device=device) * 100).to(dtype)
    s = SCALAR if scalar == "python" else torch.tensor(SCALAR, dtype=getattr(torch, scalar.split()[1]), device=device)
    expected = fn(x, s)
    actual = torch.compile(fn, backend="mlirc")(x, s)
    torch.testing.assert_close(actual, expected, equal_nan=True, rtol=0, atol=0)
    _assert_compiled_whole()
