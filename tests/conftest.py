import glob

import pytest
import torch

import mlirc
from mlirc.config import config


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    mlirc.reset_stats()
    torch.manual_seed(0)
    yield
    torch._dynamo.reset()


def compile_and_compare(fn, *args, rtol=1e-4, atol=1e-4, expect_no_fallback=True, **kwargs):
    """Run fn eagerly and through mlirc on the same inputs; compare; return stats."""
    expected = fn(*args, **kwargs)
    actual = torch.compile(fn, backend="mlirc")(*args, **kwargs)
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    stats = mlirc.stats()
    if expect_no_fallback:
        assert stats.fallback_nodes == 0, stats.summary()
        assert stats.failed_regions == 0, stats.summary()
        assert stats.compiled_regions >= 1, stats.summary()
    return stats


def compare_gradients(fn, *args, rtol=1e-4, atol=1e-4):
    """fn's result and the gradients of its square's sum with respect to `args` (which
    require grad), eager against mlirc; return stats."""
    expected = fn(*args)
    grads = torch.autograd.grad(expected.square().sum(), args)
    actual = torch.compile(fn, backend="mlirc")(*args)
    compiled_grads = torch.autograd.grad(actual.square().sum(), args)
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol)
    for got, want in zip(compiled_grads, grads, strict=True):
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol)
    return mlirc.stats()


def wrapper_source(fn, args, tmp_path) -> str:
    """The host wrappers mlirc generates for fn(*args) (each region's, in order)."""
    config.dump_dir = str(tmp_path)
    torch._dynamo.reset()  # compiled afresh, or nothing is dumped
    try:
        torch.compile(fn, backend="mlirc")(*args)
    finally:
        config.dump_dir = None
        torch._dynamo.reset()
    sources = [open(p).read() for p in sorted(glob.glob(f"{tmp_path}/*.wrapper.py"))]
    assert sources, "no region was compiled"
    return "\n".join(sources)


def outcome(fn, *args):
    """(result, None) or (None, the exception fn raised)."""
    try:
        return fn(*args), None
    except Exception as err:  # noqa: BLE001 - the type is what is compared
        return None, err


def assert_same_outcome(fn, *args, dynamic: bool | None = None):
    """Eager's values (bit for bit, NaN equal to NaN) or eager's exception type from
    the compiled fn; returns the compiled call's exception, if any."""
    expected, expected_error = outcome(fn, *args)
    actual, actual_error = outcome(torch.compile(fn, backend="mlirc", dynamic=dynamic), *args)
    if expected_error is not None:
        assert actual_error is not None, f"eager raised {expected_error!r}, mlirc returned {actual}"
        assert type(actual_error) is type(expected_error), f"eager: {expected_error!r}\nmlirc: {actual_error!r}"
    else:
        assert actual_error is None, f"mlirc raised {actual_error!r}"
        torch.testing.assert_close(actual, expected, equal_nan=True, rtol=0, atol=0)
    return actual_error
