"""Training a CNN: saved activations stay channels-last from forward to backward
(frontend/training_layouts.py), so the backward's convolution_backward calls run on
NHWC operands; gradients stay eager's."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn
from torch._subclasses import FakeTensor
from torch.utils._python_dispatch import TorchDispatchMode

import mlirc
from mlirc.frontend import training_layouts

CONV_BACKWARD = torch.ops.aten.convolution_backward.default
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA"))]


class Block(nn.Module):
    """conv-BN-ReLU, a residual with a strided 1x1 shortcut, pooling: the layouts a
    ResNet's backward passes between its convolutions."""

    def __init__(self, cin: int, cout: int, pool: nn.Module) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())
        self.body = nn.Sequential(
            nn.Conv2d(cout, cout, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
        )  # fmt: skip
        self.shortcut = nn.Sequential(nn.Conv2d(cout, cout, 1, stride=2, bias=False), nn.BatchNorm2d(cout))
        self.pool = pool

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        x = torch.relu(self.body(x) + self.shortcut(x))
        return self.pool(x).flatten(1)


class RecordConvolutionBackward(TorchDispatchMode):
    """The strides of each convolution_backward's grad_output, input and weight."""

    def __init__(self) -> None:
        super().__init__()
        self.operands: list[list[torch.Tensor]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is CONV_BACKWARD and not isinstance(args[0], FakeTensor):  # not the backward's compile
            self.operands.append(list(args[:3]))
        return func(*args, **(kwargs or {}))


def _channels_last(t: torch.Tensor) -> bool:
    return t.is_contiguous(memory_format=torch.channels_last)


def _train_step(model: nn.Module, x: torch.Tensor, compiled: bool) -> tuple[torch.Tensor, list]:
    run = torch.compile(model, backend="mlirc") if compiled else model
    out = run(x)
    loss = (out * torch.linspace(-1, 1, out.shape[-1], device=out.device)).square().sum()
    recorder = RecordConvolutionBackward()
    with recorder:
        loss.backward()
    return loss.detach(), recorder.operands


def _trains_as_eager(model: nn.Module, x: torch.Tensor) -> tuple[nn.Module, list]:
    """A compiled copy of `model` trained one step on `x` beside `model` in eager: the
    same loss and gradients.  The copy, and its convolution_backward operands."""
    twin = copy.deepcopy(model)
    expected, _ = _train_step(model, x, compiled=False)
    loss, operands = _train_step(twin, x, compiled=True)
    torch.testing.assert_close(loss, expected, rtol=1e-5, atol=1e-5)
    for p, q in zip(model.parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-4)
    return twin, operands


@pytest.mark.parametrize(
    "batch, cin, cout, size, pool",
    [
        (3, 3, 8, (11, 7), nn.AdaptiveAvgPool2d(1)),
        (1, 5, 6, (9, 9), nn.MaxPool2d(2, ceil_mode=True)),
        (2, 2, 13, (6, 10), nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)),
    ],
    ids=["avgpool_odd", "batch1_maxpool", "prime_channels_avgpool"],
)
@pytest.mark.parametrize("input_grad", [False, True])
@pytest.mark.parametrize("device", DEVICES)
def test_backward_convolves_channels_last_with_eagers_gradients(batch, cin, cout, size, pool, input_grad, device):
    torch.manual_seed(0)
    model = Block(cin, cout, pool).to(device)
    twin = copy.deepcopy(model)
    x = torch.randn(batch, cin, *size, device=device) * 3
    x1, x2 = x.clone().requires_grad_(input_grad), x.clone().requires_grad_(input_grad)
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):  # cuDNN's algorithms differ per layout
        expected, _ = _train_step(model, x1, compiled=False)
        loss, operands = _train_step(twin, x2, compiled=True)
    torch.testing.assert_close(loss, expected, rtol=1e-5, atol=1e-5)
    for p, q in zip(model.parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-4)
        assert q.grad.is_contiguous() == p.grad.is_contiguous()
    if input_grad:
        torch.testing.assert_close(x2.grad, x1.grad, rtol=1e-4, atol=1e-4)
    assert len(operands) == 4
    for grad_output, activation, weight in operands:
        # every operand NHWC: a weight, the input image converted by a kernel before the call
        assert all(_channels_last(t) for t in (grad_output, activation, weight)), [
            t.stride() for t in (grad_output, activation, weight)
        ]
    assert mlirc.stats().fallback_nodes == 0, mlirc.stats().summary()


@pytest.mark.parametrize("groups", [1, 3])
def test_saved_weights_reach_the_backward_channels_last(monkeypatch, groups):
    """The forward saves each convolution's weight as the channels-last copy it
    convolves with: the backward converts the input image and the loss's NCHW
    gradient, no weight (a 1x1 weight is both layouts at once)."""
    converted = []
    convolve_channels_last = training_layouts._convolve_channels_last

    def recording(gm):
        changed = convolve_channels_last(gm)
        converted.extend(
            tuple(n.args[0].meta["val"].shape)
            for n in gm.graph.nodes
            if n.target is torch.ops.aten.clone.default and n.kwargs.get("memory_format") is torch.channels_last
        )
        return changed

    monkeypatch.setattr(training_layouts, "_convolve_channels_last", recording)
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 6, 3, padding=1), nn.ReLU(), nn.Conv2d(6, 6, 3, stride=2, groups=groups), nn.BatchNorm2d(6),
        nn.ReLU(), nn.Conv2d(6, 7, 1), nn.Conv2d(7, 5, (2, 3), bias=False),
    )  # fmt: skip
    x = torch.randn(2, 3, 13, 9)
    twin, operands = _trains_as_eager(model, x)
    for p, q in zip(model.parameters(), twin.parameters(), strict=True):
        assert q.grad.is_contiguous() == p.grad.is_contiguous()
        assert p.is_contiguous() and q.is_contiguous()  # the parameters themselves untouched
    weights = {tuple(p.shape) for p in model.parameters() if p.dim() == 4}
    assert tuple(x.shape) in converted and not weights & set(converted), converted
    assert all(_channels_last(weight) for _, _, weight in operands)


def test_a_saved_activation_the_user_sees_keeps_eagers_strides():
    """A ReLU output saved for the backward and also returned: NCHW, as eager's."""
    torch.manual_seed(0)
    conv = nn.Sequential(nn.Conv2d(4, 6, 3), nn.ReLU())
    twin = copy.deepcopy(conv)

    def features(model: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = model(x)
        return y, torch.tanh(y).sum()

    x = torch.randn(2, 4, 9, 8)
    y1, s1 = features(conv, x)
    y2, s2 = torch.compile(features, backend="mlirc")(twin, x)
    assert y2.stride() == y1.stride()
    torch.testing.assert_close(y2, y1)
    s1.backward()
    s2.backward()
    for p, q in zip(conv.parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-5)


def test_backward_copies_its_inputs_where_strides_cannot_propagate(monkeypatch):
    """Where the backward graph cannot be re-traced for the saved activations'
    strides, it takes them copied into the strides it was traced with."""

    class NoFakeKernel(Exception):
        pass

    def refuse(*args, **kwargs):
        raise NoFakeKernel

    monkeypatch.setattr(training_layouts, "FakeTensorProp", refuse)
    torch.manual_seed(0)
    _, operands = _trains_as_eager(Block(3, 4, nn.AdaptiveAvgPool2d(1)), torch.randn(2, 3, 7, 7))
    assert not any(_channels_last(grad_output) for grad_output, _, _ in operands)
