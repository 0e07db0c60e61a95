"""GPU passes: the GPU backend's kernel planning and its lowering to Triton's `tt` dialect."""
