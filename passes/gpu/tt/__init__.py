"""The `tt` emitters the GPU passes use: tiles, tile plans, sizes and the lowerings of kernel kinds."""
