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


def wrapper_source(fn, args, tmp_path) -> str:
    """The host wrappers mlirc generates for fn(*args) (each region's, in order)."""
    config.dump_dir = str(tmp_path)
    try:
        torch.compile(fn, backend="mlirc")(*args)
    finally:
        config.dump_dir = None
        torch._dynamo.reset()
    return "\n".join(open(p).read() for p in sorted(glob.glob(f"{tmp_path}/*.wrapper.py")))
