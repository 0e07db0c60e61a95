"""The CPU host wrapper: kernels are JIT-compiled functions called with raw pointers
(see mlirc.backends.host_wrapper for what the wrapper does around them)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from mlir import ir
from mlir.dialects import func

from mlirc.backends.cpu import gemm_choice, packed_weights
from mlirc.backends.cpu.codegen import CompiledKernels
from mlirc.backends.cpu.library_calls import CPU_ALLOCATES_OWN_RESULT, CPU_LIBRARY_CALLS
from mlirc.backends.host_wrapper import WrapperBuilder
from mlirc.backends.memory_plan import scratch_buffers, storage_dtype
from mlirc.backends.prepared import PreparedCache, frozen_guard_source, prepare_function
from mlirc.backends.wrapper_scope import wrapper_scope
from mlirc.config import config
from mlirc.dialects.attributes import ORIGIN_ATTR
from mlirc.passes.base.ir_utils import entry_functions


class CpuWrapperBuilder(WrapperBuilder):
    # oneDNN's and the packed weights' calls beside the shared ones (library_variant picks them)
    library_calls = CPU_LIBRARY_CALLS
    allocates_own_result = CPU_ALLOCATES_OWN_RESULT
    # input shapes whose reordered weight a convolution site keeps (a bound wrapper's
    # calls have one shape)
    conv_shapes = 1

    def __init__(self, *args, kernel_sizes: dict | None = None, **kwargs) -> None:  # noqa: ANN002, ANN003 - WrapperBuilder's
        super().__init__(*args, **kwargs)
        self.conv_sites: list[packed_weights.PackedConv] = []
        self.linear_sites: list[packed_weights.PackedLinear] = []
        # Kernels compiled for run-time sizes: their (buffer, dim) size arguments
        self.kernel_sizes = kernel_sizes or {}
        self.compiled_names: set[str] = set()  # the kernels compiled (a bound copy is not)

    def emit_kernel_call(self, op: ir.Operation, callee: str, buffers: list[str]) -> None:
        """A kernel of run-time sizes (one compile for every size: a copy the binding
        made calls its original) takes its buffers' sizes after them, here constants."""
        kernel = self.kernels.get(callee)
        if kernel is not None and ORIGIN_ATTR in kernel.attributes and callee not in self.compiled_names:
            callee = ir.StringAttr(kernel.attributes[ORIGIN_ATTR]).value
        values = [*op.operands, *op.results]
        sizes = [self.size_text(self.shape_of(values[arg])[dim]) for arg, dim in self.kernel_sizes.get(callee, ())]
        self.integers.update(sizes)
        super().emit_kernel_call(op, callee, [*buffers, *sizes])

    def library_variant(self, library: str, operands: list[str]) -> str:
        metas = [self.meta.get(name) for name in operands]
        if library in ("mm", "addmm") and all(m is not None for m in metas):
            choice = gemm_choice.choose_mm(*metas[:2], stable_weight=self._argument_root(operands[1]))
            return choice if library == "mm" else gemm_choice.WITH_BIAS[choice]
        if library == "conv2d_nhwc" and packed_weights.eligible(*metas) and self._argument_root(operands[1]):
            return "conv2d_nhwc_packed"
        return library

    def _argument_root(self, name: str) -> bool:
        """Is `name` an argument or a view of one?  Only then may a reordered copy be
        kept: the wrapper's own buffers (scratch above all) are rewritten by kernels
        without a version counter seeing it."""
        return self.root.get(name, "").startswith("arg")

    def call_site(self, library: str, fields: dict, operands: list[str]) -> dict:
        if library in ("mm_packed", "addmm_packed"):
            self.linear_sites.append(packed_weights.PackedLinear())
            return {"site": len(self.linear_sites) - 1, "root": self.root[operands[1]]}
        if library != "conv2d_nhwc_packed":
            return {}
        self.conv_sites.append(
            packed_weights.PackedConv(
                fields["stride"], fields["padding"], fields["dilation"], fields["groups"], self.conv_shapes
            )
        )
        return {"site": len(self.conv_sites) - 1, "root": self.root[operands[1]]}


def build_wrapper(
    module: ir.Module,
    compiled: CompiledKernels,
    result_dtypes: list[torch.dtype],
    device: torch.device,
    builder: Callable[..., CpuWrapperBuilder] | None = None,
    finish: Callable[[str], str] = lambda source: source,
    extra_scope: dict | None = None,
) -> tuple[Callable, str, dict]:
    """(call, source, scope): the wrapper of `module`'s entry over `compiled`.
    `builder(entry, result_dtypes, kernels)` makes the entry's builder (a bound
    entry's by default), `finish` edits the source, `extra_scope` adds names."""
    entry = entry_functions(module.body)[0]
    kernels = {op.sym_name.value: op for op in module.body.operations if isinstance(op, func.FuncOp)}
    if builder is None:
        main = CpuWrapperBuilder(
            entry, result_dtypes, kernels, scratch_limit_bytes=config.scratch_mb << 20, kernel_sizes=compiled.sizes
        )
    else:
        main = builder(entry, result_dtypes, kernels)
    main.compiled_names = set(compiled.functions)
    prepare = prepare_function(entry)
    source = main.build("call" if prepare is None else "call_prepared")
    if prepare is not None:
        source += "\n\n" + _prepare_source(entry, prepare, kernels, main)
    source = finish(source)
    scope = {
        **(extra_scope or {}),
        **wrapper_scope(device),
        "kernels": compiled.functions,
        "scratch_buffers": scratch_buffers(main.scratch_metas, device),
        "onednn_mm": gemm_choice.onednn_mm,
        "conv_sites": main.conv_sites,
        "linear_sites": main.linear_sites,
        **main.constants,
    }
    exec(compile(source, "<mlirc-wrapper>", "exec"), scope)  # noqa: S102 - generated host code
    if prepare is not None:
        scope["prepared"] = PreparedCache(scope["prepare"])
    call = scope["call"]
    call._mlirc_engine = compiled  # keep the JIT'd code alive with the wrapper
    if "call_list" in scope:  # the arguments as one list, emptied (host_wrapper's build)
        call.call_list = scope["call_list"]
    return call, source, scope


def _prepare_source(entry: func.FuncOp, prepare: func.FuncOp, kernels: dict, call: CpuWrapperBuilder) -> str:
    """The prepare function (run when a frozen argument changes, see
    passes/hoist_frozen.py) and the guarded `call` in front of `call_prepared`."""
    results = ir.FunctionType(prepare.attributes["function_type"].value).results
    builder = CpuWrapperBuilder(prepare, [storage_dtype(t) for t in results], kernels, kernel_sizes=call.kernel_sizes)
    builder.compiled_names = call.compiled_names
    # one list per kind for both functions, and one scope
    builder.conv_sites, builder.linear_sites, builder.constants = call.conv_sites, call.linear_sites, call.constants
    return builder.build("prepare") + "\n\n" + frozen_guard_source(entry)
