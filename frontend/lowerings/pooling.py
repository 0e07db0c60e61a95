"""Lowerings of pooling: max (with eager's indices) and average, and their backward."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterator

import torch
import torch.fx as fx
from mlir import ir

from mlirc.dialects import builders as b
from mlirc.dialects import shapes
from mlirc.frontend.lowerings.api import (
    LoweringContext,
    arg,
    narrow_to_out,
    node_meta,
    opmath_dtype,
    out_dtype,
    out_shape,
    register,
)

aten = torch.ops.aten
# an average pool window of at most this many taps is summed tap by tap (_AvgWindows.by_taps)
MAX_TAPS = 25


def _only_first_result_used(node: fx.Node) -> str | None:
    for user in node.users:
        if user.target is not operator.getitem or user.args[1] != 0:
            return "only the first result of this op can be lowered"
    return None


def _pool_check(node: fx.Node) -> str | None:
    shape = node_meta(node.args[0]).shape
    if len(shape) != 4:
        return "only batched 2-D pooling"
    if out_dtype(node) in (torch.uint8, torch.bool):  # the pool compares signed
        return f"max pooling of {out_dtype(node)}"
    if _indices_used(node) and not all(isinstance(n, int) for n in shape):
        return "the indices of a pooling of symbolic size"
    return None


@register(aten.max_pool2d_with_indices.default, check=_pool_check)
def _max_pool2d(lctx: LoweringContext, node: fx.Node) -> tuple[ir.Value, ir.Value | None]:
    x = lctx.value(node.args[0])
    kernel = list(node.args[1])
    stride = list(arg(node, 2, "stride", None) or kernel)
    padding = list(arg(node, 3, "padding", [0, 0]))
    dilation = list(arg(node, 4, "dilation", [1, 1]))
    expand = lambda v: v * 2 if len(v) == 1 else v
    kernel, stride, padding, dilation = expand(kernel), expand(stride), expand(padding), expand(dilation)
    kernel = _reachable_kernel(kernel, shapes.shape_of(x)[-2:], padding, dilation)
    result_type = shapes.tensor_type(out_shape(node), shapes.elem_of(x))
    indices = None
    if _indices_used(node):  # max_pool2d's backward reads them
        indices = _max_pool_indices(lctx, node, x, (kernel, stride, padding, dilation))
    if arg(node, 5, "ceil_mode", False):
        x, padding = _pad_for_ceil_mode(lctx, node, x, kernel, stride, padding, dilation), [0, 0]
    out = b.create(
        "max_pool2d", [x], result_type,
        kernel=kernel, stride=stride, padding=padding, dilation=dilation,
    )  # fmt: skip
    return out, indices


def _indices_used(node: fx.Node) -> bool:
    return _only_first_result_used(node) is not None


def _max_pool_indices(lctx: LoweringContext, node: fx.Node, x: ir.Value, window: tuple[list[int], ...]) -> ir.Value:
    """Where each window's maximum lies (h * W + w in its input plane), as eager's
    kernels choose it: walking the window's taps on the input in order, a tap is
    taken where it is greater than the maximum so far or NaN -- the first of equal
    maxima, the last NaN -- starting from the first tap on the input.  A chain of
    selects over the window's strided slices, which fuses into one kernel."""
    kernel, stride, padding, dilation = window
    dtype = out_dtype(node)
    height, width = shapes.shape_of(x)[2:]
    grid = list(out_shape(node))
    lowest = -math.inf if dtype.is_floating_point else torch.iinfo(dtype).min
    x = _pad_for_ceil_mode(lctx, node, x, kernel, stride, padding, dilation)  # as far as every window reaches
    i64 = shapes.element_type(torch.int64)
    k = lambda v: lctx.typed(v, torch.int64)  # noqa: E731
    rows, cols = b.iota(grid, 2, i64), b.iota(grid, 3, i64)
    best, index, seen = lctx.typed(lowest, dtype), k(0), lctx.typed(False, torch.bool)
    for kh in range(kernel[0]):
        ih = b.elementwise("add", b.elementwise("mul", rows, k(stride[0])), k(kh * dilation[0] - padding[0]))
        for kw in range(kernel[1]):
            iw = b.elementwise("add", b.elementwise("mul", cols, k(stride[1])), k(kw * dilation[1] - padding[1]))
            tap = b.slice_(x, [0, 0, kh * dilation[0], kw * dilation[1]], [1, 1, *stride], grid)
            on_input = _all(
                b.elementwise("ge", ih, k(0)), b.elementwise("lt", ih, k(height)),
                b.elementwise("ge", iw, k(0)), b.elementwise("lt", iw, k(width)),
            )  # fmt: skip
            greater = b.elementwise("gt", tap, best)
            if dtype.is_floating_point:
                greater = b.elementwise("logical_or", greater, b.elementwise("isnan", tap))
            taken = b.elementwise("logical_and", on_input, greater)
            first = b.elementwise("logical_and", on_input, b.elementwise("logical_not", seen))
            position = b.elementwise("add", b.elementwise("mul", ih, k(width)), iw)
            index = b.elementwise("select", b.elementwise("logical_or", taken, first), position, index)
            best = b.elementwise("select", taken, tap, best)
            seen = b.elementwise("logical_or", seen, on_input)
    return index


