"""The GPU backend on a real GPU: answers match eager on CUDA tensors.

Skipped without CUDA (CI has none); `bash benchmarks/gpu_check.sh` runs it on the
GPU host.  Code generation down to cubins is tested everywhere in test_gpu_codegen.
"""

from __future__ import annotations

import copy
import json
import re

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from conftest import compare_gradients, compile_and_compare, wrapper_source

import mlirc
from mlirc.config import config

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def cuda(*shape, dtype=torch.float32):
    return torch.randn(*shape, device="cuda", dtype=dtype)


POINTWISE = {
    "chain": lambda x, y: torch.sigmoid(x) * y + torch.tanh(x) - 1,
    "gelu": lambda x, y: F.gelu(x) + y,
    "where": lambda x, y: torch.where(x > y, x.exp(), y.abs().log1p()),
    "pow_atan2": lambda x, y: x.abs().pow(y) + torch.atan2(x, y),
}


@pytest.mark.parametrize("name", sorted(POINTWISE))
@pytest.mark.parametrize("shape", [(1,), (7, 33), (3, 5, 1031), (2048, 1024)])
def test_pointwise(name, shape):
    compile_and_compare(POINTWISE[name], cuda(*shape), cuda(shape[-1]))


def test_noncontiguous_and_broadcast():
    x = cuda(33, 7).t()  # non-contiguous input
    compile_and_compare(lambda a, b, c: a * b + c, x, cuda(7, 1), cuda(33))


