"""Run-time switches, read from the environment once and changeable from Python.

MLIRC_STRICT=1       raise instead of falling back to eager for unsupported ops / failed regions
MLIRC_DUMP_DIR=path  write each stage's IR of every compiled region under this folder
MLIRC_VECTORIZE=0    turn off the CPU vectorization schedule (debugging aid)
MLIRC_VECTOR_BYTES=n CPU vector width in bytes (default 0: the host's, 64 with AVX-512, else 32;
                     lit tests pin 32 so their CHECK lines hold on any x86 host)
MLIRC_LIBRARY_GEMM=0 generate GEMM/conv kernels instead of calling torch.mm/bmm/conv2d
MLIRC_GPU_GEMM=mode  GPU GEMMs: "auto" (cuBLAS where it wins, see passes/gpu_matmul.py),
                     "generated" (tt.dot kernels with fused epilogues) or "extern" (cuBLAS)
MLIRC_GPU_GEMM_TILE=BM,BN,BK,W,S  tiles of generated GEMMs (block sizes, warps, stages)
MLIRC_CPU_GEMM=mode  CPU GEMMs: "auto" (torch.mm or oneDNN, whichever a timing of the shape
                     picks, see backends/cpu/gemm_choice.py), "blas" (torch.mm) or "onednn"
MLIRC_CPU_HALF=1     compile float16/bfloat16 compute on the CPU too (rounds after every op;
                     off by default: eager computes them in float32)
MLIRC_PARALLEL_MIN_KIB=n  run a kernel on OpenMP threads when it moves at least n KiB
                     (default 128; 0 = every kernel, -1 = never)
MLIRC_SCRATCH_MB=n   CPU buffers that never reach a result are kept from call to call (per
                     thread) while a compiled graph's total is at most n MiB (default 512; 0 = off)
MLIRC_LLVM_OPT=n     LLVM's middle-end pipeline at -On over the CPU kernels before codegen
                     (default 3; 0 = codegen only, which is always -O3)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field


def _env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() not in ("0", "false", "no", "off", "")


@dataclass
class Config:
    strict: bool = field(default_factory=lambda: _env_flag("MLIRC_STRICT", False))
    dump_dir: str | None = field(default_factory=lambda: os.environ.get("MLIRC_DUMP_DIR"))
    vectorize: bool = field(default_factory=lambda: _env_flag("MLIRC_VECTORIZE", True))
    library_gemm: bool = field(default_factory=lambda: _env_flag("MLIRC_LIBRARY_GEMM", True))
    vector_bytes: int = field(default_factory=lambda: int(os.environ.get("MLIRC_VECTOR_BYTES", "0")))
    gpu_gemm: str = field(default_factory=lambda: os.environ.get("MLIRC_GPU_GEMM", "auto"))
    gpu_gemm_tile: tuple[int, ...] | None = field(
        default_factory=lambda: (
            tuple(int(v) for v in os.environ["MLIRC_GPU_GEMM_TILE"].split(","))
            if os.environ.get("MLIRC_GPU_GEMM_TILE")
            else None
        )
    )
    cpu_gemm: str = field(default_factory=lambda: os.environ.get("MLIRC_CPU_GEMM", "auto"))
    cpu_half: bool = field(default_factory=lambda: _env_flag("MLIRC_CPU_HALF", False))
    parallel_min_kib: int = field(default_factory=lambda: int(os.environ.get("MLIRC_PARALLEL_MIN_KIB", "128")))
    llvm_opt: int = field(default_factory=lambda: int(os.environ.get("MLIRC_LLVM_OPT", "3")))
    scratch_mb: int = field(default_factory=lambda: int(os.environ.get("MLIRC_SCRATCH_MB", "512")))


config = Config()
