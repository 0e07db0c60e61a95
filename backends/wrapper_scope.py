"""The names the generated host code calls at run time, bound once per wrapper:
torch's fast allocator and view maker, eager's strides for a result, the exact
convolution, the profiler's range."""

from __future__ import annotations

import torch

from mlirc.backends.library_calls import exact_conv2d
from mlirc.dialects import layouts


def with_strides(x: torch.Tensor, strides: tuple[int, ...]) -> torch.Tensor:
    """`x` with eager's `strides`: a copy where its own differ (a view with gaps),
    expanded where eager's has stride 0.  Values first: a layout torch cannot
    allocate (overlapping windows) leaves `x` as it is."""
    if layouts.same_strides(x.shape, x.stride(), strides):
        return x
    repeated = [d for d, (n, s) in enumerate(zip(x.shape, strides, strict=True)) if n > 1 and s == 0]
    one = x[tuple(slice(0, 1) if d in repeated else slice(None) for d in range(x.dim()))]
    try:
        out = torch.empty_strided(one.shape, strides, dtype=x.dtype, device=x.device).copy_(one)
    except RuntimeError:
        return x
    return out.expand(x.shape)


def wrapper_scope(device: torch.device) -> dict:
    """Names the generated code uses, bound once: the fast allocator and view maker
    where this torch has them (Inductor's), torch's public ones otherwise."""
    guards = getattr(torch._C._dynamo, "guards", None)
    fast_empty = getattr(guards, f"_empty_strided_{device.type}", None)
    if fast_empty is None or device.type not in ("cpu", "cuda"):

        def fast_empty(size: tuple, stride: tuple, dtype: torch.dtype) -> torch.Tensor:
            return torch.empty_strided(size, stride, dtype=dtype, device=device)

    reinterpret = getattr(guards, "_reinterpret_tensor", None)
    if reinterpret is None:

        def reinterpret(x: torch.Tensor, size: tuple, stride: tuple, offset: int) -> torch.Tensor:
            return x.as_strided(size, stride, x.storage_offset() + offset)

    # MLIRC_PROFILE's ranges: the C++ range Inductor's kernel launches use, ~0.3 us a
    # call where torch.profiler.record_function costs ~10 us (2 EPYC cores), which
    # added ~5 ms to a CNN training step of ~450 calls and skewed the profile it made.
    record_function = getattr(torch._C._profiler, "_RecordFunctionFast", torch.profiler.record_function)
    return {
        "torch": torch,
        "device": device,
        "empty_strided": fast_empty,
        "reinterpret_tensor": reinterpret,
        "with_strides": with_strides,
        "exact_conv2d": exact_conv2d,
        "record_function": record_function,
    }
