"""mlirc-cpu-vectorize: tile and vectorize each kernel's linalg op for the host CPU.

The schedule is decided here in Python, one small rule per op kind, and applied
through a generated transform-dialect script run by the transform interpreter:
the innermost dim is tiled to the vector width and vectorized with masks (so odd
sizes need no scalar remainder loop); outer dims are tiled to 1.  Ops whose bodies
read tensors through `tensor.extract` (gathers, pads) stay scalar for now.
"""

from __future__ import annotations

import functools

from mlir import ir, passmanager

from mlirc.config import config
from mlirc.dialects import shapes
from mlirc.passes.registry import register_pass

SCHEDULE_ATTR = "mlirc.schedule"
VECTORIZABLE = frozenset({"linalg.generic", "linalg.matmul", "linalg.batch_matmul", "linalg.copy"})


@functools.cache
def host_vector_bytes() -> int:
    import llvmlite.binding as llvm

    features = llvm.get_host_cpu_features()
    return 64 if features.get("avx512f", False) else config.vector_width_bytes


def _elem_bytes(elem: ir.Type) -> int:
    if isinstance(elem, ir.IntegerType):
        return max(ir.IntegerType(elem).width // 8, 1)
    return {ir.F16Type: 2, ir.BF16Type: 2, ir.F32Type: 4, ir.F64Type: 8}[type(ir.Type(elem).maybe_downcast())]


def _has_gather(op: ir.Operation) -> bool:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                if inner.operation.name == "tensor.extract" or _has_gather(inner.operation):
                    return True
    return False


def _loop_sizes(op: ir.Operation) -> list[int] | None:
    """Static iteration-space sizes of a linalg op (from its operands' shapes)."""
    if op.name == "linalg.matmul":
        m, k = shapes.shape_of(op.operands[0])
        return [m, shapes.shape_of(op.operands[1])[1], k]
    if op.name == "linalg.batch_matmul":
        bsz, m, k = shapes.shape_of(op.operands[0])
        return [bsz, m, shapes.shape_of(op.operands[1])[2], k]
    if op.name == "linalg.copy":
        return list(shapes.shape_of(op.results[0]))
    maps = ir.ArrayAttr(op.attributes["indexing_maps"])
    sizes: dict[int, int] = {}
    for value, attr in zip(op.operands, maps, strict=False):
        amap = ir.AffineMapAttr(attr).value
        for expr, size in zip(amap.results, shapes.shape_of(value), strict=False):
            if isinstance(expr, ir.AffineDimExpr):
                sizes[expr.position] = size
    count = ir.AffineMapAttr(maps[0]).value.n_dims
    return [sizes.get(d, 1) for d in range(count)]


def schedule(op: ir.Operation) -> tuple[list[int], list[int]] | None:
    """(tile sizes, vector sizes) for `op`, or None to leave it scalar."""
    if op.name not in VECTORIZABLE or _has_gather(op) or len(op.results) != 1:
        return None  # gathers and multi-result reductions (argmax) stay scalar
    if any(isinstance(shapes.elem_of(v), ir.BF16Type) for v in [*op.operands, *op.results]):
        return None  # LLVM 20's x86 masked store of bf16 vectors crashes at run time
    sizes = _loop_sizes(op)
    if not sizes or any(s is None or s == 0 for s in sizes):
        return None
    out_elem = shapes.elem_of(op.results[0])
    lanes = host_vector_bytes() // _elem_bytes(out_elem)
    if op.name == "linalg.matmul":
        return [8, 2 * lanes, 1], [8, 2 * lanes, 1]
    if op.name == "linalg.batch_matmul":
        return [1, 8, 2 * lanes, 1], [1, 8, 2 * lanes, 1]
    tiles = [1] * (len(sizes) - 1) + [lanes]
    return tiles, tiles


def _script(plans: list[tuple[int, list[int], list[int]]]) -> str:
    lines = [
        "module attributes {transform.with_named_sequence} {",
        "  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {",
    ]
    for sid, tiles, vectors in plans:
        loops = sum(1 for t in tiles if t)
        loop_types = ", ".join(["!transform.any_op"] * (loops + 1))
        lines += [
            f"    %op{sid} = transform.structured.match attributes{{{SCHEDULE_ATTR} = {sid} : i64}} in %root"
            " : (!transform.any_op) -> !transform.any_op",
            f"    %tiled{sid}, %loops{sid}:{loops} = transform.structured.tile_using_for %op{sid}"
            f" tile_sizes {tiles} : (!transform.any_op) -> ({loop_types})",
            f"    transform.structured.vectorize %tiled{sid} vector_sizes {vectors} : !transform.any_op",
        ]
    lines += [
        '    %funcs = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op',
        "    transform.apply_patterns to %funcs {",
        "      transform.apply_patterns.vector.lower_masked_transfers",
        "      transform.apply_patterns.vector.transfer_permutation_patterns",
        "      transform.apply_patterns.vector.reduction_to_contract",
        "      transform.apply_patterns.canonicalization",
        "    } : !transform.any_op",
        # Lower what the LLVM conversion cannot take as is (masked reductions, contractions);
        # no canonicalization here: with these patterns it can loop forever.
        "    transform.apply_patterns to %funcs {",
        "      transform.apply_patterns.vector.cast_away_vector_leading_one_dim",
        "      transform.apply_patterns.vector.lower_masks",
        '      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerreduction"',
        '      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"',
        "      transform.apply_patterns.vector.lower_outerproduct",
        "      transform.apply_patterns.vector.lower_transpose",
        "      transform.apply_patterns.vector.lower_shape_cast",
        "      transform.apply_patterns.vector.lower_broadcast",
        "    } : !transform.any_op",
        "    transform.yield",
        "  }",
        "}",
    ]
    return "\n".join(lines)


@register_pass("mlirc-cpu-vectorize", "Tile kernels' linalg ops to the host vector width and vectorize them")
def cpu_vectorize(module: ir.Operation) -> None:
    if not config.vectorize:
        return
    plans = []
    i64 = ir.IntegerType.get_signless(64, module.context)
    for op in _linalg_ops(module):
        plan = schedule(op)
        if plan is None:
            continue
        sid = len(plans)
        op.attributes[SCHEDULE_ATTR] = ir.IntegerAttr.get(i64, sid)
        plans.append((sid, *plan))
    if not plans:
        return
    body = module.regions[0].blocks[0]
    with module.context, ir.Location.unknown():
        script = ir.Module.parse(_script(plans))
        transform_module = script.operation.clone(ir.InsertionPoint(body))
    try:
        passmanager.PassManager.parse("builtin.module(transform-interpreter)").run(module)
    finally:
        transform_module.erase()
    for op in _linalg_ops(module):
        if SCHEDULE_ATTR in op.attributes:
            del op.attributes[SCHEDULE_ATTR]


def _linalg_ops(module: ir.Operation) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def walk(op: ir.Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    o = inner.operation
                    if o.name in VECTORIZABLE:
                        found.append(o)
                    else:
                        walk(o)

    walk(module)
    return found
