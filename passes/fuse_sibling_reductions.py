"""mlirc-fuse-sibling-reductions: column sums over the same input become one
multi-result generic, which reads that input once (CPU; the GPU backend turns it off).

A batch norm's backward sums two things per channel over (N, H, W) -- the output
gradient, and the gradient times the centred input -- and its training forward the
input's deviations and their squares.  On channels-last activations these are
column sums (mlirc-split-column-sums cuts them into a partial sum per row block).
Each was a kernel of its own: the shared operand streamed through memory twice, and
a 16-thread step paid a fork and join per sum.  Inductor computes such sums in one
loop nest; on the GPU, row fusion groups them (mlirc-gpu-sibling-reductions).

Two generics fuse when both reduce, over the same loops (the same iterators, and a
shared input read through the same permutation, which fixes the loop ranges), write
every result through one map whose innermost dim is the shared input's innermost
(a column: mlirc-cpu-vectorize keeps the partial sums in vector registers across
the reduced loops, whatever their count), each result combines its accumulator with
one known combiner, and neither body gathers or reads a loop index.  Row reductions
(softmax, layer norm) are left to row fusion (mlirc-cpu-fuse-rows), which keeps a
row in L1 across more than two members.

The fused op takes the first one's place where the second one's operands are at
hand there: defined before it, or made before it by ops that only shape or fill
tensors (its init's fill, a collapse of a per-channel vector), which move up.
Otherwise it takes the second one's place if nothing reads the first one's results
before that (a batch of one's backward computes the centred input between the two
sums).  Nothing is recomputed, and what each body computes is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg

from mlirc.passes.base.ir_utils import clone_body, entry_functions, erase_op
from mlirc.passes.base.linalg_utils import combines_accumulators, dps_inputs, indexing_maps, written_map
from mlirc.passes.base.registry import register_pass

NAME = "mlirc-fuse-sibling-reductions"
# Ops that only make, shape or fill tensors: moved up to where the fused op goes.
MOVABLE = frozenset(
    {"arith.constant", "tensor.empty", "linalg.fill", "tensor.collapse_shape", "tensor.expand_shape"}
)  # fmt: skip
Pair = tuple[ir.Value, ir.AffineMap]


def _vectorizable_sums(op: ir.Operation) -> bool:
    """Does each result combine its own accumulator with a known combiner, with no
    loop index or gather read (what the column schedule vectorizes)?"""
    body = op.regions[0].blocks[0]
    if any(inner.name in ("linalg.index", "tensor.extract") for inner in body.operations):
        return False
    return combines_accumulators(op)


def _column_key(op: ir.Operation) -> tuple | None:
    """What two column sums must share to fuse (iterators, written map, innermost
    dim), or None for any other op."""
    if op.name != "linalg.generic":
        return None
    iterators = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
    written = written_map(op)
    if written is None or not any(it.endswith("<reduction>") for it in iterators) or not written.results:
        return None
    last = written.results[-1]
    if not isinstance(last, ir.AffineDimExpr) or not iterators[ir.AffineDimExpr(last).position].endswith("<parallel>"):
        return None
    if not _permuted_inputs(op, ir.AffineDimExpr(last).position) or not _vectorizable_sums(op):
        return None
    return (tuple(iterators), str(written))


def _permuted_inputs(op: ir.Operation, column: int) -> list[Pair]:
    """The inputs read through a permutation whose innermost dim is `column`."""
    found = []
    for value, amap in zip(dps_inputs(op), indexing_maps(op), strict=False):
        last = amap.results[-1] if amap.results else None
        if amap.is_permutation and isinstance(last, ir.AffineDimExpr) and ir.AffineDimExpr(last).position == column:
            found.append((value, amap))
    return found


def _available(value: ir.Value, before: int, order: dict, moves: set) -> bool:
    """Is `value` defined before position `before`, or made by movable ops from such
    values (collected in `moves`)?"""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return True
    op = owner.operation
    if op not in order or order[op] < before:
        return True
    if op.name not in MOVABLE:
        return False
    if all(_available(v, before, order, moves) for v in op.operands):
        moves.add(op)
        return True
    return False


def _shares_a_column_read(first: ir.Operation, second: ir.Operation) -> bool:
    column = ir.AffineDimExpr(written_map(first).results[-1]).position
    return bool(set(_permuted_inputs(first, column)) & set(_permuted_inputs(second, column)))


def _shared_init_not_made(init: ir.Value) -> bool:
    """An init both ops write that is not a fill or an empty tensor (which
    _fresh_init copies)."""
    maker = init.owner
    return isinstance(maker, ir.Block) or maker.name not in ("linalg.fill", "tensor.empty")


def _fresh_init(init: ir.Value) -> ir.Value:
    """A copy of the fill (or empty tensor) that makes `init`, so two results do not
    share one init."""
    maker = init.owner.operation
    clone = maker.clone()
    target = maker.operands[1].owner if maker.name == "linalg.fill" else None
    if target is not None and not isinstance(target, ir.Block) and target.name == "tensor.empty":
        empty = target.operation.clone()
        clone.operands[1] = empty.results[0]
        empty.move_before(clone)
    return clone.results[0]


def _fuse(first: ir.Operation, second: ir.Operation, at: ir.Operation) -> ir.Operation:
    """Replace both by one generic placed before `at` (either of them): the first's
    results, then the second's."""
    inputs: list[Pair] = []
    for pair in [*_pairs(first), *_pairs(second)]:
        if pair not in inputs:
            inputs.append(pair)
    outs = [*_inits(first), *_inits(second)]
    out_maps = indexing_maps(first)[len(dps_inputs(first)) :] + indexing_maps(second)[len(dps_inputs(second)) :]
    with ir.InsertionPoint(at), first.location:
        for i, value in enumerate(outs):
            if value in outs[:i]:
                outs[i] = _fresh_init(value)
        maps = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in [*(m for _, m in inputs), *out_maps]])
        fused = linalg.GenericOp(
            [*(r.type for r in first.results), *(r.type for r in second.results)],
            [v for v, _ in inputs],
            outs,
            maps,
            first.attributes["iterator_types"],
        )
    element = [ir.ShapedType(v.type).element_type for v in [*(v for v, _ in inputs), *outs]]
    block = fused.regions[0].blocks.append(*element)
    args = list(block.arguments)
    out_args = args[len(inputs) :]
    yielded = []
    for op, accumulators in ((first, out_args[: len(first.results)]), (second, out_args[len(first.results) :])):
        yielded += clone_body(op, block, [args[inputs.index(pair)] for pair in _pairs(op)] + accumulators)
    with ir.InsertionPoint(block):
        linalg.YieldOp(yielded)
    for old, new in zip([*first.results, *second.results], fused.results, strict=True):
        old.replace_all_uses_with(new)
    erase_op(second)
    erase_op(first)
    return fused.operation


