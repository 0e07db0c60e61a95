"""mlirc-fuse-elementwise: fuse producer/consumer linalg ops on tensors.

Upstream's elementwise fusion does the work (including producers into reductions,
the core of softmax/layer-norm fusion, reshape propagation, and folding splat
constants into bodies); this file names the step and the clean-ups it needs.
Unit dims that reshape propagation leaves behind (keepdim reductions) are folded
away, so kernels get the plain loop nests the CPU schedules expect and a
reduction's keepdim reshape stays outside the kernel, a view on the host.
"""

from __future__ import annotations

from mlirc.passes.registry import register_pipeline

register_pipeline(
    "mlirc-fuse-elementwise",
    "Fuse elementwise linalg producers into their consumers (upstream fusion + cleanup)",
    ["func.func(linalg-fuse-elementwise-ops)", "func.func(linalg-fold-unit-extent-dims)", "canonicalize", "cse"],
)