def _pool_backward_check(node: fx.Node) -> str | None:
    shape = node_meta(node.args[1]).shape
    if len(shape) != 4 or not all(isinstance(n, int) for n in [*shape, *node_meta(node.args[0]).shape]):
        return "only batched 2-D pooling of static size"
    return None if out_dtype(node).is_floating_point else f"a {out_dtype(node)} gradient"


@register(aten.max_pool2d_with_indices_backward.default, check=_pool_backward_check)
def _max_pool2d_backward(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """Each input element's gradient, gathered: the sum of the output gradients of the
    windows that chose it (their index is its h * W + w), found per tap
    (_windows_reading), in opmath (float32 for halves), from +0."""
    grad, _, kernel, stride, padding, dilation = node.args[:6]
    stride = _pair(stride or kernel)
    kernel, padding, dilation = _pair(kernel), _pair(padding), _pair(dilation)
    dtype = opmath_dtype(node)
    n, c, height, width = node_meta(node.args[1]).shape
    out_h, out_w = node_meta(grad).shape[2:]
    flat = [n, c, out_h * out_w]
    grads = b.reshape(lctx.typed(grad, dtype), flat)
    chosen = b.reshape(lctx.value(node.args[7]), flat)
    grid = [n, c, height, width]
    i64 = shapes.element_type(torch.int64)
    here = b.elementwise(
        "add", b.elementwise("mul", b.iota(grid, 2, i64), lctx.typed(width, torch.int64)), b.iota(grid, 3, i64)
    )
    total, zero = lctx.typed(0.0, dtype), lctx.typed(0.0, dtype)
    for on, window in _windows_reading(lctx, grid, [out_h, out_w], kernel, stride, padding, dilation):
        picks, value = b.reshape(_gather(chosen, window), grid), b.reshape(_gather(grads, window), grid)
        hit = b.elementwise("logical_and", on, b.elementwise("eq", picks, here))
        total = b.elementwise("add", total, b.elementwise("select", hit, value, zero))
    return narrow_to_out(total, node)


def _windows_reading(
    lctx: LoweringContext, grid: list[int], out_hw: list[int], kernel: list[int], stride: list[int],
    padding: list[int], dilation: list[int],
) -> Iterator[tuple[ir.Value, ir.Value]]:  # fmt: skip
    """Per tap, last first (so that windows add in the output's row-major order, as
    eager's backward kernels add them): whether a window reads each input element of
    `grid` through that tap, and which (its flat output index per element, [N, C, H*W],
    0 where none does).  The window reading h through tap kh is (h + p - kh * d) / s,
    where that divides and lies on the output."""
    n, c, height, width = grid
    i64 = shapes.element_type(torch.int64)
    k = lambda v: lctx.typed(v, torch.int64)  # noqa: E731
    rows, cols = b.iota(grid, 2, i64), b.iota(grid, 3, i64)
    for kh in reversed(range(kernel[0])):
        on_h, out_row = _window_of(rows, padding[0] - kh * dilation[0], stride[0], out_hw[0], k)
        for kw in reversed(range(kernel[1])):
            on_w, out_col = _window_of(cols, padding[1] - kw * dilation[1], stride[1], out_hw[1], k)
            on = b.elementwise("logical_and", on_h, on_w)
            window = b.elementwise("add", b.elementwise("mul", out_row, k(out_hw[1])), out_col)
            yield on, b.reshape(b.elementwise("select", on, window, k(0)), [n, c, height * width])


def _gather(values: ir.Value, window: ir.Value) -> ir.Value:
    """values[n, c, window[n, c, i]] ([N, C, out_h*out_w] values)."""
    return b.create(
        "gather", [values, window], shapes.tensor_type(shapes.shape_of(window), shapes.elem_of(values)), dim=2
    )


def _window_of(position: ir.Value, offset: int, stride: int, size: int, k: Callable) -> tuple[ir.Value, ir.Value]:
    """(whether, which): the output position whose window reads `position` at the
    tap `offset` away, where the stride divides and it lies on the output."""
    shifted = b.elementwise("add", position, k(offset))
    which = b.elementwise("floor_div", shifted, k(stride))
    whether = _all(
        b.elementwise("ge", shifted, k(0)),
        b.elementwise("eq", b.elementwise("remainder", shifted, k(stride)), k(0)),
        b.elementwise("lt", which, k(size)),
    )
    return whether, which


def _all(*conditions: ir.Value) -> ir.Value:
    result = conditions[0]
    for condition in conditions[1:]:
        result = b.elementwise("logical_and", result, condition)
    return result


def _pad_for_ceil_mode(
    lctx: LoweringContext, node: fx.Node, x: ir.Value, kernel: list[int], stride: list[int],
    padding: list[int], dilation: list[int],
) -> ir.Value:  # fmt: skip
    """ceil_mode's last, partial windows as whole ones: pad the high side with the
    lowest value, as far as the last window (whose size torch already decided) reaches."""
    shape = shapes.shape_of(x)
    out_hw = out_shape(node)[2:]
    high = [
        max(padding[i], (out_hw[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 - shape[2 + i] - padding[i])
        for i in range(2)
    ]
    dtype = out_dtype(node)
    lowest = -math.inf if dtype.is_floating_point else torch.iinfo(dtype).min
    padded = [*shape[:2], shape[2] + padding[0] + high[0], shape[3] + padding[1] + high[1]]
    return b.create(
        "pad", [x, lctx.typed(lowest, dtype)], shapes.torch_tensor_type(padded, dtype),
        low=[0, 0, *padding], high=[0, 0, *high],
    )  # fmt: skip


def _reachable_kernel(kernel: list[int], size: list[int], padding: list[int], dilation: list[int]) -> list[int]:
    """A pooling window cut to the taps that can land on the padded input: the rest
    fall on ceil_mode's overhang, which neither a max nor an average counts.  Torch
    allows windows far larger than the input under ceil_mode (EfficientNet's head pools
    a 5x5 map with a 1280x1280 window); padded out whole, that was a 1280x1280 plane
    per channel."""
    return [
        k if n is None else min(k, -(-(n + 2 * p) // d))  # a symbolic size: the window as given
        for k, n, p, d in zip(kernel, size, padding, dilation, strict=True)
    ]


def _pair(values: list[int] | tuple[int, ...]) -> list[int]:
    """A pooling argument for both spatial dims (torch accepts one for both)."""
    return list(values) * 2 if len(values) == 1 else list(values)


def _avg_pool_check(node: fx.Node) -> str | None:
    if not out_dtype(node).is_floating_point:
        return f"{out_dtype(node)} average pooling"
    return None if len(node_meta(node.args[0]).shape) in (3, 4) else "only 2-D pooling"


class _AvgWindows:
    """An average pooling's windows over an input plane, from the op's arguments
    starting at `first` (the input itself: 0 for the forward, 1 for the backward)."""

    def __init__(self, node: fx.Node, first: int, input_hw: list[int], out_hw: list[int]) -> None:
        kernel = _pair(node.args[first + 1])
        self.stride = _pair(arg(node, first + 2, "stride", None) or kernel)
        self.padding = _pair(arg(node, first + 3, "padding", [0, 0]))
        self.include_pad = arg(node, first + 5, "count_include_pad", True)
        self.override = arg(node, first + 6, "divisor_override", None)
        self.input_hw, self.out_hw = input_hw, out_hw
        self.kernel = _reachable_kernel(kernel, input_hw, self.padding, [1, 1])
        # ceil_mode's last windows reach past the padding: counted by neither sum nor divisor
        self.overhang = [
            max(0, (out_hw[i] - 1) * self.stride[i] + self.kernel[i] - (input_hw[i] + 2 * self.padding[i]))
            for i in range(2)
        ]

    def padded(self, lctx: LoweringContext, x: ir.Value, pad_value: float, dtype: torch.dtype) -> ir.Value:
        """`x` ([..., H, W]) as far as the windows reach: the padding read as `pad_value`,
        ceil_mode's overhang as 0 (counted by neither sum nor divisor)."""
        *lead, height, width = shapes.shape_of(x)
        padding, overhang = self.padding, self.overhang
        inner = b.create(
            "pad", [x, lctx.typed(pad_value, dtype)],
            shapes.torch_tensor_type([*lead, height + 2 * padding[0], width + 2 * padding[1]], dtype),
            low=[0] * len(lead) + padding, high=[0] * len(lead) + padding,
        )  # fmt: skip
        full = [*lead, height + 2 * padding[0] + overhang[0], width + 2 * padding[1] + overhang[1]]
        return b.create(
            "pad", [inner, lctx.typed(0.0, dtype)], shapes.torch_tensor_type(full, dtype),
            low=[0] * (len(lead) + 2), high=[0] * len(lead) + overhang,
        )  # fmt: skip

    def by_taps(self, shape: list[int | None]) -> bool:
        """Small windows over static sizes are summed tap by tap: one strided slice per
        tap, which fuse with the division and their neighbours into one kernel.  A
        convolution with a one-channel filter (the other way) is a library call of its
        own, and on the GPU a slow one (cuDNN has no tensor-core engine for it)."""
        return math.prod(self.kernel) <= MAX_TAPS and all(isinstance(n, int) for n in shape)

    def tap_sums(self, lctx: LoweringContext, x: ir.Value, pad_value: float, dtype: torch.dtype) -> ir.Value:
        """Each window's sum over `x` ([..., H, W]), tap by tap in eager's order (row by
        row from the window's top left, from +0; taps on the padding add 0)."""
        padded = self.padded(lctx, x, pad_value, dtype)
        lead = shapes.shape_of(x)[:-2]
        total = lctx.typed(0.0, dtype)
        for kh in range(self.kernel[0]):
            for kw in range(self.kernel[1]):
                starts, steps = [0] * len(lead) + [kh, kw], [1] * len(lead) + self.stride
                total = b.elementwise("add", total, b.slice_(padded, starts, steps, [*lead, *self.out_hw]))
        return total

    def sums(self, lctx: LoweringContext, planes: ir.Value, pad_value: float, dtype: torch.dtype) -> ir.Value:
        """Each window's sum over `planes` ([count, 1, H, W]), the padding read as
        `pad_value`: a convolution with ones, for windows too large to sum by taps."""
        count = shapes.shape_of(planes)[0]
        ones = b.broadcast(lctx.typed(1.0, dtype), [1, 1, *self.kernel])
        result_type = shapes.torch_tensor_type([count, 1, *self.out_hw], dtype)
        # exact: float32 window sums, never TF32 (cuDNN's default for float32 convolutions)
        return b.create(
            "conv2d", [self.padded(lctx, planes, pad_value, dtype), ones], result_type,
            stride=self.stride, padding=[0, 0], dilation=[1, 1], groups=1, exact=1,
        )  # fmt: skip

    def divisor(self, lctx: LoweringContext, dtype: torch.dtype, rank: int = 4, taps: bool = False) -> ir.Value:
        """What each window divides by ([1, ..., out_h, out_w] of `rank` dims, or a
        scalar): the elements torch counts (padding or not, never ceil_mode's
        overhang), or divisor_override."""
        if self.override:
            return lctx.typed(float(self.override), dtype)
        mask = b.broadcast(lctx.typed(1.0, dtype), [1] * (rank - 2) + self.input_hw)
        pad_value = 1.0 if self.include_pad else 0.0
        if taps:
            return self.tap_sums(lctx, mask, pad_value, dtype)
        return self.sums(lctx, mask, pad_value, dtype)


@register(aten.avg_pool2d.default, check=_avg_pool_check)
def _avg_pool2d(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """Window sums divided by the count of each window (_AvgWindows.divisor), in opmath
    (float32 for halves, as eager accumulates) and rounded once: small windows tap by
    tap, large ones as a convolution of each channel with ones."""
    x = lctx.value(node.args[0])
    shape = list(shapes.shape_of(x))
    windows = _AvgWindows(node, 0, shape[-2:], list(out_shape(node)[-2:]))
    if windows.by_taps(shape):
        dtype = opmath_dtype(node)
        sums = windows.tap_sums(lctx, lctx.typed(node.args[0], dtype), 0.0, dtype)
        return narrow_to_out(b.elementwise("div", sums, windows.divisor(lctx, dtype, len(shape), taps=True)), node)
    dtype = opmath_dtype(node)
    planes = math.prod(shape[:-2])
    sums = windows.sums(lctx, b.reshape(lctx.typed(node.args[0], dtype), [planes, 1, *shape[-2:]]), 0.0, dtype)
    return narrow_to_out(b.reshape(b.elementwise("div", sums, windows.divisor(lctx, dtype)), lctx.shape(node)), node)


@register(aten.avg_pool2d_backward.default, check=_pool_backward_check)
def _avg_pool2d_backward(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """Each input element's gradient, gathered: the sum over the windows that read it
    of their output gradient over their divisor (_windows_reading), in opmath, from +0."""
    dtype = opmath_dtype(node)
    grad = lctx.typed(node.args[0], dtype)
    n, c, height, width = node_meta(node.args[1]).shape
    out_h, out_w = node_meta(node.args[0]).shape[2:]
    windows = _AvgWindows(node, 1, [height, width], [out_h, out_w])
    share = b.reshape(b.elementwise("div", grad, windows.divisor(lctx, dtype)), [n, c, out_h * out_w])
    grid = [n, c, height, width]
    total, zero = lctx.typed(0.0, dtype), lctx.typed(0.0, dtype)
    taps = _windows_reading(lctx, grid, [out_h, out_w], windows.kernel, windows.stride, windows.padding, [1, 1])
    for on, window in taps:
        total = b.elementwise("add", total, b.elementwise("select", on, b.reshape(_gather(share, window), grid), zero))
    return narrow_to_out(total, node)
