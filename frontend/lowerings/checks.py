"""Run-time checks the lowerings add: eager's IndexError/RuntimeError for an index
out of range and for an integer division by zero (mlirc.dialects.runtime_checks
says how they reach the user).

A check costs a pass over the index (or divisor) tensor, not over the gathered
data, and is left out where the values are known to be in range: `value_range`
follows constants, iotas (arange), clamps and the integer arithmetic on them.
The exception type and message follow the op the user called: a decomposed
`nll_loss` gathers, but eager raises IndexError("Target ... is out of bounds").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.fx as fx
from mlir import ir

from mlirc.dialects import builders as b
from mlirc.dialects import shapes
from mlirc.dialects.runtime_checks import RuntimeCheck
from mlirc.frontend.lowerings.api import LoweringContext, node_meta, register

aten = torch.ops.aten


@dataclass(frozen=True)
class IndexRule:
    """How eager treats an index into a dim of size n: the exception and message
    for one outside [-n, n) (`wraps`) or [0, n)."""

    error: str
    message: str
    wraps: bool = False
    error_1d: str | None = None  # another type where the indexed tensor is 1-D
    error_empty: str | None = None  # another type where it is empty (and not 1-D)
    # Eager checks an index as its loop uses it: an op whose result is empty checks
    # nothing, unless it validates its indices up front.
    checks_up_front: bool = False
    error_empty_dim: str | None = None  # raised (whatever the result) for any index into a dim of size 0
    error_int: str | None = None  # another type where the indexed tensor is integer or bool
    # Nothing checked where a slice along the indexed dim holds no elements (another
    # dim is empty): eager's index_fill of a [0, 0] or [3, 0] tensor raises for no index.
    empty_slices_unchecked: bool = False

    def error_for(self, shape: Sequence[int], dim: int, floating: bool = True) -> str:
        if self.error_empty_dim and shape and not shape[dim]:
            return self.error_empty_dim
        if self.error_int and not floating:
            return self.error_int
        if self.error_empty and len(shape) > 1 and not math.prod(shape):
            return self.error_empty
        return self.error_1d if len(shape) <= 1 and self.error_1d else self.error


_BOUNDS = "index out of bounds for dimension {dim} with size {size}"
# Keyed by the name of the op the user called (the node's `original_aten` when a
# decomposition made it), each as eager raises it.
INDEX_RULES: dict[str, IndexRule] = {
    "index_select": IndexRule(
        "IndexError", "index out of range in self", error_empty="RuntimeError", checks_up_front=True
    ),
    # an empty table fails index_select's own check first
    "embedding": IndexRule("IndexError", "index out of range in self", error_empty_dim="RuntimeError"),
    "index_reduce": IndexRule("IndexError", "index out of range in self"),
    "gather": IndexRule("RuntimeError", _BOUNDS),
    "scatter": IndexRule("RuntimeError", _BOUNDS),
    "scatter_add": IndexRule("RuntimeError", _BOUNDS),
    "scatter_reduce": IndexRule("RuntimeError", _BOUNDS),
    "index_add": IndexRule("RuntimeError", _BOUNDS, error_1d="IndexError", error_int="IndexError"),
    "index_copy": IndexRule("IndexError", "index_copy_(): " + _BOUNDS),
    "index_fill": IndexRule(
        "IndexError", _BOUNDS, wraps=True, error_empty_dim="RuntimeError", empty_slices_unchecked=True
    ),
    "index": IndexRule("IndexError", _BOUNDS, wraps=True, error_empty_dim="IndexError"),
    "index_put": IndexRule("IndexError", _BOUNDS, wraps=True, error_empty_dim="IndexError"),
    "take": IndexRule("IndexError", "out of range: an index outside a tensor of {size} elements", wraps=True),
    "nll_loss_forward": IndexRule("IndexError", "Target out of bounds (a class index outside [0, {size}))"),
    "nll_loss2d_forward": IndexRule("IndexError", "Target out of bounds (a class index outside [0, {size}))"),
    "searchsorted": IndexRule("RuntimeError", "torch.searchsorted(): sorter index out of range"),
    "max_unpool2d": IndexRule("RuntimeError", "Found an invalid max index (outside [0, {size}))"),
    "max_unpool3d": IndexRule("RuntimeError", "Found an invalid max index (outside [0, {size}))"),
}
# The `_unsafe_*` ops promise in-range indices (their callers clamp or mask them), as
# in Inductor, which checks none of them.
UNCHECKED = frozenset(
    {"_unsafe_index", "_unsafe_masked_index", "_unsafe_index_put", "_unsafe_masked_index_put_accumulate"}
)


def _op_name(target: object) -> str:
    name = getattr(target, "__name__", str(target))
    return name.split(".")[0]


def user_op(node: fx.Node) -> str:
    """The op the user called: the decomposed one where a decomposition made `node`."""
    return _op_name(node.meta.get("original_aten") or node.target)


def check_index(lctx: LoweringContext, node: fx.Node, index: ir.Value, shape: Sequence[int], dim: int = 0) -> None:
    """Eager's error unless every element of the integer tensor `index` is a valid
    index into dim `dim` of a tensor of `shape`, by the rule of the op the user called."""
    op = user_op(node)
    if op in UNCHECKED or _op_name(node.target) in UNCHECKED:
        return
    rule = INDEX_RULES.get(op) or INDEX_RULES.get(_op_name(node.target)) or INDEX_RULES["index"]
    size = shape[dim] if shape else 1
    if rule.empty_slices_unchecked and any(s == 0 for i, s in enumerate(shape) if i != dim):
        return
    if not rule.checks_up_front and not (rule.error_empty_dim and size == 0) and not _result_elements(node):
        return  # nothing computed, nothing checked (eager's index_fill of an empty tensor)
    low = -size if rule.wraps else 0
    lo, hi = value_range(index)
    if low <= lo and hi < size:
        return
    elem = shapes.elem_of(index)
    ok = b.elementwise(
        "logical_and",
        b.elementwise("ge", index, b.scalar_constant(low, elem)),
        b.elementwise("lt", index, b.scalar_constant(size, elem)),
    )
    message = rule.message.format(dim=dim, size=size) + f" (mlirc: aten.{op}, an index outside [{low}, {size}))"
    floating = node_meta(node.args[0]).dtype.is_floating_point if isinstance(node.args[0], fx.Node) else True
    lctx.require(ok, RuntimeCheck(rule.error_for(shape, dim, floating), message))


def _result_elements(node: fx.Node) -> int:
    meta = node_meta(node)
    meta = meta[0] if isinstance(meta, (tuple, list)) else meta
    return meta.numel() if isinstance(meta, torch.Tensor) else 1


def check_nonzero_divisor(lctx: LoweringContext, node: fx.Node, divisor: ir.Value) -> None:
    """Eager's RuntimeError("ZeroDivisionError") for an integer division by zero --
    on the CPU: eager's CUDA kernels raise nothing (the hardware's quotient is
    returned), and neither does mlirc there."""
    if node_meta(node).device.type != "cpu":
        return
    lo, hi = value_range(divisor)
    if lo > 0 or hi < 0:
        return
    # only the divisors a result element uses: none where the result is empty
    divisor = b.broadcast(divisor, tuple(node_meta(node).shape))
    ok = b.elementwise("ne", divisor, b.scalar_constant(0, shapes.elem_of(divisor)))
    lctx.require(ok, RuntimeCheck("RuntimeError", f"ZeroDivisionError (mlirc: aten.{user_op(node)})"))


@register(aten._assert_async.msg, aten._assert_async.default)
def _assert_async(lctx: LoweringContext, node: fx.Node) -> None:
    """torch's own run-time assert (one_hot's class range, and the value checks our
    decompositions add, frontend/decompositions.py): eager's RuntimeError with its
    message unless the one element is nonzero."""
    value = lctx.value(node.args[0])
    ok = b.elementwise("ne", value, b.scalar_constant(0, shapes.elem_of(value)))
    message = node.args[1] if len(node.args) > 1 else "Expected Tensor with single nonzero value, but got zero"
    lctx.require(ok, RuntimeCheck("RuntimeError", message))


# ------------------------------------------------------------------ value ranges


def _constant_range(op: ir.Operation) -> tuple[int, int] | None:
    attr = ir.DenseElementsAttr(op.attributes["value"])
    if attr.is_splat:
        value = attr.get_splat_value()
        return (value.value, value.value) if isinstance(value, ir.IntegerAttr) else None
    if not isinstance(attr, ir.DenseIntElementsAttr) or not len(attr) or len(attr) > 65536:
        return None
    values = [int(attr[i]) for i in range(len(attr))]
    return min(values), max(values)


def _interval(op_name: str, a: tuple[int, int], c: tuple[int, int]) -> tuple[int, int] | None:
    if op_name == "add":
        return a[0] + c[0], a[1] + c[1]
    if op_name == "sub":
        return a[0] - c[1], a[1] - c[0]
    if op_name == "mul":
        products = [x * y for x in a for y in c]
        return min(products), max(products)
    if op_name == "maximum":
        return max(a[0], c[0]), max(a[1], c[1])
    if op_name == "minimum":
        return min(a[0], c[0]), min(a[1], c[1])
    if op_name == "remainder" and c[0] > 0:  # Python-style: the divisor's sign
        return 0, c[1] - 1
    return None


def _select_range(op: ir.Operation) -> tuple[int, int]:
    """A select is in the union of its arms' ranges -- or, where its condition
    compares the two arms (a clamp: x < low ? low : x), in their max's or min's."""
    cond, on_true, on_false = op.operands
    (lo1, hi1), (lo2, hi2) = value_range(on_true), value_range(on_false)
    owner = cond.owner
    if not isinstance(owner, ir.Block) and owner.operation.name in ("mlirc.lt", "mlirc.gt"):
        lhs, rhs = owner.operation.operands
        if (lhs, rhs) == (on_false, on_true):  # false < true ? true : false: the larger (smaller for gt)
            larger = owner.operation.name == "mlirc.lt"
            return (max(lo1, lo2), max(hi1, hi2)) if larger else (min(lo1, lo2), min(hi1, hi2))
    return min(lo1, lo2), max(hi1, hi2)


_PASS_THROUGH = frozenset({"broadcast", "reshape", "permute", "slice", "convert"})


def value_range(value: ir.Value) -> tuple[int, int]:
    """Bounds [lo, hi] on the values of an integer mlirc tensor: what the IR shows
    (constants, iotas, clamps and arithmetic on them), else its type's whole range."""
    elem = shapes.elem_of(value)
    width = ir.IntegerType(elem).width if isinstance(elem, ir.IntegerType) else 64
    whole = (0, 1) if width == 1 else (-(1 << (width - 1)), (1 << (width - 1)) - 1)
    owner = value.owner
    if isinstance(owner, ir.Block) or width == 1 or not isinstance(elem, ir.IntegerType):
        return whole
    op = owner.operation
    name = op.name.removeprefix("mlirc.")
    found: tuple[int, int] | None = None
    if name == "constant":
        found = _constant_range(op)
    elif name == "iota":
        found = 0, max(shapes.shape_of(value)[ir.IntegerAttr(op.attributes["dim"]).value] - 1, 0)
    elif name in _PASS_THROUGH and isinstance(shapes.elem_of(op.operands[0]), ir.IntegerType):
        found = value_range(op.operands[0])
    elif name == "select":
        found = _select_range(op)
    elif len(op.operands) == 2:
        found = _interval(name, value_range(op.operands[0]), value_range(op.operands[1]))
    if found is None or found[0] < whole[0] or found[1] > whole[1]:  # unknown, or it may wrap
        return whole
    return found
