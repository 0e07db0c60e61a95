"""CNNs on the CPU run channels-last (mlirc-channels-last): oneDNN convolutions
on NHWC tensors, and the kernels between them reading and writing NHWC.  Every
case is checked against eager, with odd sizes, strided inputs and prime channel
counts (the vector width does not divide them)."""

import math
import re

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from conftest import compile_and_compare

from mlirc.config import config


def _randomized(model: nn.Module) -> nn.Module:
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.normal_()
            m.running_var.uniform_(0.5, 2.0)
            m.weight.data.normal_()
    return model.eval()


class Block(nn.Module):
    """conv-BN-ReLU-pool twice, a residual add and a global average: every kind
    of kernel that sits between convolutions."""

    def __init__(self, cin: int, width: int, pool: nn.Module) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(width)
        self.pool = pool
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.down = nn.Conv2d(width, width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(torch.relu(self.bn1(self.conv1(x))))
        y = torch.relu(self.bn2(self.conv2(x)) + self.down(x))
        return y.mean((2, 3))


@pytest.mark.parametrize(
    "cin, width, size, pool",
    [
        (3, 16, (17, 15), nn.MaxPool2d(2)),
        (1, 13, (9, 11), nn.MaxPool2d(3, stride=2, padding=1)),  # a padded window
        (5, 7, (8, 8), nn.AvgPool2d(2)),
        (2, 1, (6, 7), nn.MaxPool2d(2)),  # one channel: nothing to vectorize
        (4, 9, (12, 10), nn.MaxPool2d((2, 3), stride=(2, 1), dilation=(1, 2))),
    ],
)
def test_conv_blocks(cin, width, size, pool):
    model = _randomized(Block(cin, width, pool))
    x = torch.randn(3, cin, size[1], size[0] + 1)[..., 1:]  # non-contiguous
    with torch.no_grad():
        compile_and_compare(model, x)


def test_feature_maps_come_back_in_nchw():
    """A conv result returned as is, and one flattened, are the NCHW tensors eager gives."""
    conv = nn.Conv2d(3, 6, 3, stride=2, padding=1)
    with torch.no_grad():
        compile_and_compare(lambda t: (torch.relu(conv(t)), conv(t).flatten(1)), torch.randn(2, 3, 11, 9))


@pytest.mark.parametrize("groups", [1, 7])
def test_grouped_and_1d_convolutions(groups):
    conv2d = nn.Conv2d(7, 14, 3, padding=2, dilation=2, groups=groups)
    conv1d = nn.Conv1d(14, 5, 3)
    with torch.no_grad():
        compile_and_compare(lambda t: conv1d(torch.relu(conv2d(t)).mean(2)), torch.randn(2, 7, 10, 13))


@pytest.mark.parametrize(
    "stride, padding, dilation, spatial",
    [([2], [1], [1], 2), ([1, 2], [0], [2], 2), ([2], [1], [1], 1)],
)
def test_one_entry_convolution_parameters(stride, padding, dilation, spatial):
    """aten.convolution repeats a one-entry stride/padding/dilation over every spatial
    dim (EfficientNet's convolutions pass padding=[0])."""
    x, w = torch.randn(2, 8, *[13, 11][:spatial]), torch.randn(4, 8, *[3, 3][:spatial])
    with torch.no_grad():
        compile_and_compare(
            lambda x, w: torch.ops.aten.convolution(x, w, None, stride, padding, dilation, False, [0] * spatial, 1),
            x,
            w,
        )


@pytest.mark.parametrize(
    "pool",
    [
        lambda x: torch.nn.functional.avg_pool2d(x, 1280, ceil_mode=True),  # EfficientNet's head
        lambda x: torch.nn.functional.avg_pool2d(x, (9, 4), stride=(3, 2), padding=(2, 1), ceil_mode=True),
        lambda x: torch.nn.functional.avg_pool2d(
            x, (9, 8), stride=(4, 5), padding=(1, 0), ceil_mode=True, count_include_pad=False
        ),
        lambda x: torch.nn.functional.max_pool2d(x, 1280, ceil_mode=True),
        lambda x: torch.nn.functional.max_pool2d(-x.abs(), 11, stride=4, padding=2, ceil_mode=True),
    ],
)
def test_windows_larger_than_the_input(pool):
    """ceil_mode lets a window reach far past the input; only the taps on the padded
    input count (a 1280x1280 window padded out whole was 8 GB per image)."""
    conv = nn.Conv2d(3, 7, 1)
    with torch.no_grad():
        compile_and_compare(lambda t: pool(conv(t)), torch.randn(3, 3, 5, 6))


def test_bfloat16_pooling():
    """A bf16 value that crosses a select or phi is rounded by x86 code generation with
    compiler-rt's __truncsfbf2, which the process lacks: mlirc's JIT supplies it (the
    call went to address 0 and crashed the process)."""
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.MaxPool2d(3, 2, 1)).eval().to(torch.bfloat16)
    with torch.no_grad():
        compile_and_compare(model, torch.randn(2, 3, 21, 19, dtype=torch.bfloat16), rtol=1.6e-2, atol=1e-2)


