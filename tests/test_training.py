"""Training on the CPU: optimizer steps compiled whole.

Dynamo rewrites addcmul_ / addcdiv_ with a value, and add_ with a tensor alpha, into
the fused multiply-add prim (`prims.fma`); Adam's and AdamW's steps are made of them.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
import torch._inductor.inductor_prims  # noqa: F401  (registers prims.fma)
import torch.nn as nn
from conftest import compile_and_compare

import mlirc

fma = torch.ops.prims.fma.default


def test_fma_rounds_once():
    # (1 + 2^-23)^2 = 1 + 2^-22 + 2^-46: rounded after the product, minus 1 + 2^-22 is 0
    a = torch.full((37,), 1 + 2.0**-23)
    c = torch.full((37,), -(1 + 2.0**-22))
    out = torch.compile(lambda a, c: fma(a, a, c), backend="mlirc")(a, c)
    assert torch.equal(out, torch.full((37,), 2.0**-46)), out[:3]
    assert mlirc.stats().fallback_nodes == 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64])
def test_fma_broadcasts_and_takes_a_scalar(dtype):
    def make(*shape):
        if dtype.is_floating_point:
            return torch.randn(*shape).to(dtype)
        return torch.randint(-1000, 1000, shape, dtype=dtype)

    tol = 2e-2 if dtype == torch.bfloat16 else 1e-6
    compile_and_compare(lambda a, b, c: fma(a, b, c), make(7, 1, 33), make(5, 33), make(1), rtol=tol, atol=tol)
    compile_and_compare(lambda a, c: fma(a, 3, c), make(0, 4), make(4), rtol=tol, atol=tol)
    compile_and_compare(lambda a, c: fma(a.t(), 0.5, c), make(13, 11), make(11, 13), rtol=tol, atol=tol)


OPTIMIZERS = {
    "adam": lambda p: torch.optim.Adam(p, lr=1e-2),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1),
    "adam_amsgrad": lambda p: torch.optim.Adam(p, lr=1e-2, amsgrad=True),
    "sgd_momentum": lambda p: torch.optim.SGD(p, lr=1e-2, momentum=0.9, nesterov=True),
    "rmsprop": lambda p: torch.optim.RMSprop(p, lr=1e-2),
    # the multi-tensor forms (CUDA's default): _foreach_* ops decompose per tensor
    "sgd_foreach": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, foreach=True),
    "adam_foreach": lambda p: torch.optim.Adam(p, lr=1e-2, foreach=True),
    "adamw_foreach": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1, foreach=True),
    "rmsprop_foreach": lambda p: torch.optim.RMSprop(p, lr=1e-2, foreach=True),
    "adagrad_foreach": lambda p: torch.optim.Adagrad(p, lr=1e-2, foreach=True),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_step_compiles_whole(name):
    """Five steps of a compiled step match eager's, parameters and optimizer state,
    with no op left to eager."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(13, 31), nn.Tanh(), nn.Linear(31, 3))
    twin = copy.deepcopy(model)
    eager, compiled = OPTIMIZERS[name](model.parameters()), OPTIMIZERS[name](twin.parameters())
    step = torch.compile(compiled.step, backend="mlirc")
    for _ in range(5):
        x = torch.randn(8, 13)
        for m, opt, run in ((model, eager, eager.step), (twin, compiled, step)):
            opt.zero_grad()
            m(x).square().mean().backward()
            run()
    for p, q in zip(model.parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(q, p, rtol=1e-5, atol=1e-6)
        for key, value in eager.state[p].items():
            torch.testing.assert_close(compiled.state[q][key], value, rtol=1e-5, atol=1e-6)
    stats = mlirc.stats()
    assert stats.fallback_nodes == 0 and stats.failed_regions == 0, stats.summary()


@pytest.mark.parametrize(
    "conv",
    [
        lambda: nn.Conv2d(3, 8, 3, padding=1),
        lambda: nn.Conv2d(4, 6, (3, 2), stride=2, dilation=(1, 2), groups=2, bias=False),
        lambda: nn.Conv1d(3, 5, 4, padding=2),
    ],
    ids=["padded", "strided_grouped_dilated", "1d"],
)
def test_convolution_backward_is_a_library_kernel(conv):
    """A convolution's gradients (input, weight, bias) come from ATen's
    convolution_backward, called as a library kernel, not left as a fallback."""
    torch.manual_seed(0)
    model = nn.Sequential(conv(), nn.Tanh())
    twin = copy.deepcopy(model)
    x = torch.randn(2, model[0].in_channels, *([9] * (model[0].weight.dim() - 2)))
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    model(x1).square().sum().backward()
    torch.compile(twin, backend="mlirc")(x2).square().sum().backward()
    torch.testing.assert_close(x2.grad, x1.grad, rtol=1e-4, atol=1e-5)
    for p, q in zip(model.parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-5)
    stats = mlirc.stats()
    assert stats.fallback_nodes == 0, stats.summary()
    assert stats.library_ops["aten.convolution_backward.default"] == 1, stats.summary()


WINDOWS = {  # kernel, stride, padding, dilation, ceil_mode
    "3x3_s2_p1": ([3, 3], [2, 2], [1, 1], [1, 1], False),
    "2x2": ([2, 2], [2, 2], [0, 0], [1, 1], False),
    "ceil_dilated": ([3, 2], [1, 2], [1, 0], [2, 1], True),
    "5x5_ceil": ([5, 5], [3, 3], [2, 2], [1, 1], True),
}


@pytest.mark.parametrize("window", sorted(WINDOWS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64])
def test_max_pool_indices_are_eagers(window, dtype):
    """max_pool2d_with_indices compiles both results (its backward reads the indices):
    the first of equal maxima, the last NaN of a window, the first tap on the input
    where a window holds only the lowest value; channels-last input too."""
    torch.manual_seed(0)
    if dtype.is_floating_point:
        x = torch.randn(2, 5, 13, 11).to(dtype)
        x[0, 0, 2, 3:5] = float("nan")  # two NaNs in a window: the later one's index
        x[1, 2, :, 4] = -float("inf")
        x[1, 3] = -float("inf")  # every window -inf
        x[0, 1, 5:8, 5:8] = 1.5  # ties
    else:
        x = torch.randint(-3, 3, (2, 5, 13, 11), dtype=dtype)
        x[1, 3] = torch.iinfo(dtype).min

    def pool(x):
        return torch.ops.aten.max_pool2d_with_indices(x, *WINDOWS[window])

    for source in (x, x.contiguous(memory_format=torch.channels_last)):
        torch._dynamo.reset()
        values, indices = torch.compile(pool, backend="mlirc")(source)
        want_values, want_indices = pool(source)
        torch.testing.assert_close(values, want_values, rtol=0, atol=0, equal_nan=True)
        assert torch.equal(indices, want_indices), (indices != want_indices).nonzero()[:5]
    assert mlirc.stats().fallback_nodes == 0, mlirc.stats().summary()


@pytest.mark.parametrize("window", sorted(WINDOWS) + ["3x3_s1_p1"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_max_pool_backward_is_eagers(window, dtype):
    """The gradient of a max pool, gathered per input element in eager's order of
    windows: equal to eager's where float32/float64 (overlapping windows, stride 1,
    ties and a NaN in the forward input); halves add in float32, rounded once."""
    args = WINDOWS.get(window, ([3, 3], [1, 1], [1, 1], [1, 1], False))
    torch.manual_seed(0)
    x = torch.randn(2, 5, 13, 11).to(dtype)
    x[0, 1, 5:8, 5:8] = 1.5
    x[0, 0, 2, 3] = float("nan")
    _, indices = torch.ops.aten.max_pool2d_with_indices(x, *args)
    grad = torch.randn(indices.shape).to(dtype)

    def backward(grad, x, indices):
        return torch.ops.aten.max_pool2d_with_indices_backward(grad, x, *args, indices)

    tol = 2e-3 if dtype == torch.float16 else 0
    compile_and_compare(backward, grad, x, indices, rtol=tol, atol=tol)


AVG_WINDOWS = {  # kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
    "3x3_s1_p1": ([3, 3], [1, 1], [1, 1], False, True, None),
    "3x3_s2_p1_no_pad_count": ([3, 3], [2, 2], [1, 1], False, False, None),
    "2x2": ([2, 2], [2, 2], [0, 0], False, True, None),
    "5x3_ceil": ([5, 3], [3, 2], [2, 1], True, True, None),
    "ceil_no_pad_count": ([3, 3], [2, 2], [1, 1], True, False, None),
    "override": ([3, 2], [2, 1], [1, 0], True, True, 5),
    "window_past_the_input": ([15, 15], [15, 15], [0, 0], True, True, None),
}


@pytest.mark.parametrize("window", sorted(AVG_WINDOWS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("shape", [(2, 5, 13, 11), (1, 1, 1, 7), (0, 2, 5, 4)], ids=["odd", "one_row", "empty_batch"])
def test_avg_pool_backward_is_eagers(window, dtype, shape):
    """The gradient of an average pool, gathered per input element: each window's
    gradient over its divisor (padding counted or not, ceil_mode's partial windows,
    divisor_override), added in eager's order of windows."""
    args = AVG_WINDOWS[window]
    if shape[2] + 2 * args[2][0] < args[0][0] and not args[3]:
        pytest.skip("no window fits")
    torch.manual_seed(0)
    x = torch.randn(shape).to(dtype)
    out = torch.ops.aten.avg_pool2d(x, *args)
    grad = torch.randn(out.shape).to(dtype)

    def backward(grad, x):
        return torch.ops.aten.avg_pool2d_backward(grad, x, *args)

    tol = 1e-2 if dtype == torch.bfloat16 else 0
    compile_and_compare(backward, grad, x, rtol=tol, atol=tol)
    compile_and_compare(backward, grad, x.contiguous(memory_format=torch.channels_last), rtol=tol, atol=tol)
    assert mlirc.stats().fallback_nodes == 0, mlirc.stats().summary()


def test_cnn_training_step_compiles_but_dropout():
    """A small CNN's forward and backward: convolutions' backward as library calls,
    max pooling with its indices and backward generated; gradients equal eager's."""
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(128, 10)
    )  # fmt: skip
    twin = copy.deepcopy(model)
    x, y = torch.randn(4, 3, 8, 8), torch.randint(0, 10, (4,))
    nn.functional.cross_entropy(model(x), y).backward()
    torch.compile(lambda x, y: nn.functional.cross_entropy(twin(x), y), backend="mlirc")(x, y).backward()
    for p, q in zip(model.parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-5)
    stats = mlirc.stats()
    assert stats.fallback_nodes == 0, stats.summary()


def _dropout(p):
    return torch.compile(lambda x: nn.functional.dropout(x, p, training=True), backend="mlirc")


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_dropout_keeps_one_minus_p_and_scales_as_eager(p):
    """Generated dropout (frontend/random_ops.py): each element kept with probability
    1 - p, kept ones exactly eager's x * (1 / (1 - p)); no fallback node."""
    x = torch.randn(300, 401)
    out = _dropout(p)(x)
    kept = out != 0
    n = x.numel()
    assert abs(kept.sum().item() - (1 - p) * n) < 6 * math.sqrt(p * (1 - p) * n)
    assert abs(kept[:, :200].float().mean() - kept[:, 200:].float().mean()) < 0.02  # no positional bias
    assert torch.equal(out[kept], (x * (1.0 / (1.0 - p)))[kept])
    stats = mlirc.stats()
    assert stats.fallback_nodes == 0 and stats.library_ops["aten.randint.low"] == 1, stats.summary()


def test_dropout_is_reproducible_under_manual_seed():
    x, f = torch.randn(64, 33), _dropout(0.3)
    torch.manual_seed(7)
    first, again = f(x), f(x)
    torch.manual_seed(7)
    assert torch.equal(f(x), first)  # the same seed draws the same masks
    assert not torch.equal(again, first)  # and each call draws a new one


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_dropout_edge_probabilities_are_eagers(p):
    x = torch.randn(5, 7)
    x[0, 0], x[1, 1] = float("nan"), float("inf")
    torch.testing.assert_close(_dropout(p)(x), nn.functional.dropout(x, p, training=True), equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_dropout_backward_uses_the_forward_mask(dtype):
    x = torch.randn(17, 23, dtype=dtype).t().requires_grad_()  # non-contiguous
    w = torch.randn(23, 17, dtype=dtype)
    out = _dropout(0.4)(x)
    (out * w).sum().backward()
    kept = (out != 0).to(dtype)
    torch.testing.assert_close(x.grad, w * kept * (1 / 0.6), rtol=1e-2 if dtype == torch.bfloat16 else 1e-6, atol=0)
    assert _dropout(0.4)(torch.randn(0, 5)).shape == (0, 5)
