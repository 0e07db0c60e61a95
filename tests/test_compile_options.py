"""torch.compile(..., backend="mlirc", options={...}): mlirc's settings for one
compile, over the environment's, for everything compiled from that graph (its
backward, the sizes compiled when first called), and nothing else."""

from __future__ import annotations

import glob
import logging
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import mlirc
from mlirc.config import config
from mlirc.errors import VerificationError
from mlirc.passes.base.registry import PASSES


def _kernel_stages(folder) -> list[str]:
    texts = [open(p).read() for p in sorted(glob.glob(f"{folder}/*.cpu.mlir"))]
    assert texts, "nothing was compiled"
    return texts


def _model(x, w):
    return F.gelu(x @ w).softmax(-1) * 3.0


def test_options_reach_the_compile_and_leave_the_process_alone(tmp_path):
    x, w = torch.randn(37, 29), torch.randn(29, 61)
    off = tmp_path / "off"
    compiled = torch.compile(_model, backend="mlirc", options={"vectorize": False, "dump_dir": str(off)})
    torch.testing.assert_close(compiled(x, w), _model(x, w))
    assert mlirc.stats().fallback_nodes == 0
    assert all("vector<" not in text for text in _kernel_stages(off))
    assert config.vectorize and config.dump_dir is None

    torch._dynamo.reset()
    on = tmp_path / "on"
    # the environment variable's own name and text are taken too
    compiled = torch.compile(_model, backend="mlirc", options={"MLIRC_DUMP_DIR": str(on)})
    torch.testing.assert_close(compiled(x, w), _model(x, w))
    assert any("vector<" in text for text in _kernel_stages(on))


def test_a_backward_and_later_sizes_compile_under_the_options(tmp_path):
    x = torch.randn(5, 13, requires_grad=True)
    w = torch.randn(13, 7, requires_grad=True)
    options = {"vectorize": False, "dump_dir": str(tmp_path)}
    compiled = torch.compile(_model, backend="mlirc", options=options, dynamic=True)
    for rows in (5, 11, 3):
        x = torch.randn(rows, 13, requires_grad=True)
        got = compiled(x, w)
        want = _model(x, w)
        torch.testing.assert_close(got, want)
        grads = torch.autograd.grad(got.sum(), (x, w))
        torch.testing.assert_close(grads, torch.autograd.grad(want.sum(), (x, w)))
    texts = _kernel_stages(tmp_path)
    assert len(texts) >= 2  # the forward's and the backward's kernels at least
    assert all("vector<" not in text for text in texts)


def test_a_repro_command_carries_the_options(monkeypatch):
    """A stage that fails names the pipeline it ran, with the options' values in it."""
    info = PASSES["mlirc-cpu-masked-reductions"]

    def broken(module):
        raise VerificationError("mlirc-cpu-masked-reductions", "broken on purpose")

    monkeypatch.setitem(PASSES, info.name, type(info)(info.name, info.description, run=broken))
    compiled = torch.compile(torch.exp, backend="mlirc", options={"strict": True, "vector_bytes": 16})
    with pytest.raises(Exception, match=r"mlirc-opt .* -p 'mlirc-stage-cpu\{vector-bytes=16"):
        compiled(torch.randn(9))


@pytest.mark.parametrize(
    "options, message",
    [
        ({"vectorise": False}, "unknown torch.compile option 'vectorise'; mlirc takes strict, dump_dir"),
        ({"vector_bytes": 7}, r"option vector_bytes=7 is not valid; it takes 0 \(the host's\), 16, 32 or 64"),
        ({"llvm_opt": True}, "option llvm_opt=True is not valid"),
        ({"gpu_gemm": "fast"}, "it takes auto, generated or extern"),
    ],
)
def test_a_bad_option_is_one_clear_error(options, message):
    before = repr(config)
    with pytest.raises(Exception, match=message):
        torch.compile(torch.exp, backend="mlirc", options=options)(torch.randn(3))
    assert repr(config) == before


def test_the_log_shows_each_stage_its_time_and_its_options(caplog):
    with caplog.at_level(logging.INFO, logger="mlirc"):
        torch.compile(torch.sin, backend="mlirc", options={"vector_bytes": 16})(torch.randn(5))
    lines = [r.getMessage() for r in caplog.records]
    for stage in ("linalg", "kernels", "cpu-fusion"):
        assert any(f"stage {stage} in " in line for line in lines), lines
    assert any("mlirc-stage-cpu{vector-bytes=16" in line for line in lines), lines
    assert any("FX nodes imported" in line for line in lines) and any("kernels built" in line for line in lines)


def test_torch_logs_turns_the_log_on():
    script = "import torch, mlirc; torch.compile(torch.cos, backend='mlirc')(torch.randn(4))"
    env = {**os.environ, "TORCH_LOGS": "+mlirc"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "stage kernels in" in done.stderr and "kernels built for cpu" in done.stderr, done.stderr[-2000:]
