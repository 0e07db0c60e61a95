"""Code generation backends: cpu (LLVM via llvmlite) and gpu (Triton), each behind
the interface of backends/base.py.  The frontend reaches a backend only through
`backend_for`."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mlirc.backends.base import Backend


@functools.cache
def backend_for(device_type: str) -> Backend:
    """The backend that compiles graphs on `device_type` ("cuda", else the CPU's)."""
    if device_type == "cuda":
        from mlirc.backends.gpu.backend import GpuBackend

        return GpuBackend()
    from mlirc.backends.cpu.backend import CpuBackend

    return CpuBackend()
