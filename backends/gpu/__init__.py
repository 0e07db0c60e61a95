"""GPU backend (Triton `tt` dialect); see the GPU backend issue."""
