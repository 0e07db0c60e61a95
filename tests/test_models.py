"""The models of the end-to-end issue compile with zero fallback nodes and match eager."""

import pytest
import torch
import torch.nn as nn
from conftest import compile_and_compare

import mlirc


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.avg = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.conv(x))))
        return self.fc(torch.flatten(self.avg(x), 1))


def test_mlp():
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 10), nn.LogSoftmax(-1)).eval()
    with torch.no_grad():
        compile_and_compare(model, torch.randn(5, 16))


def test_cnn():
    model = SmallCNN().eval()
    with torch.no_grad():
        compile_and_compare(model, torch.randn(2, 3, 17, 15))


@pytest.mark.parametrize("shape", [(7, 33, 129), (1, 1), (4, 3)])
def test_softmax(shape):
    compile_and_compare(lambda x: torch.softmax(x, -1), torch.randn(shape))


def test_layer_norm():
    ln = nn.LayerNorm(129)
    nn.init.normal_(ln.weight)
    nn.init.normal_(ln.bias)
    with torch.no_grad():
        compile_and_compare(ln, torch.randn(7, 33, 129))


def test_reductions():
    def f(x):
        return x.sum(1), x.mean(0, keepdim=True), x.amax(-1), x.argmax(1), x.max(0).values, (x > 0).any(1)

    compile_and_compare(f, torch.randn(13, 29))


@pytest.mark.parametrize("with_mask", [False, True])
def test_transformer_encoder_layer(with_mask):
    # Grad mode on: the standard path (eval + no_grad would take the fused fast path).
    layer = nn.TransformerEncoderLayer(64, 4, batch_first=True).eval()
    x = torch.randn(2, 10, 64)
    kwargs = {}
    if with_mask:
        kwargs["src_key_padding_mask"] = torch.tensor([[False] * 7 + [True] * 3, [False] * 10])
    compile_and_compare(layer, x, **kwargs)


def test_backward_matches_eager():
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3))
    x = torch.randn(5, 8)
    ref = model(x).square().sum()
    ref.backward()
    ref_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    out = torch.compile(model, backend="mlirc")(x).square().sum()
    out.backward()
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)
    for p, g in zip(model.parameters(), ref_grads, strict=True):
        torch.testing.assert_close(p.grad, g, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(), (1,), (3, 4)])
def test_bool_min_max(shape):
    """min over all-True bools is True (the reduction's init must be 1, not i1's -1)."""

    def f(m):
        return m.amin(), m.amax(), m.all(), m.any()

    compile_and_compare(f, torch.ones(shape, dtype=torch.bool))
    compile_and_compare(f, torch.rand(shape) > 0.5)


def test_lifted_constant_tensor():
    """A tensor built inside the function is a get_attr constant of the graph."""

    def f(x):
        return x * torch.tensor([1.0, -2.0, 3.0]) + torch.tensor(0.5)

    compile_and_compare(f, torch.randn(4, 3))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kernel_size": 3},
        {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 0)},
        {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
        {"kernel_size": 2, "stride": 2, "ceil_mode": True},
        {"kernel_size": 3, "padding": 1, "divisor_override": 5},
    ],
)
def test_avg_pool2d(kwargs):
    x = torch.randn(2, 3, 11, 7).transpose(2, 3)  # odd sizes, non-contiguous
    compile_and_compare(lambda t: torch.nn.functional.avg_pool2d(t, **kwargs), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(
    "kwargs",
    [
        {"kernel_size": 2},  # DenseNet's transitions
        {"kernel_size": (5, 4), "stride": (3, 2), "padding": (2, 1), "ceil_mode": True},
        {"kernel_size": 5, "stride": 1, "padding": 2, "count_include_pad": False},
        {"kernel_size": 3, "stride": 2, "padding": 1, "divisor_override": 4},
    ],
)
def test_small_average_pools_are_eagers_bits(kwargs, dtype):
    """Windows of up to 25 taps are summed tap by tap in eager's order, in float32 for
    bf16 as eager accumulates: eager's values bit for bit, on channels-last and
    3-d inputs too."""
    for x in (
        torch.randn(2, 5, 13, 11, dtype=dtype).to(memory_format=torch.channels_last),
        torch.randn(3, 9, 7, dtype=dtype),
    ):
        torch._dynamo.reset()
        fn = lambda t: torch.nn.functional.avg_pool2d(t, **kwargs) * 3  # noqa: E731
        assert torch.equal(torch.compile(fn, backend="mlirc")(x), fn(x))
    stats = mlirc.stats()
    assert stats.fallback_nodes == 0 and stats.compiled_regions == 2, stats.summary()