REDUCTIONS = {
    "softmax": lambda x: torch.softmax(x, -1),
    "log_softmax": lambda x: torch.log_softmax(x, -1),
    "layer_norm": lambda x: F.layer_norm(x, x.shape[-1:]),
    "sum_last": lambda x: x.sum(-1),
    "mean_first": lambda x: x.mean(0),
    "amax_all": lambda x: x.amax(),
    "var": lambda x: x.var(-1),
    "logsumexp": lambda x: torch.logsumexp(x, -1),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("shape", [(1, 1), (5, 1000), (3, 10007), (130, 7)])
def test_reductions(name, shape):
    compile_and_compare(REDUCTIONS[name], cuda(*shape), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dynamic", [False, True])
def test_logsumexp_of_special_rows(dynamic):
    """One row group (the guard on the row maxima inside it): rows of -inf, +inf,
    NaN and a lone +inf give eager's -inf, inf, NaN, inf; rows of run-time length too."""

    def f(x):
        return torch.logsumexp(x * 2, -1) * 0.5 + 1  # per-row work after the sum too

    fn = torch.compile(f, backend="mlirc", dynamic=dynamic)
    for n in (37, 1000):
        x = cuda(6, n)
        x[0] = -float("inf")
        x[1, 3] = float("inf")
        x[2, 5] = float("nan")
        x[3] = float("inf")
        x[4, 0] = -float("inf")
        torch.testing.assert_close(fn(x), f(x), rtol=1e-5, atol=1e-5, equal_nan=True)
    assert mlirc.stats().fallback_nodes == 0


def _relative_error(value: torch.Tensor, exact: torch.Tensor) -> float:
    return ((value.double() - exact) / exact).abs().max().item()


@pytest.mark.parametrize(
    "fn,shape",
    [
        (lambda x: x.sum(), (2**24,)),  # chunks over programs
        (lambda x: x.sum(0), (2**16, 3)),  # a long strided dim: chunks of 256 rows
        (lambda x: x.mean(1), (3, 70001, 5)),  # a middle dim, with a leftover chunk
        (lambda x: torch.softmax(x, -1), (4, 20000)),  # rows longer than a row group
        (lambda x: x.sum(-1), (8, 8192)),  # the longest row left unsplit
        (lambda x: x.sum(-1), (1024, 65536)),  # many long rows: walked whole, in chunks
        (lambda x: torch.softmax(x, -1), (1024, 20000)),  # a row group over them
        (lambda x: F.layer_norm(x.t(), x.shape[:1]), (30000, 1024)),  # read transposed
    ],
)
def test_long_reductions_accuracy(fn, shape):
    """mlirc-split-reductions' GPU limits: long sums stay as accurate as eager's."""
    x = torch.rand(shape, device="cuda") * 3 + 1
    exact = fn(x.double())
    compiled = torch.compile(fn, backend="mlirc")(x)
    assert _relative_error(compiled, exact) <= max(2 * _relative_error(fn(x), exact), 2.0**-23)


@pytest.mark.parametrize("rows", [1024, 1031])
def test_many_long_rows(rows):
    """Rows longer than a tile holds, many of them: one row group walks each in
    chunks (a leftover chunk at 12007), read contiguous and transposed, in halves too."""
    for name in ("softmax", "log_softmax", "layer_norm", "logsumexp"):
        fn = REDUCTIONS[name]
        compile_and_compare(fn, cuda(rows, 12007))
        compile_and_compare(lambda x: fn(x.t()), cuda(12007, rows))
    compile_and_compare(
        lambda x: torch.softmax(x * 2, -1), cuda(rows, 9000, dtype=torch.bfloat16), rtol=2e-2, atol=2e-2
    )  # fmt: skip


def _softmax_and_denominator(x):
    e = (x - x.amax(-1, keepdim=True)).exp()
    s = e.sum(-1, keepdim=True)
    return e / s, s


@pytest.mark.parametrize("length", [9001, 20000])
def test_online_softmax_edge_values(length):
    """Rows walked in chunks fold the max and the sum of exp(x - max) in one pass,
    each lane's sum rescaled as its max grows (passes/gpu/tt/row_loops.py): lanes that
    saw only -inf, a whole -inf row (NaN, as eager), +inf and NaN in a row, a max that
    grows every chunk, the max in the last partial chunk, the denominator returned,
    and rows read transposed."""
    x = cuda(6, length) * 10
    x[0, : length // 2] = -float("inf")
    x[1] = -float("inf")
    x[2, 123] = float("inf")
    x[3, 4567] = float("nan")
    x[4] = torch.linspace(-50, 50, length, device="cuda")
    x[5, -1] = 80.0
    compile_and_compare(_softmax_and_denominator, x)
    torch._dynamo.reset()
    compile_and_compare(lambda t: torch.log_softmax(t.t(), -1), x.t().contiguous())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_types(dtype):
    tol = {"rtol": 2e-2, "atol": 2e-2}
    compile_and_compare(
        lambda x, y: torch.softmax(F.gelu(x) * y, -1), cuda(9, 257, dtype=dtype), cuda(257, dtype=dtype), **tol
    )


def test_integers_and_bools():
    x = torch.randint(-100, 100, (37, 41), device="cuda")
    compile_and_compare(lambda a: ((a * 3) // 7 + a.amax(-1, keepdim=True), (a > 0).sum(-1), (a % 5 == 0)), x)


def test_zero_size():
    compile_and_compare(lambda x: torch.relu(x) + 1, cuda(0, 5))


def test_embedding_and_linear():
    emb, lin = nn.Embedding(100, 64).cuda(), nn.Linear(64, 32).cuda()
    idx = torch.randint(0, 100, (4, 9), device="cuda")
    with torch.no_grad():
        compile_and_compare(lambda i: F.gelu(lin(emb(i))), idx)


SCATTERS = {  # too large for the dense match: atomics (passes/gpu/tt/scatter.py)
    "index_put": lambda x, i, v: x.index_put((i,), v, accumulate=True),
    "index_put_broadcast": lambda x, i, v: x.index_put((i,), v[:, :1], accumulate=True),
    "embedding_backward": lambda x, i, v: torch.ops.aten.embedding_dense_backward(v, i % 3001, 3001, 7, False),
    "scatter_add": lambda x, i, v: x.t().scatter_add(1, (i % 3001).view(1, -1).expand(37, -1), v.t()),
}


@pytest.mark.parametrize("name", sorted(SCATTERS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_large_scatters(name, dtype):
    index = torch.randint(-3001, 3001, (20011,), device="cuda")
    # one row takes many updates (fewer in bfloat16: eager's scatter_add there rounds
    # after each atomic add, and drifts from the true sum as the row grows)
    index[: 500 if dtype != torch.bfloat16 else 20] = 5
    x, v = cuda(3001, 37) * 10, cuda(20011, 37) * 10
    if name == "embedding_backward" and dtype == torch.int64:
        return  # a float op
    x, v = x.to(dtype), v.to(dtype)
    # atomics add in no fixed order (eager's CUDA index_put sorts the updates first);
    # bfloat16 index_put sums in float32 as eager's does, rounded once, but eager's
    # scatter_add rounds after each of a row's ~7 atomic adds, in no fixed order
    # either: two such sums of magnitude ~50 lie a few bfloat16 ulps (0.25) apart
    tol = {torch.float32: 1e-4, torch.bfloat16: 1e-2}.get(dtype, 0)
    atol = 3.0 if dtype == torch.bfloat16 and name == "scatter_add" else tol * 100
    compile_and_compare(SCATTERS[name], x, index, v, rtol=tol, atol=atol)


def test_transformer_layer():
    layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True).cuda().eval()
    with torch.no_grad():
        stats = compile_and_compare(layer, cuda(2, 17, 64), expect_no_fallback=False)
    assert stats.failed_regions == 0, stats.summary()


def test_conv_net():
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
    model = model.cuda().eval()
    with torch.no_grad():
        stats = compile_and_compare(model, cuda(2, 3, 17, 15), expect_no_fallback=False)
    assert stats.failed_regions == 0, stats.summary()


class _Block(nn.Module):
    """A ResNet basic block with a strided shortcut, then an average pool whose window
    sums are an exact (never TF32) convolution."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(6, 12, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(12)
        self.conv2, self.bn2 = nn.Conv2d(12, 12, 3, padding=1, bias=False), nn.BatchNorm2d(12)
        self.shortcut = nn.Conv2d(6, 12, 1, stride=2)
        for bn in (self.bn1, self.bn2):
            bn.running_mean.normal_(0, 0.5)
            bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # the padded pool between convolutions: a gather over NHWC, its loops reordered
        y = F.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 3, 1, 1)
        y = torch.relu(self.bn2(self.conv2(y)) + self.shortcut(x))
        return F.avg_pool2d(y, 3, stride=2, padding=1) * 2


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_conv_block_runs_channels_last(layout, tmp_path, monkeypatch):
    """mlirc-channels-last on the GPU: cuDNN gets NHWC activations and the kernels
    between convolutions read and write NHWC (mlirc-gpu-loop-order), with eager's
    answers on odd sizes and either input layout.  In float32 sums: with cuDNN's
    default TF32, eager's NCHW algorithms and the NHWC ones round differently (3e-4
    apart here), as Inductor's channels-last convolutions do."""
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    model = _Block().cuda().eval()
    x = cuda(3, 6, 17, 23)
    x = x.to(memory_format=torch.channels_last) if layout == "channels_last" else x
    with torch.no_grad():
        compile_and_compare(model, x)
        source = wrapper_source(model, (x,), tmp_path)
    # conv2d_nhwc: NCHW views (channel stride 1) of NHWC buffers; the 3x3 average pool's
    # sums tap by tap in a kernel, not a one-channel convolution (no exact_conv2d)
    nchw_view = r"reinterpret_tensor\(\w+, \(\d+, \d+, \d+, \d+\), \(\d+, 1, \d+, \d+\), 0\)"
    assert re.search(rf"torch\.convolution\({nchw_view}", source), source
    assert "exact_conv2d" not in source, source


def test_runs_on_the_current_stream():
    x = cuda(1 << 20)
    fn = torch.compile(lambda a: a * 2 + 1, backend="mlirc")
    fn(x)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        y = fn(x)
    stream.synchronize()
    torch.testing.assert_close(y, x * 2 + 1)
    assert mlirc.stats().failed_regions == 0


def test_row_group_keeps_outside_reads():
    # the exponentials leave the fused softmax kernel (read again, transposed)
    def fn(x, b):
        e = torch.exp(x + b - (x + b).amax(-1, keepdim=True))
        return e / e.sum(-1, keepdim=True), e.t() * 2

    compile_and_compare(fn, cuda(37, 1000), cuda(1000))


@pytest.mark.parametrize("shape", [(1, 8192), (3, 8193), (64, 4096), (1000, 17)])
def test_row_group_sizes(shape):
    # 8193 > one row tile: the reductions stay separate kernels
    compile_and_compare(lambda x: F.layer_norm(torch.softmax(x, -1) * 3, x.shape[-1:]), cuda(*shape))


def test_reduce_overhead_replays_fresh_results():
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 8), nn.LogSoftmax(-1)).cuda().eval()
    fn = torch.compile(model, backend="mlirc", mode="reduce-overhead")
    with torch.no_grad():
        xs = [cuda(16, 32) for _ in range(4)]
        outs = [fn(x) for x in xs]  # run, capture, replay, replay
        for x, out in zip(xs, outs, strict=True):  # earlier results are not overwritten
            torch.testing.assert_close(out, model(x), rtol=1e-4, atol=1e-4)
    assert mlirc.stats().failed_regions == 0


def test_reduce_overhead_replays_only_over_results_let_go(caplog):
    """A replay returns the graph's own output buffers, so it may run only while the
    caller holds nothing of the last result it returned there: kept (or a view of it
    kept), the next call replays a second graph, and with both held a plain call."""
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 8), nn.LogSoftmax(-1)).cuda().eval()
    fn = torch.compile(model, backend="mlirc", mode="reduce-overhead")
    xs = [cuda(16, 32) for _ in range(9)]
    kept = []
    with torch.no_grad(), caplog.at_level("INFO", logger="mlirc.backends.gpu.cudagraphs"):
        for x in xs[:3]:
            fn(x)  # each result dropped at once: one graph serves them all
        for i, x in enumerate(xs[3:]):
            y = fn(x)  # held while the next call runs (a loop's `y = model(x)`)
            torch.testing.assert_close(y, model(x), rtol=1e-4, atol=1e-4)
            if i % 2:
                kept.append((x, y[2:5, 1:]))  # a view outlives the result it was taken from
        for x, part in kept:
            torch.testing.assert_close(part, model(x)[2:5, 1:], rtol=1e-4, atol=1e-4)
    captures = [r.getMessage() for r in caplog.records if "captured" in r.getMessage()]
    assert len(captures) == 2, captures
    assert mlirc.stats().failed_regions == 0


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
def test_reduce_overhead_training_steps_match_eager(optimizer, caplog):
    """Training under CUDA graphs: the forward writes a batch norm's running
    statistics, the optimizer step its parameters (static inputs, in place) and their
    state.  Each is updated once per step, the capture's warm-up run included, and a
    parameter the step returns as itself does not keep its graph from replaying.  The
    backward reads the activations saved by the captured forward where they are."""
    torch.manual_seed(0)
    # no bias before the batch norm: its gradient is rounding noise (the norm takes the
    # mean out), which AdamW's first steps turn into moves of ~lr either way (eager in
    # float32 against float64 ends 0.015 apart after 6 steps)
    model = nn.Sequential(nn.Linear(13, 32, bias=False), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 5)).cuda()
    make = {
        "sgd": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, foreach=True),
        "adamw": lambda ps: torch.optim.AdamW(ps, lr=1e-2, foreach=True),
    }[optimizer]
    # AdamW's first steps move each weight by ~lr whatever its gradient's size, so a
    # rounding-level gradient difference shows as ~1e-4 of the weights (Inductor's
    # too); an update applied twice moves them by lr (1e-2)
    tolerance = {"sgd": (1e-4, 1e-5), "adamw": (1e-3, 2e-4)}[optimizer]
    models = {"eager": model, "mlirc": copy.deepcopy(model)}
    optimizers = {name: make(m.parameters()) for name, m in models.items()}
    forward = torch.compile(models["mlirc"], backend="mlirc", mode="reduce-overhead")
    update = torch.compile(optimizers["mlirc"].step, backend="mlirc", mode="reduce-overhead")
    steps = {"eager": (models["eager"], optimizers["eager"].step), "mlirc": (forward, update)}
    with caplog.at_level("INFO", logger="mlirc.backends.gpu.cudagraphs"):
        for _ in range(6):  # run, capture, replays
            x, target = cuda(9, 13), torch.randint(0, 5, (9,), device="cuda")
            losses = {}
            for name, (fn, step) in steps.items():
                loss = F.cross_entropy(fn(x), target)
                loss.backward()
                step()
                optimizers[name].zero_grad(set_to_none=True)
                losses[name] = loss.item()
            assert losses["mlirc"] == pytest.approx(losses["eager"], rel=tolerance[0])
    captured = [r.getMessage() for r in caplog.records if "captured" in r.getMessage()]
    assert len(captured) == 3, captured  # forward, backward, optimizer step: each once, then replayed
    # the forward reads its parameters and batch norm's statistics (which it writes) in place
    assert int(re.search(r"(\d+) in place", captured[0]).group(1)) >= 8, captured
    elsewhere = [int(re.search(r"(\d+) read from other", m).group(1)) for m in captured]
    assert max(elsewhere) >= 3, captured  # the backward: the saved input, batch norm's statistics...
    eager, mine = models["eager"].state_dict(), models["mlirc"].state_dict()
    for key, value in eager.items():
        torch.testing.assert_close(mine[key], value, rtol=tolerance[0], atol=tolerance[1])
    for a, b in zip(models["eager"].parameters(), models["mlirc"].parameters(), strict=True):
        for key, value in optimizers["eager"].state[a].items():
            got = optimizers["mlirc"].state[b][key].to(value.device, value.dtype)
            torch.testing.assert_close(got, value, rtol=tolerance[0], atol=tolerance[1])
    assert mlirc.stats().fallback_nodes == 0 and mlirc.stats().failed_regions == 0


