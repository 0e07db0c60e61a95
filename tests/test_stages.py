"""Every stage's IR, dumped by MLIRC_DUMP_DIR, is what mlirc-opt makes of the stage
before it, with the options the driver gave (pass_options): any stage can be cut
out and rerun alone, LLVM IR included (`--emit-llvm`)."""

import subprocess
import sys

import torch
import torch.nn.functional as F
from conftest import compile_and_compare

from mlirc.backends import cpu as cpu_backend
from mlirc.config import config
from mlirc.frontend.compile import pass_options
from mlirc.passes.pipelines import configured


def _mlirc_opt(path, *args: str) -> str:
    command = [sys.executable, "-m", "mlirc.tools.mlirc_opt", str(path), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_cpu_stage_reenters(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "dump_dir", str(tmp_path))
    model = lambda x, w: F.layer_norm(torch.relu(x @ w.t()) + x, (33,))  # noqa: E731
    compile_and_compare(model, torch.randn(7, 33), torch.randn(33, 33))
    names = sorted({p.name.split(".")[0] for p in tmp_path.glob("*.mlirc.mlir")})
    assert names, list(tmp_path.iterdir())
    stages = ["mlirc", *cpu_backend.STAGES, cpu_backend.KERNEL_STAGE]
    for name in names:
        for before, stage in zip(stages, stages[1:], strict=False):
            dumped = (tmp_path / f"{name}.{stage}.mlir").read_text()
            rerun = _mlirc_opt(tmp_path / f"{name}.{before}.mlir", "-p", configured(stage, pass_options()))
            assert rerun.strip() == dumped.strip(), f"{name}: {stage} from {before}"
        llvm_ir = _mlirc_opt(tmp_path / f"{name}.{cpu_backend.KERNEL_STAGE}.mlir", "--emit-llvm")
        assert llvm_ir.strip() == (tmp_path / f"{name}.llvm.ll").read_text().strip()
        assert "define void @kernel_0(" in llvm_ir or "define void @rows_0(" in llvm_ir
