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
* A buffer whose last user has run is handed to the next allocation of the same
  dtype and size (`buf7 = buf3`) rather than freed and allocated again; a buffer
  no later allocation wants is deleted at its last use, as eager frees it, and so is
  one that would be held across a fresh allocation many times its size (the peak's).
  Storage is pooled only when no view of it is still alive.
* An elementwise kernel whose operand dies at the call writes its result over that
  operand (Inductor does the same): one buffer streamed instead of two.
* Allocations skip the dispatcher (`empty_strided_<device>`), as Inductor's do.
* On the CPU, a buffer that never reaches a result (no view of it is returned)
  is scratch kept from one call to the next, one set per thread.  torch's CPU
  allocator caches nothing: a fresh multi-megabyte buffer comes back from the OS
  zeroed, page by page, and on the 2-core VM those page faults took 1.1 of a
  transformer layer's 8.4 ms.  The price is that memory stays held while the
  compiled graph lives; MLIRC_SCRATCH_MB caps it (0 turns scratch off).

Device specifics (stream, launch) are the subclasses' hooks.
"""

from __future__ import annotations

import math
import threading
from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np
import torch
from mlir import ir
from mlir.dialects import func
from torch._subclasses.fake_tensor import unset_fake_temporarily

from mlirc.backends.in_place import in_place_operands
from mlirc.config import config
from mlirc.dialects import layouts, shapes
from mlirc.dialects.attributes import (
    ARG_LAYOUTS_ATTR,
    IN_PLACE_ATTR,
    LIBRARY_ARGS_ATTR,
    LIBRARY_ATTR,
    PERM_ATTR,
    PREPARE_ATTR,
    PREPARED_ATTR,
    RESULT_LAYOUTS_ATTR,
    RESULT_UPDATES_ATTR,
)
from mlirc.dialects.runtime_checks import RuntimeCheck, decode
from mlirc.errors import PipelineError
from mlirc.passes.base import ir_utils

# Library kernels (mlirc-outline-library-calls) as host code: `{0}`, `{1}` are the
# call's operands, `{out}` its result, other fields the op's attributes.  GEMMs write
# into a buffer allocated like any kernel result; a convolution returns its own.
LIBRARY_CALLS = {
    "mm": "torch.mm({0}, {1}, out={out})",
    # oneDNN's GEMM, where the CPU builder measured it faster (backends/cpu/gemm_choice.py)
    "mm_onednn": "{out} = onednn_mm({0}, {1})",
    "bmm": "torch.bmm({0}, {1}, out={out})",
    "conv2d": "{out} = torch.conv2d({0}, {1}, None, {stride}, {padding}, {dilation}, {groups}).contiguous()",
    # A convolution that stands for exact float32 sums (average pooling's window sums):
    # never TF32, which cuDNN uses for float32 convolutions by default (eager's conv2d
    # does too; its avg_pool2d does not).
    "conv2d_exact": "{out} = exact_conv2d({0}, {1}, {stride}, {padding}, {dilation}, {groups}).contiguous()",
    # Input and result are NHWC tensors, the weight OHWI (mlirc-channels-last):
    # oneDNN and cuDNN compute channels-last when the input is, and the result's NHWC
    # view is then dense.  `{nchw0}`, `{nchw1}`: the operands viewed as NCHW
    # (WrapperBuilder.nchw_view); aten::convolution, not conv2d, which only adds a
    # dispatch on the way to it.
    "conv2d_nhwc": (
        "{out} = torch.convolution({nchw0}, {nchw1}, None, {stride}, {padding}, {dilation}, False, (0, 0),"
        " {groups}).permute(0, 2, 3, 1).contiguous()"
    ),
    "conv2d_nhwc_exact": (
        "{out} = exact_conv2d({nchw0}, {nchw1}, {stride}, {padding}, {dilation}, {groups})"
        ".permute(0, 2, 3, 1).contiguous()"
    ),
    # The same on oneDNN with the weight reordered once per call site (backends/cpu/packed_weights.py).
    # `root`: the argument whose storage holds the weight (its version counter is the weight's).
    "conv2d_nhwc_packed": "{out} = conv_sites[{site}]({0}, {1}, {root})",
    # MKL's GEMM on a weight packed once per call site (a linear layer's; packed_weights.py)
    "mm_packed": "{out} = linear_sites[{site}]({0}, {1}, {root})",
    # A GEMM with its bias `{2}`, added to the sums before they are rounded (mlirc-outline-library-calls)
    "addmm": "torch.addmm({2}, {0}, {1}, out={out})",
    "addmm_onednn": "{out} = onednn_mm({0}, {1}, {2})",
    "addmm_packed": "{out} = linear_sites[{site}]({0}, {1}, {root}, {2})",
}
ALLOCATES_OWN_RESULT = frozenset(
    {"conv2d", "conv2d_exact", "conv2d_nhwc", "conv2d_nhwc_exact", "conv2d_nhwc_packed", "mm_onednn", "mm_packed",
     "addmm_onednn", "addmm_packed"}
)  # fmt: skip
# A released buffer is not held for reuse across a fresh allocation this many times its
# size (_Free.worth_holding): freed at its last use, it is allocated again later.
HOLD_LIMIT = 16
EXACT_ATTR = "exact"  # on a conv2d: sums that must not round to TF32 (see "conv2d_exact")
# Library calls that read their NHWC operands 0 and 1 as NCHW views (`{nchw0}`, `{nchw1}`)
NCHW_OPERANDS = frozenset({"conv2d_nhwc", "conv2d_nhwc_exact"})
TO_NCHW = (0, 3, 1, 2)
# A channels-last tensor's layout: an NCHW tensor held in an NHWC buffer
NHWC = layouts.Layout((0, 2, 3, 1))

# Storage element types (bools are i8 bytes, same layout as torch.bool).
_STORAGE_TO_TORCH = {**shapes.MLIR_TO_TORCH, "i8": torch.int8}


def storage_dtype(t: ir.Type) -> torch.dtype:
    return _STORAGE_TO_TORCH[str(ir.ShapedType(t).element_type)]


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


def contiguous_strides(shape: list[int]) -> list[int]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1) if isinstance(size, int) else torch.sym_max(size, 1)
    return strides[::-1]


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


def with_strides(x: torch.Tensor, strides: tuple[int, ...]) -> torch.Tensor:
    """`x` with eager's `strides`: a copy where its own differ (a view with gaps),
    expanded where eager's has stride 0.  Values first: a layout torch cannot
    allocate (overlapping windows) leaves `x` as it is."""
    if layouts.same_strides(x.shape, x.stride(), strides):
        return x
    repeated = [d for d, (n, s) in enumerate(zip(x.shape, strides, strict=True)) if n > 1 and s == 0]
    one = x[tuple(slice(0, 1) if d in repeated else slice(None) for d in range(x.dim()))]
    try:
        out = torch.empty_strided(one.shape, strides, dtype=x.dtype, device=x.device).copy_(one)
    except RuntimeError:
        return x
    return out.expand(x.shape)


def wrapper_scope(device: torch.device) -> dict:
    """Names the generated code uses, bound once: the fast allocator and view maker
    where this torch has them (Inductor's), torch's public ones otherwise."""
    guards = getattr(torch._C._dynamo, "guards", None)
    fast_empty = getattr(guards, f"_empty_strided_{device.type}", None)
    if fast_empty is None or device.type not in ("cpu", "cuda"):

        def fast_empty(size: tuple, stride: tuple, dtype: torch.dtype) -> torch.Tensor:
            return torch.empty_strided(size, stride, dtype=dtype, device=device)

    reinterpret = getattr(guards, "_reinterpret_tensor", None)
    if reinterpret is None:

        def reinterpret(x: torch.Tensor, size: tuple, stride: tuple, offset: int) -> torch.Tensor:
            return x.as_strided(size, stride, x.storage_offset() + offset)

    # MLIRC_PROFILE's ranges: the C++ range Inductor's kernel launches use, ~0.3 us a
    # call where torch.profiler.record_function costs ~10 us (2 EPYC cores), which
    # added ~5 ms to a CNN training step of ~450 calls and skewed the profile it made.
    record_function = getattr(torch._C._profiler, "_RecordFunctionFast", torch.profiler.record_function)
    return {
        "torch": torch,
        "device": device,
        "empty_strided": fast_empty,
        "reinterpret_tensor": reinterpret,
        "with_strides": with_strides,
        "exact_conv2d": exact_conv2d,
        "record_function": record_function,
    }


def exact_conv2d(x: torch.Tensor, w: torch.Tensor, *args: object) -> torch.Tensor:
    """torch.conv2d with cuDNN's TF32 off for the call.  Through cudnn.flags, the one
    way allowed where torch's tests have disabled setting the global flags (the OpInfo
    sweep); every other flag as it is.  A CPU convolution has no TF32 to turn off."""
    if x.device.type != "cuda":
        return torch.conv2d(x, w, None, *args)
    cudnn = torch.backends.cudnn
    with cudnn.flags(
        enabled=cudnn.enabled,
        benchmark=cudnn.benchmark,
        benchmark_limit=cudnn.benchmark_limit,
        deterministic=cudnn.deterministic,
        allow_tf32=False,
    ):
        return torch.conv2d(x, w, None, *args)


class PreparedCache:
    """The values of an entry's prepare function (passes/hoist_frozen.py), and the
    version counters and storages of the frozen arguments they were computed from."""

    def __init__(self, prepare: Callable) -> None:
        self.prepare = prepare
        self.state: tuple = (None, (), ())

    def refresh(self, key: tuple | None, frozen: tuple) -> tuple:
        values = self.prepare(*frozen)
        if key is not None:
            # The storages are kept alive so that no other tensor can take their
            # addresses: an equal data_ptr then means the same storage.
            self.state = (key, values, tuple(t.untyped_storage() for t in frozen))
        return values

    def refresh_in_place(self, frozen: tuple) -> None:
        """For a CUDA graph that reads the cached values where they are: when a frozen
        argument changed since they were computed, recompute them into the same
        buffers (backends/gpu/cudagraphs.py calls this before each replay)."""
        key = tuple(x for t in frozen for x in (t._version, t.data_ptr()))
        key_then, values, _ = self.state
        if key != key_then:
            for cached, fresh in zip(values, self.prepare(*frozen), strict=True):
                cached.copy_(fresh)
            self.state = (key, values, tuple(t.untyped_storage() for t in frozen))


def frozen_guard_source(entry: func.FuncOp, graph_capture: bool = False) -> str:
    """`call`: computes the prepared values when a frozen argument changed (or has no
    version counter: an inference tensor), then runs `call_prepared` with them.

    `graph_capture` (CUDA): while a CUDA graph captures the call, cached values are
    read in place and the capture is told (`note_capture`), so that each replay first
    refreshes them (PreparedCache.refresh_in_place); values computed now are
    computed by the graph itself, on every replay, and not cached."""
    positions = list(ir.DenseI64ArrayAttr(entry.attributes[PREPARED_ATTR]))
    count = len(ir.FunctionType(entry.attributes["function_type"].value).inputs)
    prepared = len(ir.FunctionType(_prepare_of(entry).attributes["function_type"].value).results)
    args = [f"a{i}" for i in range(count - prepared)]
    frozen = "".join(f"a{i}, " for i in positions)
    key = "".join(f"a{i}._version, a{i}.data_ptr(), " for i in positions)
    if graph_capture:
        choose = [
            "    if key is not None and state[0] == key:",
            "        values = state[1]",
            f"        if capturing(): note_capture(prepared, ({frozen}))",
            "    else:",
            f"        values = prepare({frozen}) if capturing() else prepared.refresh(key, ({frozen}))",
        ]
    else:
        choose = [
            f"    values = state[1] if key is not None and state[0] == key else prepared.refresh(key, ({frozen}))"
        ]
    return "\n".join(
        [
            f"def call({', '.join(args)}):",
            "    try:",
            f"        key = ({key})",
            "    except RuntimeError:",
            "        key = None",
            "    state = prepared.state",
            *choose,
            f"    return call_prepared({''.join(a + ', ' for a in args)}*values)",
        ]
    )


def _prepare_of(entry: func.FuncOp) -> func.FuncOp:
    name = f"{entry.sym_name.value}_prepare"
    module = entry.operation.parent
    for op in module.regions[0].blocks[0].operations:
        if isinstance(op, func.FuncOp) and op.sym_name.value == name and PREPARE_ATTR in op.attributes:
            return op
    raise PipelineError("mlirc-host-wrapper", f"entry {entry.sym_name.value} has no prepare function {name}")


def prepare_function(entry: func.FuncOp) -> func.FuncOp | None:
    return _prepare_of(entry) if PREPARED_ATTR in entry.attributes else None


class _Free:
    """A `del` line decided later: dropped if the buffer is reused after all.  Until
    then the buffer is held: `held_across` is the largest fresh allocation made since
    its release (bytes), `nbytes` its own size (None: a size known only per call)."""

    def __init__(self, name: str, nbytes: int | None) -> None:
        self.name = name
        self.reused = False
        self.nbytes = nbytes
        self.held_across = 0

    def worth_holding(self) -> bool:
        """Holding a released buffer for a later allocation of its size costs its size
        at every allocation made meanwhile: not worth it across one HOLD_LIMIT times as
        large (the allocation that sets the peak -- BERT's backward kept two [64, 256]
        gradients across its first [4096, 1024] GEMM output), where freeing it now and
        allocating again later costs one allocation."""
        return self.nbytes is None or self.held_across < HOLD_LIMIT * self.nbytes

    def __str__(self) -> str:
        return "" if self.reused else f"    del {self.name}"


def _static_nbytes(meta: torch.Tensor) -> int | None:
    """A buffer's bytes, where its size is a number (not an expression of the call's)."""
    numel = meta.numel()  # an expression of the call's sizes in a wrapper for every size
    return numel * meta.element_size() if isinstance(numel, int) else None


class _Alloc:
    """A fresh buffer's line, decided once the results are known: an allocation, or
    the thread's persistent scratch buffer `scratch[slot]` if it never escapes."""

    def __init__(self, name: str, meta: torch.Tensor, text: Callable[[Sequence], str] = str) -> None:
        self.name, self.meta, self.text = name, meta, text
        self.escapes = False
        self.slot: int | None = None

    @property
    def nbytes(self) -> int:
        return self.meta.numel() * self.meta.element_size()

    def __str__(self) -> str:
        if self.slot is not None:
            return f"    {self.name} = scratch[{self.slot}]"
        m = self.meta
        return f"    {self.name} = empty_strided({self.text(m.shape)}, {self.text(m.stride())}, {m.dtype})"