def test_reduce_overhead_reads_parameters_in_place(caplog):
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 9 * 9, 5))
    model = model.cuda().eval()
    model[1].running_mean.normal_()
    fn = torch.compile(model, backend="mlirc", mode="reduce-overhead")
    x = cuda(2, 3, 11, 11)
    with torch.no_grad(), caplog.at_level("INFO", logger="mlirc.backends.gpu.cudagraphs"):
        for _ in range(3):  # run, capture, replay
            torch.testing.assert_close(fn(x), model(x), rtol=1e-4, atol=1e-4)
        # parameters and batch norm statistics are read where they are, not copied per call
        captured = [r.getMessage() for r in caplog.records if "captured" in r.getMessage()]
        in_place = [int(re.search(r"(\d+) in place", m).group(1)) for m in captured]
        assert in_place and min(in_place) >= 8, captured  # conv 2, batch norm 4, linear 2
        model[1].running_var.mul_(3)  # an in-place edit: the next replay reads it
        torch.testing.assert_close(fn(x), model(x), rtol=1e-4, atol=1e-4)
        model[0].weight.mul_(-2)  # its cached NHWC copy (a prepared value) is refreshed before the replay
        torch.testing.assert_close(fn(x), model(x), rtol=1e-4, atol=1e-4)
        model[0].weight.data = torch.randn_like(model[0].weight)  # moved: captured again, never stale
        torch.testing.assert_close(fn(x), model(x), rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(fn(x * 2), model(x * 2), rtol=1e-4, atol=1e-4)
    assert mlirc.stats().failed_regions == 0


POOLS = {
    "3x3_s2_p1": lambda x: F.max_pool2d(x, 3, 2, 1),
    "2x2": lambda x: F.max_pool2d(x, 2),
    "ceil_dilated": lambda x: F.max_pool2d(x, 3, 2, 1, dilation=2, ceil_mode=True),
    "relu_then_pool": lambda x: F.max_pool2d(torch.relu(x * 2 - 1), (3, 2), (1, 2)),
    "avg_3x3": lambda x: F.avg_pool2d(x, 3, 2, 1),
    "1d": lambda x: F.max_pool1d(x.flatten(2), 5, 3),
}


@pytest.mark.parametrize("name", sorted(POOLS))
@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
def test_pooling(name, layout):
    """Pooling windows (one output per lane, the window walked in a loop), odd sizes,
    NaN and -inf inside windows, both input layouts, float32 and float16."""
    for dtype, tol in ((torch.float32, 1e-5), (torch.float16, 1e-3)):
        x = cuda(3, 13, 17, 11, dtype=dtype)
        x[0, 0, 2, 3] = float("nan")
        x[1, 2, :, 4] = -float("inf")
        if layout == "channels_last":
            x = x.contiguous(memory_format=torch.channels_last)
        torch._dynamo.reset()
        compile_and_compare(POOLS[name], x, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(POOLS))
@pytest.mark.parametrize("channels,size", [(64, (80, 80)), (24, (20, 23))])
def test_pooling_after_convolution(name, channels, size, monkeypatch):
    """After a convolution the graph runs channels-last, so a pool gathers its windows
    from an NHWC buffer: neighbouring channels are one vector load, and the padded
    borders clamp their row and column indices.  Those 64-bit clamps are shielded from
    ptxas (passes/gpu/tt/numerics.py): unshielded, a 3 x 3 pool with padding read one row
    of every top-border window as padding on the H100 (ResNet's stem: 64 channels of
    80 x 80; the odd shape did not show it)."""
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    conv = nn.Conv2d(3, channels, 3, padding=1).cuda()
    x = cuda(2, 3, *size)
    torch._dynamo.reset()
    with torch.no_grad():
        compile_and_compare(lambda t: POOLS[name](conv(t)), x)


@pytest.mark.parametrize("activation", [F.relu6, F.gelu])
@pytest.mark.parametrize("channels,size", [(32, (40, 40)), (13, (3, 7))])
def test_padding_of_a_normalized_activation(activation, channels, size, monkeypatch):
    """MobileNetV2's TF-style padding after batch norm + ReLU6: the activation is
    computed at each padded index inside the padding's kernel
    (mlirc-fuse-gathered-producers), NHWC, with NaN reaching it through the convolution."""
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    conv, norm = nn.Conv2d(3, channels, 3, padding=1).cuda(), nn.BatchNorm2d(channels).cuda().eval()
    norm.running_mean.normal_()
    norm.running_var.uniform_(0.5, 2.0)
    depthwise = nn.Conv2d(channels, channels, 3, stride=2, groups=channels).cuda()
    x = cuda(2, 3, *size)
    x[1, :, 0, 0] = float("nan")
    torch._dynamo.reset()
    with torch.no_grad():
        compile_and_compare(lambda t: depthwise(F.pad(activation(norm(conv(t))), (0, 1, 0, 1))), x)


def test_convolution_weights_are_prepared_once():
    """The weights' NHWC copies are made by the prepare function (passes/hoist_frozen.py),
    cached, and made again when a weight changes in place or moves."""
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 4, 3, stride=2)).cuda().eval()
    fn = torch.compile(model, backend="mlirc")
    x = cuda(2, 3, 13, 11)
    with torch.no_grad():
        torch.testing.assert_close(fn(x), model(x), rtol=1e-4, atol=1e-4)
        assert mlirc.stats().prepared_regions == 1, mlirc.stats().summary()
        model[2].weight.mul_(-2)
        torch.testing.assert_close(fn(x), model(x), rtol=1e-4, atol=1e-4)
        model[0].weight.data = torch.randn_like(model[0].weight)
        torch.testing.assert_close(fn(x), model(x), rtol=1e-4, atol=1e-4)


