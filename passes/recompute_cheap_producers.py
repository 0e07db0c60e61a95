"""mlirc-recompute-cheap-producers: a cheap elementwise producer that several generics
read whole gets a copy for each reader, so that each copy fuses into its reader.

Upstream elementwise fusion (mlirc-fuse-elementwise) fuses a producer only into its
one reader; with two, the producer's result is written out whole and read back by
both.  A float32 variance on the CPU accumulates in float64, as eager does: the
input's float64 copy, read by the mean's sum and by the sum of squared deviations,
was a kernel of its own writing twice the input's bytes (a training batch norm's
largest kernel) for two kernels to read back.  Copied per reader, each sum converts
the elements it reads.

Taken: all-parallel generics with one result and a small body (a bound the backend sets: RecomputeOptions)
without gathers, read only as an input of linalg generics, each through a
permutation of all of the reader's loops: every element is computed once per
reader, as often as the reader would have read it back.  Reads may pass through
reshapes (copied with the producer), and a gather (tensor.extract in a generic's
body) is a reader too where mlirc-fuse-gathered-producers can compute the producer
at the gathered index: in the fused run its copy is inlined there before fusion's
CSE could merge it back (a copy that fuses into nothing is merged back).  GPT-2's
loss backward: the one-hot gradient, read by log-softmax's row sums and by the
label shift's padding, is no longer read back by the padding.  On the CPU the body is a
few ops of arithmetic without division or transcendental functions (kernels there
can be compute-bound: SLEEF's tanhf was most of an elementwise chain's time).  A
GPU kernel between GEMMs is memory-bound: there a GELU of a GEMM's result (erf and
all) read by a sum over pixels and by the elementwise op after it is computed in
both (as Inductor inlines pointwise work into each reader) instead of written out
whole and read back twice (ConvNeXt-V2's global response norm).  The pass runs
before elementwise fusion, on single ops, and again after it (`fused=1`), on the
fused bodies, then fusing its copies: a GELU is a fused body of seven ops, whose
last op alone reads two full tensors.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from mlirc.passes.base.ir_utils import nested_ops
from mlirc.passes.base.linalg_utils import RESHAPES, all_parallel, elem_bytes, indexing_maps
from mlirc.passes.base.registry import register_pass
from mlirc.passes.fuse_elementwise import fuse_elementwise
from mlirc.passes.fuse_gathered_producers import fuse_gathered_producers, inlinable_at_gathers, reshape_groups

NAME = "mlirc-recompute-cheap-producers"
# Fused rounds: fusing one round's copies can make a producer cheap that was not (a
# one-hot whose masks, read twice, fused into it only once copied).
MAX_ROUNDS = 4
DIVISIONS = frozenset(
    {"arith.divf", "arith.remf", "arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi",
     "arith.ceildivsi"}
)  # fmt: skip
GATHERS = frozenset({"tensor.extract"})  # a copy per reader would gather again


def _cheap(producer: ir.Operation, cost: RecomputeOptions) -> bool:
    if producer.name != "linalg.generic" or len(producer.results) != 1:
        return False
    if not all_parallel(producer):
        return False
    body = list(nested_ops(producer))
    costly = GATHERS if cost.recompute_divisions else DIVISIONS | GATHERS
    if len(body) > cost.recompute_max_ops or any(
        op.name in costly or (op.name.startswith("math.") and not cost.recompute_math) or op.regions for op in body
    ):
        return False
    return _bytes_read_per_element(producer) <= _element_bytes(producer.results[0].type)


def _element_bytes(tensor_type: ir.Type) -> int:
    return elem_bytes(ir.RankedTensorType(tensor_type).element_type)


def _bytes_read_per_element(producer: ir.Operation) -> int:
    """What a copy reads per element it computes, counting the inputs as large as
    its loops (a per-channel vector is read from cache): a copy in each reader pays
    only if it reads no more than the reader would have read back (a widening cast, a
    bias add; not a residual add of two activations)."""
    loops = indexing_maps(producer)[-1].n_dims
    total = 0
    for value in list(producer.operands)[: len(producer.operands) - 1]:
        if isinstance(value.type, ir.RankedTensorType) and ir.RankedTensorType(value.type).rank == loops:
            total += _element_bytes(value.type)
    return total


def _reads_each_element_once(reader: ir.Operation, operand: int) -> bool:
    """Does `reader` read its operand `operand` as an input, through a permutation of
    all of its loops?"""
    if reader.name != "linalg.generic" or operand >= len(reader.operands) - len(reader.results):
        return False
    amap = indexing_maps(reader)[operand]
    return amap.is_permutation


@dataclass(frozen=True)
class _Read:
    """One read of the producer's result: operand `operand` of `owner` (a generic, or
    a tensor.extract in a generic's body), through `reshapes` (first to last)."""

    owner: ir.Operation
    operand: int
    reshapes: tuple[ir.Operation, ...]

    @property
    def reader(self) -> ir.Operation:
        """The generic that reads: the copy goes just before it."""
        return self.owner if self.owner.name == "linalg.generic" else self.owner.parent


