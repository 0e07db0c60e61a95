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
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed) as info:
        torch.compile(uses_unsupported, backend="mlirc")(torch.randn(9, 4))
    inner = info.value.inner_exception
    assert isinstance(inner, mlirc.UnsupportedOpError) and "aten.sort" in str(inner), repr(inner)


def test_backend_found_by_name():
    assert "mlirc" in torch._dynamo.list_backends()


def test_internal_error_in_a_pass_is_a_pipeline_error_with_a_repro(monkeypatch):
    """Any exception inside a pass (a bug) reaches a strict user as a PipelineError
    (an MlircError) naming the pass, with an mlirc-opt command that reproduces it."""
    from dataclasses import replace

    from mlirc.passes.base.registry import PASSES

    def broken(module):
        raise ValueError("a bug in the pass")

    monkeypatch.setitem(PASSES, "mlirc-form-kernels", replace(PASSES["mlirc-form-kernels"], run=broken))
    monkeypatch.setattr(config, "strict", True)
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed) as info:
        torch.compile(lambda x: torch.exp(x) + 1, backend="mlirc")(torch.randn(5))
    inner = info.value.inner_exception
    assert isinstance(inner, mlirc.PipelineError) and isinstance(inner, mlirc.MlircError), repr(inner)
    assert inner.pass_name == "mlirc-form-kernels"
    assert "a bug in the pass" in str(inner) and "mlirc-opt " in str(inner) and "mlirc-stage-kernels" in str(inner)


def test_erasing_an_op_still_read_fails_its_pass_not_the_process(monkeypatch):
    """MLIR aborts the process on erasing an op whose result is read.  Passes erase
    through ir_utils.erase_op, which raises instead: the region runs eagerly, with a
    warning naming the pass.  The bug replayed: fuse-gathered-producers erasing a
    transpose that an unread reshape still used (before 32c4be0 the process died)."""
    from test_fuzz import REGRESSIONS

    from mlirc.passes import fuse_gathered_producers

    monkeypatch.setattr(fuse_gathered_producers, "_erase_unread_reshapes", lambda value: None)
    cat_then_fmod, (x, y) = REGRESSIONS["cat_then_fmod_of_a_transposed_input"]
    with pytest.warns(UserWarning, match="mlirc-recompute-cheap-producers.*erasing linalg.generic"):
        stats = compile_and_compare(cat_then_fmod, x, y, expect_no_fallback=False)
    assert stats.failed_regions == 1


def test_library_kernels_are_not_fallback():
    """LAPACK/FFT ops run as library kernels (like Inductor's extern kernels), counted apart."""

    def f(a):
        q, r = torch.linalg.qr(a)
        return torch.relu(q) + r.sum(), torch.fft.rfft(a)

    stats = compile_and_compare(f, torch.randn(6, 6))
    assert stats.library_nodes >= 2 and stats.fallback_nodes == 0, stats.summary()


def test_explain_counts_its_function_alone_and_leaves_the_totals():
    mlirc.reset_stats()
    torch._dynamo.reset()
    torch.compile(lambda x: x.exp() + 1, backend="mlirc")(torch.randn(4))
    before = mlirc.stats().compiled_nodes
    result, own = mlirc.explain(lambda x: torch.sin(x) * x.cos(), torch.randn(5))
    assert own.graphs == 1 and own.compiled_nodes == 3 and own.fallback_nodes == 0
    assert mlirc.stats().compiled_nodes == before  # explain's compile is not in the totals
    assert result.shape == (5,)


_probed: dict = {}


@torch.library.custom_op("mlirc_test::probe_alive", mutates_args=())
def _probe_alive(t: torch.Tensor) -> torch.Tensor:
    """An op mlirc cannot compile (a fallback node between two regions) that records
    whether the tensor `_probed["ref"]` points to is still alive when it runs."""
    _probed["alive"] = _probed["ref"]() is not None
    return t.clone()


@_probe_alive.register_fake
def _(t: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(t)


def test_split_graph_frees_arguments_after_their_last_use():
    """A graph split around a fallback (or library) node takes its arguments as one
    list, AOTAutograd's boxed convention, and drops each after its last use: a split
    backward frees saved activations as it goes instead of holding all to the end."""
    import weakref

    from torch.fx.experimental.proxy_tensor import make_fx

    from mlirc.frontend import backend

    def fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.ops.mlirc_test.probe_alive(x * 2 + y).sin() + y

    _probed["ref"] = lambda: None
    x, y = torch.randn(5, 7), torch.randn(5, 7)
    expected = fn(x, y)
    gm = make_fx(fn)(x, y)
    call = backend._boxed(backend._compile_fx_graph(gm, [x.clone(), y.clone()]))
    _probed["ref"] = weakref.ref(x)
    args = [x, y]
    del x
    result = call(args)
    assert args == [] and _probed["alive"] is False
    torch.testing.assert_close(result, expected)
    assert mlirc.stats().compiled_regions == 2 and mlirc.stats().fallback_nodes == 1, mlirc.stats().summary()
