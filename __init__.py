"""mlirc: an MLIR-based compiler for PyTorch.

import torch, mlirc
model = torch.compile(model, backend="mlirc")
"""

from __future__ import annotations

from typing import Any

from mlirc.config import ConfigError, config  # validates the MLIRC_* variables once, at import
from mlirc.errors import MlircError, PipelineError, UnsupportedOpError, VerificationError
from mlirc.frontend.stats import CompileStats, explain, reset_stats, stats

__version__ = "0.1.0"


def mlirc_backend(gm: Any, example_inputs: list, mode: str | None = None, options: dict | None = None) -> Any:
    """The Dynamo backend.  MLIR loads on the first compile, not on `import mlirc`:
    importing stays cheap, and a process can import mlirc beside another MLIR-based
    package (IREE's bindings cannot share a process with ours)."""
    from mlirc.frontend.backend import mlirc_backend as backend

    return backend(gm, example_inputs, mode=mode, options=options)


def _register_backend() -> None:
    """An installed mlirc is found by Dynamo through its entry point (pyproject.toml's
    `torch_dynamo_backends`) when a compile first names it, so importing mlirc (and
    `mlirc-opt`, which never compiles a graph) does not import Dynamo, 1.6 s; a copy
    that is only on sys.path (the GPU host's) registers itself here."""
    from importlib.metadata import entry_points

    if any(point.value == "mlirc:mlirc_backend" for point in entry_points(group="torch_dynamo_backends")):
        return
    from torch._dynamo.backends.registry import _BACKENDS, register_backend

    if "mlirc" not in _BACKENDS:
        register_backend(name="mlirc")(mlirc_backend)


_register_backend()

__all__ = [
    "CompileStats",
    "ConfigError",
    "MlircError",
    "PipelineError",
    "UnsupportedOpError",
    "VerificationError",
    "config",
    "explain",
    "mlirc_backend",
    "reset_stats",
    "stats",
]
