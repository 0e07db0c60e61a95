"""The CPU backend: the kernel stage to the LLVM dialect, LLVM IR, machine code
through llvmlite (codegen.py, on compile workers: jit_pool.py), and a Python host
wrapper (runtime.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mlir import ir

from mlirc.backends import cpu
from mlirc.backends.base import Backend, Driver
from mlirc.backends.cpu import codegen, jit_pool, runtime, symbolic_wrapper
from mlirc.config import config


class CpuBackend(Backend):
    device_type = "cpu"
    stages = cpu.STAGES
    kernel_stage = cpu.KERNEL_STAGE
    pass_options = cpu.PASS_OPTIONS

    def prepare(self) -> None:
        jit_pool.start_workers()  # they start up while the graph goes through the stages

    def compile_kernels(
        self, module: ir.Module, name: str, stage_ir: dict[str, str], options: Mapping[str, object], driver: Driver
    ) -> codegen.CompiledKernels:
        """The kernel stage on a copy, then LLVM IR (dumped), then machine code."""
        kernels = module.operation.clone()  # a ModuleOp: what the kernel stage and codegen use of a module
        before = stage_ir[self.stages[-1]]  # the module's text after its last stage
        driver.run_stage(kernels, self.kernel_stage, name, stage_ir, options, before, keep_text=False)
        signatures = codegen.kernel_signatures(module)

        def check() -> None:
            codegen.check_converted(kernels)
            codegen.check_signatures(kernels, signatures)

        driver.step(
            "mlirc-emit-llvm",
            check,
            lambda: f"reproduce with: mlirc-opt {driver.saved(str(kernels), name, 'cpu')} --emit-llvm",
        )
        if config.dump_dir:
            driver.dump(name, "llvm", codegen.emit_llvm(kernels), ext="ll")
        return driver.step(
            "llvmlite",
            lambda: codegen.compile_kernels(kernels, signatures),
            lambda: f"the LLVM IR is in {driver.saved(codegen.emit_llvm(kernels), name, 'llvm', 'll')}",
        )

    def kernel_count(self, compiled: codegen.CompiledKernels) -> int:
        return len(compiled.functions)

    def wrapper_builder(self) -> Callable:
        return runtime.build_wrapper

    def every_size_builder(self, compiled: Any) -> Callable:
        return symbolic_wrapper.builder_for(compiled)
