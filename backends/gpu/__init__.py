"""GPU backend: kernels module -> Triton TTIR (`tt` dialect) -> triton.compile -> cubin."""

# The stages the compile driver runs on a CUDA graph's module (mlirc.passes.pipelines,
# each dumped under MLIRC_DUMP_DIR and re-enterable with mlirc-opt); the last one
# leaves each kernel's TTIR in a nested module, which triton.compile takes.
STAGES = ("linalg", "kernels", "gpu")
