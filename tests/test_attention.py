"""Scaled dot-product attention on the CPU: ATen's fused flash attention is a library
kernel while MLIRC_LIBRARY_GEMM is on (as Inductor calls it), and decomposes into
generated bmm + softmax + bmm kernels when it is off."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from conftest import compare_gradients, compile_and_compare

from mlirc.config import config

FLASH = "aten._scaled_dot_product_flash_attention_for_cpu.default"


def _sdpa(q, k, v, mask):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def _sdpa_causal_scaled(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)


def _cases():
    b, h, lq, lk, e = 2, 3, 17, 19, 8  # primes: no tile divides them
    yield "float mask", _sdpa, (torch.randn(b, h, lq, e), torch.randn(b, h, lk, e), torch.randn(b, h, lk, e), None)
    yield "broadcast mask", _sdpa, (
        torch.randn(b, h, lq, e), torch.randn(b, h, lk, e), torch.randn(b, h, lk, e), torch.randn(lq, lk),
    )  # fmt: skip
    yield "bool mask", _sdpa, (
        torch.randn(b, h, lq, e), torch.randn(b, h, lk, e), torch.randn(b, h, lk, e), torch.rand(b, 1, lq, lk) > 0.3,
    )  # fmt: skip
    yield "causal", _sdpa_causal_scaled, (torch.randn(1, 1, 13, 5), torch.randn(1, 1, 13, 5), torch.randn(1, 1, 13, 5))
    qt = torch.randn(b, lq, h, e).transpose(1, 2)  # heads split from a (B, L, H*E) projection
    yield "non-contiguous", _sdpa, (qt, torch.randn(b, h, lk, e), torch.randn(b, h, lk, e), None)
    yield "one query", _sdpa, (torch.randn(b, h, 1, e), torch.randn(b, h, lk, e), torch.randn(b, h, lk, e), None)


CASES = {name: (fn, args) for name, fn, args in _cases()}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", list(CASES))
def test_flash_attention_is_a_library_kernel(name, dtype):
    fn, args = CASES[name]
    args = [a.to(dtype) if a is not None and a.is_floating_point() else a for a in args]
    stats = compile_and_compare(fn, *args, expect_no_fallback=False)
    assert stats.fallback_nodes == 0, stats.summary()
    assert stats.library_ops[FLASH] == 1, stats.summary()


@pytest.mark.parametrize("name", ["broadcast mask", "causal"])
def test_attention_decomposes_without_library_kernels(name, monkeypatch):
    monkeypatch.setattr(config, "library_gemm", False)
    fn, args = CASES[name]
    stats = compile_and_compare(fn, *args)
    assert stats.library_nodes == 0, stats.summary()
    # generated: Q @ K^T joins the softmax's row loop (mlirc-cpu-fuse-rows), then @ V
    assert stats.kernels >= 2, stats.summary()


@pytest.mark.parametrize("with_mask", [False, True])
def test_encoder_layer_calls_flash_attention_between_compiled_regions(with_mask):
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=67, batch_first=True).eval()
        x = torch.randn(3, 11, 32)
        kwargs = {"src_key_padding_mask": torch.rand(3, 11) > 0.7} if with_mask else {}
        with torch.no_grad():
            stats = compile_and_compare(layer, x, expect_no_fallback=False, **kwargs)
    finally:
        torch.backends.mha.set_fastpath_enabled(True)
    assert stats.fallback_nodes == 0, stats.summary()
    assert stats.library_ops[FLASH] == 1, stats.summary()
    assert stats.compiled_regions == 2, "the projections before and the MLP after"


def test_attention_backward_matches_eager():
    q, k, v = (torch.randn(2, 3, 17, 8, requires_grad=True) for _ in range(3))
    mask = torch.randn(17, 17)
    stats = compare_gradients(lambda q, k, v: _sdpa(q, k, v, mask), q, k, v)
    assert stats.fallback_nodes == 0, stats.summary()
    assert stats.library_ops["aten._scaled_dot_product_flash_attention_for_cpu_backward.default"] == 1


def test_no_queries():
    q, k = torch.randn(2, 3, 0, 8), torch.randn(2, 3, 5, 8)
    compile_and_compare(_sdpa, q, k, k, None)
