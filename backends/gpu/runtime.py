"""The GPU host wrapper: the shared wrapper code (mlirc.backends.host_wrapper) with
Triton launches on the caller's current CUDA stream, fetched once per call as
Inductor's wrapper does.

Each launch line calls Triton's launcher with the kernel's grid, function handle
and metadata bound as constants of the generated code, so a launch costs one
Python call; kernels with an empty grid (0-size tensors) are left out entirely.
A kernel of run-time sizes (passes/gpu/lower_to_tt.py) takes its buffers' sizes
after them and its grid is an expression of those sizes: constants in a bound
wrapper, expressions of the call's sizes in the wrapper for every size, whose
launch is skipped where the grid is empty.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import torch
from mlir import ir
from mlir.dialects import func
from torch._subclasses.fake_tensor import unset_fake_temporarily

from mlirc.backends.gpu import cudagraphs
from mlirc.backends.gpu.compiler import Launcher
from mlirc.backends.host_wrapper import WrapperBuilder
from mlirc.backends.in_place import in_place_operands
from mlirc.backends.memory_plan import storage_dtype
from mlirc.backends.prepared import PreparedCache, frozen_guard_source, prepare_function
from mlirc.backends.wrapper_scope import wrapper_scope
from mlirc.dialects import tt
from mlirc.dialects.attributes import GRID_ATTR, GRID_SIZE_ATTR, ORIGIN_ATTR, SIZE_ARGS_ATTR
from mlirc.passes.base.ir_utils import entry_functions


class GpuWrapperBuilder(WrapperBuilder):
    """Kernels are compiled for 16-byte aligned pointers (tt.ALIGNMENT): arguments
    are copied when they are not, as are views whose offset breaks it.  A result
    written over an operand (the base's in_place: an elementwise kernel reading it
    at the element it writes) is safe in the TTIR lowering as in Inductor's
    in_out_ptr kernels: each program loads the elements of its own tile before it
    stores them, and no other program touches them."""

    # The kernels' linalg bodies (the gpu-fusion module's), where `kernels` holds
    # their launch declarations: what in-place writes are decided on.
    bodies: dict[str, func.FuncOp] = {}

    def overwritable_operands(self, callee: str) -> dict[int, list[int]]:
        return in_place_operands(self.bodies.get(callee, self.kernels[callee]))

    def entry_arg(self, a: str, memory_format: str | None = None) -> str:
        fmt = memory_format or "contiguous_format"
        check = f"is_contiguous(memory_format=torch.{memory_format})" if memory_format else "is_contiguous()"
        return (
            f"    {a} = {a} if {a}.{check} and not {a}.data_ptr() % {tt.ALIGNMENT}"
            f" else {a}.clone(memory_format=torch.{fmt})"
        )

    def prologue(self) -> None:
        self.lines.append("    stream = get_stream(device_index)")

    def emit_check(self, flag: str, check) -> None:  # noqa: ANN001 - the base's signature
        """A device-side assert: reading the flag would wait for the GPU, so the
        error surfaces at the next synchronization, as eager's CUDA kernels report it."""
        self.lines.append(f"    torch._assert_async({flag}, {(check.error + ': ' + check.message)!r})")

    def emit_kernel_call(self, op: ir.Operation, callee: str, buffers: list[str]) -> None:
        kernel = self.kernels[callee]
        sizes: list[str] = []
        if SIZE_ARGS_ATTR in kernel.attributes:
            values = [*op.operands, *op.results]
            pairs = list(ir.DenseI64ArrayAttr(kernel.attributes[SIZE_ARGS_ATTR]))
            sizes = [self.size_text(self.shape_of(values[k])[d]) for k, d in zip(pairs[::2], pairs[1::2], strict=True)]
            grid = _grid_text(ir.StringAttr(kernel.attributes[GRID_SIZE_ATTR]).value, sizes)
        else:
            grid = ", ".join(map(str, ir.DenseI64ArrayAttr(kernel.attributes[GRID_ATTR])))
        guard = ""
        if all(_is_int(part) for part in grid.split(", ")):  # known now: an empty grid is no launch
            if any(int(part) <= 0 for part in grid.split(", ")):
                return
        else:  # one statement, so that MLIRC_PROFILE can wrap it
            self.lines.append(f"    grid = ({grid})")
            grid, guard = "*grid", "if grid[0] * grid[1] * grid[2] > 0: "
        buffers = [b if b in self.integers or self.aligned(b, tt.ALIGNMENT) else f"aligned({b})" for b in buffers]
        k = f"k_{callee}"
        arguments = ", ".join([*buffers, *sizes])
        self.lines.append(
            f"    {guard}{k}.run({grid}, stream, {k}.function, {k}.metadata, None, None, None, {arguments})"
        )


