"""mlirc-fuse-elementwise: fuse producer/consumer linalg ops on tensors.

Upstream's elementwise fusion does the work (including producers into reductions,
the core of softmax/layer-norm fusion, reshape propagation, and folding splat
constants into bodies); this file names the step and the clean-ups it needs.
Unit dims that reshape propagation leaves behind (keepdim reductions) are folded
away, so kernels get the plain loop nests the CPU schedules expect and a
reduction's keepdim reshape stays outside the kernel, a view on the host.

On `?` dims, a size read off a producer (`tensor.dim` of it, for a consumer's init)
is a second use that kept the producer alive beside its fused copy (an arange
reshaped for a mask); it is first read off the producer's own operands instead.
"""

from __future__ import annotations

from mlirc.passes.registry import register_pipeline

register_pipeline(
    "mlirc-fuse-elementwise",
    "Fuse elementwise linalg producers into their consumers (upstream fusion + cleanup)",
    [
        "func.func(resolve-ranked-shaped-type-result-dims)",
        "func.func(linalg-fuse-elementwise-ops)",
        "func.func(linalg-fold-unit-extent-dims)",
        "canonicalize",
        "cse",
    ],
)
