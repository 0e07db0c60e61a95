"""mlirc-fuse-elementwise: fuse producer/consumer linalg ops on tensors.

Upstream's elementwise fusion does the work (including producers into reductions,
the core of softmax/layer-norm fusion, reshape propagation, and folding splat
constants into bodies); this file names the step and the clean-ups it needs.
Unit dims that reshape propagation leaves behind (keepdim reductions) are folded
away, so kernels get the plain loop nests the CPU schedules expect and a
reduction's keepdim reshape stays outside the kernel, a view on the host.

On `?` dims, a size read off a producer (`tensor.dim` of it, for a consumer's init)
is a second use that kept the producer alive beside its fused copy (an arange
reshaped for a mask); it is first read off the producer's own operands instead,
and off a call's operands (mlirc-resolve-call-dims), so that sizes known equal are
one value and the reshapes between producers and consumers fold as on static dims.
The upstream passes run inside this one (nested pass managers, in rounds): to see
each one's IR, run them by name (`func.func(linalg-fuse-elementwise-ops)`, ...).
"""

from __future__ import annotations

from mlir import ir, passmanager

from mlirc.passes.base.ir_utils import nested_ops
from mlirc.passes.base.registry import register_pass
from mlirc.passes.fold_symbolic_reshapes import fold_reshape_pairs
from mlirc.passes.resolve_call_dims import resolve_call_dims

NAME = "mlirc-fuse-elementwise"
_FUSE = "func.func(linalg-fuse-elementwise-ops),func.func(linalg-fold-unit-extent-dims),canonicalize,cse"
_RESOLVE = "func.func(resolve-ranked-shaped-type-result-dims)"
_MAX_ROUNDS = 8  # each round fuses across what the last one left


def _run(module: ir.Operation, pipeline: str) -> None:
    passmanager.PassManager.parse(f"builtin.module({pipeline})").run(module)


def _round(module: ir.Operation) -> None:
    _run(module, _RESOLVE)
    resolve_call_dims(module)  # what the first resolve left read off calls; what that reads, again
    _run(module, f"{_RESOLVE},{_FUSE}")


def _fingerprint(module: ir.Operation) -> tuple[int, int]:
    """(ops, `?` dims of their results): a round that changes neither did nothing."""
    ops = dynamic = 0
    for op in nested_ops(module):
        ops += 1
        for t in op.results.types:
            if isinstance(t, ir.RankedTensorType):
                dynamic += sum(ir.RankedTensorType(t).is_dynamic_dim(d) for d in range(ir.RankedTensorType(t).rank))
    return ops, dynamic


@register_pass(NAME, "Fuse elementwise linalg producers into their consumers (upstream fusion + cleanup)")
def fuse_elementwise(module: ir.Operation) -> None:
    if not _fingerprint(module)[1]:
        # Static shapes: upstream's rewrites reach their fixpoint in one run, and
        # there is no size to resolve.
        _run(module, f"{_RESOLVE},{_FUSE}")
        return
    # On `?` dims a round leaves what the next one fuses: reshape pairs (folded
    # here), and sizes read off the ops it moved a reshape through, which kept a
    # producer alive until resolved.
    _round(module)
    state = _fingerprint(module)
    for _ in range(_MAX_ROUNDS if state[1] else 0):
        fold_reshape_pairs(module)
        _round(module)
        state, before = _fingerprint(module), state
        if state == before:
            break