def test_empty_batch():
    conv = nn.Conv2d(3, 4, 3)
    with torch.no_grad():
        compile_and_compare(lambda t: torch.relu(conv(t)), torch.randn(0, 3, 8, 8), expect_no_fallback=False)


def test_float64():
    model = _randomized(Block(3, 5, nn.MaxPool2d(2))).double()
    with torch.no_grad():
        compile_and_compare(model, torch.randn(2, 3, 10, 10, dtype=torch.float64))


@pytest.mark.parametrize(
    "shape,channels",
    [
        ((8, 3, 32, 32), 16),  # 8192 rows: cut at W, then at H (mlirc-split-column-sums)
        ((3, 2, 37, 41), 7),  # primes: 4551 rows cut at W (41), 111 partial rows
        ((2, 5, 1, 300), 24),  # a run whose innermost dim alone is past the limit
        ((4, 3, 6, 5), 33),  # 120 rows: short, unsplit
    ],
)
def test_statistics_of_channels_last_activations(shape, channels):
    """Per-channel sums and variances over (N, H, W) of a convolution's NHWC result
    (batch-norm statistics: column sums in memory), in float32 and float64
    accumulators, against eager; the input is non-contiguous and holds a NaN and an
    inf that reach two channels' sums through the convolution."""
    conv = nn.Conv2d(shape[1], channels, 3, padding=1)
    x = torch.randn(*shape[:-1], shape[-1] * 2)[..., ::2]
    x[0, 0, 0, 0], x[-1, -1, -1, -1] = float("nan"), float("inf")

    def statistics(t: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = torch.relu(conv(t))
        var, mean = torch.var_mean(y.double(), (0, 2, 3), correction=0)
        return y.sum((0, 2, 3)), y.square().sum((0, 2, 3), keepdim=True), mean, var

    with torch.no_grad():
        compile_and_compare(statistics, x)
        compile_and_compare(statistics, torch.randn(*shape))


def test_no_copies_between_convolutions(monkeypatch, tmp_path):
    """conv3x3-ReLU-conv1x1: the input's NHWC copy, the 3x3 weight's OHWI copy, one
    ReLU kernel on NHWC data and the result's NCHW copy -- nothing converts between
    the two convolutions, and the 1x1 weight's OHWI form is a view of it.  (The
    weight copy runs in the prepare function, once: passes/hoist_frozen.py.)"""
    monkeypatch.setattr(config, "dump_dir", str(tmp_path))
    first, second = nn.Conv2d(3, 8, 3), nn.Conv2d(8, 4, 1)
    with torch.no_grad():
        compile_and_compare(lambda t: second(torch.relu(first(t))), torch.randn(2, 3, 12, 12))
    (wrapper,) = [p.read_text() for p in tmp_path.glob("*.wrapper.py")]
    convolutions = wrapper.count("torch.conv2d(") + wrapper.count("conv_sites[")  # oneDNN, plain or packed
    assert convolutions == 2 and wrapper.count("kernels[") == 4, wrapper


@pytest.mark.parametrize("pad", [(0, 1, 0, 1), (1, 2, 3, 0), (0, 0, 0, 0)])
def test_padding_between_convolutions_stays_channels_last(monkeypatch, tmp_path, pad):
    """TF-style "same" padding (MobileNet, EfficientNet from transformers) pads between
    convolutions: the padding reads the NHWC tensor behind its input's NCHW view
    (a gather, rewritten index by index) and writes NHWC, in memory order -- it read
    NCHW and wrote across channels before, 4x slower.  A zero padding is a copy."""
    monkeypatch.setattr(config, "dump_dir", str(tmp_path))
    first, depthwise = nn.Conv2d(3, 11, 3), nn.Conv2d(11, 11, 3, groups=11)

    def net(t: torch.Tensor) -> torch.Tensor:
        return depthwise(nn.functional.pad(torch.relu(first(t)), pad))

    with torch.no_grad():
        compile_and_compare(net, torch.randn(2, 3, 13, 10))
    (module,) = [p.read_text() for p in tmp_path.glob("*.cpu-fusion.mlir")]
    generated = [f for f in module.split("func.func @")[1:] if f.startswith("kernel_")]  # not library bodies
    nchw_activation = "tensor<2x11x11x8xf32>"  # relu's result in NCHW: no kernel reads or writes it
    assert generated and not any(nchw_activation in f for f in generated), module


def test_a_permuted_activation_keeps_its_own_layout(monkeypatch, tmp_path):
    """ConvNeXt's block: a convolution's output permuted to NHWC, a layer norm over
    channels, a linear layer, permuted back and added to the input.  The permute's
    result is already channels-last; made "NHWC" again it was written (N, W, C, H),
    and the layer norm reduced across strided memory (ConvNeXt-T 1.3x slower)."""
    monkeypatch.setattr(config, "dump_dir", str(tmp_path))
    conv, norm, linear = nn.Conv2d(7, 7, 3, padding=1, groups=7), nn.LayerNorm(7), nn.Linear(7, 7)

    def block(t: torch.Tensor) -> torch.Tensor:
        y = linear(norm(conv(t).permute(0, 2, 3, 1)))
        return t + y.permute(0, 3, 1, 2)

    with torch.no_grad():
        compile_and_compare(block, torch.randn(2, 7, 13, 10))
    (module,) = [p.read_text() for p in tmp_path.glob("*.cpu-fusion.mlir")]
    generated = [f for f in module.split("func.func @")[1:] if f.startswith(("kernel_", "rows_"))]
    assert generated and not any("2x10x7x13" in f for f in generated), module


@pytest.mark.parametrize(
    "channels,kernel,stride,padding",
    [(64, 3, 2, 1), (24, 3, 2, 1), (36, 2, 2, 0), (40, 3, 1, 1), (3, 2, 2, 1), (13, 3, 2, 1)],
)
def test_padded_max_pool_between_convolutions(channels, kernel, stride, padding):
    """A max pool with its padding fused in reads NHWC as a gather, vectorized over
    channels where they split into whole vectors (64, 24, 40, 36) and scalar where
    not (3, 13): eager's values, NaN included, on a non-contiguous input."""
    w = torch.randn(channels, 3, 3, 3)

    def f(x):
        return F.max_pool2d(torch.relu(F.conv2d(x, w, padding=1)), kernel, stride, padding)

    x = torch.randn(2, 3, 15, 22)[:, :, :, ::2]  # 15x11, strided
    x[0, :, 4, 3] = float("nan")
    with torch.no_grad():
        compile_and_compare(f, x, rtol=1e-5, atol=1e-5)


GATHERS_AFTER_NORM = {
    "pad": lambda t: F.pad(t, (0, 1, 2, 1)),  # TF-style "same" padding (MobileNet)
    "max_pool": lambda t: F.max_pool2d(t, 3, 2, 1),  # ResNet's stem
    "avg_pool": lambda t: F.avg_pool2d(t, 3, 2, 1),
}


@pytest.mark.parametrize("gather", sorted(GATHERS_AFTER_NORM))
@pytest.mark.parametrize("activation", [F.relu6, F.gelu])
@pytest.mark.parametrize("channels,size", [(8, (15, 17)), (13, (1, 7))])
def test_normalized_activation_computed_inside_the_gather(gather, activation, channels, size, monkeypatch, tmp_path):
    """Batch norm + activation before a padding or a pool is computed at each gathered
    index inside the gather's kernel (mlirc-fuse-gathered-producers): no kernel writes
    the activation.  NaN (and -inf) reach the windows through the convolution's input."""
    monkeypatch.setattr(config, "dump_dir", str(tmp_path))
    conv, norm = nn.Conv2d(3, channels, 3, padding=1), nn.BatchNorm2d(channels)
    _randomized(norm)
    depthwise = nn.Conv2d(channels, channels, 3, padding=1, groups=channels)
    x = torch.randn(2, 3, size[0], size[1] + 1)[..., 1:]  # non-contiguous
    x[1, :, 0, 0] = float("nan")
    if activation is not F.gelu:
        # Eager's GELU of +-inf depends on the CPU: AVX-512's vectorized kernel returns
        # NaN for +inf, where its scalar path (a tensor of one) and the math give +inf.
        x[0, 0, -1, -1] = float("-inf")

    def net(t: torch.Tensor) -> torch.Tensor:
        return depthwise(GATHERS_AFTER_NORM[gather](activation(norm(conv(t)))))

    with torch.no_grad():
        compile_and_compare(net, x, rtol=1e-5, atol=1e-5)
    (module,) = [p.read_text() for p in tmp_path.glob("*.kernels.mlir")]
    kernels = [f.split("{", 1)[0] for f in module.split("func.func @")[1:] if f.startswith("kernel_")]
    shapes = [dims for k in kernels for dims in re.findall(r"tensor<((?:\d+x)+)", k.rsplit("->", 1)[1])]
    results = [math.prod(int(d) for d in dims.split("x")[:-1]) for dims in shapes]
    activation = 2 * size[0] * size[1] * channels  # in whatever shape unit dims were folded to
    assert kernels and activation not in results, module


@pytest.mark.parametrize("shape", [(8, 16, 32, 32), (3, 7, 5, 11), (1, 5, 2, 3), (2, 13, 3, 17)])
def test_training_relu_and_its_mask_come_out_of_one_kernel(shape, monkeypatch, tmp_path):
    """A training batch norm and ReLU whose activation is returned: the backward's
    mask (`relu <= 0`) is computed with the activation, in one pass written through
    channels-last's map (mlirc-fuse-multi-output), not read back by a kernel of its
    own.  Values, gradients and running statistics against eager, channels-last and
    strided inputs."""
    monkeypatch.setattr(config, "dump_dir", str(tmp_path))
    torch.manual_seed(0)
    eager = nn.Sequential(nn.BatchNorm2d(shape[1]), nn.ReLU()).to(memory_format=torch.channels_last)
    compiled = nn.Sequential(nn.BatchNorm2d(shape[1]), nn.ReLU()).to(memory_format=torch.channels_last)
    compiled.load_state_dict(eager.state_dict())
    step = torch.compile(compiled, backend="mlirc")
    for x in (torch.randn(shape).to(memory_format=torch.channels_last), torch.randn(shape[::-1]).permute(3, 2, 1, 0)):
        x = x.requires_grad_(True)
        want, got = eager(x), step(x)
        grad = torch.randn_like(want)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        for a, b in zip(torch.autograd.grad(got, x, grad), torch.autograd.grad(want, x, grad), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(compiled[0].running_mean, eager[0].running_mean)
    torch.testing.assert_close(compiled[0].running_var, eager[0].running_var)
    forward = next(p.read_text() for p in sorted(tmp_path.glob("*.kernels.mlir")) if "tensor<i64>" in p.read_text())
    masks = re.findall(r"-> \(tensor<[0-9x]+xf32>, tensor<[0-9x]+xi8>\) attributes \{mlirc.kernel", forward)
    assert len(masks) == 1, forward


@pytest.mark.parametrize("shape", [(8, 16, 32, 32), (3, 7, 5, 11), (2, 13, 3, 17), (1, 5, 2, 3)])
def test_training_batch_norm_sums_read_the_activation_once(shape, monkeypatch, tmp_path):
    """A training batch norm's statistics (the deviations from a pivot and their
    squares, in float64) and its backward's sums (the gradient, and the gradient times
    the centred input) are column sums on channels-last activations: each pair is one
    kernel with two results (mlirc-fuse-sibling-reductions), not two kernels reading
    the activation in turn.  Values, input gradients, weight and bias gradients and
    running statistics against eager."""
    monkeypatch.setattr(config, "dump_dir", str(tmp_path))
    torch.manual_seed(0)
    eager = nn.Sequential(nn.Conv2d(3, shape[1], 3, padding=1), nn.BatchNorm2d(shape[1]), nn.ReLU())
    compiled = nn.Sequential(nn.Conv2d(3, shape[1], 3, padding=1), nn.BatchNorm2d(shape[1]), nn.ReLU())
    compiled.load_state_dict(eager.state_dict())
    step = torch.compile(compiled, backend="mlirc")
    x = (torch.randn(shape[0], 3, *shape[2:]) * 2 + 3).requires_grad_(True)
    want, got = eager(x), step(x)
    grad = torch.randn_like(want)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    inputs = lambda m: (x, m[0].weight, m[1].weight, m[1].bias)  # noqa: E731
    grads = torch.autograd.grad(got, inputs(compiled), grad), torch.autograd.grad(want, inputs(eager), grad)
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(compiled[1].running_mean, eager[1].running_mean)
    torch.testing.assert_close(compiled[1].running_var, eager[1].running_var)
    dumps = sorted(tmp_path.glob("*.kernels.mlir"), key=lambda p: int(re.search(r"\d+", p.name).group()))
    forward, backward = (p.read_text() for p in dumps)  # regions are numbered per process, in compile order
    for module, dtype in ((forward, "f64"), (backward, "f32")):  # the statistics, the backward's sums
        pairs = re.findall(rf"-> \((tensor<[0-9x]+x{dtype}>), \1\) attributes \{{mlirc.kernel", module)
        assert len(pairs) == 1, module
