"""Compile the TTIR of a gpu-stage module with Triton and wrap each kernel in a launcher.

Each kernel's nested module (mlirc-gpu-lower-to-tt) is printed in generic form to
`<cache>/ttir/<hash>.ttir` and handed to `triton.compile`, which needs no GPU: the
target names the architecture.  Triton caches the cubin on disk keyed by that
file's text, the target and the options, so a second process compiles nothing.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path

from mlir import ir
from mlir.dialects import func

from mlirc.backends import disk_cache
from mlirc.dialects.attributes import STAGES_ATTR, TTIR_ATTR, WARPS_ATTR
from mlirc.errors import PipelineError

log = logging.getLogger(__name__)


@dataclass
class TritonKernel:
    """One kernel's TTIR and launch, as the gpu stage left them."""

    name: str
    ttir: str
    num_warps: int
    num_stages: int | None = None  # software pipelining depth of a loop (GEMMs); Triton's default else


def triton_kernels(module: ir.Module | ir.Operation) -> list[TritonKernel]:
    body = module.operation.regions[0].blocks[0]
    nested = {
        ir.StringAttr(op.attributes["sym_name"]).value: op
        for op in body.operations
        if op.operation.name == "builtin.module" and "sym_name" in op.attributes
    }
    kernels = []
    for op in body.operations:
        if not (isinstance(op, func.FuncOp) and TTIR_ATTR in op.attributes):
            continue
        ttir_module = nested.get(ir.StringAttr(op.attributes[TTIR_ATTR]).value)
        if ttir_module is None:
            raise PipelineError("mlirc-triton-compile", f"kernel @{op.sym_name.value} has no TTIR module")
        text = ttir_module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)
        warps = ir.IntegerAttr(op.attributes[WARPS_ATTR]).value
        stages = ir.IntegerAttr(op.attributes[STAGES_ATTR]).value if STAGES_ATTR in op.attributes else None
        kernels.append(TritonKernel(op.sym_name.value, text, warps, stages))
    return kernels


def ttir_file(kernel: TritonKernel) -> Path:
    """The kernel's TTIR as a file for triton.compile, named by its hash and checked
    to hold exactly that text (a swapped, empty or truncated file is rewritten)."""
    digest = hashlib.sha256(kernel.ttir.encode()).hexdigest()[:32]
    return disk_cache.text_file(disk_cache.cache_dir() / "ttir" / f"{kernel.name}-{digest}.ttir", kernel.ttir)


def compile_ttir(kernel: TritonKernel, target: object):
    """Triton's CompiledKernel (cubin + metadata) for `kernel` on `target`."""
    import triton

    path = ttir_file(kernel)
    # enable_reflect_ftz=False: libdevice's math then keeps denormals, as eager's CUDA
    # kernels do (Triton flushes them to zero by default: sqrt(1e-40) was 0).
    # enable_fp_fusion stays on: off, ptxas contracts nothing, libdevice's functions
    # included, and F.gelu's erf left its 4e-6 bound against eager on the H100.  The
    # kernels' own products are mul.rn (passes/gpu/tt/tiles.py ROUNDED), which ptxas
    # never fuses with their users: each rounds, as in eager's one-op kernels.
    options = {"num_warps": kernel.num_warps, "enable_fp_fusion": True, "enable_reflect_ftz": False}
    if kernel.num_stages is not None:
        options["num_stages"] = kernel.num_stages
    try:
        return triton.compile(str(path), target=target, options=options)
    except Exception as err:  # Triton raises bare RuntimeErrors from its passes
        message = str(err).strip().splitlines()
        raise PipelineError(
            "triton.compile",
            f"kernel @{kernel.name}: {message[-1] if message else err}",
            f"python -c \"import triton; triton.compile('{path}', target=...)\"",
        ) from err


class Launcher:
    """One compiled kernel's launch handles.  The GPU wrapper calls `run` (Triton's
    generated launcher) itself with the grid in its code (a constant, or an
    expression of the call's sizes), skipping the per-call closure and stream
    lookup of `CompiledKernel.__getitem__`."""

    __slots__ = ("name", "run", "function", "metadata", "compiled")

    def __init__(self, name: str, compiled: object) -> None:
        compiled._init_handles()  # type: ignore[attr-defined]
        self.name = name
        self.compiled = compiled  # owns the module handle
        self.run = compiled.run  # type: ignore[attr-defined]
        self.function = compiled.function  # type: ignore[attr-defined]
        self.metadata = compiled.packed_metadata  # type: ignore[attr-defined]


def current_target() -> object:
    import triton

    return triton.runtime.driver.active.get_current_target()


def compile_module(module: ir.Module | ir.Operation, target: object | None = None) -> dict[str, Launcher]:
    """Launchers for every Triton kernel of a gpu-stage module (needs a GPU)."""
    target = target or current_target()
    return {k.name: Launcher(k.name, compile_ttir(k, target)) for k in triton_kernels(module)}
