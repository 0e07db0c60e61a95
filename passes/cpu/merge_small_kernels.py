"""mlirc-cpu-merge-small-kernels: runs of small kernel calls become one serial kernel.

On the CPU each kernel the entry calls is a call from the Python host wrapper: ~1.4 us
of ctypes and `data_ptr()` per call, and ~2.4 us per fresh intermediate buffer, on
top of the kernel's own time.  A training step is full of kernels far smaller than
that: a batch norm's statistics are a split sum's partial stages, a divide, the
running-stat updates and rsqrt (13 kernels per batch norm of a ResNet; Inductor makes
two), and an optimizer step updates every bias and norm weight in a kernel of its
own.  A ResNet training step made ~620 kernel calls, Inductor's ~40; on 16 cores,
where the kernels themselves take a few microseconds, the host's share is what
remained of the step.

Here a run of calls to small kernels -- dependent or not -- is inlined into one
kernel (ir_utils.fuse_calls), called where the run's last member was: the members
run one after another in their order, in one call, and what they pass each other
becomes the merged kernel's own temporaries (allocated inside it, 1-D ones on its
stack) instead of the host's buffers.  Small means a footprint (operands and
results) of at most `max-kib`: such a kernel runs on one thread anyway
(mlirc-cpu-parallelize splits only loops that move at least its `parallel_min_kib`,
128 by default), so merging loses no parallelism, and a member's intermediates stay
small.

What joins a run: a call of a generated kernel of static sizes that computes (not a
library call, an in-place scatter, a GPU group, a kernel compiled for every size, one
that only copies, or a contraction: _copies, _contracts).  Ops between members that
read no member's result stay where they are (the merged call moves after them, to
the last member's place); an op that reads one ends the run -- but a
reshape, which joins the run as a view inside the merged kernel, so that a member
may read another's result reshaped.  A run also ends before it would take more than
`max-arguments` buffers.

With `large` (MLIRC_MERGE_LARGE) larger kernels join runs too: one host call for a
batch norm's statistics, running-stat updates and normalization.  What a large member
writes, or reads of another member's, stays a result of the merged kernel -- a buffer
the host passes in -- so that mlirc-cpu-parallelize still splits the large members'
loops among threads (a buffer the kernel allocated itself, shared by two loops, keeps
it serial).  Off by default: on 2 cores a ResNet training step ran 22.15 against
22.55 ms with it (GPT-2, BERT level), but it is not yet measured on 16 cores in its
present form (merged batch norms ran slower there while their serial steps sat in one
parallel region between barriers, which mlirc-cpu-parallelize no longer builds).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func

from mlirc.dialects.attributes import FRESH_ATTR, GROUP_ATTR, IN_PLACE_ATTR, KERNEL_ATTR, LIBRARY_ATTR, ORIGIN_ATTR
from mlirc.passes.base.ir_utils import callee, entry_functions, erase_uncalled_kernels, functions, fuse_calls
from mlirc.passes.base.linalg_utils import RESHAPES, dps_inputs, elem_bytes, indexing_maps
from mlirc.passes.base.registry import register_pass

NAME = "mlirc-cpu-merge-small-kernels"
_NOT_MERGED = (LIBRARY_ATTR, IN_PLACE_ATTR, ORIGIN_ATTR, GROUP_ATTR)
_MOVES = frozenset({"linalg.copy", "linalg.transpose", "linalg.broadcast"})


@dataclass(frozen=True)
class CpuMergeSmallKernelsOptions:
    max_kib: int = 64  # a member's footprint (operands and results); -1: merge nothing
    max_arguments: int = 128  # buffers the merged kernel takes (operands and results)
    large: bool = False  # larger members join too, what they pass each other in the host's buffers


def _footprint(types: list[ir.Type]) -> int | None:
    """Bytes of tensors of static sizes, or None where one is not."""
    total = 0
    for t in types:
        if not isinstance(t, ir.RankedTensorType) or not t.has_static_shape:
            return None
        total += math.prod(t.shape) * elem_bytes(t.element_type)
    return total


def footprint_of(kernel: func.FuncOp) -> int | None:
    """Bytes a generated kernel of static sizes moves (operands and results), or None
    for a kernel that never joins a run."""
    attrs = kernel.attributes
    if KERNEL_ATTR not in attrs or any(a in attrs for a in _NOT_MERGED) or not len(kernel.regions[0].blocks):
        return None
    ftype = ir.FunctionType(attrs["function_type"].value)
    footprint = _footprint([*ftype.inputs, *ftype.results])
    if footprint is None or _copies(kernel) or _contracts(kernel):
        return None
    return footprint


def _contracts(kernel: func.FuncOp) -> bool:
    """Does the kernel hold a contraction (a reduction over a dim that two of its
    operands walk through different maps: a narrow GEMM from
    mlirc-cpu-skinny-matmul)?  Its schedule in mlirc-cpu-vectorize canonicalizes the
    whole function it sits in, which broke the next member's (linear_cross_entropy's
    OpInfo sample).  Sums of elementwise products (a batch norm's backward: the
    gradient times the centred input) read both operands at one element."""
    for op in kernel.entry_block.operations:
        op = op.operation
        if op.name != "linalg.generic":
            continue
        iterators = [str(it).endswith("<reduction>") for it in ir.ArrayAttr(op.attributes["iterator_types"])]
        reduced = {f"d{d}" for d, r in enumerate(iterators) if r}
        # the dims a map's results name, compound ones (a window's d0 + d2) included
        maps = indexing_maps(op)[: len(dps_inputs(op))]
        walkers = {str(m) for m in maps if reduced & set(re.findall(r"d\d+", str(m).split("->")[1]))}
        if len(walkers) > 1:
            return True
    return False


def _copies(kernel: func.FuncOp) -> bool:
    """Does the kernel only move values (a linalg.copy, or a generic yielding an input
    element as it is)?  Merged, canonicalization folds a copy of another member's result
    into that result, and the merged kernel returns one buffer twice (which
    buffer-results-to-out-params cannot take: MLIR crashed on a 0-D bool's copy)."""
    moves = []
    for op in kernel.entry_block.operations:
        op = op.operation
        if op.name in _MOVES:
            moves.append(True)
        elif op.name == "linalg.generic":
            body = list(op.regions[0].blocks[0].operations)
            moves.append(len(body) == 1 and isinstance(body[0].operands[0].owner, ir.Block))
        elif op.name.startswith("linalg."):
            moves.append(False)
    return all(moves)


class _Run:
    """The ops of one merged kernel in the making (calls and reshapes of their
    results, in program order) and the buffers it would take."""

    def __init__(self) -> None:
        self.ops: list[ir.Operation] = []
        self.produced: set[ir.Value] = set()
        self.operands: dict[ir.Value, None] = {}
        # what a large member writes or reads of another member's: the host's buffers
        self.kept: set[ir.Value] = set()

    def _written_by_a_member(self, value: ir.Value) -> ir.Value:
        """The member's result that `value` is, or is a view of (a reshape in the run)."""
        while value.owner.operation.name in RESHAPES and value.owner.operands[0] in self.produced:
            value = value.owner.operands[0]
        return value

    @property
    def calls(self) -> int:
        return sum(op.name == "func.call" for op in self.ops)

    def reads_result(self, op: ir.Operation) -> bool:
        return any(v in self.produced for v in op.operands)

    def buffers_with(self, op: ir.Operation) -> int:
        """Arguments and results, at most, were `op` to join."""
        operands = {**self.operands, **{v: None for v in op.operands if v not in self.produced}}
        return len(operands) + len(self.produced) + len(op.results)

    def add(self, op: ir.Operation, large: bool = False) -> None:
        if large:
            self.kept.update(op.results)
            self.kept.update(self._written_by_a_member(v) for v in op.operands if v in self.produced)
        self.ops.append(op)
        self.operands.update({v: None for v in op.operands if v not in self.produced})
        self.produced.update(op.results)


def _runs(entry: func.FuncOp, kernels: dict[str, func.FuncOp], options: CpuMergeSmallKernelsOptions) -> list[_Run]:
    runs, run = [], _Run()
    max_bytes = options.max_kib * 1024
    for op in entry.entry_block.operations:
        op = op.operation
        footprint = footprint_of(kernels[callee(op)]) if op.name == "func.call" and callee(op) in kernels else None
        member = footprint is not None and (options.large or footprint <= max_bytes)
        large = member and footprint > max_bytes
        view = op.name in RESHAPES and run.reads_result(op)
        if (member or view) and run.buffers_with(op) <= options.max_arguments:
            run.add(op, large)
        elif member or run.reads_result(op):
            runs.append(run)
            run = _Run()
            if member:
                run.add(op, large)
    runs.append(run)
    return [r for r in runs if r.calls > 1]


def _trim_views(run: _Run) -> list[ir.Operation]:
    """The run's ops without the reshapes after its last call (they stay views on
    the host, of the merged kernel's results)."""
    ops = list(run.ops)
    while ops[-1].name != "func.call":
        ops.pop()
    return ops


def _keep_empties_apart(kernel: func.FuncOp) -> None:
    """Each member's tensor.empty stays its own (FRESH_ATTR): CSE would otherwise give
    members of one shape one init, and bufferization one buffer, which may be a result
    written over an argument (backends/in_place.py) -- before a later member has read it."""
    i64 = ir.IntegerType.get_signless(64)
    for i, op in enumerate(op.operation for op in kernel.entry_block.operations):
        if op.name == "tensor.empty":
            op.attributes[FRESH_ATTR] = ir.IntegerAttr.get(i64, i)


def _unique_name(taken: dict[str, func.FuncOp], index: int) -> str:
    while f"merged_{index}" in taken:
        index += 1
    return f"merged_{index}"


@register_pass(
    NAME, "CPU: runs of small kernel calls -> one serial kernel (one host call)", CpuMergeSmallKernelsOptions
)
def cpu_merge_small_kernels(
    module: ir.Operation, options: CpuMergeSmallKernelsOptions = CpuMergeSmallKernelsOptions()
) -> None:
    if options.max_kib < 0:
        return
    top = module.regions[0].blocks[0]
    kernels = functions(top)
    count = 0
    for entry in entry_functions(top):
        for run in _runs(entry, kernels, options):
            name = _unique_name(kernels, count)
            kernels[name] = fuse_calls(_trim_views(run), kernels, name, run.kept)
            _keep_empties_apart(kernels[name])
            count = int(name.rsplit("_", 1)[1]) + 1
    erase_uncalled_kernels(top, kernels)
