"""bfloat16/float16 on the CPU (MLIRC_CPU_HALF=1, off by default): eager computes each
half op in float32 and rounds its result once, and sums in float32; so does mlirc
(mlirc-cpu-widen-halves, split sums with float32 partials, composite ops in opmath)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from conftest import compile_and_compare

from mlirc.config import config

CASES = {
    "sum_with_a_tail": lambda x, y: x.flatten().sum(),  # 2107 = 4 x 512 + 59: split, then a tail
    "mean": lambda x, y: x.mean(),
    "row_sum": lambda x, y: (x * 3).sum(1),
    "var": lambda x, y: x.var(1),
    "gelu": lambda x, y: F.gelu(x) * y,
    "gelu_tanh": lambda x, y: F.gelu(x, approximate="tanh"),
    "silu": lambda x, y: F.silu(x) + y,
    "layer_norm": lambda x, y: F.layer_norm(x, (301,), y[0], y[1]),
    "softmax": lambda x, y: torch.softmax(x, -1),
    "logsumexp": lambda x, y: torch.logsumexp(x, 1),
    "fmod": lambda x, y: torch.fmod(x * 100, y),
    "to_int": lambda x, y: (x * 3).to(torch.int32),
    "explicit_cast": lambda x, y: (x.float() * 1.001).to(x.dtype) + y,
    "cumsum": lambda x, y: x.cumsum(1),
}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("case", list(CASES))
def test_half_ops_match_eager(monkeypatch, case, dtype):
    monkeypatch.setattr(config, "cpu_half", True)
    torch.manual_seed(0)
    x, y = torch.randn(7, 301, dtype=dtype), torch.randn(7, 301, dtype=dtype)
    # torch.testing's own tolerances for the dtype (rtol 1.6e-2 / 1e-3, atol 1e-5)
    compile_and_compare(CASES[case], x, y, rtol=None, atol=None)
