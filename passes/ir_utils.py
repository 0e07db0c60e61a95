"""Small IR helpers the passes share: walking nested ops and remapping operands."""

from __future__ import annotations

from collections.abc import Iterator

from mlir import ir


def nested_ops(op: ir.Operation) -> Iterator[ir.Operation]:
    """Every op inside `op`'s regions, outer before inner, in program order."""
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield inner.operation
                yield from nested_ops(inner.operation)


def remap_operands(op: ir.Operation, mapping: dict) -> None:
    """Point `op` and the ops nested in it at mapping[v] wherever they use a key v."""
    for target in [op, *nested_ops(op)]:
        for i, v in enumerate(target.operands):
            if v in mapping:
                target.operands[i] = mapping[v]
