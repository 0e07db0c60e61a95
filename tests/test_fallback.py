"""Unsupported ops fall back to eager (logged); strict mode raises; errors are typed."""

import logging

import pytest
import torch
from conftest import compile_and_compare

import mlirc
from mlirc.config import config


def uses_unsupported(x):
    y = torch.exp(x) + 1
    z = torch.sort(y, 0).values  # no sort lowering: it runs eagerly between two regions
    return torch.tanh(z) * 2


def test_fallback_runs_correctly_and_logs(caplog):
    with caplog.at_level(logging.WARNING, logger="mlirc"):
        stats = compile_and_compare(uses_unsupported, torch.randn(9, 4), expect_no_fallback=False)
    assert stats.fallback_nodes >= 1
    assert any("sort" in key for key in stats.fallback_ops)
    assert stats.compiled_regions >= 1
    assert "aten.sort" in caplog.text


def test_strict_raises(monkeypatch):
    monkeypatch.setattr(config, "strict", True)
    with pytest.raises(Exception, match="aten.sort"):
        torch.compile(uses_unsupported, backend="mlirc")(torch.randn(9, 4))


def test_backend_found_by_name():
    assert "mlirc" in torch._dynamo.list_backends()


def test_error_hierarchy():
    assert issubclass(mlirc.UnsupportedOpError, mlirc.MlircError)
    assert issubclass(mlirc.PipelineError, mlirc.MlircError)
    err = mlirc.PipelineError("mlirc-form-kernels", "boom", "mlirc-opt x.mlir -p mlirc-stage-kernels")
    assert "mlirc-form-kernels" in str(err) and "mlirc-opt x.mlir" in str(err)


def test_library_kernels_are_not_fallback():
    """LAPACK/FFT ops run as library kernels (like Inductor's extern kernels), counted apart."""

    def f(a):
        q, r = torch.linalg.qr(a)
        return torch.relu(q) + r.sum(), torch.fft.rfft(a)

    stats = compile_and_compare(f, torch.randn(6, 6))
    assert stats.library_nodes >= 2 and stats.fallback_nodes == 0, stats.summary()
