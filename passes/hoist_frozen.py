"""mlirc-hoist-frozen: work that reads only frozen arguments moves into a prepare function.

In inference, a model's parameters and buffers are the same tensors call after call,
and the work done on them alone -- a convolution weight transposed to OHWI, a batch
norm folded into per-channel factors -- is the same too.  The entry's `mlirc.frozen`
(array<i64>: argument positions, set by the importer for parameters, buffers and
lifted constants) names them; every op of the entry that reads only frozen values
(kernel and library calls are pure tensor functions) moves into a new host function
`@<entry>_prepare`, marked `mlirc.prepare`, which takes the frozen arguments it needs
and returns the values the rest of the entry reads.  The entry takes those values as
trailing arguments instead, and `mlirc.prepared` (array<i64>) lists the arguments the
prepare function takes.  The host wrapper runs it on the first call and again
whenever one of those arguments changes (its version counter or its storage), so an
edited weight is never read stale.

What stays in the entry: ops that read no frozen value at all, values the entry
returns (a caller may modify a result; a cached one would change), and views
(reshapes, slices, permutes) at the boundary, which cost nothing per call and whose
cached form would not be dense.  A hoisted value larger than the frozen arguments it
comes from (a parameter broadcast to an activation's shape) stays too: caching it
would hold memory for nothing.
"""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import func

from mlirc.dialects import layouts, shapes
from mlirc.dialects.attributes import (
    ARG_LAYOUTS_ATTR,
    ENTRY_ATTR,
    FROZEN_ATTR,
    LIBRARY_ATTR,
    PREPARE_ATTR,
    PREPARED_ATTR,
)
from mlirc.passes.base.ir_utils import callee, erase_op, functions
from mlirc.passes.base.registry import register_pass

VIEW_OPS = frozenset({"tensor.expand_shape", "tensor.collapse_shape", "tensor.extract_slice"})
HOISTABLE = VIEW_OPS | {"func.call"}
SMALL_ELEMENTS = 1 << 16  # below this a cached value's size does not matter


def elements(value: ir.Value) -> int:
    """A tensor's element count (-1 where a dim is `?`)."""
    if not isinstance(value.type, ir.RankedTensorType):
        return 0
    shape = shapes.shape_of(value)
    return math.prod(shape) if all(isinstance(d, int) and d >= 0 for d in shape) else -1


def _is_view(op: ir.Operation, kernels: dict[str, func.FuncOp]) -> bool:
    if op.name in VIEW_OPS:
        return True
    kernel = kernels.get(callee(op)) if op.name == "func.call" else None
    return (
        kernel is not None
        and LIBRARY_ATTR in kernel.attributes
        and (ir.StringAttr(kernel.attributes[LIBRARY_ATTR]).value == "permute")
    )


def _hoisted_ops(entry: func.FuncOp, frozen: set, kernels: dict[str, func.FuncOp]) -> list[ir.Operation]:
    """The entry's ops that read only frozen values, less those that must stay."""
    ops = [op.operation for op in entry.entry_block.operations]
    returned = set(ops[-1].operands)
    frozen_values = set(frozen)
    source_elements = {v: elements(v) for v in frozen}  # frozen argument elements behind a value
    hoisted = []
    for op in ops[:-1]:
        if op.name not in HOISTABLE or not len(op.operands) or any(v not in frozen_values for v in op.operands):
            continue
        if op.name == "func.call" and callee(op) not in kernels:
            continue
        sources = sum(source_elements[v] for v in dict.fromkeys(op.operands))
        too_big = any(elements(r) < 0 or elements(r) > max(sources, SMALL_ELEMENTS) for r in op.results)
        if too_big or any(r in returned for r in op.results):
            continue
        hoisted.append(op)
        for r in op.results:
            frozen_values.add(r)
            source_elements[r] = sources
    return _without_boundary_views(hoisted, kernels)


def _without_boundary_views(hoisted: list[ir.Operation], kernels: dict[str, func.FuncOp]) -> list[ir.Operation]:
    """Drop views whose results the entry reads, until none is left at the boundary."""
    kept = list(hoisted)
    while True:
        members = set(kept)
        boundary = [
            op
            for op in kept
            if _is_view(op, kernels) and any(u.owner.operation not in members for r in op.results for u in r.uses)
        ]
        if not boundary:
            return kept
        kept = [op for op in kept if op not in boundary]


def _outline(entry: func.FuncOp, hoisted: list[ir.Operation], frozen_args: list) -> None:
    members = set(hoisted)
    inputs = [a for a in frozen_args if any(a in set(op.operands) for op in hoisted)]
    outputs = [r for op in hoisted for r in op.results if any(u.owner.operation not in members for u in r.uses)]
    if not outputs:
        return
    with ir.InsertionPoint(entry), entry.location:
        prepare = func.FuncOp(f"{entry.sym_name.value}_prepare", ([a.type for a in inputs], [v.type for v in outputs]))
    prepare.attributes[PREPARE_ATTR] = ir.UnitAttr.get()
    block = prepare.add_entry_block()
    mapping = dict(zip(inputs, block.arguments, strict=True))
    with ir.InsertionPoint(block):
        for op in hoisted:
            clone = op.clone()
            for i, v in enumerate(clone.operands):
                clone.operands[i] = mapping[v]
            mapping.update(zip(op.results, clone.results, strict=True))
        func.ReturnOp([mapping[v] for v in outputs])
    # The entry takes the prepared values as trailing arguments.
    entry_block = entry.entry_block
    for value in outputs:
        arg = entry_block.add_argument(value.type, value.location)
        value.replace_all_uses_with(arg)
    for op in reversed(hoisted):
        if all(not list(r.uses) for r in op.results):
            erase_op(op)
    function_type = ir.FunctionType(entry.attributes["function_type"].value)
    entry.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get([a.type for a in entry_block.arguments], function_type.results)
    )
    positions = [list(entry_block.arguments).index(a) for a in inputs]
    entry.attributes[PREPARED_ATTR] = ir.DenseI64ArrayAttr.get(positions)
    if ARG_LAYOUTS_ATTR in entry.attributes:  # the prepare function reads its arguments as the entry does
        arg_layouts = layouts.decode(entry.attributes, ARG_LAYOUTS_ATTR, len(args := list(entry_block.arguments)))
        prepare.attributes[ARG_LAYOUTS_ATTR] = layouts.encode([arg_layouts[i] for i in positions])
        entry.attributes[ARG_LAYOUTS_ATTR] = layouts.encode(arg_layouts + [None] * (len(args) - len(arg_layouts)))


@register_pass("mlirc-hoist-frozen", "Move work on frozen arguments (parameters) into a cached prepare function")
def hoist_frozen(module: ir.Operation) -> None:
    body = module.regions[0].blocks[0]
    kernels = functions(body)
    for entry in list(body.operations):
        if not isinstance(entry, func.FuncOp) or ENTRY_ATTR not in entry.attributes:
            continue
        if FROZEN_ATTR not in entry.attributes or PREPARED_ATTR in entry.attributes:
            continue
        args = list(entry.entry_block.arguments)
        frozen_args = [args[i] for i in ir.DenseI64ArrayAttr(entry.attributes[FROZEN_ATTR]) if i < len(args)]
        hoisted = _hoisted_ops(entry, set(frozen_args), kernels)
        if hoisted:
            _outline(entry, hoisted, frozen_args)
