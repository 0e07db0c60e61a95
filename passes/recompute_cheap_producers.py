"""mlirc-recompute-cheap-producers: a cheap elementwise producer that several generics
read whole gets a copy for each reader, so that each copy fuses into its reader.

Upstream elementwise fusion (mlirc-fuse-elementwise) fuses a producer only into its
one reader; with two, the producer's result is written out whole and read back by
both.  A float32 variance on the CPU accumulates in float64, as eager does: the
input's float64 copy, read by the mean's sum and by the sum of squared deviations,
was a kernel of its own writing twice the input's bytes (a training batch norm's
largest kernel) for two kernels to read back.  Copied per reader, each sum converts
the elements it reads.

Taken: all-parallel generics with one result and a small body (COSTS, per target)
without gathers, read only as an input of linalg generics, each through a
permutation of all of the reader's loops: every element is computed once per
reader, as often as the reader would have read it back.  On the CPU the body is a
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

from mlirc.dialects.mlirc_dialect import target_of
from mlirc.passes.fuse_elementwise import fuse_elementwise
from mlirc.passes.ir_utils import nested_ops
from mlirc.passes.linalg_utils import all_parallel, elem_bytes, indexing_maps
from mlirc.passes.registry import register_pass

NAME = "mlirc-recompute-cheap-producers"
DIVISIONS = frozenset(
    {"arith.divf", "arith.remf", "arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi",
     "arith.ceildivsi"}
)  # fmt: skip
GATHERS = frozenset({"tensor.extract"})  # a copy per reader would gather again


@dataclass(frozen=True)
class Cost:
    """What a producer's body may hold to be computed again in each reader."""

    max_ops: int  # body ops, the yield included
    costly: frozenset[str]  # ops never recomputed
    transcendental: bool  # math.* ops


COSTS = {
    "cpu": Cost(max_ops=4, costly=DIVISIONS | GATHERS, transcendental=False),
    # Inductor's bound on the ops it inlines into each reader is 30 (realize_opcount_threshold)
    "cuda": Cost(max_ops=24, costly=GATHERS, transcendental=True),
}


def _cheap(producer: ir.Operation, cost: Cost) -> bool:
    if producer.name != "linalg.generic" or len(producer.results) != 1:
        return False
    if not all_parallel(producer):
        return False
    body = list(nested_ops(producer))
    if len(body) > cost.max_ops or any(
        op.name in cost.costly or (op.name.startswith("math.") and not cost.transcendental) or op.regions for op in body
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


def _readers(producer: ir.Operation) -> list[ir.Operation] | None:
    """The generics that read the producer's result, each once; None if anything
    else reads it, or reads it otherwise."""
    readers: list[ir.Operation] = []
    for use in producer.results[0].uses:
        reader = use.owner.operation
        if not _reads_each_element_once(reader, use.operand_number):
            return None
        if reader not in readers:
            readers.append(reader)
    return readers


@dataclass(frozen=True)
class RecomputeOptions:
    # On the bodies elementwise fusion made: the copies are fused into their readers
    # here, by mlirc-fuse-elementwise, where any were made (a second fusion run
    # over a module with nothing new to fuse still moves its reshapes around).
    fused: bool = False


@register_pass(
    NAME, "Copy a cheap elementwise producer for each generic that reads it, so each copy fuses", RecomputeOptions
)
def recompute_cheap_producers(module: ir.Operation, options: RecomputeOptions) -> None:
    cost = COSTS["cuda" if target_of(module) == "cuda" else "cpu"]
    copied = False
    for func_op in module.regions[0].blocks[0].operations:
        ops = list(nested_ops(func_op.operation))
        for producer in [op for op in ops if _cheap(op, cost)]:
            readers = _readers(producer)
            if readers is None or len(readers) < 2:
                continue
            readers.sort(key=ops.index)  # the first keeps the producer; each other its copy, just before it
            for reader in readers[1:]:
                copy = producer.clone(ir.InsertionPoint(reader))
                for i, value in enumerate(reader.operands):
                    if value == producer.results[0]:
                        reader.operands[i] = copy.results[0]
            copied = True
    if options.fused and copied:
        fuse_elementwise(module)
