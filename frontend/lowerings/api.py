"""What every lowering file uses, and nothing else: the lowering registry, the
context a lowering function sees, and the helpers that read a node's metadata.

A leaf: it imports the dialect's builders and torch, never the importer or a
lowering file.  `mlirc.frontend.lowerings` (the package) imports every lowering
file, so its LOWERINGS and CHECKS are the complete table.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx as fx
from mlir import ir
from torch.fx.experimental import symbolic_shapes

from mlirc.dialects import builders, shapes
from mlirc.dialects.runtime_checks import RuntimeCheck
from mlirc.errors import UnsupportedOpError, VerificationError
from mlirc.frontend.lowerings.sizes import SymbolicSizes

# A scatter here is a dense masked reduction over (target, update) pairs: no
# atomics, vectorizes, and is exact (sums in update order per target).  Its cost is
# targets x updates, so only small scatters (and scans, searches) are compiled;
# larger ones fall back.
DENSE_SCATTER_LIMIT = 1 << 22
# ... or whatever the size, while the match grid is at most this many times the
# elements a direct scatter moves (the target and the updates): one update per
# row (nll_loss's backward, a one-hot) is an elementwise select over the target.
DENSE_WORK_FACTOR = 8


def dense_scatter_fits(grid: int, moved: int) -> bool:
    return grid <= DENSE_SCATTER_LIMIT or grid <= DENSE_WORK_FACTOR * moved


# What a larger accumulating scatter may hold: the types GPU atomics add (the CPU's
# loop adds any), the dialect's mlirc.scatter_add.
SCATTER_ADD_DTYPES = frozenset({torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32, torch.int64})


def scatter_add_dtype(dtype: torch.dtype) -> bool:
    return dtype in SCATTER_ADD_DTYPES


def node_meta(node: fx.Node) -> Any:
    meta = node.meta.get("val", node.meta.get("example_value"))
    if meta is None and node.op == "get_attr":
        return attr_value(node)
    return meta


# Nodes that compute sizes, not tensors: in a symbolic graph their values are the
# SymInts of their metadata, which the sized ops read (LoweringContext.shape).
SIZE_OPS = frozenset(
    {
        torch.ops.aten.sym_size.int,
        torch.ops.aten.sym_numel.default,
        torch.ops.aten.sym_stride.int,
        torch.ops.aten.sym_storage_offset.default,
        operator.add,
        operator.sub,
        operator.mul,
        operator.floordiv,
        operator.mod,
        operator.neg,
        torch.sym_max,
        torch.sym_min,
    }
)


def computes_a_size(node: fx.Node) -> bool:
    return node.target in SIZE_OPS and isinstance(node_meta(node), (torch.SymInt, int))


# What a size node (sym_size, arithmetic on sizes) stands for in a symbolic graph
SIZE_VALUES = (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool)


class LoweringContext:
    """What a lowering function sees: the node's values, metadata and helpers."""

    def __init__(self, values: dict[fx.Node, Any]) -> None:
        self.values = values
        self.checks: list[tuple[ir.Value, RuntimeCheck]] = []  # (0-d i1 "ok", what eager raises)
        self.sizes = SymbolicSizes()

    def shape(self, node: fx.Node) -> list[int | ir.Value]:
        """The node's (first) result shape for a sized op: its symbolic dims as `index` values."""
        return self.sizes.mixed(_first_meta(node).shape)

    def require(self, ok: ir.Value, check: RuntimeCheck) -> None:
        """Raise `check` at run time unless every element of the i1 tensor `ok` holds
        (see mlirc.dialects.runtime_checks)."""
        if shapes.shape_of(ok):
            ok = builders.reduce("reduce_all", ok, list(range(len(shapes.shape_of(ok)))), False)
        self.checks.append((ok, check))

    def element_count(self, arg: fx.Node, dims: Sequence[int]) -> int | torch.SymInt:
        """How many elements of the tensor `arg` lie along `dims` (count_of)."""
        return self.count_of(node_meta(arg).shape, dims)

    @staticmethod
    def count_of(shape: Sequence[int | torch.SymInt], dims: Sequence[int]) -> int | torch.SymInt:
        """How many elements of a tensor of torch's `shape` lie along `dims`: an int,
        or where a dim is symbolic, a SymInt (which may be 0 or 1 at run time where it
        is not a bare symbol: `s0 // 2`)."""
        count = math.prod(shape[d] for d in dims)
        static = shapes.static_dim(count) if isinstance(count, torch.SymInt) else count
        return count if static is None else static

    @staticmethod
    def at_least(count: int | torch.SymInt, low: int) -> bool:
        """Is `count` >= `low` at every size, as far as known without a guard?"""
        if isinstance(count, int):
            return count >= low
        return symbolic_shapes.statically_known_true(count >= low)

    def size_tensor(self, size: int | torch.SymInt, dtype: torch.dtype) -> ir.Value:
        """A size (an element count) as a 0-d tensor of `dtype`: a constant, or known per call."""
        elem = shapes.element_type(dtype)
        if isinstance(size, torch.SymInt):
            return builders.from_size(self.sizes.dim(size), elem)
        return builders.scalar_constant(float(size) if dtype.is_floating_point else size, elem)

    def value(self, arg: Any, like: ir.Value | None = None, elem: ir.Type | None = None) -> ir.Value:
        """An fx argument as an IR value; Python scalars become 0-d constants."""
        if isinstance(arg, fx.Node) and not isinstance(self.values[arg], SIZE_VALUES):
            return self.values[arg]
        if isinstance(arg, fx.Node) or isinstance(arg, (bool, int, float)):
            if elem is None:
                elem = shapes.elem_of(like) if like is not None else ir.F32Type.get()
            return self._scalar(arg, elem)
        raise VerificationError(f"cannot use {arg!r} as a tensor operand")

    def typed(self, arg: Any, dtype: torch.dtype) -> ir.Value:
        """An fx argument converted to `dtype` (the op's computation dtype)."""
        elem = shapes.element_type(dtype)
        if isinstance(arg, fx.Node) and not isinstance(self.values[arg], SIZE_VALUES):
            return builders.convert(self.values[arg], elem)
        return self._scalar(arg, elem)

    def _scalar(self, arg: Any, elem: ir.Type) -> ir.Value:
        """A Python scalar, or a size node's value (a SymInt: a size known per call), as
        a 0-d tensor of `elem`."""
        value = self.values[arg] if isinstance(arg, fx.Node) else arg
        if isinstance(value, torch.SymInt):
            return builders.from_size(self.sizes.dim(value), elem)
        if not isinstance(value, (bool, int, float)):
            raise UnsupportedOpError(str(arg), f"a symbolic {type(value).__name__} used as a tensor")
        return builders.scalar_constant(value, elem)


