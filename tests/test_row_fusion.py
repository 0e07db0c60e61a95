"""CPU row fusion (mlirc-cpu-fuse-rows): softmax- and norm-like groups run as one
loop over rows; results must match eager for every row shape, including rows
that are too long to fuse, single rows, 0 rows and non-contiguous inputs."""

import re

import pytest
import torch
import torch.nn.functional as F
from conftest import compile_and_compare

from mlirc.config import config
from mlirc.passes.cpu.fuse_rows import MAX_ROW


def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5)


def rms_norm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def residual_layer_norm(x, y, w, b):
    """Two outputs: the residual sum (also read later) and its normalized rows."""
    s = x + y
    return s, layer_norm(s, w, b) * 2


SHAPES = [(1, 1), (1, 129), (7, 33, 129), (2, 3, 5, 17), (64, 1024), (3, MAX_ROW + 5)]


@pytest.mark.parametrize("shape", SHAPES)
def test_softmax_family(shape):
    x = torch.randn(shape) * 4
    stats = compile_and_compare(lambda t: torch.softmax(t, -1) + torch.log_softmax(t, -1).exp(), x)
    rows = x.numel() // shape[-1]
    if 1 < shape[-1] <= MAX_ROW and rows > 1:  # a single row folds to a full reduction
        assert stats.kernels == 1, stats.summary()


@pytest.mark.parametrize("shape", SHAPES)
def test_norms(shape):
    x = torch.randn(shape)
    w, b = torch.randn(shape[-1]), torch.randn(shape[-1])
    compile_and_compare(layer_norm, x, w, b)
    compile_and_compare(rms_norm, x, w)


def test_fused_group_with_two_outputs():
    x, y = torch.randn(4, 9, 96), torch.randn(4, 9, 96)
    stats = compile_and_compare(residual_layer_norm, x, y, torch.randn(96), torch.randn(96))
    assert stats.kernels == 1, stats.summary()


def test_non_contiguous_and_empty_rows():
    x = torch.randn(40, 66)[::3, 1::2]  # strided rows
    compile_and_compare(lambda t: torch.softmax(t, -1), x)
    compile_and_compare(lambda t: torch.softmax(t, 0), torch.randn(37, 5))  # rows along dim 0
    compile_and_compare(lambda t: torch.softmax(t, -1), torch.randn(0, 17))
    compile_and_compare(layer_norm, torch.randn(3, 0, 8), torch.randn(8), torch.randn(8))


def test_float64():
    x = torch.randn(6, 5, 77, dtype=torch.float64)
    w, b = torch.randn(77, dtype=torch.float64), torch.randn(77, dtype=torch.float64)
    compile_and_compare(lambda t: torch.softmax(t, -1), x, rtol=1e-10, atol=1e-10)
    compile_and_compare(layer_norm, x, w, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_types_compile_on_the_cpu(dtype, monkeypatch):
    """Half-type softmax/exp/sum compile (each op in float32, rounded at its result);
    MLIRC_CPU_HALF=0 sends them back to eager."""
    x = torch.randn(6, 5, 77, dtype=dtype)

    def fn(t):
        return torch.softmax(t, -1) + t.exp().sum(-1, keepdim=True)

    compile_and_compare(fn, x, rtol=None, atol=None)  # torch.testing's tolerances for the dtype
    monkeypatch.setattr(config, "cpu_half", False)
    torch._dynamo.reset()  # compiled afresh under the new setting
    stats = compile_and_compare(fn, x, expect_no_fallback=False)
    assert stats.fallback_nodes >= 1 and any("computes eagerly on the CPU" in k for k in stats.fallback_ops), (
        stats.summary()
    )


@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 5, 37), (2, 64, 256), (1, 7, 129), (2, 3, MAX_ROW + 5), (0, 4, 9)])
@pytest.mark.parametrize("transposed", [False, True])
def test_training_layer_norm_forward_is_one_row_loop(shape, transposed, monkeypatch, tmp_path):
    """A training layer norm returns its mean and rstd for the backward, reshaped to
    [..., 1] between its kernels; its per-row work (the mean, the rstd) and the
    reshapes no longer split the row group: the residual add, the statistics and the
    normalization are one kernel in the forward.  Values, the saved statistics' use
    in the backward (input, weight and bias gradients) against eager."""
    monkeypatch.setattr(config, "dump_dir", str(tmp_path))
    torch.manual_seed(0)
    eager = torch.nn.LayerNorm(shape[-1])
    with torch.no_grad():
        eager.weight.normal_(), eager.bias.normal_()
    compiled = torch.nn.LayerNorm(shape[-1])
    compiled.load_state_dict(eager.state_dict())
    step = torch.compile(lambda x, y: compiled(x + y), backend="mlirc")
    x = torch.randn(shape[1], shape[0], shape[2]).transpose(0, 1) if transposed else torch.randn(shape)
    x = (x * 3 + 1).requires_grad_(True)
    y = torch.randn(shape[-1])
    want, got = eager(x + y), step(x, y)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    grad = torch.randn_like(want)
    inputs = lambda m: (x, m.weight, m.bias)  # noqa: E731
    grads = torch.autograd.grad(got, inputs(compiled), grad), torch.autograd.grad(want, inputs(eager), grad)
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
    # transposed: x + y is saved for the backward in x's strides, by a copy kernel
    if shape[0] * shape[1] > 1 and 1 < shape[-1] <= MAX_ROW and not transposed:
        forward = min(tmp_path.glob("*.wrapper.py"), key=lambda p: int(re.search(r"\d+", p.name).group()))
        assert forward.read_text().count("kernels['") == 1, forward.read_text()
