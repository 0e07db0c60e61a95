"""The CPU's library calls: the shared ones (backends/library_calls.py) and oneDNN's
GEMM and weights packed once per call site, which CpuWrapperBuilder chooses
(library_variant) and whose callables only the CPU wrapper's scope binds
(`onednn_mm`, `conv_sites`, `linear_sites`)."""

from __future__ import annotations

from mlirc.backends.library_calls import ALLOCATES_OWN_RESULT, LIBRARY_CALLS

CPU_LIBRARY_CALLS = {
    **LIBRARY_CALLS,
    # oneDNN's GEMM, where the CPU builder measured it faster (backends/cpu/gemm_choice.py)
    "mm_onednn": "{out} = onednn_mm({0}, {1})",
    # conv2d_nhwc on oneDNN with the weight reordered once per call site (backends/cpu/packed_weights.py).
    # `root`: the argument whose storage holds the weight (its version counter is the weight's).
    "conv2d_nhwc_packed": "{out} = conv_sites[{site}]({0}, {1}, {root})",
    # MKL's GEMM on a weight packed once per call site (a linear layer's; packed_weights.py)
    "mm_packed": "{out} = linear_sites[{site}]({0}, {1}, {root})",
    # GEMMs with their bias `{2}` (the shared "addmm")
    "addmm_onednn": "{out} = onednn_mm({0}, {1}, {2})",
    "addmm_packed": "{out} = linear_sites[{site}]({0}, {1}, {root}, {2})",
}
CPU_ALLOCATES_OWN_RESULT = ALLOCATES_OWN_RESULT | {
    "conv2d_nhwc_packed",
    "mm_onednn",
    "mm_packed",
    "addmm_onednn",
    "addmm_packed",
}
