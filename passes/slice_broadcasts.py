"""mlirc-slice-broadcasts: a slice of a broadcast becomes a broadcast of a slice.

`x.expand(70000, 70000)[:10]` (a select too: a slice and a reshape, and the
chunks of a split sum: a slice and a reshape splitting a dim) asked the lowering for the whole 70000 x 70000
broadcast (19.6 GB) and then ten rows of it; eager makes neither.  Slicing the
broadcast's operand instead (a broadcast dim stays one element) leaves a broadcast
of the slice's size, which fusion folds into its readers' indexing maps.
"""

from __future__ import annotations

from mlir import ir

from mlirc.dialects import builders as b
from mlirc.dialects import shapes
from mlirc.passes.base.ir_utils import defer, erase_op, nested_ops, resume_deferred
from mlirc.passes.base.linalg_emit import reassociation
from mlirc.passes.base.registry import register_pass

NAME = "mlirc-slice-broadcasts"


def _broadcast_operand(op: ir.Operation) -> ir.Operation | None:
    """The broadcast `op` reads, if it reads one of static shape.  Which of its dims
    repeat, and how a reshape groups them, can change with the sizes (a derived `?`
    dim, s0 - 1, may be 1): a symbolic one and `op` wait for the sizes, as mlirc
    ops, and are rewritten when the stage runs again on static sizes."""
    owner = op.operands[0].owner
    if isinstance(owner, ir.Block) or owner.operation.name != "mlirc.broadcast":
        return None
    values = [owner.operation.operands[0], *op.operands, op.results[0]]
    if any(None in shapes.shape_of(v) for v in values if isinstance(v.type, ir.RankedTensorType)):
        defer(owner.operation, NAME)
        _defer_chain(op)
        return None
    return owner.operation


def _defer_chain(op: ir.Operation) -> None:
    """`op` and the slices and reshapes that read it: each rewrite exposes the next."""
    defer(op, NAME)
    for use in op.results[0].uses:
        if use.owner.name in ("mlirc.slice", "mlirc.reshape"):
            _defer_chain(use.owner)


def _slice_of_broadcast(op: ir.Operation) -> ir.Operation | None:
    return _broadcast_operand(op) if op.name == "mlirc.slice" else None


def _rewrite(op: ir.Operation, broadcast: ir.Operation) -> ir.Value:
    x = broadcast.operands[0]
    in_shape, out_shape = shapes.shape_of(x), shapes.shape_of(op.results[0])
    starts, steps = (
        list(ir.DenseI64ArrayAttr(op.attributes["starts"])),
        list(ir.DenseI64ArrayAttr(op.attributes["steps"])),
    )
    lead = len(out_shape) - len(in_shape)
    new_starts, new_steps, new_shape = [], [], []
    for d, size in enumerate(in_shape):
        if size == 1:  # broadcast (or a unit dim): its one element
            new_starts.append(0)
            new_steps.append(1)
            new_shape.append(1)
        else:
            new_starts.append(starts[lead + d])
            new_steps.append(steps[lead + d])
            new_shape.append(out_shape[lead + d])
    sliced = b.create(
        "slice", [x], shapes.tensor_type(new_shape, shapes.elem_of(x)), starts=new_starts, steps=new_steps
    )
    return b.broadcast(sliced, out_shape)


def _reshape_groups(op: ir.Operation) -> list[tuple[list[int], list[int]]] | None:
    """The reshape as (broadcast-result dims, result dims) groups of equal products."""
    before, after = list(shapes.shape_of(op.operands[0])), list(shapes.shape_of(op.results[0]))
    if len(after) <= len(before):
        groups = reassociation(before, after)
        return None if groups is None else [(g, [k]) for k, g in enumerate(groups)]
    groups = reassociation(after, before)
    return None if groups is None else [([k], g) for k, g in enumerate(groups)]


def _reshape_of_broadcast(op: ir.Operation) -> ir.Operation | None:
    """A reshape of a broadcast whose every group of dims is all broadcast or all
    the operand's (a select's unit dim, a chunked broadcast dim)."""
    owner = _broadcast_operand(op) if op.name == "mlirc.reshape" else None
    if owner is None:
        return None
    groups = _reshape_groups(op)
    if groups is None:
        return None
    spread = _spread_dims(owner)
    for dims, _ in groups:
        kinds = {d in spread for d in dims if shapes.shape_of(op.operands[0])[d] != 1}
        if len(kinds) > 1:
            return None
    return owner


def _spread_dims(broadcast: ir.Operation) -> set[int]:
    """The broadcast result's dims that repeat its operand (absent or of size 1 there)."""
    full, in_shape = shapes.shape_of(broadcast.results[0]), shapes.shape_of(broadcast.operands[0])
    lead = len(full) - len(in_shape)
    return {d for d in range(len(full)) if d < lead or in_shape[d - lead] == 1}


def _reshape_through(op: ir.Operation, broadcast: ir.Operation) -> ir.Value:
    x, out_shape = broadcast.operands[0], list(shapes.shape_of(op.results[0]))
    spread = _spread_dims(broadcast)
    new_shape = list(out_shape)
    for dims, out_dims in _reshape_groups(op):  # type: ignore[union-attr]
        if all(d in spread for d in dims):
            for k in out_dims:
                new_shape[k] = 1
    return b.broadcast(b.reshape(x, new_shape), out_shape)


PATTERNS = ((_slice_of_broadcast, _rewrite), (_reshape_of_broadcast, _reshape_through))


@register_pass(NAME, "Slices of broadcasts become broadcasts of slices (nothing expanded is made)")
def slice_broadcasts(module: ir.Operation) -> None:
    resume_deferred(module, NAME)
    changed = True
    while changed:  # a select is a slice then a reshape: each step exposes the next
        changed = False
        for op in list(nested_ops(module)):
            for match, rewrite in PATTERNS:
                broadcast = match(op)
                if broadcast is None:
                    continue
                with ir.InsertionPoint(op), op.location:
                    value = rewrite(op, broadcast)
                op.results[0].replace_all_uses_with(value)
                erase_op(op)
                if not list(broadcast.results[0].uses):
                    erase_op(broadcast)
                changed = True
                break
            if changed:
                break
