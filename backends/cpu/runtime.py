"""The host wrapper: Python code generated once per graph that allocates outputs
with torch and calls the kernels in order (like Inductor's wrapper code).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from mlir import ir
from mlir.dialects import func

from mlirc.backends.cpu.codegen import CompiledKernels
from mlirc.dialects import shapes
from mlirc.errors import PipelineError
from mlirc.passes.outline_library_calls import LIBRARY_ARGS_ATTR, LIBRARY_ATTR
from mlirc.passes.transpose_views import PERM_ATTR

# Library kernels (mlirc-outline-library-calls) as host code: `{0}`, `{1}` are the
# call's operands, `{out}` its result, other fields the op's attributes.  GEMMs write
# into a buffer allocated like any kernel result; a convolution returns its own.
LIBRARY_CALLS = {
    "mm": "torch.mm({0}, {1}, out={out})",
    "bmm": "torch.bmm({0}, {1}, out={out})",
    "conv2d": "{out} = torch.conv2d({0}, {1}, None, {stride}, {padding}, {dilation}, {groups}).contiguous()",
}
ALLOCATES_OWN_RESULT = frozenset({"conv2d"})

# Storage element types (bools are i8 bytes, same layout as torch.bool).
_STORAGE_TO_TORCH = {**shapes.MLIR_TO_TORCH, "i8": torch.int8}


def _dtype(t: ir.Type, logical: torch.dtype | None) -> torch.dtype:
    if logical is not None:
        return logical
    return _STORAGE_TO_TORCH[str(ir.ShapedType(t).element_type)]


def _python_value(attr: ir.Attribute) -> object:
    if isinstance(attr, ir.DenseI64ArrayAttr):
        return list(attr)
    if isinstance(attr, ir.IntegerAttr):
        return attr.value
    raise PipelineError("mlirc-host-wrapper", f"library argument {attr} has no Python form")


class WrapperBuilder:
    """Turns the entry func of a kernels-stage module into Python source."""

    def __init__(
        self, entry: func.FuncOp, result_dtypes: list[torch.dtype], kernels: dict[str, func.FuncOp] | None = None
    ) -> None:
        self.entry = entry
        self.kernels = kernels or {}  # name -> kernel func, for library-call attributes
        self.result_dtypes = result_dtypes
        self.names: dict[object, str] = {}
        self.lines: list[str] = []

    def name(self, value: ir.Value) -> str:
        return self.names[value]

    def fresh(self, value: ir.Value, prefix: str = "buf") -> str:
        n = f"{prefix}{len(self.names)}"
        self.names[value] = n
        return n

    def build(self) -> str:
        args = [self.fresh(a, "arg") for a in self.entry.entry_block.arguments]
        self.lines.append(f"def call({', '.join(args)}):")
        for a in args:
            self.lines.append(f"    {a} = {a} if {a}.is_contiguous() else {a}.contiguous()")
        self.prologue()
        ret = self.entry.entry_block.operations[len(self.entry.entry_block.operations) - 1]
        logical = {v: d for v, d in zip(ret.operands, self.result_dtypes, strict=False)}
        ops = [op.operation for op in self.entry.entry_block.operations]
        last_use = {v: i for i, op in enumerate(ops) for v in op.operands}
        for i, op in enumerate(ops):
            self.emit(op, logical)
            self.free_after(op, i, last_use)
        return "\n".join(self.lines)

    def free_after(self, op: ir.Operation, index: int, last_use: dict) -> None:
        """Drop temporaries at their last use, as eager does: memory is reused while
        it is still in cache, instead of every buffer of the graph living to the end
        (the heap then grows and is trimmed every call, page faults included)."""
        if op.name == "func.return":
            return
        dead = []
        for v in dict.fromkeys(op.operands):
            name = self.names.get(v, "")
            if last_use.get(v) == index and not name.startswith("arg"):
                dead.append(name)
        if dead:
            self.lines.append(f"    del {', '.join(dead)}")

    def allocate(self, value: ir.Value, logical: dict) -> str:
        n = self.fresh(value)
        dtype = _dtype(value.type, logical.get(value))
        self.lines.append(f"    {n} = torch.empty({list(shapes.shape_of(value))}, dtype={dtype}, device=device)")
        return n

    def emit_call(self, op: ir.Operation, logical: dict) -> None:
        callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        attrs = self.kernels[callee].attributes if callee in self.kernels else {}
        library = ir.StringAttr(attrs[LIBRARY_ATTR]).value if LIBRARY_ATTR in attrs else None
        if library == "permute":  # a view, see mlirc-transpose-views
            perm = list(ir.DenseI64ArrayAttr(attrs[PERM_ATTR]))
            self.lines.append(f"    {self.fresh(op.results[0])} = {self.name(op.operands[0])}.permute({perm})")
        elif library is not None:
            self.emit_library_call(op, library, attrs, logical)
        else:
            outs = [self.allocate(r, logical) for r in op.results]
            self.emit_kernel_call(callee, [*(self.name(v) for v in op.operands), *outs])

    def prologue(self) -> None:
        """Per-call setup before the first kernel (none on the CPU)."""

    def emit_kernel_call(self, callee: str, buffers: list[str]) -> None:
        ptrs = ", ".join(f"{x}.data_ptr()" for x in buffers)
        self.lines.append(f"    kernels[{callee!r}]({ptrs})")

    def emit_library_call(self, op: ir.Operation, library: str, attrs: object, logical: dict) -> None:
        if library not in LIBRARY_CALLS:
            raise PipelineError("mlirc-host-wrapper", f"unknown library kernel '{library}'")
        args = ir.DictAttr(attrs[LIBRARY_ARGS_ATTR]) if LIBRARY_ARGS_ATTR in attrs else {}
        fields = {a.name: _python_value(a.attr) for a in args}
        out = self.fresh(op.results[0]) if library in ALLOCATES_OWN_RESULT else self.allocate(op.results[0], logical)
        operands = [self.name(v) for v in op.operands]
        self.lines.append("    " + LIBRARY_CALLS[library].format(*operands, out=out, **fields))

    def emit(self, op: ir.Operation, logical: dict) -> None:
        if op.name == "func.call":
            self.emit_call(op, logical)
        elif op.name == "tensor.empty":  # a 0-size result: nothing to compute
            self.allocate(op.results[0], logical)
        elif op.name in ("tensor.collapse_shape", "tensor.expand_shape"):
            n = self.fresh(op.results[0], "view")
            self.lines.append(f"    {n} = {self.name(op.operands[0])}.view({list(shapes.shape_of(op.results[0]))})")
        elif op.name == "tensor.extract_slice":
            offsets = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
            sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
            strides = list(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))
            index = ", ".join(f"{o}:{o + s * st}:{st}" for o, s, st in zip(offsets, sizes, strides, strict=False))
            n = self.fresh(op.results[0], "view")
            shape = list(shapes.shape_of(op.results[0]))
            # A rank-reducing slice drops unit dims: reshape keeps it a view.
            drop = f".reshape({shape})" if len(shape) != len(sizes) else ""
            self.lines.append(f"    {n} = {self.name(op.operands[0])}[{index}]{drop}")
        elif op.name == "func.return":
            outs = ", ".join(
                self.name(v) + (".view(torch.bool)" if d == torch.bool else "")
                for v, d in zip(op.operands, self.result_dtypes, strict=False)
            )
            self.lines.append(f"    return ({outs}{',' if len(op.operands) == 1 else ''})")
        else:
            raise PipelineError("mlirc-host-wrapper", f"op {op.name} cannot run on the host")


def build_wrapper(
    module: ir.Module, compiled: CompiledKernels, result_dtypes: list[torch.dtype], device: torch.device
) -> tuple[Callable, str]:
    entry = next(op for op in module.body.operations if isinstance(op, func.FuncOp) and "mlirc.entry" in op.attributes)
    kernels = {op.sym_name.value: op for op in module.body.operations if isinstance(op, func.FuncOp)}
    source = WrapperBuilder(entry, result_dtypes, kernels).build()
    scope = {"torch": torch, "kernels": compiled.functions, "device": device}
    exec(compile(source, "<mlirc-wrapper>", "exec"), scope)  # noqa: S102 - generated host code
    call = scope["call"]
    call._mlirc_engine = compiled  # keep the JIT'd code alive with the wrapper
    return call, source