def _reads(value: ir.Value, gatherable: bool, reshapes: tuple[ir.Operation, ...] = ()) -> list[_Read] | None:
    """Every read of `value`, through reshapes with static inner sizes: by generics,
    each element once, or, where `gatherable` (mlirc-fuse-gathered-producers can
    compute the producer at an index), by gathers (extracts in a generic's body);
    None if anything else reads it."""
    reads: list[_Read] = []
    for use in value.uses:
        owner = use.owner.operation
        if owner.name in RESHAPES and reshape_groups(owner) is not None:
            inner = _reads(owner.results[0], gatherable, (*reshapes, owner))
            if inner is None:
                return None
            reads += inner
        elif _reads_each_element_once(owner, use.operand_number) or (
            owner.name in GATHERS and owner.parent is not None and owner.parent.name == "linalg.generic" and gatherable
        ):
            reads.append(_Read(owner, use.operand_number, reshapes))
        else:
            return None
    return reads


def _by_reader(reads: list[_Read], order: list[ir.Operation]) -> list[list[_Read]]:
    """The reads grouped by the generic that makes them, in program order."""
    groups: list[tuple[ir.Operation, list[_Read]]] = []
    for read in reads:
        group = next((g for reader, g in groups if reader == read.reader), None)
        if group is None:
            groups.append((read.reader, group := []))
        group.append(read)
    groups.sort(key=lambda g: order.index(g[0]))
    return [g for _, g in groups]


def _give_copy(producer: ir.Operation, group: list[_Read]) -> None:
    """A copy of the producer (and of the reshapes between) just before the group's
    reader, read in place of the producer by every read of the group."""
    at = ir.InsertionPoint(group[0].reader)
    copy = producer.clone(at)
    copied: list[tuple[ir.Operation, ir.Value]] = []  # reshape -> its copy's result, shared within the group
    for read in group:
        value = copy.results[0]
        for reshape in read.reshapes:
            known = next((v for r, v in copied if r == reshape), None)
            if known is None:
                clone = reshape.clone(at)
                clone.operands[0] = value
                known = clone.results[0]
                copied.append((reshape, known))
            value = known
        read.owner.operands[read.operand] = value


@dataclass(frozen=True)
class RecomputeOptions:
    # On the bodies elementwise fusion made: the copies are fused into their readers
    # here, by mlirc-fuse-elementwise, where any were made (a second fusion run
    # over a module with nothing new to fuse still moves its reshapes around).
    fused: bool = False
    # What a producer's body may hold to be computed again in each reader: its ops
    # (the yield included), divisions, math.* ops.  The defaults are the CPU's; a GPU
    # recomputes far more (Inductor inlines up to 30 ops into each reader:
    # realize_opcount_threshold).  Gathers are never recomputed.
    recompute_max_ops: int = 4
    recompute_divisions: bool = False
    recompute_math: bool = False


@register_pass(
    NAME, "Copy a cheap elementwise producer for each generic that reads it, so each copy fuses", RecomputeOptions
)
def recompute_cheap_producers(module: ir.Operation, options: RecomputeOptions) -> None:
    for _ in range(MAX_ROUNDS if options.fused else 1):
        before = _op_count(module)
        if not _copy_for_readers(module, options) or not options.fused:
            return
        # A gather's copy is computed at the index it reads before fusion's CSE could
        # merge it back into the producer; a copy that fuses nowhere (a sum over a
        # dim only linalg.index reads: upstream does not fuse it) is merged back.
        fuse_gathered_producers(module)
        fuse_elementwise(module)
        if _op_count(module) == before:  # every copy merged back: nothing new to look at
            return


def _copy_for_readers(module: ir.Operation, cost: RecomputeOptions) -> bool:
    """Give each reader but the first of every cheap producer its own copy; whether any was made."""
    copied = False
    for func_op in module.regions[0].blocks[0].operations:
        ops = list(nested_ops(func_op.operation))
        for producer in [op for op in ops if _cheap(op, cost)]:
            reads = _reads(producer.results[0], inlinable_at_gathers(producer))
            groups = _by_reader(reads, ops) if reads else []
            if len(groups) < 2:
                continue
            for group in groups[1:]:  # the first reader keeps the producer; each other its copy
                _give_copy(producer, group)
            copied = True
    return copied


def _op_count(module: ir.Operation) -> int:
    return sum(1 for _ in nested_ops(module))