def _meta_of_arg(arg: Any) -> Any:
    return node_meta(arg) if isinstance(arg, fx.Node) else arg


def result_dtype(*args: Any) -> torch.dtype:
    """torch's type promotion over tensors and Python scalars."""
    metas = [_meta_of_arg(a) for a in args]
    tensors = [m for m in metas if isinstance(m, torch.Tensor)]
    if len(metas) == 1:
        return tensors[0].dtype
    return torch.result_type(*metas[:2]) if len(metas) == 2 else _promote_many(metas)


def _promote_many(metas: Sequence[Any]) -> torch.dtype:
    dtype = torch.result_type(metas[0], metas[1])
    for m in metas[2:]:
        dtype = torch.promote_types(
            dtype, m.dtype if isinstance(m, torch.Tensor) else torch.result_type(torch.empty((), dtype=dtype), m)
        )
    return dtype


def attr_value(node: fx.Node) -> Any:
    value = node.graph.owning_module
    for part in str(node.target).split("."):
        value = getattr(value, part)
    return value


Lowering = Callable[[LoweringContext, fx.Node], Any]

LOWERINGS: dict[Any, Lowering] = {}
CHECKS: dict[Any, Callable[[fx.Node], str | None]] = {}


def register(*ops: Any, check: Callable[[fx.Node], str | None] | None = None) -> Callable[[Lowering], Lowering]:
    def wrap(fn: Lowering) -> Lowering:
        for op in ops:
            LOWERINGS[op] = fn
            if check is not None:
                CHECKS[op] = check
        return fn

    return wrap


def all_checks(*checks: Callable[[fx.Node], str | None]) -> Callable[[fx.Node], str | None]:
    """A check that returns the first reason any of `checks` gives."""

    def check(node: fx.Node) -> str | None:
        return next((reason for c in checks if (reason := c(node)) is not None), None)

    return check


def fill_values_fit(node: fx.Node) -> str | None:
    """Eager raises when a fill value (full, where, clamp, pad) overflows the result
    dtype; the node then runs eagerly, to raise it.  Arithmetic does not check (an
    int64 + 2**63 wraps, a float32 * 1e39 is inf), so this is only for fill values."""
    dtype = out_dtype(node)
    for value in [*node.args, *node.kwargs.values()]:
        if isinstance(value, (int, float)) and not shapes.scalar_fits(value, dtype):
            return f"the value {value!r} overflows {dtype} (eager raises)"
        if isinstance(value, fx.Node) and isinstance(node_meta(value), (torch.SymInt, torch.SymFloat)):
            # a size used as the fill value: whether it fits is known per call only (the
            # graph is then specialized per size, where it is a number)
            return "a fill value of symbolic size"
    return None


def _first_meta(node: fx.Node) -> torch.Tensor:
    meta = node_meta(node)
    return meta[0] if isinstance(meta, (tuple, list)) else meta


def out_dtype(node: fx.Node) -> torch.dtype:
    return _first_meta(node).dtype


def opmath_dtype(node: fx.Node) -> torch.dtype:
    """The dtype to accumulate in: float32 for half types (ATen's opmath), so that
    sums of many half values round once, at the end (see narrow_to_out)."""
    dtype = out_dtype(node)
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def narrow_to_out(value: ir.Value, node: fx.Node) -> ir.Value:
    return builders.convert(value, shapes.element_type(out_dtype(node)))


def out_shape(node: fx.Node) -> tuple[int | None, ...]:
    """The node's (first) result shape; None for a symbolic dim (see LoweringContext.shape)."""
    return tuple(shapes.static_dim(d) for d in _first_meta(node).shape)


def arg(node: fx.Node, index: int, name: str, default: Any = None) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)