def _op(owner: ir.Operation | ir.OpView) -> ir.Operation:
    return owner.operation if hasattr(owner, "operation") else owner


def _pairs(op: ir.Operation) -> list[Pair]:
    return list(zip(dps_inputs(op), indexing_maps(op), strict=False))


def _inits(op: ir.Operation) -> list[ir.Value]:
    return list(op.operands)[len(dps_inputs(op)) :]


def _fuse_pair(first: ir.Operation, second: ir.Operation, order: dict) -> ir.Operation | None:
    """The two fused in the first one's place or the second's (the module docstring
    says when), or None where neither may hold them."""
    if not _shares_a_column_read(first, second):
        return None
    if any(_shared_init_not_made(v) for v in _inits(second) if v in _inits(first)):
        return None
    moves: set = set()
    if all(_available(v, order[first], order, moves) for v in second.operands):
        for op in sorted(moves, key=order.get):
            op.move_before(first)
        return _fuse(first, second, first)
    if all(order.get(_op(use.owner), -1) > order[second] for r in first.results for use in r.uses):
        return _fuse(first, second, second)
    return None


def _fuse_siblings(block: ir.Block) -> None:
    """Fuse sibling pairs in `block`, front to back; a fused op looks for a third."""
    keys: dict = {}  # each op's _column_key, kept across fusions
    start = 0
    while True:
        ops = [op.operation for op in block.operations]
        order = {op: i for i, op in enumerate(ops)}
        by_key: dict = {}
        for op in ops:
            if op not in keys:
                keys[op] = _column_key(op)
            if keys[op] is not None:
                by_key.setdefault(keys[op], []).append(op)
        fused = None
        for first in ops[start:]:
            key = keys[first]
            for second in by_key.get(key, []) if key is not None else []:
                if order[second] <= order[first]:
                    continue
                # dropped before the fusion erases them (an erased op cannot be hashed)
                del keys[first], keys[second]
                fused = _fuse_pair(first, second, order)
                if fused is not None:
                    keys[fused] = key
                    break
                keys[first] = keys[second] = key
            if fused is not None:
                break
        if fused is None:
            return
        start = [op.operation for op in block.operations].index(fused)


@dataclass(frozen=True)
class FuseSiblingReductionsOptions:
    # off on the GPU, whose row fusion groups such sums (mlirc-gpu-sibling-reductions)
    fuse_sibling_sums: bool = True


@register_pass(
    NAME,
    "Fuse column sums that read the same input into one multi-result generic (CPU)",
    FuseSiblingReductionsOptions,
)
def fuse_sibling_reductions(module: ir.Operation, options: FuseSiblingReductionsOptions) -> None:
    if not options.fuse_sibling_sums:
        return
    for entry in entry_functions(module.regions[0].blocks[0]):
        _fuse_siblings(entry.entry_block)
