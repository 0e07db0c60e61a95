"""CPU backend: kernels module -> LLVM dialect -> LLVM IR -> llvmlite machine code."""
