"""Convolutions and GEMMs whose weight the library reorders once, not at every call.

torch.conv2d hands oneDNN a plain (OIHW or OHWI) weight, which it copies into its
blocked layout at each call: for a 512-channel 3x3 layer at batch 1 that copy is
40% of the convolution (0.75 against 0.44 ms on 2 cores).  Inductor's freezing
makes weights constants and reorders them at compile time; here each call site keeps
the reordered weight of the last weight it saw, and reorders again when the weight
changes -- another storage, or an in-place edit (its version counter) -- or the
input's size does (oneDNN picks the blocked layout for the input's size).  Frozen
weights (passes/hoist_frozen.py) are the same tensors from call to call, so in
inference the reorder runs once.

GEMMs with a weight operand (a linear layer's) likewise keep a packed form of it, as
Inductor's freezing does: MKL's for float32 (`mkl._mkl_reorder_linear_weight`), 10-20%
faster than torch.mm for 128 rows (768x3072: 1.40 against 1.66 ms on 2 cores), slower
for 1024; oneDNN's blocked layout for bfloat16 (`mkldnn._reorder_linear_weight`), 4%
faster at 128 rows and 2x at one row (768x768: 0.029 against 0.056 ms), bit for bit
torch.mm's results on the shapes measured.  backends/cpu/gemm_choice.py times it beside torch.mm and oneDNN.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import torch
from torch.multiprocessing.reductions import StorageWeakRef

PACKED_DTYPES = (torch.float32, torch.bfloat16)


def available() -> bool:
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_convolution_pointwise")


def eligible(x: torch.Tensor | None, weight: torch.Tensor | None) -> bool:
    """x, weight: meta tensors (the wrapper's view of the operands)."""
    return (
        x is not None
        and weight is not None
        and x.dtype == weight.dtype
        and x.dtype in PACKED_DTYPES
        and x.dim() == 4
        and available()
        # oneDNN reorders bf16 weights only on AVX-512 (or AVX-NE-CONVERT) CPUs; on an
        # AVX2 EPYC the reorder raised, and torch.conv2d runs the call unpacked
        and (x.dtype != torch.bfloat16 or torch.ops.mkldnn._is_mkldnn_bf16_supported())
    )


class _PackedSite:
    """The packed form of the last weight one call site saw, and what it was packed
    from; with `shapes` > 1, one per input shape for the last `shapes` shapes (a
    wrapper for every size calls one site at many sizes)."""

    def __init__(self, shapes: int = 1) -> None:
        # (key, the weight's storage, weakly, packed): a key names the storage by its
        # StorageImpl, which a weak reference keeps from being reused, so an equal key
        # is the same storage at the same version; the weight itself is not held (a
        # backward's bf16 weight is a new tensor every step).  Only arguments (and
        # views of them) are packed: kernels rewrite the wrapper's own buffers in
        # place, which no version counter sees.
        self.state: tuple = (None, None, None)
        self.shapes = shapes
        # (storage, weakly; its StorageImpl; version) of the weight at the last call,
        # and for how many calls in a row it had changed since the one before: edited
        # in place (a weight in training) or freed (one made per step)
        self.last_seen: tuple = (None, None, None)
        self.changes_in_a_row = 0
        self.recent: OrderedDict[tuple, tuple] = OrderedDict()  # key -> state, shapes > 1

    def packed(
        self, weight: torch.Tensor, root: torch.Tensor, shape: tuple, pack: Callable[[], object]
    ) -> object | None:
        """pack()'s result for `weight` (viewing argument `root`, whose version
        counter it shares: the wrapper's views keep none) and the input's `shape`; None
        (call the library unpacked) while the weight changes at every call.

        An optimizer step edits each weight between training steps, and under autocast
        the backward reads a bf16 copy of it made anew each step: a reorder per call
        then costs more than it saves (a 512x512 linear layer at 64 rows on 2 cores:
        0.42 ms reorder + 0.41 ms packed GEMM, against 0.15 ms for torch.mm)."""
        try:
            version = root._version
        except RuntimeError:  # an inference tensor keeps no version counter: pack every call
            return pack()
        storage = weight.untyped_storage()
        key = (storage._cdata, weight.storage_offset(), weight.stride(), version, shape)
        if self._changing(storage, key[0], version):
            self.state = (None, None, None)
            self.recent.clear()
            return None
        hit = self.state if self.state[0] == key else self.recent.get(key)
        if hit is not None and not hit[1].expired():
            if key in self.recent:
                self.recent.move_to_end(key)
            self.state = hit
            return hit[2]
        self.state = (key, StorageWeakRef(storage), pack())
        if self.shapes > 1:
            # a changed weight (another storage or version) keeps no stale entry for long
            self.recent[key] = self.state
            while len(self.recent) > self.shapes:
                self.recent.popitem(last=False)
        return self.state[2]

    def _changing(self, storage: torch.UntypedStorage, impl: int, version: int) -> bool:
        """Had the weight changed before this call and before the one before it?"""
        ref, last_impl, last_version = self.last_seen
        gone = ref is not None and ref.expired()
        changed = gone or (impl == last_impl and version != last_version)
        self.changes_in_a_row = self.changes_in_a_row + 1 if changed else 0
        if gone or impl != last_impl:
            ref = StorageWeakRef(storage)
        self.last_seen = (ref, impl, version)
        return self.changes_in_a_row >= 2


class PackedConv(_PackedSite):
    """One call site's NHWC convolution (input NHWC, weight OHWI, result NHWC)."""

    def __init__(
        self, stride: list[int], padding: list[int], dilation: list[int], groups: int, shapes: int = 1
    ) -> None:
        super().__init__(shapes)
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups

    def __call__(self, x_nhwc: torch.Tensor, w_ohwi: torch.Tensor, root: torch.Tensor) -> torch.Tensor:
        x, w = x_nhwc.permute(0, 3, 1, 2), w_ohwi.permute(0, 3, 1, 2)
        packed = None
        if x.numel():  # a size of 0 (a wrapper for every size meets any): oneDNN takes none
            packed = self.packed(w, root, tuple(x.shape), lambda: self._pack(w, x.shape))
        if packed is None:
            y = torch.conv2d(x, w, None, self.stride, self.padding, self.dilation, self.groups)
            return y.permute(0, 2, 3, 1).contiguous()
        y = torch.ops.mkldnn._convolution_pointwise(
            x, packed, None, self.padding, self.stride, self.dilation, self.groups, "none", [], ""
        )
        return y.permute(0, 2, 3, 1).contiguous()

    def _pack(self, w: torch.Tensor, input_shape: torch.Size) -> torch.Tensor | None:
        """oneDNN's reordered weight, or None (run unpacked) for a weight holding NaN or
        inf: the packed kernel skips the taps that fall on the padding, where eager's
        multiplies them by the padding's zeros (NaN at the border).  Checked once per
        weight, as the reorder runs."""
        if not bool(torch.isfinite(w).all()):
            return None
        return torch.ops.mkldnn._reorder_convolution_weight(
            w, self.padding, self.stride, self.dilation, self.groups, list(input_shape)
        )


def linear_available(dtype: torch.dtype = torch.float32) -> bool:
    if dtype == torch.bfloat16:  # oneDNN takes bf16 only on AVX-512 (or AVX-NE-CONVERT) CPUs
        return (
            torch.backends.mkldnn.is_available()
            and hasattr(torch.ops.mkldnn, "_reorder_linear_weight")
            and torch.ops.mkldnn._is_mkldnn_bf16_supported()
        )
    return dtype == torch.float32 and torch._C.has_mkl and hasattr(torch.ops.mkl, "_mkl_linear")


class PackedLinear(_PackedSite):
    """One call site's a @ b where b is a (K, N) weight: the transpose of a row-major
    (N, K) one (nn.Linear's), or row-major itself (GPT-2's Conv1D), which is copied
    to (N, K) once, with the packing."""

    def __call__(
        self, a: torch.Tensor, b: torch.Tensor, root: torch.Tensor, bias: torch.Tensor | None = None
    ) -> torch.Tensor:
        """a @ b, plus `bias` per column (added to the float32 sums, before rounding)."""
        rows = a.shape[0]
        if a.dtype == torch.bfloat16:  # oneDNN's layout for this row count
            packed = self.packed(
                b, root, (rows,), lambda: torch.ops.mkldnn._reorder_linear_weight(b.t().contiguous(), rows)
            )
            if packed is not None:
                return torch.ops.mkldnn._linear_pointwise(a, packed, bias, "none", [], "")
            return torch.mm(a, b) if bias is None else torch.addmm(bias, a, b)

        def pack() -> tuple[torch.Tensor, torch.Tensor]:
            weight = b.t().contiguous()
            return torch.ops.mkl._mkl_reorder_linear_weight(weight, rows), weight

        packed = self.packed(b, root, (rows,), pack)
        if packed is None:
            return torch.mm(a, b) if bias is None else torch.addmm(bias, a, b)
        return torch.ops.mkl._mkl_linear(a, packed[0], packed[1], bias, rows)
