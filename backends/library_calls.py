"""The library kernels every target calls from its host wrapper (GEMMs and
convolutions, outlined by mlirc-outline-library-calls) as lines of host code, and
the helpers those lines call.  A target's own calls (the CPU's oneDNN and packed
weights: backends/cpu/library_calls.py) extend the table through its wrapper
builder's `library_calls`."""

from __future__ import annotations

import torch

# Library kernels (mlirc-outline-library-calls) as host code: `{0}`, `{1}` are the
# call's operands, `{out}` its result, other fields the op's attributes.  GEMMs write
# into a buffer allocated like any kernel result; a convolution returns its own.
LIBRARY_CALLS = {
    "mm": "torch.mm({0}, {1}, out={out})",
    "bmm": "torch.bmm({0}, {1}, out={out})",
    "conv2d": "{out} = torch.conv2d({0}, {1}, None, {stride}, {padding}, {dilation}, {groups}).contiguous()",
    # A convolution that stands for exact float32 sums (average pooling's window sums):
    # never TF32, which cuDNN uses for float32 convolutions by default (eager's conv2d
    # does too; its avg_pool2d does not).
    "conv2d_exact": "{out} = exact_conv2d({0}, {1}, {stride}, {padding}, {dilation}, {groups}).contiguous()",
    # Input and result are NHWC tensors, the weight OHWI (mlirc-channels-last):
    # oneDNN and cuDNN compute channels-last when the input is, and the result's NHWC
    # view is then dense.  `{nchw0}`, `{nchw1}`: the operands viewed as NCHW
    # (WrapperBuilder.nchw_view); aten::convolution, not conv2d, which only adds a
    # dispatch on the way to it.
    "conv2d_nhwc": (
        "{out} = torch.convolution({nchw0}, {nchw1}, None, {stride}, {padding}, {dilation}, False, (0, 0),"
        " {groups}).permute(0, 2, 3, 1).contiguous()"
    ),
    "conv2d_nhwc_exact": (
        "{out} = exact_conv2d({nchw0}, {nchw1}, {stride}, {padding}, {dilation}, {groups})"
        ".permute(0, 2, 3, 1).contiguous()"
    ),
    # A GEMM with its bias `{2}`, added to the sums before they are rounded (mlirc-outline-library-calls)
    "addmm": "torch.addmm({2}, {0}, {1}, out={out})",
}
ALLOCATES_OWN_RESULT = frozenset({"conv2d", "conv2d_exact", "conv2d_nhwc", "conv2d_nhwc_exact"})
EXACT_ATTR = "exact"  # on a conv2d: sums that must not round to TF32 (see "conv2d_exact")
# Library calls that read their NHWC operands 0 and 1 as NCHW views (`{nchw0}`, `{nchw1}`)
NCHW_OPERANDS = frozenset({"conv2d_nhwc", "conv2d_nhwc_exact"})


def exact_conv2d(x: torch.Tensor, w: torch.Tensor, *args: object) -> torch.Tensor:
    """torch.conv2d with cuDNN's TF32 off for the call.  Through cudnn.flags, the one
    way allowed where torch's tests have disabled setting the global flags (the OpInfo
    sweep); every other flag as it is.  A CPU convolution has no TF32 to turn off."""
    if x.device.type != "cuda":
        return torch.conv2d(x, w, None, *args)
    cudnn = torch.backends.cudnn
    with cudnn.flags(
        enabled=cudnn.enabled,
        benchmark=cudnn.benchmark,
        benchmark_limit=cudnn.benchmark_limit,
        deterministic=cudnn.deterministic,
        allow_tf32=False,
    ):
        return torch.conv2d(x, w, None, *args)
