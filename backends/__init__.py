"""Code generation backends: cpu (LLVM via llvmlite) and gpu (Triton)."""