CUDA_ATTENTION = {
    f"aten.{name}.default"
    for name in (
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention",
    )
}


def _attention_cases(dtype):
    def t(*shape):
        return cuda(*shape, dtype=dtype)

    b, h, lq, lk, e = 2, 3, 17, 19, 8  # primes: no tile divides them
    yield "no mask", (t(b, h, lq, e), t(b, h, lk, e), t(b, h, lk, e)), {}
    yield "float mask", (t(b, h, lq, e), t(b, h, lk, e), t(b, h, lk, e)), {"attn_mask": t(b, 1, lq, lk)}
    yield "bool mask", (t(b, h, lq, e), t(b, h, lk, e), t(b, h, lk, e)), {"attn_mask": cuda(lq, lk) > -0.5}
    yield "causal scaled", (t(1, 2, 13, 16), t(1, 2, 13, 16), t(1, 2, 13, 16)), {"is_causal": True, "scale": 0.3}
    qt = t(b, lq, h, e).transpose(1, 2)  # heads split from a (B, L, H*E) projection
    yield "non-contiguous", (qt, t(b, h, lk, e), t(b, h, lk, e)), {}
    yield "one query", (t(b, h, 1, e), t(b, h, lk, e), t(b, h, lk, e)), {}
    yield "gqa", (t(b, 6, lq, 16), t(b, 2, lk, 16), t(b, 2, lk, 16)), {"enable_gqa": True}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_attention_is_a_library_kernel(dtype):
    tol = TOLERANCE[dtype]
    for name, args, kwargs in _attention_cases(dtype):
        torch._dynamo.reset()
        mlirc.reset_stats()
        stats = compile_and_compare(
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kwargs), *args, rtol=tol, atol=tol,
            expect_no_fallback=False,
        )  # fmt: skip
        assert stats.fallback_nodes == 0, (name, stats.summary())
        fused = sum(n for op, n in stats.library_ops.items() if op in CUDA_ATTENTION)
        assert fused == 1 or name == "gqa", (name, stats.summary())  # GQA: whichever kernel takes it


