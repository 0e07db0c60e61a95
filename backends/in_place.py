"""Which arguments a kernel may write its results over (Inductor's in-place buffers).

The host wrapper (backends/memory_plan.py) writes a result over an operand that
dies at the call, or over the argument whose new value it is (an optimizer's
parameter): only where every element of the argument is read before it is written,
and by nothing else.  That holds for a kernel that is one elementwise linalg.generic
reading the argument (possibly reshaped, which keeps the row-major order) at exactly
the element it writes -- through its results' own map, a permutation (channels-last
kernels loop in NCHW order over NHWC buffers) -- with the result's element type.  A
generic with several results (mlirc-fuse-multi-output) writes them all at that
element, so each may take over an argument of its own type.  A group's member
(mlirc-group-kernels) may, where no other member reads that argument: the members
run at once.  In a kernel of several generics run in order (a merged kernel,
mlirc-cpu-merge-small-kernels) one may take over an argument that only earlier ones
read, where its init is a tensor.empty of its own.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import func

from mlirc.dialects.attributes import GROUP_ATTR
from mlirc.passes.base.ir_utils import callee, functions
from mlirc.passes.base.linalg_utils import RESHAPES, all_parallel, dps_inputs, indexing_maps, through_reshapes

_ALLOWED = frozenset(
    {"arith.constant", "tensor.expand_shape", "tensor.collapse_shape", "tensor.empty", "linalg.fill", "linalg.generic",
     "func.return"}
)  # fmt: skip


def in_place_operands(kernel: func.FuncOp) -> dict[int, list[int]]:
    """{kernel result index: the argument indices it may overwrite}."""
    if not len(kernel.regions[0].blocks):  # a declaration
        return {}
    if GROUP_ATTR in kernel.attributes:
        return _group_in_place(kernel)
    body = [op.operation for op in kernel.entry_block.operations]
    if any(op.name not in _ALLOWED for op in body):
        return {}
    args = list(kernel.entry_block.arguments)
    found: dict[int, list[int]] = {}
    for k, returned in enumerate(body[-1].operands):
        result = through_reshapes(returned)
        writer = None if isinstance(result.owner, ir.Block) else result.owner.operation
        if writer is None or writer.name != "linalg.generic":
            continue
        readable = _readable(writer, args, set(body[: body.index(writer)]))
        matches = sorted({i for i, t in readable if t == result.type})
        if matches:
            found[k] = matches
    return found


def _readable(generic: ir.Operation, args: list, before: set) -> list[tuple[int, ir.Type]]:
    """The arguments `generic` may write its results over, with their types: those it
    reads at exactly the element it writes and that nothing after it reads (`before`:
    the ops that ran first, a merged kernel's earlier members,
    mlirc-cpu-merge-small-kernels).  Behind other ops its inits must be its own (_fresh)."""
    if not all_parallel(generic):
        return []
    maps = indexing_maps(generic)
    outputs = len(generic.results)
    out_map = maps[-1]
    if not out_map.is_permutation or any(m != out_map for m in maps[len(maps) - outputs :]):
        return []
    inits = list(generic.operands)[len(generic.operands) - outputs :]
    if before and not all(_fresh(v, generic) for v in inits):
        return []
    readable = []
    for operand, amap in zip(dps_inputs(generic), maps, strict=False):
        source = through_reshapes(operand)
        if source in args and amap == out_map and _read_in_place(source, generic, maps, out_map, before):
            readable.append((args.index(source), operand.type))
    return readable


def _fresh(init: ir.Value, generic: ir.Operation) -> bool:
    """Is `init` a tensor.empty that only `generic` writes?  One-shot bufferization
    puts a generic's result in its init's buffer: an empty shared with an earlier op
    (CSE merges equal ones) may hold that op's values -- written over the argument,
    before the generic has read it."""
    owner = init.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "tensor.empty":
        return False
    return all((u.owner.operation if hasattr(u.owner, "operation") else u.owner) == generic for u in init.uses)


def _read_in_place(value: ir.Value, generic: ir.Operation, maps: list, out_map: ir.AffineMap, before: set) -> bool:
    """Is every read of `value` (through reshapes) a generic operand at the element
    written, or by an op that ran before?  A read elsewhere -- a gather's
    tensor.extract in the body (a flip), a later op -- would see elements the kernel
    has already overwritten."""
    inputs = len(generic.operands) - len(generic.results)
    for use in value.uses:
        user = use.owner.operation if hasattr(use.owner, "operation") else use.owner
        if user.name in RESHAPES:
            if not _read_in_place(user.results[0], generic, maps, out_map, before):
                return False
        elif user in before:
            continue
        elif user != generic or use.operand_number >= inputs or maps[use.operand_number] != out_map:
            return False
    return True


def _group_in_place(group: func.FuncOp) -> dict[int, list[int]]:
    """Each member's answer in the group's numbering, less the arguments that another
    member reads too (it may run before or after the write, or during it)."""
    kernels = functions(group.operation.parent.regions[0].blocks[0])
    args = list(group.entry_block.arguments)
    ops = [op.operation for op in group.entry_block.operations]
    calls, returned = ops[:-1], list(ops[-1].operands)
    readers: dict[ir.Value, int] = {}
    for call in calls:
        for v in dict.fromkeys(call.operands):
            readers[v] = readers.get(v, 0) + 1
    found: dict[int, list[int]] = {}
    for call in calls:
        for j, indices in in_place_operands(kernels[callee(call)]).items():
            mine = sorted({args.index(call.operands[i]) for i in indices if readers[call.operands[i]] == 1})
            if mine:
                found[returned.index(call.results[j])] = mine
    return found
