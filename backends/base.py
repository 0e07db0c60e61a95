"""The interface every code generation backend implements (CPU: LLVM through
llvmlite; GPU: Triton), in the manner of Triton's BaseBackend.

A compile (frontend/compile.py) runs the backend's `stages` on the graph's module,
with the backend's `pass_options` under the configuration's, then `build`:
`compile_kernels` (the kernel stage on a copy, then native code) and `wrap` (the
host wrapper that allocates, calls the kernels and returns the results).  A
symbolic graph's kernels compiled once for every size are wrapped per size by
`wrap`, or once for every size through `every_size_wrappers`.  The compile driver
lends the backend what only it knows how to do (run a stage with dumps and a repro
command, report a failed step): the `Driver`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol

import torch
from mlir import ir

from mlirc.errors import UnsupportedOpError


class Driver(Protocol):
    """The compile driver's services to a backend."""

    def run_stage(
        self,
        module: Any,
        stage: str,
        name: str,
        stage_ir: dict[str, str],
        options: Mapping[str, object],
        before: str,
        keep_text: bool = True,
    ) -> None:
        """Run `stage` on `module` (dumped; a failure raises with a repro command on `before`)."""

    def step(self, step: str, run: Callable[[], Any], repro: Callable[[], str | None] = ...) -> Any:
        """run(); a failure that is not an MlircError is reported as `step`'s, with repro()."""

    def saved(self, text: str, name: str, what: str, ext: str = "mlir") -> str:
        """`text` in a file a repro can name."""

    def dump(self, name: str, stage: str, text: str, ext: str = "mlir") -> str | None:
        """`text` in the dump folder (MLIRC_DUMP_DIR), where one is set."""


class Backend(ABC):
    """One target's stages, kernel compilation and host wrapper."""

    device_type: ClassVar[str]
    stages: ClassVar[tuple[str, ...]]  # run on the graph's module, in order
    kernel_stage: ClassVar[str]  # run on a copy by compile_kernels
    pass_options: ClassVar[Mapping[str, object]]  # the target's policy (see passes/pipelines.py)

    @property
    def fusion_stage(self) -> str:
        """The last stage: the module each size of a symbolic graph binds for its wrapper."""
        return self.stages[-1]

    def prepare(self) -> None:  # noqa: B027 - a hook: most backends need nothing
        """Called when a graph starts its stages (the CPU starts its compile workers)."""

    @abstractmethod
    def compile_kernels(
        self, module: ir.Module, name: str, stage_ir: dict[str, str], options: Mapping[str, object], driver: Driver
    ) -> Any:
        """The kernel stage on a copy of `module` (its entry stays for the wrapper),
        then native code: the compiled kernels."""

    @abstractmethod
    def kernel_count(self, compiled: Any) -> int: ...

    @abstractmethod
    def wrapper_builder(self) -> Callable:
        """The runtime's build_wrapper(module, compiled, result_dtypes, device), whose
        first two results are the host wrapper's call and source."""

    @abstractmethod
    def every_size_builder(self, compiled: Any) -> Callable:
        """What builds backends/symbolic_wrapper.py's wrapper for every size of a
        symbolic graph over `compiled`."""

    def wrap(
        self,
        module: ir.Module,
        name: str,
        compiled: Any,
        result_dtypes: list[torch.dtype],
        device: torch.device,
        driver: Driver,
    ) -> tuple[Callable, str]:
        """(call, source) of the host wrapper of `module`'s entry over `compiled`."""
        build_wrapper = self.wrapper_builder()
        return driver.step(
            "mlirc-host-wrapper",
            lambda: build_wrapper(module, compiled, result_dtypes, device)[:2],
            lambda: f"the wrapper is built from {driver.saved(str(module), name, self.fusion_stage)}",
        )

    def every_size_wrappers(self, compiled: Any) -> tuple[Callable, Callable]:
        """(build_wrapper, make_builder) for the wrapper for every size."""
        return self.wrapper_builder(), self.every_size_builder(compiled)

    def graph_replayed(self, fn: Callable, static_inputs: list[int], written: list) -> Callable:
        """`fn` captured in device graphs and replayed (mode="reduce-overhead")."""
        raise UnsupportedOpError("device graphs", f"the {self.device_type} backend has none")

    def build(
        self,
        module: ir.Module,
        name: str,
        stage_ir: dict[str, str],
        result_dtypes: list[torch.dtype],
        device: torch.device,
        options: Mapping[str, object],
        driver: Driver,
    ) -> tuple[Callable, str, int]:
        """(call, wrapper source, kernel count): the kernels compiled, then wrapped."""
        compiled = self.compile_kernels(module, name, stage_ir, options, driver)
        call, source = self.wrap(module, name, compiled, result_dtypes, device, driver)
        return call, source, self.kernel_count(compiled)