class _ScratchFetch:
    """The call's first line when it has scratch: the calling thread's buffers."""

    def __init__(self) -> None:
        self.used = False

    def __str__(self) -> str:
        return "    scratch = scratch_buffers()" if self.used else ""


def scratch_buffers(metas: list[torch.Tensor], device: torch.device) -> Callable[[], tuple[torch.Tensor, ...]]:
    """The generated code's `scratch_buffers`: per thread, so that two threads
    calling one compiled graph never share a buffer; made on a thread's first call."""
    local = threading.local()

    def buffers() -> tuple[torch.Tensor, ...]:
        try:
            return local.buffers
        except AttributeError:
            local.buffers = tuple(torch.empty_strided(m.shape, m.stride(), dtype=m.dtype, device=device) for m in metas)
            return local.buffers

    return buffers


class WrapperBuilder:
    """Turns the entry func of a kernels-stage module into Python source."""

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

    # -- storage bookkeeping ------------------------------------------------------------

    def _assign_scratch(self) -> None:
        kept = [a for a in self.allocs if not a.escapes and a.nbytes > 0]
        if not kept or sum(a.nbytes for a in kept) > self.scratch_limit_bytes:
            return
        for slot, alloc in enumerate(kept):
            alloc.slot = slot
            self.scratch_metas.append(alloc.meta)
        self.scratch_fetch.used = True

    def _takes_storage(self, name: str, old: str) -> None:
        """`name` is a new root on `old`'s storage (reused or overwritten in place)."""
        if old in self.alloc_of:
            self.alloc_of[name] = self.alloc_of[old]
        if old in self.argument_storage:
            self.argument_storage.add(name)

    def _mark_escaping(self, name: str) -> None:
        alloc = self.alloc_of.get(self.root.get(name, ""))
        if alloc is not None:
            alloc.escapes = True

    def _own(self, name: str, meta: torch.Tensor) -> None:
        self.meta[name], self.root[name] = meta, name
        self.aliases[name] += 1

    def _alias(self, name: str, source: str, meta: torch.Tensor | None) -> None:
        self.root[name] = self.root[source]
        self.aliases[self.root[name]] += 1
        if meta is not None:
            self.meta[name] = meta

    def free_after(self, op: ir.Operation, index: int, last_use: dict) -> None:
        """Release values at their last use (eager's memory behaviour: a buffer is
        reused while still in cache instead of every buffer living to the end)."""
        if op.name == "func.return":
            return
        dead = []
        for v in dict.fromkeys(op.operands):
            name = self.names.get(v, "")
            if last_use.get(v) != index or name not in self.root:
                continue
            root = self.root[name]
            if name != root and self.deferred.pop(name, None) is None:
                dead.append(name)
            self.aliases[root] -= 1
            if self.aliases[root] == 0:
                self._release(root, dead)
        if dead:
            self.lines.append(f"    del {', '.join(dead)}")

    def _release(self, root: str, dead: list[str]) -> None:
        meta = self.meta.get(root)
        if root in self.poolable and meta is not None and root not in self.moved:
            free = _Free(root, _static_nbytes(meta))
            self.lines.append(free)
            self.pool[(meta.dtype, self.size_key(meta.numel()))].append((root, free))
        else:
            dead.append(root)

    def allocate(self, value: ir.Value, logical: dict) -> str:
        n = self.fresh(value)
        dtype, shape = _dtype(value.type, logical.get(value)), self.shape_of(value)
        self._own(n, self.new_meta(shape, dtype))
        self.poolable.add(n)
        candidates = self.pool.get((dtype, self.size_key(math.prod(shape))))
        if candidates:
            self._reuse(n, candidates)
        else:
            alloc = _Alloc(n, self.meta[n], self.text)
            self.allocs.append(alloc)
            self.alloc_of[n] = alloc
            self.lines.append(alloc)
            self._note_fresh(_static_nbytes(self.meta[n]))
        return n

    def _note_fresh(self, nbytes: int | None) -> None:
        """A fresh allocation of `nbytes` while the pool holds released buffers: those
        no longer worth holding leave the pool (their `del` stays where they died)."""
        for entries in self.pool.values():
            for _, free in entries:
                free.held_across = max(free.held_across, nbytes or 0)
            entries[:] = [entry for entry in entries if entry[1].worth_holding()]

    def _reuse(self, n: str, candidates: list[tuple[str, _Free]]) -> None:
        """`n` takes over a released buffer's storage, preferably one of its shape."""
        meta = self.meta[n]
        same = [c for c in candidates if self.same_sizes(self.meta[c[0]].shape, meta.shape)]
        old, free = (same or candidates)[-1]
        candidates.remove((old, free))
        free.reused = True
        self._takes_storage(n, old)
        if same:
            self.lines.append(f"    {n} = {old}; del {old}")
        else:
            self.lines.append(
                f"    {n} = reinterpret_tensor({old}, {self.text(meta.shape)}, {self.text(meta.stride())}, 0); del {old}"
            )

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

    def in_place(self, op: ir.Operation, callee: str, logical: dict, k: int) -> str | None:
        """Result `k` written over an operand that dies here (Inductor's in-place
        buffers): an elementwise kernel then streams one buffer instead of two, and
        a large result needs no fresh, page-faulting memory.  Or over the argument
        whose new value it is, once nothing reads that argument any more: AOTAutograd's
        copy back into it is then a copy onto itself, which torch skips."""
        if callee not in self.kernels:
            return None
        result = op.results[k]
        dtype = _dtype(result.type, logical.get(result))
        if result in self.updates and self._overwritable(op, callee, self.updates[result], dtype, k):
            return self._write_over(result, self.name(self.updates[result]), dtype)
        for index in self.overwritable_operands(callee).get(k, []):
            if self._dies_here(op, index, dtype):
                return self._write_over(result, self.names[op.operands[index]], dtype)
        return None

    def _dies_here(self, op: ir.Operation, index: int, dtype: torch.dtype) -> bool:
        """Is operand `index` a buffer this wrapper allocated, of `dtype`, that no view
        shares and nothing reads after `op` (which reads it once)?"""
        value = op.operands[index]
        name = self.names.get(value, "")
        meta = self.meta.get(name)
        return (
            self.root.get(name) == name
            and name in self.poolable
            and name not in self.moved
            and self.aliases[name] == 1
            and self.last_use.get(value) == self.index
            and meta is not None
            and meta.dtype == dtype
            and list(op.operands).count(value) == 1
        )

    def _destination(self, op: ir.Operation, logical: dict) -> str:
        """An in-place kernel's result buffer, holding its first operand: that operand's
        own buffer where it dies here (form-kernels made it a kernel's fresh result),
        else a copy of it."""
        result, name = op.results[0], self.name(op.operands[0])
        dtype = _dtype(result.type, logical.get(result))
        if self._dies_here(op, 0, dtype):
            return self._write_over(result, name, dtype)
        out = self.allocate(result, logical)
        self.lines.append(f"    {out}.copy_({name})")
        return out

    def overwritable_operands(self, callee: str) -> dict[int, list[int]]:
        """backends/in_place.py's answer for a kernel, read off its linalg body."""
        return in_place_operands(self.kernels[callee])

    def _write_over(self, result: ir.Value, name: str, dtype: torch.dtype) -> str:
        n = self.fresh(result)
        shape = self.shape_of(result)
        strides = contiguous_strides(shape)
        meta = self.meta.get(name)
        if meta is not None and self.same_sizes(meta.shape, shape) and self.same_sizes(meta.stride(), strides):
            self.lines.append(f"    {n} = {name}")  # the same tensor: a second name, no view
        else:
            self.lines.append(f"    {n} = reinterpret_tensor({name}, {self.text(shape)}, {self.text(strides)}, 0)")
        self.moved.add(name)
        self._own(n, self.new_meta(shape, dtype))
        self._takes_storage(n, name)
        self.poolable.add(n)
        return n

    def _overwritable(self, op: ir.Operation, callee: str, arg: ir.Value, dtype: torch.dtype, k: int) -> bool:
        """May `op` write its result `k` over argument `arg`?  Nothing reads the
        argument later, no view of it lives, and `op` reads it (if at all) at the
        element it writes; the same dtype and sizes."""
        name = self.names.get(arg, "")
        meta = self.meta.get(name)
        reads = [i for i, v in enumerate(op.operands) if v == arg]
        return (
            meta is not None
            and name not in self.moved
            and self.aliases[name] == 1
            and self.last_use.get(arg, -1) <= self.index
            and meta.dtype == dtype
            and self.same_sizes(meta.shape, self.shape_of(op.results[k]))
            and len(reads) <= 1
            and all(i in self.overwritable_operands(callee).get(k, []) for i in reads)
        )

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
        if library not in LIBRARY_CALLS:
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
        if library in ALLOCATES_OWN_RESULT:
            result = op.results[0]
            out = self.fresh(result)
            shape = self.shape_of(result)
            dtype = _dtype(result.type, logical.get(result))
            self._own(out, self.new_meta(shape, dtype))
            self.poolable.add(out)
            self._note_fresh(_static_nbytes(self.meta[out]))
        else:
            out = self.allocate(op.results[0], logical)
        self.lines.append("    " + LIBRARY_CALLS[library].format(*operands, out=out, **fields))

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
