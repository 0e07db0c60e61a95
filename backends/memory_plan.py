"""The host wrapper's memory plan: which buffer each value of the entry lives in,
decided while the wrapper is emitted (backends/host_wrapper.py), at build time.

* A buffer whose last user has run is handed to the next allocation of the same
  dtype and size (`buf7 = buf3`) rather than freed and allocated again; a buffer
  no later allocation wants is deleted at its last use, as eager frees it, and so is
  one that would be held across a fresh allocation many times its size (the peak's).
  Storage is pooled only when no view of it is still alive.
* An elementwise kernel whose operand dies at the call writes its result over that
  operand (Inductor does the same): one buffer streamed instead of two.
* On the CPU, a buffer that never reaches a result (no view of it is returned)
  is scratch kept from one call to the next, one set per thread.  torch's CPU
  allocator caches nothing: a fresh multi-megabyte buffer comes back from the OS
  zeroed, page by page, and on the 2-core VM those page faults took 1.1 of a
  transformer layer's 8.4 ms.  The price is that memory stays held while the
  compiled graph lives; MLIRC_SCRATCH_MB caps it (0 turns scratch off).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence

import torch
from mlir import ir

from mlirc.backends.in_place import in_place_operands
from mlirc.dialects import shapes

# A released buffer is not held for reuse across a fresh allocation this many times its
# size (_Free.worth_holding): freed at its last use, it is allocated again later.
HOLD_LIMIT = 16

# Storage element types (bools are i8 bytes, same layout as torch.bool).
_STORAGE_TO_TORCH = {**shapes.MLIR_TO_TORCH, "i8": torch.int8}


def storage_dtype(t: ir.Type) -> torch.dtype:
    return _STORAGE_TO_TORCH[str(ir.ShapedType(t).element_type)]


def _dtype(t: ir.Type, logical: torch.dtype | None) -> torch.dtype:
    if logical is not None:
        return logical
    return _STORAGE_TO_TORCH[str(ir.ShapedType(t).element_type)]


def contiguous_strides(shape: list[int]) -> list[int]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1) if isinstance(size, int) else torch.sym_max(size, 1)
    return strides[::-1]


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


class MemoryPlanner:
    """WrapperBuilder's storage decisions, as the builder emits them: allocations,
    reuse of released buffers, `del` lines, results written over a dying operand or
    argument, scratch.  A base of WrapperBuilder, on its state (names, meta, root,
    lines, pool, ...: its __init__) and its size hooks (shape_of, text, same_sizes,
    size_key, new_meta), which the wrapper for every size overrides."""

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

    # -- results written over a dying operand or argument -----------------------------

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
