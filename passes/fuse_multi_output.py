"""mlirc-fuse-multi-output: an elementwise producer that other ops read too fuses
into its elementwise consumer, as one generic that yields both results.

Upstream's elementwise fusion (mlirc-fuse-elementwise) fuses a producer only into
its one user: a value that is also returned or read again stays a kernel of its own,
and its consumer reads it back from memory.  An optimizer step is made of such
values -- Adam's new exp_avg and exp_avg_sq are returned (they update the state)
and read by the parameter's update -- so a step ran four kernels per parameter; a
training forward's saved activations are the same shape.  Here the consumer takes
the producer's body in and yields its result as an extra one: one pass over memory,
one launch.

Only where nothing is recomputed or reordered: both ops all-parallel over the same
loops, every result of both written, and the producer's result read, through one
map (the consumer reads the element it writes), and the producer's other reader the
graph's return (directly or through reshapes: a batch of one's unit dim is folded
away inside) -- the value goes to memory anyway.  That map is a permutation: the
identity, or channels-last's (mlirc-channels-last keeps a CNN's loops in NCHW order
and writes NHWC), where a training forward's ReLU is returned (saved) and read by
its mask for the backward (`x <= 0`): one pass, not a second kernel reading the
activation back.  A value that other kernels read stays as it is: row fusion
(mlirc-cpu-fuse-rows, mlirc-gpu-fuse-rows) groups a softmax's pieces better.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import linalg

from mlirc.passes.base import linalg_emit as le
from mlirc.passes.base.ir_utils import clone_body, entry_functions, erase_op
from mlirc.passes.base.linalg_utils import all_parallel, dps_inputs, indexing_maps, written_map
from mlirc.passes.base.registry import register_pass

NAME = "mlirc-fuse-multi-output"
RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape")


def _output_map(op: ir.Operation) -> ir.AffineMap | None:
    """The one permutation through which an all-parallel generic writes every result,
    where its body reads no output argument; None for any other op."""
    written = written_map(op)
    if written is None or not written.is_permutation or not all_parallel(op):
        return None
    outputs = list(op.regions[0].blocks[0].arguments)[len(op.operands) - len(op.results) :]
    return None if any(list(arg.uses) for arg in outputs) else written


def _loops(op: ir.Operation) -> list[int]:
    return list(ir.RankedTensorType(op.results[0].type).shape)


def _fusible_producer(consumer: ir.Operation, order: dict) -> ir.Operation | None:
    """A producer of `consumer`'s inputs to take in, or None."""
    maps = indexing_maps(consumer)
    written = _output_map(consumer)
    for value, amap in zip(dps_inputs(consumer), maps, strict=False):
        owner = value.owner
        if isinstance(owner, ir.Block) or amap != written:
            continue
        producer = owner.operation
        if producer not in order or _loops(producer) != _loops(consumer):
            continue
        produced = _output_map(producer)
        if produced is None or produced != written:
            continue
        reads = [i for i, v in enumerate(dps_inputs(consumer)) if v.owner == producer]
        if any(maps[i] != written for i in reads):
            continue
        users = [
            u.owner.operation if hasattr(u.owner, "operation") else u.owner for r in producer.results for u in r.uses
        ]
        others = [u for u in users if u != consumer]
        if not others:
            continue  # upstream's fusion takes a single user's producer
        if all(_returned(u) for u in others):
            return producer
    return None


def _returned(op: ir.Operation) -> bool:
    """The graph's return, or a reshape of the value that only the return reads (a
    batch of one: its unit dim folded away inside, restored for the result)."""
    if op.name == "func.return":
        return True
    if op.name not in RESHAPES:
        return False
    return all(_returned(use.owner) for use in op.results[0].uses)


def _fuse(producer: ir.Operation, consumer: ir.Operation) -> None:
    """Replace both by one generic at the consumer: the producer's results read by
    others, then the consumer's."""
    p_maps, c_maps = indexing_maps(producer), indexing_maps(consumer)
    kept = [r for r in producer.results if any(u.owner != consumer for u in r.uses)]
    inputs: list[tuple[ir.Value, ir.AffineMap]] = []
    for value, amap in [
        *zip(dps_inputs(producer), p_maps, strict=False),
        *zip(dps_inputs(consumer), c_maps, strict=False),
    ]:
        if value.owner != producer and (value, amap) not in inputs:
            inputs.append((value, amap))
    p_outs = list(producer.operands)[len(dps_inputs(producer)) :]
    c_outs = list(consumer.operands)[len(dps_inputs(consumer)) :]
    outs = [p_outs[list(producer.results).index(r)] for r in kept] + c_outs
    out_maps = [p_maps[-1]] * len(outs)
    with ir.InsertionPoint(consumer), consumer.location:
        for i, value in enumerate(outs):
            if value in outs[:i]:  # each result its own init (one empty tensor may init both)
                outs[i] = le.empty(le.dims_of(value), ir.RankedTensorType(value.type).element_type)
        maps = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in [*(m for _, m in inputs), *out_maps]])
        fused = linalg.GenericOp(
            [*(r.type for r in kept), *(r.type for r in consumer.results)],
            [v for v, _ in inputs],
            outs,
            maps,
            consumer.attributes["iterator_types"],
        )
    element = [ir.RankedTensorType(v.type).element_type for v, _ in inputs] + [
        ir.RankedTensorType(v.type).element_type for v in outs
    ]
    block = fused.regions[0].blocks.append(*element)
    args = list(block.arguments)
    produced = clone_body(producer, block, [args[inputs.index(pair)] for pair in _pairs(producer, p_maps)])
    c_args = []
    for value, amap in zip(dps_inputs(consumer), c_maps, strict=False):
        if value.owner == producer:
            c_args.append(produced[list(producer.results).index(value)])
        else:
            c_args.append(args[inputs.index((value, amap))])
    consumed = clone_body(consumer, block, c_args)
    with ir.InsertionPoint(block):
        linalg.YieldOp([produced[list(producer.results).index(r)] for r in kept] + consumed)
    # The producer's reshapes for the return stood before the consumer: after the fused op now.
    reshapes = [u.owner for r in kept for u in r.uses if u.owner.name in RESHAPES]
    for old, new in zip([*kept, *consumer.results], fused.results, strict=True):
        old.replace_all_uses_with(new)
    erase_op(consumer)
    erase_op(producer)
    after = fused.operation
    while reshapes:
        reshape = reshapes.pop(0)
        reshape.move_after(after)
        after = reshape
        reshapes += [u.owner for u in reshape.results[0].uses if u.owner.name in RESHAPES]


def _pairs(op: ir.Operation, maps: list[ir.AffineMap]) -> list[tuple[ir.Value, ir.AffineMap]]:
    return list(zip(dps_inputs(op), maps, strict=False))


@register_pass(NAME, "Fuse elementwise producers read by others too into their elementwise consumers (multi-result)")
def fuse_multi_output(module: ir.Operation) -> None:
    for entry in entry_functions(module.regions[0].blocks[0]):
        changed = True
        while changed:
            changed = False
            ops = [op.operation for op in entry.entry_block.operations]
            order = {op: i for i, op in enumerate(ops)}
            for consumer in ops:
                if _output_map(consumer) is None:
                    continue
                producer = _fusible_producer(consumer, order)
                if producer is not None:
                    _fuse(producer, consumer)
                    changed = True
                    break
