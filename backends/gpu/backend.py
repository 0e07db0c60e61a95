"""The GPU backend: the kernel stage to Triton TTIR (a nested module per kernel),
cubins through triton.compile (compiler.py), and a Python host wrapper that
launches them (runtime.py).  Triton is imported only when a CUDA graph compiles."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mlir import ir

from mlirc.backends import gpu
from mlirc.backends.base import Backend, Driver


class GpuBackend(Backend):
    device_type = "cuda"
    stages = gpu.STAGES
    kernel_stage = gpu.KERNEL_STAGE
    pass_options = gpu.PASS_OPTIONS

    def compile_kernels(
        self, module: ir.Module, name: str, stage_ir: dict[str, str], options: Mapping[str, object], driver: Driver
    ) -> Any:
        """The gpu stage on a copy, then triton.compile on each kernel's TTIR (its
        nested modules): a runtime.GpuKernels."""
        from mlirc.backends.gpu import compiler, runtime

        kernels = module.operation.clone()
        driver.run_stage(kernels, self.kernel_stage, name, stage_ir, options, stage_ir[self.stages[-1]])
        gpu_ir = lambda: f"the gpu-stage IR is in {driver.saved(stage_ir['gpu'], name, 'gpu')}"  # noqa: E731
        launchers = driver.step("triton.compile", lambda: compiler.compile_module(kernels), gpu_ir)
        return runtime.GpuKernels(launchers, kernels)

    def kernel_count(self, compiled: Any) -> int:
        return len(compiled.launchers)

    def wrapper_builder(self) -> Callable:
        from mlirc.backends.gpu import runtime

        return runtime.build_wrapper

    def every_size_builder(self, compiled: Any) -> Callable:
        from mlirc.backends.gpu import symbolic_wrapper

        return symbolic_wrapper.SymbolicGpuWrapperBuilder

    def graph_replayed(self, fn: Callable, static_inputs: list[int], written: list) -> Callable:
        """`fn` captured in CUDA graphs and replayed (mode="reduce-overhead")."""
        from mlirc.backends.gpu.cudagraphs import CudaGraphed

        return CudaGraphed(fn, static_inputs, written)
