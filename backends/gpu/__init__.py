"""GPU backend: kernels module -> Triton TTIR (`tt` dialect) -> triton.compile -> cubin."""

# The stages the compile driver runs on a CUDA graph's module (mlirc.passes.pipelines,
# each dumped under MLIRC_DUMP_DIR and re-enterable with mlirc-opt).  The host wrapper
# reads the entry after the last; KERNEL_STAGE then runs on a copy and leaves each
# kernel's TTIR in a nested module, which triton.compile takes.
STAGES = ("linalg", "gpu-layout", "kernels", "gpu-fusion")
KERNEL_STAGE = "gpu"
