"""CPU row fusion (mlirc-cpu-fuse-rows): softmax- and norm-like groups run as one
loop over rows; results must match eager for every row shape, including rows
that are too long to fuse, single rows, 0 rows and non-contiguous inputs."""

import pytest
import torch
import torch.nn.functional as F
from conftest import compile_and_compare

from mlirc.config import config
from mlirc.passes.cpu_fuse_rows import MAX_ROW


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
