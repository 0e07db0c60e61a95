"""mlirc-group-kernels: independent kernels the entry calls one after another
become one launch (horizontal fusion; Inductor's combo kernels).

An optimizer step is a few elementwise kernels per parameter, each reading and
writing only its own parameter's tensors: nothing fuses them vertically, and a BERT
step launched about 400 kernels of a few microseconds each, most of the step's time
on the host.  Here a run of such calls, none reading another's result, becomes a
call to a group function (`mlirc.group`, a kernel too): its body calls the members
in order and returns all their results; its arguments are the members' operands, each
once.  The GPU lowering (mlirc-gpu-lower-to-tt) makes one tt.func of it, each program
running one member's program; the host wrapper launches it once.  The CPU pipeline
does not group: there a group would be host code calling kernels, which
bufferization turns into temporaries and copies for its members' results.

Reductions join too, one per kernel: sums that read nothing of each other but run
over different rows (or rows too long to hold), which row fusion and
mlirc-gpu-sibling-reductions cannot make one kernel of.  A group's program runs one
member's tile, whatever its plan.

What joins a group: a call of a generated kernel (not a library call, not a scatter
updating its first operand in place, not a copy mlirc-bind-sizes made) of static
sizes whose linalg ops are generics, all-parallel but for at most one reduction (not
a row group's, nor a GEMM's: their launches are tuned, their warps many), and which
reads no result of the group it would join.  Ops between the members stay where they
are; the group is called where its last member was, so a run ends before the first
op that reads one of its results -- but for a reshape (a view: it moves after the
group call, and what reads it cannot join) -- as it does when the group's arguments
would exceed `max-arguments` (Triton's launch takes every buffer as a parameter;
Inductor's combo kernels stop at 250 too).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func

from mlirc.dialects.attributes import (
    GROUP_ATTR,
    IN_PLACE_ATTR,
    KERNEL_ATTR,
    LIBRARY_ATTR,
    ORIGIN_ATTR,
    ROWS_ATTR,
    TILE_ATTR,
)
from mlirc.passes.base.ir_utils import callee, entry_functions, erase_op, functions
from mlirc.passes.base.linalg_utils import RESHAPES
from mlirc.passes.base.registry import register_pass

NAME = "mlirc-group-kernels"
_BODY_OPS = frozenset(
    {"arith.constant", "tensor.expand_shape", "tensor.collapse_shape", "tensor.empty", "linalg.generic", "func.return"}
)


@dataclass(frozen=True)
class GroupKernelsOptions:
    max_arguments: int = 250  # buffers one group's launch takes (operands and results)


def _static(types: list[ir.Type]) -> bool:
    return all(isinstance(t, ir.RankedTensorType) and t.has_static_shape for t in types)


def groupable(kernel: func.FuncOp) -> bool:
    """A generated kernel of static sizes, elementwise or one reduction (see the
    module's docstring)."""
    attrs = kernel.attributes
    if any(a in attrs for a in (LIBRARY_ATTR, IN_PLACE_ATTR, ORIGIN_ATTR, GROUP_ATTR)) or KERNEL_ATTR not in attrs:
        return False
    if not len(kernel.regions[0].blocks):
        return False
    ftype = ir.FunctionType(kernel.attributes["function_type"].value)
    if not _static([*ftype.inputs, *ftype.results]) or not len(ftype.results):
        return False
    reductions = 0
    for op in kernel.entry_block.operations:
        op = op.operation
        if op.name not in _BODY_OPS:
            return False
        if op.name == "linalg.generic":
            iterators = ir.ArrayAttr(op.attributes["iterator_types"])
            reductions += any(not str(it).endswith("<parallel>") for it in iterators)
    # A reduction joins alone in its kernel: a row group (several reductions, its rows
    # looped in chunks by up to 32 warps) and a GEMM (pipelined tt.dot) keep their launches.
    return reductions == 0 or (reductions == 1 and not any(a in attrs for a in (ROWS_ATTR, TILE_ATTR)))


class _Run:
    """The calls of one group in the making, and what reads their results."""

    def __init__(self) -> None:
        self.calls: list[ir.Operation] = []
        self.views: list[ir.Operation] = []  # reshapes of results, moved after the group
        self.operands: dict[ir.Value, None] = {}
        self.produced: set[ir.Value] = set()

    def arguments_with(self, call: ir.Operation) -> int:
        operands = {**self.operands, **dict.fromkeys(call.operands)}
        return len(operands) + sum(len(c.results) for c in self.calls) + len(call.results)

    def add(self, call: ir.Operation) -> None:
        self.calls.append(call)
        self.operands.update(dict.fromkeys(call.operands))
        self.produced.update(call.results)

    def reads_result(self, op: ir.Operation) -> bool:
        return any(v in self.produced for v in op.operands)


def _runs(entry: func.FuncOp, kernels: dict[str, func.FuncOp], limit: int) -> list[_Run]:
    """The entry's groups: runs of groupable calls, each reading nothing the run made."""
    runs, run = [], _Run()
    for op in entry.entry_block.operations:
        op = op.operation
        member = op.name == "func.call" and callee(op) in kernels and groupable(kernels[callee(op)])
        if member and not run.reads_result(op) and run.arguments_with(op) <= limit:
            run.add(op)
        elif op.name in RESHAPES and run.reads_result(op):
            run.views.append(op)
            run.produced.update(op.results)
        elif run.reads_result(op) or member:
            runs.append(run)
            run = _Run()
            if member:
                run.add(op)
    runs.append(run)
    return [r for r in runs if len(r.calls) > 1]


def _unique_name(taken: dict[str, func.FuncOp], index: int) -> str:
    name = f"group_{index}"
    while name in taken:
        index += 1
        name = f"group_{index}"
    return name


def make_group(run: _Run, name: str, anchor: func.FuncOp) -> func.FuncOp:
    """A group function calling the run's kernels, called where the last of them was
    (the reshapes of their results after it)."""
    calls = run.calls
    inputs = list(dict.fromkeys(v for c in calls for v in c.operands))
    outputs = [r for c in calls for r in c.results]
    with ir.InsertionPoint(anchor), anchor.location:
        group = func.FuncOp(name, ([v.type for v in inputs], [v.type for v in outputs]))
    group.attributes[KERNEL_ATTR] = ir.UnitAttr.get()
    group.attributes[GROUP_ATTR] = ir.UnitAttr.get()
    block = group.add_entry_block()
    argument = dict(zip(inputs, block.arguments, strict=True))
    results = []
    with ir.InsertionPoint(block), anchor.location:
        for c in calls:
            inner = func.CallOp([r.type for r in c.results], c.attributes["callee"], [argument[v] for v in c.operands])
            results.extend(inner.results)
        func.ReturnOp(results)
    last = calls[-1]
    with ir.InsertionPoint(last), last.location:
        call = func.CallOp([v.type for v in outputs], ir.FlatSymbolRefAttr.get(name), inputs)
    for old, new in zip(outputs, call.results, strict=True):
        old.replace_all_uses_with(new)
    for c in reversed(calls):
        erase_op(c)
    previous = call
    for view in run.views:
        view.move_after(previous)
        previous = view
    return group


@register_pass(NAME, "Independent kernel calls -> one group kernel (one launch)", GroupKernelsOptions)
def group_kernels(module: ir.Operation, options: GroupKernelsOptions = GroupKernelsOptions()) -> None:
    top = module.regions[0].blocks[0]
    kernels = functions(top)
    count = 0
    for entry in entry_functions(top):
        for run in _runs(entry, kernels, options.max_arguments):
            name = _unique_name(kernels, count)
            kernels[name] = make_group(run, name, kernels[callee(run.calls[0])])
            count = int(name.rsplit("_", 1)[1]) + 1
