"""Narrow linear layers run as generated dot products (passes/cpu/skinny_matmul.py),
with eager's answers for any shape, layout and value; the rest stay library calls."""

import pytest
import torch
import torch.nn.functional as F
from conftest import compile_and_compare, wrapper_source

LIBRARY_CALLS = ("torch.mm(", "torch.addmm(", "onednn_mm(", "linear_sites[")


def _head(x, w, b):
    """A classifier head: ReLU, a linear layer, log_softmax."""
    return torch.log_softmax(F.linear(torch.relu(x), w, b), -1)


def _uses_library(fn, args, tmp_path) -> bool:
    source = wrapper_source(fn, args, tmp_path)
    return any(call in source for call in LIBRARY_CALLS)


# (M, K, N): a digit classifier's head, ones, primes, K below and above a vector
# block, N up to the widest that is generated.
SHAPES = [(64, 512, 10), (1, 1, 1), (1, 7, 1), (37, 129, 1), (13, 257, 16), (5, 3, 2), (64, 70, 11)]


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_narrow_head_is_generated_and_matches_eager(m, k, n, tmp_path):
    args = (torch.randn(m, k), torch.randn(n, k), torch.randn(n))
    assert not _uses_library(_head, args, tmp_path)
    compile_and_compare(_head, *[torch.randn_like(a) for a in args])


def test_a_frozen_heads_weight_is_read_as_stored(tmp_path):
    """In inference the head's weight is a parameter: its transpose is pure data
    movement, left to fusion (not a cached (K, N) copy from mlirc-cpu-isolate-frozen),
    so each dot product still reads w[n, :] contiguously."""
    head = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Linear(512, 10), torch.nn.LogSoftmax(-1)).eval()
    x = torch.randn(64, 512)
    with torch.no_grad():
        source = wrapper_source(head, (x,), tmp_path)
        (module,) = tmp_path.glob("*.cpu-fusion.mlir")
        assert not any(call in source for call in LIBRARY_CALLS), source
        assert "func.func @frozen_" not in module.read_text()
        compile_and_compare(head, x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_plain_linear_and_float64(dtype, tmp_path):
    compile_and_compare(F.linear, torch.randn(19, 33, dtype=dtype), torch.randn(7, 33, dtype=dtype))
    # a bias whose add is the region's last op stays fused into the generated GEMM
    # (mlirc-outline-library-calls joins such adds to wide GEMMs' library calls only)
    args = (torch.randn(19, 33, dtype=dtype), torch.randn(7, 33, dtype=dtype), torch.randn(7, dtype=dtype))
    assert not _uses_library(F.linear, args, tmp_path)
    compile_and_compare(F.linear, *args)


def test_batched_and_non_contiguous_inputs():
    x = torch.randn(3, 11, 40)
    compile_and_compare(F.linear, x, torch.randn(5, 40), torch.randn(5))
    # a transposed activation and a weight that is itself a view of a wider one
    x_t = torch.randn(40, 23).t()
    wide = torch.randn(9, 80)
    compile_and_compare(lambda x, w: F.linear(x, w[:, ::2]), x_t, wide)


def test_nan_and_inf_propagate_like_eager():
    x, w, b = torch.randn(8, 64), torch.randn(6, 64), torch.randn(6)
    x[2, 5], x[4, 0], w[3, 7] = float("nan"), float("inf"), float("-inf")
    compile_and_compare(F.linear, x, w, b)


@pytest.mark.parametrize("m,k", [(0, 33), (5, 0)])
def test_empty_gemms(m, k):
    compile_and_compare(F.linear, torch.randn(m, k), torch.randn(7, k), torch.randn(7))


@pytest.mark.parametrize(
    "fn,args",
    [
        # wider than the generated kernel pays for
        (F.linear, (torch.randn(16, 64), torch.randn(17, 64))),
        # a (K, N) right operand: the dot products would stride through it
        (torch.mm, (torch.randn(16, 64), torch.randn(64, 10))),
    ],
    ids=["wide", "not_transposed"],
)
def test_other_gemms_stay_library_calls(fn, args, tmp_path):
    assert _uses_library(fn, args, tmp_path)
    compile_and_compare(fn, *args)


def test_head_is_one_row_loop(tmp_path):
    """ReLU, dot products, bias and log_softmax: one kernel, one pass over x."""
    args = (torch.randn(64, 512), torch.randn(10, 512), torch.randn(10))
    source = wrapper_source(_head, args, tmp_path)
    assert source.count("kernels[") == 1 and "kernels['rows_0']" in source, source
    compile_and_compare(_head, *[torch.randn_like(a) for a in args])
