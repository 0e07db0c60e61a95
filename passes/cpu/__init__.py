"""CPU passes: the CPU backend's schedule, bufferization and LLVM lowering (one pass per file)."""
