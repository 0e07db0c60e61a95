"""Ops mlirc calls as library kernels on purpose, as Inductor does with its extern
kernels: dense linear algebra (LAPACK through ATen), FFTs, CPU flash attention
(kept whole only while MLIRC_LIBRARY_GEMM is on: frontend/decompositions.py) and
CUDA's fused attention (flash, memory-efficient, cuDNN: whichever torch's SDPA
dispatch picked when the graph was traced; no decomposition exists), a
convolution's backward (oneDNN / cuDNN, as Inductor calls it), and the one seed per
dropout drawn from torch's generator (frontend/random_ops.py).  They run through
ATen, like fallback nodes, but they are not fallback: no compiler generates better
code for a QR factorization than LAPACK.  Every elementwise, reduction and
data-movement op stays generated code: this list must never grow into those.

`mlirc.stats()` counts them as `library_nodes`, apart from `fallback_nodes`.
"""

from __future__ import annotations

import torch
import torch.fx as fx

# aten op names (overload packets) that are library kernels.
LIBRARY_OPS = frozenset(
    {
        "_fft_r2c", "_fft_c2c", "_fft_c2r",
        "_linalg_svd", "_linalg_eigh", "_linalg_eigvals", "_linalg_det", "_linalg_slogdet",
        "_linalg_solve_ex", "_linalg_check_errors",
        "linalg_eig", "linalg_inv_ex", "linalg_cholesky_ex", "linalg_lu_factor_ex", "linalg_lu",
        "linalg_lu_solve", "linalg_qr", "linalg_ldl_factor_ex", "linalg_ldl_solve", "linalg_solve_triangular",
        "linalg_householder_product", "linalg_matrix_exp", "linalg_pinv",
        "cholesky", "cholesky_solve", "cholesky_inverse", "triangular_solve", "lu_unpack", "geqrf", "ormqr",
        "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention_for_cpu_backward",
        "_scaled_dot_product_flash_attention", "_scaled_dot_product_flash_attention_backward",
        "_scaled_dot_product_efficient_attention", "_scaled_dot_product_efficient_attention_backward",
        "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_cudnn_attention_backward",
        "convolution_backward",
        "randint",  # a seed from torch's generator (frontend/random_ops.py: dropout)
    }
)  # fmt: skip


def is_library_kernel(node: fx.Node) -> bool:
    target = node.target
    if target is torch.ops.higher_order.with_effects:  # an effect-ordered call, e.g. LAPACK's error check
        return len(node.args) > 1 and isinstance(node.args[1], torch._ops.OpOverload) and _named(node.args[1])
    return isinstance(target, torch._ops.OpOverload) and _named(target)


def _named(op: torch._ops.OpOverload) -> bool:
    return op.namespace == "aten" and op.__name__.split(".")[0] in LIBRARY_OPS
