"""mlirc-cpu-vectorize: tile and vectorize each kernel's linalg op for the host CPU.

The schedule is decided here in Python, one small rule per op kind, and applied
through a generated transform-dialect script run by the transform interpreter:
the innermost dim is tiled to the vector width; an elementwise loop's partial last
vector is peeled off, so full vectors load and store without masks and the tail is
one exact short vector (other ops vectorize with masks); outer dims are tiled to 1.
Ops whose bodies read tensors through `tensor.extract` (gathers, pads) vectorize
where every read walks the result's innermost dim contiguously (a padding or a
padded pool on channels-last: one vector load per read); other gathers stay scalar.

The rules live in passes/cpu/schedule/ (plans.py chooses, transform_script.py
writes the script).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from mlir import ir, passmanager

from mlirc.dialects.attributes import SCHEDULE_ATTR
from mlirc.errors import PipelineError
from mlirc.passes.base.ir_utils import erase_op, nested_ops
from mlirc.passes.base.registry import register_pass
from mlirc.passes.cpu.schedule.plans import schedule
from mlirc.passes.cpu.schedule.transform_script import transform_script

NOT_SCHEDULED = frozenset({"linalg.fill", "linalg.yield", "linalg.index"})  # fills fuse into their users


@dataclass(frozen=True)
class CpuVectorizeOptions:
    vector_bytes: int = 0  # the vector width kernels are scheduled for; 0: the host's
    vectorize: bool = True  # off: every op stays scalar (a debugging aid)

    def width(self) -> int:
        if self.vector_bytes not in (0, 16, 32, 64):
            raise PipelineError(
                "mlirc-cpu-vectorize", f"vector-bytes={self.vector_bytes}: 0 (the host's), 16, 32 or 64"
            )
        return self.vector_bytes or host_vector_bytes()


@functools.cache
def host_vector_bytes() -> int:
    import llvmlite.binding as llvm

    features = llvm.get_host_cpu_features()
    return 64 if features.get("avx512f", False) else 32


@register_pass(
    "mlirc-cpu-vectorize", "Tile kernels' linalg ops to the host vector width and vectorize them", CpuVectorizeOptions
)
def cpu_vectorize(module: ir.Operation, options: CpuVectorizeOptions) -> None:
    if not options.vectorize:
        return
    width = options.width()
    plans = []
    i64 = ir.IntegerType.get_signless(64, module.context)
    for op in _linalg_ops(module):
        plan = schedule(op, width)
        if plan is None:
            continue
        sid = len(plans)
        op.attributes[SCHEDULE_ATTR] = ir.IntegerAttr.get(i64, sid)
        plans.append((sid, plan))
    if not plans:
        return
    body = module.regions[0].blocks[0]
    with module.context, ir.Location.unknown():
        script = ir.Module.parse(transform_script(plans))
        transform_module = script.operation.clone(ir.InsertionPoint(body))
    try:
        passmanager.PassManager.parse("builtin.module(transform-interpreter)").run(module)
    finally:
        erase_op(transform_module)
    for op in _linalg_ops(module):
        if SCHEDULE_ATTR in op.attributes:
            del op.attributes[SCHEDULE_ATTR]
    _reassociate_horizontal_reductions(module)


def _reassociate_horizontal_reductions(module: ir.Operation) -> None:
    """Let LLVM reduce a vector's lanes as a tree, not one add after another.

    The partial sums already changed the order of the additions (as eager's
    vectorized reductions do); an ordered `llvm.vector.reduce.fadd` would spend 4
    cycles per lane on every row's final reduction.
    """
    reassoc = ir.Attribute.parse("#arith.fastmath<reassoc>")
    for op in nested_ops(module):
        if op.name == "vector.reduction":
            op.attributes["fastmath"] = reassoc


def _linalg_ops(module: ir.Operation) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def walk(op: ir.Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    o = inner.operation
                    if o.name.startswith("linalg.") and o.name not in NOT_SCHEDULED:
                        found.append(o)
                    else:
                        walk(o)

    walk(module)
    return found
