"""mode="max-autotune" on CUDA: a region with GEMMs is compiled in each GEMM variant
(cuBLAS, or generated tt.dot kernels with fused epilogues in a few tile shapes),
each is timed on the GPU, and the fastest is kept.

The choice is cached on disk (`<cache>/autotune/<key>.json`), keyed by the region's
graph, its input shapes, the GPU and the torch/Triton versions, so a second process
compiles only the winner.  Timings are medians of `triton.testing.do_bench`
(CUDA events after warm-up) on random inputs of the region's shapes; integer
inputs are zeros, which is in range for any index they feed.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable

import torch
import torch.fx as fx

from mlirc.backends import disk_cache
from mlirc.frontend.lowerings.api import node_meta
from mlirc.passes.gpu.matmul import GpuMatmulOptions

log = logging.getLogger(__name__)

# (name, mlirc-gpu-matmul's options); the first is the default compile.
VARIANTS: list[tuple[str, GpuMatmulOptions]] = [
    ("cublas", GpuMatmulOptions(mode="extern")),
    ("tt.dot default tiles", GpuMatmulOptions(mode="generated")),
    ("tt.dot 128x128x64 w8 s4", GpuMatmulOptions(mode="generated", tile=(128, 128, 64, 8, 4))),
    ("tt.dot 64x128x64 w4 s4", GpuMatmulOptions(mode="generated", tile=(64, 128, 64, 4, 4))),
]


GEMM_OPS = ("aten.mm", "aten.bmm", "aten.addmm", "aten.baddbmm")


def has_gemm(gm: fx.GraphModule) -> bool:
    return any(n.op == "call_function" and str(n.target).startswith(GEMM_OPS) for n in gm.graph.nodes)


def example_inputs(gm: fx.GraphModule, device: torch.device) -> list[torch.Tensor]:
    inputs = []
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        meta = node_meta(node)
        if meta.dtype.is_floating_point:
            inputs.append(torch.randn(tuple(meta.shape), dtype=meta.dtype, device=device))
        else:
            inputs.append(torch.zeros(tuple(meta.shape), dtype=meta.dtype, device=device))
    return inputs


def cache_key(gm: fx.GraphModule, inputs: list[torch.Tensor], device: torch.device) -> str:
    import triton

    shapes = [(tuple(x.shape), str(x.dtype)) for x in inputs]
    text = "\n".join([gm.code, repr(shapes), torch.cuda.get_device_name(device), torch.__version__, triton.__version__])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _time_ms(call: Callable, inputs: list[torch.Tensor]) -> float:
    from triton.testing import do_bench

    return do_bench(lambda: call(*inputs), warmup=10, rep=50, return_mode="median")


def autotune_region(gm: fx.GraphModule, device: torch.device, compile_variant: Callable) -> object:
    """The fastest of VARIANTS for this region, compiled by `compile_variant(overrides)`
    (pass name -> options) for each variant."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily():  # compilers run under the tracer's fake mode; timing needs real tensors
        return _autotune(gm, device, compile_variant)


def _autotune(gm: fx.GraphModule, device: torch.device, compile_variant: Callable) -> object:
    inputs = example_inputs(gm, device)
    key = cache_key(gm, inputs, device)
    path = disk_cache.cache_dir() / "autotune" / f"{key}.json"
    names = [name for name, _ in VARIANTS]
    cached = disk_cache.read_json(path, key)
    chosen = cached.get("variant") if isinstance(cached, dict) else None
    if chosen in names:
        return compile_variant({"mlirc-gpu-matmul": VARIANTS[names.index(chosen)][1]})
    best, best_ms, timings = None, float("inf"), {}
    for name, options in VARIANTS:
        region = compile_variant({"mlirc-gpu-matmul": options})
        if name != names[0] and "@matmul_" not in region.stage_ir.get("gpu", ""):
            break  # no GEMM was generated: every variant compiles the same code
        timings[name] = _time_ms(region.call, inputs)
        if timings[name] < best_ms:
            best, best_ms, chosen = region, timings[name], name
    log.info("mlirc max-autotune: %s (ms: %s)", chosen, timings)
    disk_cache.write_json(path, key, {"variant": chosen, "ms": timings})
    return best