def test_attention_backward_is_a_library_kernel():
    q, k, v = (cuda(2, 3, 17, 16).requires_grad_() for _ in range(3))
    mask = cuda(17, 17)

    stats = compare_gradients(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), q, k, v)
    assert stats.fallback_nodes == 0, stats.summary()
    assert any(op.endswith("_backward.default") for op in stats.library_ops), stats.summary()


GEMM_CASES = {
    "linear_gelu": lambda x, w, b: F.gelu(F.linear(x, w, b)),
    "linear_residual": lambda x, w, b: F.linear(x, w, b) + x[..., : w.shape[0]] * 2,
    "mm": lambda x, w, b: x.flatten(0, -2) @ w.t(),
    "bmm_nt": lambda x, w, b: x @ x.transpose(-1, -2),
}
TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 5e-2}


@pytest.mark.parametrize("case", sorted(GEMM_CASES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 1, 16), (2, 37, 70), (4, 128, 256), (3, 257, 129)])
def test_generated_gemms(case, dtype, shape, monkeypatch):
    # odd M, N and K (tails of every tile), tiny and tile-sized problems
    monkeypatch.setattr(config, "gpu_gemm", "generated")
    n = max(1, shape[-1] - 5)
    x, w, b = cuda(*shape, dtype=dtype), cuda(n, shape[-1], dtype=dtype) / 8, cuda(n, dtype=dtype)
    tol = TOLERANCE[dtype]
    compile_and_compare(GEMM_CASES[case], x, w, b, rtol=tol, atol=tol)


