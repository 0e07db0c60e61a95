"""CPU backend: kernels module -> LLVM dialect -> LLVM IR -> llvmlite machine code."""

# The stages the compile driver runs on a CPU graph's module (mlirc.passes.pipelines,
# each dumped under MLIRC_DUMP_DIR and re-enterable with mlirc-opt), then the kernel
# stage on a copy (its first pass drops the entry, which the host wrapper runs),
# then LLVM IR (`mlirc-opt --emit-llvm`), dumped as <region>.llvm.ll.
STAGES = ("linalg", "cpu-layout", "kernels", "cpu-fusion")
KERNEL_STAGE = "cpu"

# The shared passes' defaults are the CPU's policy: nothing to override.
PASS_OPTIONS: dict[str, object] = {}
