"""The stages of mlirc as short named pipelines; each is runnable from mlirc-opt.

mlirc      --mlirc-stage-linalg-->  linalg   --mlirc-stage-kernels-->  kernels
linalg     --mlirc-stage-cpu-layout / mlirc-stage-gpu-layout-->  linalg, CNNs channels-last (per target)
kernels    --mlirc-stage-cpu-fusion-->  kernels, row groups fused into row loops (CPU)
kernels    --mlirc-stage-cpu-->     LLVM dialect (the kernels alone: the entry stays host-side)
LLVM dialect  --mlirc-opt --emit-llvm-->  LLVM IR (what llvmlite compiles)
kernels    --mlirc-stage-gpu-fusion-->  kernels, GEMMs planned and row groups fused (GPU)
kernels    --mlirc-stage-gpu-->     Triton TTIR (a nested module per kernel)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Importing a pass module registers it: every pass, shared, CPU and GPU.
import mlirc.passes.bind_sizes  # noqa: F401
import mlirc.passes.channels_last  # noqa: F401
import mlirc.passes.cpu.drop_host  # noqa: F401
import mlirc.passes.cpu.flatten_elementwise  # noqa: F401
import mlirc.passes.cpu.fuse_rows  # noqa: F401
import mlirc.passes.cpu.hoist_invariant_scalars  # noqa: F401
import mlirc.passes.cpu.isolate_frozen  # noqa: F401
import mlirc.passes.cpu.lower_scatters  # noqa: F401
import mlirc.passes.cpu.masked_reductions  # noqa: F401
import mlirc.passes.cpu.merge_small_kernels  # noqa: F401
import mlirc.passes.cpu.omp_dispatch  # noqa: F401
import mlirc.passes.cpu.parallelize  # noqa: F401
import mlirc.passes.cpu.reread_stored  # noqa: F401
import mlirc.passes.cpu.size_args  # noqa: F401
import mlirc.passes.cpu.skinny_matmul  # noqa: F401
import mlirc.passes.cpu.strided_copies  # noqa: F401
import mlirc.passes.cpu.vector_math  # noqa: F401
import mlirc.passes.cpu.vectorize  # noqa: F401
import mlirc.passes.cpu.widen_halves  # noqa: F401
import mlirc.passes.fold_broadcast_sums  # noqa: F401
import mlirc.passes.fold_slice_reads  # noqa: F401
import mlirc.passes.fold_symbolic_reshapes  # noqa: F401
import mlirc.passes.form_kernels  # noqa: F401
import mlirc.passes.fuse_elementwise  # noqa: F401
import mlirc.passes.fuse_gathered_producers  # noqa: F401
import mlirc.passes.fuse_multi_output  # noqa: F401
import mlirc.passes.fuse_sibling_reductions  # noqa: F401
import mlirc.passes.gpu.fuse_rows  # noqa: F401
import mlirc.passes.gpu.loop_order  # noqa: F401
import mlirc.passes.gpu.lower_to_tt  # noqa: F401
import mlirc.passes.gpu.matmul  # noqa: F401
import mlirc.passes.gpu.sibling_reductions  # noqa: F401
import mlirc.passes.group_kernels  # noqa: F401
import mlirc.passes.hoist_frozen  # noqa: F401
import mlirc.passes.lower_to_linalg  # noqa: F401
import mlirc.passes.outline_library_calls  # noqa: F401
import mlirc.passes.recompute_cheap_producers  # noqa: F401
import mlirc.passes.resolve_call_dims  # noqa: F401
import mlirc.passes.slice_broadcasts  # noqa: F401
import mlirc.passes.split_column_sums  # noqa: F401
import mlirc.passes.split_reductions  # noqa: F401
import mlirc.passes.split_sliced_generics  # noqa: F401
import mlirc.passes.split_transposes  # noqa: F401
import mlirc.passes.transpose_views  # noqa: F401
from mlirc.passes.base.registry import PASSES, expand, format_element, parse_element, register_pipeline

LINALG = [
    "mlirc-outline-library-calls", "mlirc-split-reductions", "mlirc-slice-broadcasts", "mlirc-lower-to-linalg",
    "mlirc-fold-slice-reads", "canonicalize", "cse",
    # after canonicalize: on `?` dims a view's collapse-then-expand is one expand only then
    "mlirc-split-sliced-generics", "canonicalize", "cse",
]  # fmt: skip
# CPU only, before fusion: the layout permutes and contractions they add fuse into their
# neighbours, half-precision ops compute in f32 while each is still its own generic, and
# work on parameters alone stays out of fusion (mlirc-hoist-frozen runs it once).
CPU_LAYOUT = [
    "mlirc-cpu-skinny-matmul", "mlirc-channels-last", "mlirc-cpu-widen-halves", "mlirc-split-column-sums",
    "mlirc-cpu-isolate-frozen", "canonicalize", "cse",
]  # fmt: skip
# GPU, before fusion: cuDNN's convolutions on channels-last activations, as the CPU's.
GPU_LAYOUT = ["mlirc-channels-last", "mlirc-split-column-sums", "canonicalize", "cse"]
KERNELS = [
    # twice: on single ops, then on the bodies fusion made (a GELU, seven ops in one)
    "mlirc-recompute-cheap-producers",
    "mlirc-fuse-elementwise",
    # a broadcast that fusion cannot put into a sum over its broadcast dims
    "mlirc-fold-broadcast-sums",
    # gathers' producers first: a splat read by a gather is inlined as a constant,
    # which may leave its reader cheap enough to recompute
    "mlirc-fuse-gathered-producers",
    "mlirc-recompute-cheap-producers{fused=1}",
    "mlirc-fuse-gathered-producers",
    "mlirc-fuse-multi-output",
    # CPU: column sums sharing an input (a batch norm's statistics), one pass over it
    "mlirc-fuse-sibling-reductions",
    # again, on what the passes since left: a gather made index-free leaves its input
    # read by nothing (a cross-entropy backward's one-hot scatter wrote a full i64
    # index tensor no kernel read), and a multi-output op a producer to fuse
    "mlirc-fuse-elementwise",
    "mlirc-form-kernels",
    "canonicalize",
    "cse",
    "symbol-dce",
    # a cast written transposed for a GEMM (autocast's weights) computes in order first
    "mlirc-split-transposes",
    "mlirc-transpose-views",
]
# Host-side: it regroups the entry's calls, so it runs before the kernels are split off;
# work on parameters alone moves out first, so that no row group mixes it with the rest.
# Then runs of small kernels (a batch norm's statistics, an optimizer's biases) become
# one kernel each: a host call apiece cost more than their work.
CPU_FUSION = ["mlirc-hoist-frozen", "mlirc-cpu-fuse-rows", "mlirc-cpu-merge-small-kernels", "canonicalize", "cse"]
CPU_BUFFERIZE = [
    # A row loop's last member writes straight into the output's row, not a temporary.
    "eliminate-empty-tensors",
    "one-shot-bufferize{bufferize-function-boundaries=1 function-boundary-type-conversion=identity-layout-map}",
    "canonicalize",
    "cse",
    "canonicalize",
    "buffer-results-to-out-params{hoist-static-allocs=1 hoist-dynamic-allocs=1 modify-public-functions=1}",
    "canonicalize",
    # Scratch buffers inside kernels (a split reduction's partial block): out of the
    # loops, onto the stack when small, and freed when not -- bufferization frees nothing.
    "func.func(buffer-loop-hoisting)",
    # Row loops' intermediates (a row each, hoisted out of the loop) go on the stack
    # too: per call, so each thread of a split loop has its own.
    "func.func(promote-buffers-to-stack{max-alloc-size-in-bytes=65536})",
    "buffer-deallocation-pipeline",
    # Kernels of `?` sizes: pointers and sizes (the bare-pointer convention)
    "mlirc-cpu-size-args",
    "canonicalize",
    # a merged kernel's loop re-reads the values the serial code stored for it
    "mlirc-cpu-reread-stored",
    "mlirc-cpu-parallelize",
]
CPU_TO_LLVM = [
    # A copy between buffers that are not contiguous would call MLIR's runtime library.
    "mlirc-cpu-strided-copies",
    "convert-linalg-to-loops",
    "convert-vector-to-scf{full-unroll=1}",
    "lower-affine",
    "convert-scf-to-cf",
    "expand-strided-metadata",
    "lower-affine",
    # Half-type math in float32: LLVM's x86 bf16/f16 exp, tanh, ... would be calls
    # to runtime helpers that the JIT cannot resolve.
    "func.func(math-extend-to-supported-types)",
    # Not tanh, sinh, atanh: their expansions (1 - exp(-2x), ...) cancel to 0 for tiny
    # x; scalar ones go to libm below, vector ones never get here (cpu-vector-math).
    # Every other expansion but fma's and powf's: the vector erf's Horner steps are fused
    # multiply-adds on purpose (as ATen's are), and x86 has them; powf's exp(y log x)
    # gives NaN for 0 ** 0 where libm's pow gives 1.
    # Not ceil: its expansion loses the sign of a zero (ceil(-0.5) is -0.0); LLVM's
    # intrinsic is one instruction.
    "math-expand-ops{ops=ctlz,cosh,tan,exp2,fpowi,round,roundeven,rsqrt}",
    "convert-math-to-funcs",
    # Not log1p as log(1 + x) (0 for tiny x): libm's, below (scalar expm1: cpu-vector-math).
    "convert-math-to-llvm{approximate-log1p=0}",
    # libm calls for what LLVM has no intrinsic for; it scalarizes vector math with
    # vector.extract/insert, so it runs before the vector conversion.
    "convert-math-to-libm",
    # x86 has no bf16 arithmetic and LLVM would call compiler-rt's __truncsfbf2 for
    # it: compute in f32 (rounding after each op, as eager does) and expand the casts.
    "arith-emulate-unsupported-floats{source-types=bf16 target-type=f32}",
    "arith-expand{include-bf16=true}",
    "convert-vector-to-llvm",
    "convert-arith-to-llvm",
    "convert-index-to-llvm",
    "finalize-memref-to-llvm",
    "convert-func-to-llvm{use-bare-ptr-memref-call-conv=1}",
    "convert-cf-to-llvm",
    "convert-ub-to-llvm",
    "reconcile-unrealized-casts",
    "mlirc-cpu-omp-dispatch",
]
# The kernels alone (the entry stays host-side), tiled and vectorized on tensors.
CPU_SCHEDULE = [
    "mlirc-cpu-drop-host",
    "mlirc-cpu-lower-scatters",
    "mlirc-cpu-flatten-elementwise",
    "mlirc-cpu-hoist-invariant-scalars",
    "mlirc-cpu-vectorize",
    "mlirc-cpu-masked-reductions",
    "mlirc-cpu-vector-math",
]
CPU = [*CPU_SCHEDULE, *CPU_BUFFERIZE, *CPU_TO_LLVM]
# Work on parameters alone (a convolution weight's OIHW -> OHWI transpose) moves out
# first, as on the CPU: its kernels run once, not per call.  Named ops (pooling,
# non-library contractions) become generics: the tt lowering tiles any generic,
# reading operands through their indexing maps.  Independent kernels (an optimizer
# step's, per parameter; sums that read nothing of each other) then share launches.
GPU_FUSION = [
    "mlirc-hoist-frozen", "mlirc-gpu-loop-order", "mlirc-gpu-matmul", "mlirc-gpu-sibling-reductions",
    "mlirc-gpu-fuse-rows",
    "func.func(linalg-generalize-named-ops)", "mlirc-group-kernels",
]  # fmt: skip
GPU = ["mlirc-gpu-lower-to-tt"]

# A symbolic graph's module is bound at each size after the last stage that compiles
# `?` dims (frontend/compile.py SymbolicRegion); then that stage runs again for what
# waited for static sizes: mlirc ops left deferred (a sum whose split depends on its
# length), slices whose sizes were operands (they fold into their readers' maps once
# the sizes are constants).  Its passes do nothing to what they have done already.
# Stage names: the driver runs them configured, with the compile's pass options.
# The stages that compile `?` dims, in pipeline order: a symbolic graph is bound after
# the last of them that ran.  Past linalg, nothing waited (frontend/compile.py goes on
# only then): no stage runs again.
SYMBOLIC_STAGES = ("linalg", "cpu-layout", "gpu-layout", "kernels")
AFTER_BINDING: dict[str, list[str]] = {"mlirc": [], "linalg": ["linalg"]} | {s: [] for s in SYMBOLIC_STAGES[1:]}

STAGES: dict[str, list[str]] = {
    "linalg": LINALG,
    "cpu-layout": CPU_LAYOUT,
    "gpu-layout": GPU_LAYOUT,
    "kernels": KERNELS,
    "cpu-fusion": CPU_FUSION,
    "cpu": CPU,
    "gpu-fusion": GPU_FUSION,
    "gpu": GPU,
}

register_pipeline("mlirc-stage-linalg", "Stage: mlirc dialect -> linalg on tensors", LINALG)
register_pipeline(
    "mlirc-stage-cpu-layout",
    "Stage: narrow linear layers generated, CNN activations channels-last, halves computed in f32,"
    " work on parameters alone kept out of fusion (CPU)",
    CPU_LAYOUT,
)
register_pipeline("mlirc-stage-gpu-layout", "Stage: CNN activations channels-last (GPU)", GPU_LAYOUT)
register_pipeline("mlirc-stage-kernels", "Stage: fusion and kernel formation", KERNELS)
register_pipeline("mlirc-stage-cpu-fusion", "Stage: CPU row fusion of a kernels module (entry included)", CPU_FUSION)
register_pipeline(
    "mlirc-stage-cpu-bufferize",
    "Stage: CPU schedule + bufferization of a kernels module (mlirc-stage-cpu up to the LLVM conversion)",
    [*CPU_SCHEDULE, *CPU_BUFFERIZE],
)
register_pipeline("mlirc-stage-cpu", "Stage: a kernels module -> LLVM dialect for the host CPU", CPU)
register_pipeline(
    "mlirc-stage-gpu-fusion", "Stage: GPU GEMM plans and row fusion of a kernels module (entry included)", GPU_FUSION
)
register_pipeline("mlirc-stage-gpu", "Stage: a gpu-fusion module -> Triton TTIR, one nested module per kernel", GPU)


def configured(stage: str, options: Mapping[str, Any]) -> str:
    """`mlirc-stage-<stage>` with the options (pass name -> options dataclass) that
    differ from the passes' defaults, as mlirc-opt would be given them:
    `mlirc-stage-cpu{vector-bytes=32}`.  Only passes of the stage contribute."""
    name = f"mlirc-stage-{stage}"
    in_stage = {parse_element(e)[0] for e in expand([name])}
    raw: dict[str, str] = {}
    for pass_name, value in options.items():
        if pass_name in in_stage and PASSES[pass_name].options is not None:
            raw.update(parse_element(format_element(pass_name, value))[1])
    return f"{name}{{{' '.join(f'{k}={v}' for k, v in raw.items())}}}" if raw else name