def test_generated_gemm_honours_tf32(monkeypatch):
    monkeypatch.setattr(config, "gpu_gemm", "generated")
    a, b = cuda(200, 300), cuda(300, 100)
    exact = (a.double() @ b.double()).relu()
    errors = {}
    for tf32 in (False, True):
        monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", tf32)
        torch._dynamo.reset()
        out = torch.compile(lambda a, b: torch.relu(a @ b), backend="mlirc")(a, b)
        errors[tf32] = (out.double() - exact).abs().max().item()
        assert mlirc.stats().fallback_nodes == 0
    assert errors[False] < 1e-3, "IEEE f32 unless TF32 is allowed"
    assert 1e-3 < errors[True] < 0.5, "TF32 (10-bit mantissa) when torch allows it"


def test_max_autotune_times_gemm_variants_and_caches_the_choice(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))
    model = nn.Sequential(nn.Linear(96, 160), nn.GELU()).cuda().to(torch.bfloat16).eval()
    x = cuda(4, 37, 96, dtype=torch.bfloat16)
    with torch.no_grad():
        out = torch.compile(model, backend="mlirc", mode="max-autotune-no-cudagraphs")(x)
        torch.testing.assert_close(out, model(x), rtol=5e-2, atol=5e-2)
        (record,) = (tmp_path / "autotune").glob("*.json")
        choice = json.loads(record.read_text())["value"]  # backends/disk_cache.py: key, hash and value
        assert len(choice["ms"]) >= 2 and choice["variant"] in choice["ms"], choice
        stamp = record.stat().st_mtime_ns
        torch._dynamo.reset()
        again = torch.compile(model, backend="mlirc", mode="max-autotune-no-cudagraphs")(x)
    torch.testing.assert_close(again, out, rtol=5e-2, atol=5e-2)
    assert record.stat().st_mtime_ns == stamp, "the second compile reads the cached choice"


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_optimizer_step_is_one_group_launch(optimizer, tmp_path):
    """A foreach step over parameters of odd sizes (one element, a prime, an empty
    one, several tiles) launches its per-parameter kernels as groups
    (mlirc-group-kernels): eager's parameters and state after three steps, updated
    in place (their storage kept), in a few launches instead of one per parameter."""
    torch.manual_seed(0)
    shapes = [(1,), (7, 5, 3), (1031,), (0, 4), (300, 257), (64, 33)]
    eager = [torch.randn(s, device="cuda", requires_grad=True) for s in shapes]
    mine = [p.detach().clone().requires_grad_() for p in eager]
    make = {
        "adam": lambda ps: torch.optim.Adam(ps, lr=1e-2, foreach=True),
        "sgd": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, foreach=True),
    }[optimizer]
    opt_eager, opt_mine = make(eager), make(mine)
    step = torch.compile(opt_mine.step, backend="mlirc")
    storage = [p.data_ptr() for p in mine]
    config.dump_dir = str(tmp_path)
    try:
        for _ in range(3):
            for a, b in zip(eager, mine, strict=True):
                a.grad = torch.randn_like(a)
                b.grad = a.grad.clone()
            opt_eager.step()
            step()
    finally:
        config.dump_dir = None
    for a, b in zip(eager, mine, strict=True):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)
        for key, value in opt_eager.state[a].items():
            # (Adam's step count: a CPU tensor in eager, on the GPU under torch.compile)
            torch.testing.assert_close(opt_mine.state[b][key].to(value.device), value, rtol=1e-5, atol=1e-6)
    assert [p.data_ptr() for p in mine] == storage
    assert mlirc.stats().fallback_nodes == 0, mlirc.stats().summary()
    dumps = sorted(tmp_path.glob("*.wrapper.py"), key=lambda p: int(re.search(r"region(\d+)", p.name).group(1)))
    steady = dumps[-1].read_text()
    launches = steady.count(".run(")
    assert "k_group_" in steady and launches <= 3, steady


