"""GPU backend: kernels module -> Triton TTIR (`tt` dialect) -> triton.compile -> cubin."""

from mlirc.passes.channels_last import ChannelsLastOptions
from mlirc.passes.fuse_sibling_reductions import FuseSiblingReductionsOptions
from mlirc.passes.gpu.fuse_rows import MAX_LOOPED_ROW, MAX_ROW
from mlirc.passes.lower_to_linalg import LowerToLinalgOptions
from mlirc.passes.outline_library_calls import OutlineLibraryCallsOptions
from mlirc.passes.recompute_cheap_producers import RecomputeOptions
from mlirc.passes.split_column_sums import SplitColumnSumsOptions
from mlirc.passes.split_reductions import SplitReductionsOptions
from mlirc.passes.split_sliced_generics import SplitSlicedGenericsOptions

# The stages the compile driver runs on a CUDA graph's module (mlirc.passes.pipelines,
# each dumped under MLIRC_DUMP_DIR and re-enterable with mlirc-opt).  The host wrapper
# reads the entry after the last; KERNEL_STAGE then runs on a copy and leaves each
# kernel's TTIR in a nested module, which triton.compile takes.
STAGES = ("linalg", "gpu-layout", "kernels", "gpu-fusion")
KERNEL_STAGE = "gpu"

# Where the GPU's policy differs from the shared passes' defaults (the CPU's).  The
# compile driver gives these to the stages, so a repro command prints them.
PASS_OPTIONS: dict[str, object] = {
    "mlirc-lower-to-linalg": LowerToLinalgOptions(numerics="cuda"),
    # A program reduces a whole tile as a tree, so its chains are short anyway: a split
    # is for long sums of few rows.  Rows up to MAX_ROW stay whole for row groups;
    # longer ones split in the CPU's chunks, whose cascade matched eager's accuracy on
    # the H100 (a sum of 2^24 x 0.1 in 4096-value chunks was 2.5 ulp off, eager's
    # 1.25).  A column chunk is 4 steps of a [64 rows, 64 columns] tile, and its partial
    # sums are 1/256 of the input, where chunks of 16 wrote 1/16 and took three more
    # kernels.  Rows up to MAX_LOOPED_ROW stay whole too where there are enough of
    # them to fill the GPU with one program per few rows: a row group walks them in
    # chunks (each lane adds one value per 512-wide chunk: 128 at most), reading its
    # input once per pass, mostly from L2, where the split wrote partial sums between
    # four more kernels (softmax of 16384-long rows: 5 kernels).
    "mlirc-split-reductions": SplitReductionsOptions(
        contiguous_chunk=(512, MAX_ROW), strided_chunk=(256, 1024), long_rows=(MAX_LOOPED_ROW, 1024)
    ),
    "mlirc-split-column-sums": SplitColumnSumsOptions(longest_column=1024),
    # q, k and v of a stacked projection as three tensors that die apart
    "mlirc-split-sliced-generics": SplitSlicedGenericsOptions(split_sliced=True),
    # cuDNN never runs a float64 convolution channels-last
    "mlirc-channels-last": ChannelsLastOptions(channels_last_float64=False),
    # an addmm's bias add fuses into the GEMM's reader, a kernel
    "mlirc-outline-library-calls": OutlineLibraryCallsOptions(bias_in_gemm=False),
    # Inductor inlines up to 30 ops into each reader (realize_opcount_threshold)
    "mlirc-recompute-cheap-producers": RecomputeOptions(
        recompute_max_ops=24, recompute_divisions=True, recompute_math=True
    ),
    # row fusion groups sums that share an input (mlirc-gpu-sibling-reductions)
    "mlirc-fuse-sibling-reductions": FuseSiblingReductionsOptions(fuse_sibling_sums=False),
}
