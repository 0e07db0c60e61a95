"""The names of the attributes mlirc puts on IR, in one place: the stage that writes
one and every stage that reads it import it from here (a leaf: it imports nothing).
"""

from __future__ import annotations

# --- functions
ENTRY_ATTR = "mlirc.entry"  # the graph's host-side function
KERNEL_ATTR = "mlirc.kernel"  # a kernel the entry calls
# on a kernel: its result is its first argument's buffer, updated in place (a scatter)
IN_PLACE_ATTR = "mlirc.in_place"
# a kernel calling independent kernels, launched as one (mlirc-group-kernels)
GROUP_ATTR = "mlirc.group"
LIBRARY_ATTR = "mlirc.library"  # a kernel that is a library call (torch.mm, conv2d, ...): its name
LIBRARY_ARGS_ATTR = "mlirc.library_args"  # the library op's attributes (stride, padding, ...)
CHECKS_ATTR = "mlirc.checks"  # on the entry: the run-time checks' messages, one per flag result
ARG_LAYOUTS_ATTR = "mlirc.arg_layouts"  # on the entry: how each argument lies in memory
RESULT_LAYOUTS_ATTR = "mlirc.result_layouts"  # ... and each result
RESULT_EAGER_ATTR = "mlirc.results_as_eager"  # eager's sizes and strides of every result
# On the entry, from AOTAutograd: per result, the argument whose new value it is (-1:
# none), which AOTAutograd copies back into it -- its kernel may write there in place
RESULT_UPDATES_ATTR = "mlirc.result_updates"
# ... and the first result that only the backward reads (saved activations): those may
# be arguments or one another, no copy (the user never sees or mutates them)
SAVED_RESULTS_ATTR = "mlirc.saved_results_from"
FROZEN_ATTR = "mlirc.frozen"  # on the entry: arguments that are parameters, buffers, constants
PREPARED_ATTR = "mlirc.prepared"  # on the entry: the arguments its prepare function takes
PREPARE_ATTR = "mlirc.prepare"  # the host function computing the entry's frozen work (mlirc-hoist-frozen)

# --- modules
TARGET_ATTR = "mlirc.target"  # "cpu" or "cuda"

# --- ops
PERM_ATTR = "mlirc.perm"  # of a "permute" view (mlirc-transpose-views)
# On the `mlirc.add` of an aten.addmm's bias: eager adds it before its GEMM's one
# rounding (mlirc-outline-library-calls keeps it so in half types, and joins it to the
# GEMM call in wider ones where it would be a kernel alone); a user's `x @ w + b` rounds twice.
ADDMM_BIAS_ATTR = "mlirc.addmm_bias"
# An mlirc op a pass left for static sizes (the pass's name): lowered once they are bound
DEFERRED_ATTR = "mlirc.deferred"

# --- CPU schedule (mlirc-cpu-vectorize, mlirc-cpu-parallelize)
SCHEDULE_ATTR = "mlirc.schedule"  # an op's plan, while the transform script runs
# On a merged kernel's tensor.empty (mlirc-cpu-merge-small-kernels): its own buffer, which
# CSE must not share with another member's (backends/in_place.py relies on it)
FRESH_ATTR = "mlirc.fresh"
SPLIT_ATTR = "mlirc.split_reduction"  # a split reduction's partial-sum loop
TAIL_ATTR = "mlirc.masked_tail"  # a peeled last trip of run-time size, vectorized with masks
# A kernel's copy made by mlirc-bind-sizes for a second caller: the kernel it copies
ORIGIN_ATTR = "mlirc.origin"
SIZE_ARGS_ATTR = "mlirc.size_args"  # a kernel's size arguments: [argument, dim] pairs (mlirc-cpu-size-args)
PARALLEL_LOOP_ATTR = "mlirc.parallel_loop"  # a loop whose trips may run on threads
PARALLEL_ATTR = "mlirc.parallel"  # on kernel_N_parallel: array<i64: step> of the chunked loop

# --- GPU kernels (mlirc-gpu-lower-to-tt)
TTIR_ATTR = "mlirc.gpu.ttir"  # the nested module holding the kernel's TTIR
ROWS_ATTR = "mlirc.gpu.rows"  # a row group's kernel: leading loop dims that are rows
GRID_ATTR = "mlirc.gpu.grid"
# the grid of a kernel of run-time sizes: a Python expression of its size arguments n0, n1...
GRID_SIZE_ATTR = "mlirc.gpu.grid_size"
WARPS_ATTR = "mlirc.gpu.num_warps"
STAGES_ATTR = "mlirc.gpu.num_stages"
TILE_ATTR = "mlirc.gpu.tile"