def test_group_members_reading_one_dying_value():
    """Two kernels read the same GEMM result, which dies there: grouped, they run at
    once, so neither may write its result over it (backends/in_place.py)."""

    def fn(x, w, v):
        y = x @ w
        return (y * 2).sin(), (y + v).exp(), torch.tanh(v) * 3

    compile_and_compare(fn, cuda(37, 64), cuda(64, 129), cuda(129))


def _unbound_thirds(x, b):
    q, k, v = (x @ b.t() + 1).view(x.shape[0], 3, b.shape[1]).unbind(1)
    return q * k - v


def _chunks_of_a_bias_add(x, b):
    head, tail = (x + b).split([2, x.shape[1] - 2], dim=1)
    return head.exp(), tail.sin()


def _shifted_pair(x, b):  # overlapping slices: computed once, not split
    y = (x * b).cos()
    return y[:, :-1] - y[:, 1:]


def _partial_slice(x, b):  # only columns 1..3 of the product are ever read
    return (x * b)[:, 1:4].tanh()


def _stacked_qkv_attention(x, w, b):
    batch, tokens, dim = x.shape
    q, k, v = F.linear(x, w, b).view(batch, tokens, 3, 2, dim // 2).permute(2, 0, 3, 1, 4)
    return torch.softmax(q @ k.transpose(-2, -1), -1) @ v


SLICED = {
    "unbind": (_unbound_thirds, lambda r, c: (cuda(r, c), cuda(3 * c, c))),
    "chunks": (_chunks_of_a_bias_add, lambda r, c: (cuda(r, c + 4), cuda(c + 4))),
    "shifted": (_shifted_pair, lambda r, c: (cuda(r, c + 2), cuda(c + 2))),
    "partial": (_partial_slice, lambda r, c: (cuda(r, c + 5), cuda(r, 1))),
}


@pytest.mark.parametrize("rows, cols", [(7, 5), (1, 1), (0, 3), (13, 129)])
@pytest.mark.parametrize("name", list(SLICED))
def test_slices_of_elementwise_results(name, rows, cols):
    """A value read only through disjoint slices is computed per slice
    (mlirc-split-sliced-generics): eager's values with NaN and inf, on odd and empty
    shapes, a column-major input and at symbolic sizes."""
    fn, make = SLICED[name]
    x, b = make(rows, cols)
    if x.numel():
        x.view(-1)[0], x.view(-1)[-1] = float("nan"), float("inf")
    compile_and_compare(fn, x, b)
    torch._dynamo.reset()
    compile_and_compare(fn, x.t().contiguous().t(), b)
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="mlirc", dynamic=True)
    for extra in (0, 3):
        x, b = make(rows + extra, cols)
        torch.testing.assert_close(compiled(x, b), fn(x, b), equal_nan=True)