def _grid_text(expression: str, sizes: list[str]) -> str:
    """The grid of a kernel of run-time sizes, its size arguments `n<i>` replaced by
    the call's sizes; folded to constants where those are."""
    text = re.sub(r"\bn(\d+)\b", lambda m: f"({sizes[int(m.group(1))]})", expression)
    if all(_is_int(s) for s in sizes):
        return ", ".join(str(int(v)) for v in eval(f"({text},)", {"__builtins__": {}}))  # noqa: S307 - our own arithmetic
    return text


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()


def aligned(x: torch.Tensor) -> torch.Tensor:
    """A kernel input whose address breaks the alignment kernels assume, copied."""
    return x if not x.data_ptr() % tt.ALIGNMENT else x.clone(memory_format=torch.contiguous_format)


def _on_device(call: Callable, index: int, call_list: Callable | None = None) -> Callable:
    """Allocation and launches go to the current device: switch to the graph's
    device for a call made while another one is current.  `call_list`: the same
    taking one list it empties (host_wrapper's build), kept as `.call_list`."""
    get_device = torch._C._cuda_getDevice

    def call_on_device(*args: torch.Tensor) -> tuple:
        if get_device() == index:
            return call(*args)
        with torch.cuda.device(index):
            return call(*args)

    def list_on_device(args: list) -> tuple:
        if get_device() == index:
            return call_list(args)
        with torch.cuda.device(index):
            return call_list(args)

    if call_list is not None:
        call_on_device.call_list = list_on_device  # type: ignore[attr-defined]
    return call_on_device


@dataclass
class GpuKernels:
    """A module's Triton kernels: their launchers, and the gpu-stage module whose
    declarations carry each launch (grid, warps, size arguments)."""

    launchers: dict[str, Launcher]
    module: ir.Operation

    @property
    def functions(self) -> dict[str, Launcher]:
        """The kernels by name (as the CPU's CompiledKernels.functions)."""
        return self.launchers

    def declarations(self) -> dict[str, func.FuncOp]:
        return _functions(self.module)


def _functions(module: ir.Operation) -> dict[str, func.FuncOp]:
    body = module.operation.regions[0].blocks[0]
    return {op.sym_name.value: op for op in body.operations if isinstance(op, func.FuncOp)}


def build_wrapper(
    module: ir.Module,
    compiled: GpuKernels,
    result_dtypes: list[torch.dtype],
    device: torch.device,
    builder: Callable[..., GpuWrapperBuilder] = GpuWrapperBuilder,
    finish: Callable[[str], str] = lambda source: source,
    extra_scope: dict | None = None,
) -> tuple[Callable, str, dict]:
    """(call, source, scope): the wrapper of `module`'s entry (a gpu-fusion module,
    bound or not) launching `compiled`'s kernels.  `builder(entry, result_dtypes,
    kernels)` makes the entry's builder, `finish` edits the source, `extra_scope`
    adds names."""
    entry = entry_functions(module.body)[0]
    declarations, launchers = compiled.declarations(), dict(compiled.launchers)
    kernels = _functions(module)
    bodies = dict(kernels)
    for name, kernel in list(kernels.items()):
        if name in launchers:
            kernels[name] = declarations[name]
        elif ORIGIN_ATTR in kernel.attributes:  # a copy the binding made launches its original
            origin = ir.StringAttr(kernel.attributes[ORIGIN_ATTR]).value
            if origin in launchers:
                kernels[name], launchers[name] = declarations[origin], launchers[origin]
    made = builder(entry, result_dtypes, kernels)
    made.bodies = bodies
    prepare = prepare_function(entry)
    source = made.build("call" if prepare is None else "call_prepared")
    if prepare is not None:  # work on parameters alone, cached (passes/hoist_frozen.py)
        results = ir.FunctionType(prepare.attributes["function_type"].value).results
        prepare_builder = GpuWrapperBuilder(prepare, [storage_dtype(t) for t in results], kernels)
        prepare_builder.bodies = bodies
        prepare_builder.constants = made.constants  # one scope for both functions
        source += "\n\n" + prepare_builder.build("prepare") + "\n\n" + frozen_guard_source(entry, graph_capture=True)
    source = finish(source)
    index = device.index if device.index is not None else torch.cuda.current_device()
    with unset_fake_temporarily():  # the compile runs under the tracer's fake mode
        # the entry's constant operands (a bound size's from_elements), on the device
        constants = {name: tensor.to(torch.device("cuda", index)) for name, tensor in made.constants.items()}
    scope = {
        **(extra_scope or {}),
        **wrapper_scope(torch.device("cuda", index)),
        **{f"k_{name}": launcher for name, launcher in launchers.items()},
        "device_index": index,
        "aligned": aligned,
        "get_stream": torch._C._cuda_getCurrentRawStream,
        "capturing": torch.cuda.is_current_stream_capturing,
        "note_capture": cudagraphs.note_capture,
        **constants,
    }
    exec(compile(source, "<mlirc-gpu-wrapper>", "exec"), scope)  # noqa: S102 - generated host code
    if prepare is not None:
        scope["prepared"] = PreparedCache(scope["prepare"])
    return _on_device(scope["call"], index, scope.get("call_list")), source, scope
