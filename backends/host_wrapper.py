"""The host wrapper: Python code generated once per graph that allocates buffers and
calls the kernels in order (Inductor's wrapper code plays the same part).

Everything a call does in Python is paid on every call, so the wrapper is planned
at build time, not at run time:

* Layouts are known statically (arguments are made contiguous on entry), so views
  (reshapes, slices, permutes) are built by `reinterpret_tensor` with sizes and
  strides worked out once on meta tensors, not by torch's view ops, which check
  and compute them again per call.  A view is written only where something reads
  it as a tensor: a view of a view is one view of the storage's root, and a kernel
  handed a view that starts where its root does gets the root (a pointer is all it
  reads).  Each tensor a call makes costs ~1 us of host time, and a ResNet-50 made
  ~280 of them for views (weight reshapes, permutes around every convolution).
* Allocations skip the dispatcher (`empty_strided_<device>`), as Inductor's do.

Which buffer each value lives in (reuse, in-place results, CPU scratch) is the
memory plan's (backends/memory_plan.py); the library kernels' host code is
backends/library_calls.py's.  Device specifics (stream, launch) are the
subclasses' hooks.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np
import torch
from mlir import ir
from mlir.dialects import func
from torch._subclasses.fake_tensor import unset_fake_temporarily

from mlirc.backends.library_calls import ALLOCATES_OWN_RESULT, EXACT_ATTR, LIBRARY_CALLS, NCHW_OPERANDS
from mlirc.backends.memory_plan import (
    MemoryPlanner,
    _Alloc,
    _dtype,
    _Free,
    _ScratchFetch,
    _static_nbytes,
    contiguous_strides,
)
from mlirc.config import config
from mlirc.dialects import layouts, shapes
from mlirc.dialects.attributes import (
    ARG_LAYOUTS_ATTR,
    IN_PLACE_ATTR,
    LIBRARY_ARGS_ATTR,
    LIBRARY_ATTR,
    PERM_ATTR,
    RESULT_LAYOUTS_ATTR,
    RESULT_UPDATES_ATTR,
)
from mlirc.dialects.runtime_checks import RuntimeCheck, decode
from mlirc.errors import PipelineError
from mlirc.passes.base import ir_utils

TO_NCHW = (0, 3, 1, 2)
# A channels-last tensor's layout: an NCHW tensor held in an NHWC buffer
NHWC = layouts.Layout((0, 2, 3, 1))


def _python_value(attr: ir.Attribute) -> object:
    if isinstance(attr, ir.DenseI64ArrayAttr):
        return list(attr)
    if isinstance(attr, ir.IntegerAttr):
        return attr.value
    raise PipelineError("mlirc-host-wrapper", f"library argument {attr} has no Python form")


def _updates(entry: func.FuncOp, ret: ir.Operation) -> dict:
    """RESULT_UPDATES_ATTR as {returned value: argument}, for values returned once."""
    if RESULT_UPDATES_ATTR not in entry.attributes:
        return {}
    args = list(entry.entry_block.arguments)
    operands = list(ret.operands)
    return {
        operands[i]: args[j]
        for i, j in enumerate(ir.DenseI64ArrayAttr(entry.attributes[RESULT_UPDATES_ATTR]))
        if j >= 0 and i < len(operands) and operands.count(operands[i]) == 1
    }


def _unit_slices(layout: layouts.Layout) -> str:
    """Indexing that keeps one element of each expanded dim of a buffer (`[:, 0:1]`)."""
    if not layout.expanded:
        return ""
    return "[" + ", ".join("0:1" if d in layout.expanded else ":" for d in layout.order) + "]"


def _unpadded(layout: layouts.Layout, shape: Sequence[int]) -> tuple[slice, ...]:
    """Indexing that keeps a padded buffer's first `shape[d]` elements of each padded dim
    (`[:, :, 0:49]`), in buffer order."""
    longer = dict(layout.padded)
    return tuple(slice(0, shape[d]) if d in longer else slice(None) for d in layout.order)


class WrapperBuilder(MemoryPlanner):
    """Turns the entry func of a kernels-stage module into Python source."""

    # The library calls this builder emits: the shared ones, to which a target's
    # builder adds its own (backends/cpu/library_calls.py).
    library_calls: dict[str, str] = LIBRARY_CALLS
    allocates_own_result: frozenset[str] = ALLOCATES_OWN_RESULT

    def __init__(
        self,
        entry: func.FuncOp,
        result_dtypes: list[torch.dtype],
        kernels: dict[str, func.FuncOp] | None = None,
        scratch_limit_bytes: int = 0,
    ) -> None:
        self.entry = entry
        self.scratch_limit_bytes = scratch_limit_bytes  # 0: every buffer is allocated per call
        self.allocs: list[_Alloc] = []
        self.alloc_of: dict[str, _Alloc] = {}  # root -> the fresh allocation whose storage it uses
        self.argument_storage: set[str] = set()  # roots on an argument's storage
        self.scratch_fetch = _ScratchFetch()
        self.scratch_metas: list[torch.Tensor] = []  # what scratch_buffers() must make
        self.kernels = kernels or {}  # name -> kernel func, for library-call attributes
        self.profile = config.profile  # each call inside a profiler range (MLIRC_PROFILE)
        self.checks = decode(entry.attributes)  # flags returned after the graph's results
        self.result_dtypes = result_dtypes
        self.names: dict[object, str] = {}
        self.integers: set[str] = set()  # names that are integer literals, not tensors
        self.constants: dict[str, torch.Tensor] = {}  # name -> a constant tensor the wrapper's scope holds
        self.lines: list[str | _Free] = []
        self.meta: dict[str, torch.Tensor] = {}  # name -> its layout, as a meta tensor
        self.root: dict[str, str] = {}  # name -> the name that owns its storage
        # views not written yet: name -> its layout on its root's storage (see name())
        self.deferred: dict[str, torch.Tensor] = {}
        self.aliases: defaultdict[str, int] = defaultdict(int)  # root -> live names on it
        self.poolable: set[str] = set()  # roots this wrapper allocated
        self.moved: set[str] = set()  # roots whose storage a kernel result took over in place
        self.last_use: dict = {}
        self.index = 0
        self.pool: defaultdict[tuple, list[tuple[str, _Free]]] = defaultdict(list)
        self.updates: dict = {}  # a returned value -> the argument whose new value it is

    def name(self, value: ir.Value) -> str:
        """The value's name in the generated code, as a tensor: a deferred view is
        written here, at its first such use."""
        return self.written(self.names[value])

    def written(self, name: str) -> str:
        view = self.deferred.pop(name, None)
        if view is not None:  # its exact strides: the root's may differ on unit dims
            self.lines.append(f"    {name} = {self.view_text(self.root[name], view, exact=True)}")
        return name

    def view_text(self, root: str, view: torch.Tensor, exact: bool = False) -> str:
        """`view` (a layout on `root`'s storage) as an expression: the root itself
        where the layout is the root's, unless `exact` (the root's strides on unit
        dims may differ from its meta tensor's: a library call's result)."""
        meta = self.meta[root]
        offset = view.storage_offset() - meta.storage_offset()
        if (
            not exact
            and self.same_sizes(view.shape, meta.shape)
            and self.same_sizes(view.stride(), meta.stride())
            and self.same_sizes([offset], [0])
        ):
            return root
        return (
            f"reinterpret_tensor({root}, {self.text(view.shape)}, {self.text(view.stride())}, {self.size_text(offset)})"
        )

    def pointer(self, value: ir.Value) -> str:
        """The value as a kernel argument, which reads only its first element's
        address: a deferred view that starts where its root does is its root."""
        name = self.names[value]
        view = self.deferred.get(name)
        if view is not None and self.same_sizes([view.storage_offset()], [self.meta[self.root[name]].storage_offset()]):
            return self.root[name]
        return self.written(name)

    def nchw_view(self, value: ir.Value) -> str:
        """An NHWC operand as the NCHW tensor a convolution takes: one view of its
        root (a permute of the operand would make two tensors where it is a view)."""
        name = self.names[value]
        meta = self.meta.get(name)
        if meta is None or name not in self.root:
            return f"{self.written(name)}.permute{TO_NCHW}"
        return self.view_text(self.root[name], meta.permute(TO_NCHW))

    def fresh(self, value: ir.Value, prefix: str = "buf") -> str:
        n = f"{prefix}{len(self.names)}"
        self.names[value] = n
        return n

    # -- sizes: constants here, expressions in a wrapper for every size ---------------

    def shape_of(self, value: ir.Value) -> list:
        return list(shapes.shape_of(value))

    def text(self, sizes: Sequence) -> str:
        """Sizes (a shape, strides) as the generated code writes them."""
        return str(tuple(sizes))

    def size_text(self, size: object) -> str:
        return str(size)

    def size_key(self, size: object) -> object:
        """A size as a dictionary key (for the pool of released buffers)."""
        return size

    def same_sizes(self, a: Sequence, b: Sequence) -> bool:
        return tuple(a) == tuple(b)

    def new_meta(self, shape: list, dtype: torch.dtype) -> torch.Tensor:
        """A row-major buffer's layout, as a meta tensor."""
        return torch.empty_strided(shape, contiguous_strides(shape), dtype=dtype, device="meta")

    def eager_results(self, count: int) -> list:
        """Eager's (shape, strides) per result, None where unknown."""
        return layouts.decode_eager(self.entry.attributes, count)

    def build(self, function_name: str = "call") -> str:
        """`<function_name>_list(args)`, which takes its arguments as one list and
        empties it (AOTAutograd's boxed convention): an argument the body no longer
        reads -- a saved activation in a backward -- is freed there, not when the
        call returns.  `<function_name>(*args)` calls it for everyone else."""
        args = [self.fresh(a, "arg") for a in self.entry.entry_block.arguments]
        self.lines += [f"def {function_name}(*args):", f"    return {function_name}_list(list(args))", ""]
        self.lines.append(f"def {function_name}_list(args):")
        if args:
            self.lines.append(f"    {', '.join(args)}{',' if len(args) == 1 else ''} = args")
        self.lines.append("    args.clear()")
        ret = self.entry.entry_block.operations[len(self.entry.entry_block.operations) - 1]
        self.updates = _updates(self.entry, ret)
        arg_layouts = layouts.decode(self.entry.attributes, ARG_LAYOUTS_ATTR, len(args))
        for a, value, layout in zip(args, self.entry.entry_block.arguments, arg_layouts, strict=True):
            if not isinstance(value.type, ir.RankedTensorType):  # a size (an int), passed as it is
                self.integers.add(a)
                continue
            if layout == NHWC and self._kernels_read_only(value):
                self.lines.append(self.entry_arg(a, "channels_last"))
            else:
                if layout is not None:  # the dense buffer the tensor's strides describe (no copy)
                    self.lines.append(f"    {a} = {a}.permute({list(layout.order)}){_unit_slices(layout)}")
                self.lines.append(self.entry_arg(a))
            self._own(a, self.new_meta(self.shape_of(value), _dtype(value.type, None)))
            self.argument_storage.add(a)
        self.lines.append(self.scratch_fetch)
        self.prologue()
        logical = {v: d for v, d in zip(ret.operands, self.result_dtypes, strict=False)}
        ops = [op.operation for op in self.entry.entry_block.operations]
        last_use = {v: i for i, op in enumerate(ops) for v in op.operands}
        self.last_use = last_use
        for i, op in enumerate(ops):
            self.index = i
            self.emit(op, logical)
            self.free_after(op, i, last_use)
        self._assign_scratch()
        return "\n".join(text for text in map(str, self.lines) if text)

    # -- views ----------------------------------------------------------------------------

    def emit_view(self, result: ir.Value, source: str, make_view, fallback: str) -> None:
        """`result` as a view of `source` (a name, deferred or not): reinterpret_tensor
        of the storage's root with the layout `make_view` gives on the source's meta
        tensor, deferred to its first use; or `fallback` (torch's own op) where the
        layout is unknown or torch would copy."""
        n = self.fresh(result, "view")
        meta = self.meta.get(source)
        try:
            view = make_view(meta) if meta is not None else None
        except (RuntimeError, ValueError):  # not expressible as a view: `fallback` copies
            view = None
        if view is None:
            self.lines.append(f"    {n} = {self.written(source)}{fallback}")
            self._alias(n, source, None)
            return
        self._alias(n, source, view)
        self.deferred[n] = view  # written at its first use as a tensor (name())

    def emit_call(self, op: ir.Operation, logical: dict) -> None:
        callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        attrs = self.kernels[callee].attributes if callee in self.kernels else {}
        library = ir.StringAttr(attrs[LIBRARY_ATTR]).value if LIBRARY_ATTR in attrs else None
        if library == "permute":  # a view, see mlirc-transpose-views
            perm = list(ir.DenseI64ArrayAttr(attrs[PERM_ATTR]))
            self.emit_view(op.results[0], self.names[op.operands[0]], lambda m: m.permute(perm), f".permute({perm})")
        elif library is not None:
            self.emit_library_call(op, library, attrs, logical)
            self._profiled(f"mlirc {library} {callee}", op)
        elif IN_PLACE_ATTR in attrs:
            self.emit_kernel_call(op, callee, [*(self.pointer(v) for v in op.operands), self._destination(op, logical)])
            self._profiled(f"mlirc {callee}", op)
        else:
            outs = [
                self.in_place(op, callee, logical, k) or self.allocate(r, logical) for k, r in enumerate(op.results)
            ]
            self.emit_kernel_call(op, callee, [*(self.pointer(v) for v in op.operands), *outs])
            self._profiled(f"mlirc {callee}", op)

    def _profiled(self, label: str, op: ir.Operation) -> None:
        """With MLIRC_PROFILE, the call just emitted runs inside a profiler range named
        after the kernel and its result's shape (benchmarks/cpu_profile.py reads them)."""
        if not self.profile or not self.lines or not isinstance(self.lines[-1], str):
            return
        shape = "x".join(map(str, shapes.shape_of(op.results[0]))) if len(op.results) else ""
        call = self.lines.pop()
        self.lines.append(f"    with record_function({f'{label} [{shape}]'!r}):")
        self.lines.append("    " + call)

    def entry_arg(self, a: str, memory_format: str | None = None) -> str:
        """The argument as kernels read it: dense, row-major -- or, given
        `memory_format` ("channels_last": a 4-D argument whose buffer is NHWC), dense in
        that format and still NCHW-shaped (no NHWC view: a `permute` is a dispatched
        op, ~2 us)."""
        if memory_format is None:
            return f"    {a} = {a} if {a}.is_contiguous() else {a}.contiguous()"
        fmt = f"memory_format=torch.{memory_format}"
        return f"    {a} = {a} if {a}.is_contiguous({fmt}) else {a}.contiguous({fmt})"

    def _kernels_read_only(self, arg: ir.Value) -> bool:
        """Is `arg` only an operand of generated kernels (which read its address alone),
        never a library call's, a view's, a result or the storage of one?"""
        if arg in self.updates.values():
            return False
        for use in arg.uses:
            op = use.owner.operation
            if op.name != "func.call":
                return False
            kernel = self.kernels.get(ir_utils.callee(op))
            if kernel is None or LIBRARY_ATTR in kernel.attributes or IN_PLACE_ATTR in kernel.attributes:
                return False
        return True

    def aligned(self, name: str, alignment: int) -> bool:
        """Is the value's first byte `alignment`-aligned, given that every storage
        root is (allocations are; arguments, where entry_arg makes them so)?"""
        meta = self.meta.get(name)
        return meta is not None and meta.storage_offset() * meta.element_size() % alignment == 0

    def prologue(self) -> None:
        """Per-call setup before the first kernel (none on the CPU)."""

    def emit_kernel_call(self, op: ir.Operation, callee: str, buffers: list[str]) -> None:
        """`buffers`: the call's operands (tensors, or an integer's literal) then its results."""
        ptrs = ", ".join(x if x in self.integers else f"{x}.data_ptr()" for x in buffers)
        self.lines.append(f"    kernels[{callee!r}]({ptrs})")

    def emit_library_call(self, op: ir.Operation, library: str, attrs: object, logical: dict) -> None:
        if library not in self.library_calls:
            raise PipelineError("mlirc-host-wrapper", f"unknown library kernel '{library}'")
        args = ir.DictAttr(attrs[LIBRARY_ARGS_ATTR]) if LIBRARY_ARGS_ATTR in attrs else {}
        fields = {a.name: _python_value(a.attr) for a in args}
        if fields.pop(EXACT_ATTR, 0) and library in ("conv2d", "conv2d_nhwc"):
            library += "_exact"
        operands = [self.names[v] for v in op.operands]
        library = self.library_variant(library, operands)
        if library in NCHW_OPERANDS:
            fields.update(nchw0=self.nchw_view(op.operands[0]), nchw1=self.nchw_view(op.operands[1]))
        else:
            operands = [self.name(v) for v in op.operands]
        fields.update(self.call_site(library, fields, operands))
        if library in self.allocates_own_result:
            result = op.results[0]
            out = self.fresh(result)
            shape = self.shape_of(result)
            dtype = _dtype(result.type, logical.get(result))
            self._own(out, self.new_meta(shape, dtype))
            self.poolable.add(out)
            self._note_fresh(_static_nbytes(self.meta[out]))
        else:
            out = self.allocate(op.results[0], logical)
        self.lines.append("    " + self.library_calls[library].format(*operands, out=out, **fields))

    def library_variant(self, library: str, operands: list[str]) -> str:
        """The library call to emit for `library` on these operands (one per kind here;
        a target's builder may choose by shape)."""
        return library

    def call_site(self, library: str, fields: dict, operands: list[str]) -> dict:
        """Fields naming per-call-site state a library call keeps (none here)."""
        return {}

    def emit_slice(self, op: ir.Operation) -> None:
        offsets = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
        sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
        strides = list(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))
        shape = list(shapes.shape_of(op.results[0]))
        index = tuple(slice(o, o + s * st, st) for o, s, st in zip(offsets, sizes, strides, strict=True))
        text = ", ".join(f"{o}:{o + s * st}:{st}" for o, s, st in zip(offsets, sizes, strides, strict=True))
        # A rank-reducing slice drops unit dims: a view of the slice in its new shape.
        drop = f".reshape({shape})" if len(shape) != len(sizes) else ""
        self.emit_view(op.results[0], self.names[op.operands[0]], lambda m: m[index].view(shape), f"[{text}]{drop}")

    def emit_return(self, operands: list[ir.Value]) -> None:
        results = operands[: len(operands) - len(self.checks)]
        for flag, check in zip(operands[len(results) :], self.checks, strict=True):
            self.emit_check(self.name(flag), check)
        for v in results:
            self._mark_escaping(self.name(v))
        result_layouts = layouts.decode(self.entry.attributes, RESULT_LAYOUTS_ATTR, len(results))
        eager = self.eager_results(len(results))
        outs = [
            self.result_view(self.name(v), dtype, layout, as_eager)
            for v, dtype, layout, as_eager in zip(results, self.result_dtypes, result_layouts, eager, strict=False)
        ]
        self.lines.append(f"    return ({', '.join(outs)}{',' if len(results) == 1 else ''})")

    def result_view(self, name: str, dtype: torch.dtype, layout: layouts.Layout | None, eager: tuple | None) -> str:
        """How `name` is handed back as eager would: its dtype (bools are bytes here),
        the view its layout makes of the buffer, and so eager's sizes and strides --
        copied into them only where no view gives them (a rare gapped layout)."""
        text = name + (".view(torch.bool)" if dtype == torch.bool else "")
        meta = self.meta.get(name)
        if layout is not None:
            text, meta = self.layout_view(name, text, meta, layout, eager)
        if eager is not None and (meta is None or not layouts.same_strides(eager[0], meta.stride(), eager[1])):
            text = f"with_strides({text}, {self.text(eager[1])})"
        return text

    def layout_view(
        self, name: str, text: str, meta: torch.Tensor | None, layout: layouts.Layout, eager: tuple | None
    ) -> tuple[str, torch.Tensor | None]:
        """A result's buffer `name` (as `text`, laid out as `meta`) viewed as the tensor its
        layout stands for: one reinterpret_tensor where the layout is known and the
        storage is the wrapper's own, as a CNN returns a permuted view per saved
        activation (a permute is a dispatched op, ~2 us a call).  A view of an
        argument stays a view op: it shares the argument's version counter, which
        autograd's saved-tensor check and the packed-weight and frozen caches read."""
        views = text
        if layout.padded and eager is not None:  # the rows' padding cut off (from 0: no offset)
            cut = _unpadded(layout, eager[0])
            views += "[" + ", ".join(f"0:{c.stop}" if c.stop is not None else ":" for c in cut) + "]"
            meta = meta[cut] if meta is not None else None
        views += f".permute({layout.inverse()})"
        meta = meta.permute(layout.inverse()) if meta is not None else None
        if layout.expanded and eager is not None:
            views += f".expand({self.text(eager[0])})"
            meta = meta.expand(eager[0]) if meta is not None else None
        if meta is None or self.root.get(name, name) in self.argument_storage:
            return views, meta
        return f"reinterpret_tensor({text}, {self.text(meta.shape)}, {self.text(meta.stride())}, 0)", meta

    def emit_check(self, flag: str, check: RuntimeCheck) -> None:
        """Raise eager's exception unless the 0-d flag `flag` is set (after every
        kernel ran: they clamp what they read, so bad data cannot reach memory)."""
        self.lines.append(f"    if not {flag}.item(): raise {check.error}({check.message!r})")

    def emit_constant(self, value: ir.Value, attr: ir.Attribute) -> None:
        if isinstance(value.type, (ir.IndexType, ir.IntegerType)):
            literal = str(ir.IntegerAttr(attr).value)
            self.names[value] = literal
            self.integers.add(literal)
            return
        if not isinstance(attr, ir.DenseElementsAttr) or any(u.owner.name != "func.call" for u in value.uses):
            # one tensor serves every call: a result or a view of it could be edited
            raise PipelineError("mlirc-host-wrapper", f"a constant {attr} is used other than as a kernel's argument")
        shape, dtype = list(shapes.shape_of(value)), _dtype(value.type, None)
        dense = ir.DenseElementsAttr(attr)
        with unset_fake_temporarily():  # the compiler runs under the tracer's fake mode
            if dense.is_splat:
                splat = dense.get_splat_value()
                number = ir.FloatAttr(splat).value if isinstance(splat, ir.FloatAttr) else ir.IntegerAttr(splat).value
                tensor = torch.full(shape, number, dtype=dtype)
            else:
                tensor = torch.tensor(np.array(dense)).to(dtype).reshape(shape)
            meta = torch.empty(shape, dtype=dtype, device="meta")
        name = f"const{len(self.constants)}"
        self.names[value], self.constants[name] = name, tensor
        self.meta[name] = meta  # not a root: never freed, pooled or overwritten

    def emit(self, op: ir.Operation, logical: dict) -> None:
        if op.name == "func.call":
            self.emit_call(op, logical)
        elif op.name == "tensor.empty":  # a 0-size result: nothing to compute
            self.allocate(op.results[0], logical)
        elif op.name in ("tensor.collapse_shape", "tensor.expand_shape"):
            shape = self.shape_of(op.results[0])
            # A strided slice may not collapse into a view: reshape copies it then.
            self.emit_view(
                op.results[0], self.names[op.operands[0]], self.reshaped(op, shape), f".reshape({self.text(shape)})"
            )
        elif op.name == "tensor.extract_slice":
            self.emit_slice(op)
        elif op.name == "func.return":
            self.emit_return(list(op.operands))
        elif op.name == "arith.constant":
            # what a kernel compiled for every size takes as an argument (mlirc-bind-sizes
            # keep-kernel-arguments): a size, or a size made a value
            self.emit_constant(op.results[0], op.attributes["value"])
        else:
            self.emit_host_op(op)

    def reshaped(self, op: ir.Operation, shape: list) -> Callable[[torch.Tensor], torch.Tensor]:
        """How a collapse_shape or expand_shape views its source's meta tensor."""
        return lambda m: m.view(shape)

    def emit_host_op(self, op: ir.Operation) -> None:
        """An op outside the kernels that a bound entry does not hold (a wrapper for
        every size computes its sizes on the host)."""
        raise PipelineError("mlirc-host-wrapper", f"op {op.name} cannot run on the host")