@pytest.mark.parametrize("batch, tokens", [(3, 7), (1, 1), (2, 13)])
def test_stacked_qkv_attention_and_its_gradients(batch, tokens):
    x = torch.randn(batch, tokens, 10, device="cuda", dtype=torch.float64, requires_grad=True)
    w, b = (torch.randn(*s, device="cuda", dtype=torch.float64, requires_grad=True) for s in ((30, 10), (30,)))
    stats = compare_gradients(_stacked_qkv_attention, x, w, b)
    assert stats.fallback_nodes == 0, stats.summary()


@pytest.mark.parametrize(
    "batch, channels, size, layout",
    [
        (1, 1, (2, 1), "contiguous"),
        (2, 3, (5, 7), "channels_last"),
        (64, 16, (32, 32), "contiguous"),  # per channel 65536 values: sums split in stages
        (5, 13, (31, 33), "channels_last"),
    ],
)
def test_batch_norm_training_matches_eager(batch, channels, size, layout):
    """A training batch norm after a convolution: its backward's two sums over the same
    pixels in one kernel (mlirc-gpu-sibling-reductions), the short last stages of split
    sums as row reductions with the per-channel work after them (mlirc-gpu-loop-order,
    row fusion across the statistics' reshapes).  Output, running statistics and every
    gradient against eager, in float64: in float32 the convolution's weight gradient,
    summed over 65536 pixels in another order by cuDNN on another layout, differs by
    1e-3 relative from eager's with or without these passes."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU())
    model = model.to("cuda", torch.float64)
    twin = copy.deepcopy(model)
    x = torch.randn(batch, 3, *size, device="cuda", dtype=torch.float64) * 2 + 0.5
    if layout == "channels_last":
        x = x.to(memory_format=torch.channels_last)
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    expected = model(x1)
    (expected * expected.detach().sin()).sum().backward()
    actual = torch.compile(twin, backend="mlirc")(x2)
    (actual * actual.detach().sin()).sum().backward()
    torch.testing.assert_close(actual, expected, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(x2.grad, x1.grad, rtol=1e-9, atol=1e-9)
    for p, q in zip(model.parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-9, atol=1e-9)
    for name in ("running_mean", "running_var"):
        torch.testing.assert_close(getattr(twin[1], name), getattr(model[1], name), rtol=1e-12, atol=1e-12)
    assert mlirc.stats().fallback_nodes == 0, mlirc.stats().summary()
