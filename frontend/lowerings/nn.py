"""Lowerings of reductions, normalizations and the matmul/conv family (pooling:
lowerings/pooling.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.fx as fx
from mlir import ir

from mlirc.dialects import builders as b
from mlirc.dialects import shapes
from mlirc.dialects.attributes import ADDMM_BIAS_ATTR
from mlirc.dialects.dims import dim_of
from mlirc.errors import UnsupportedOpError
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


def _dims(node: fx.Node, index: int, rank: int) -> list[int]:
    dims = arg(node, index, "dim", None)
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(rank))
    dims = [dims] if isinstance(dims, int) else dims
    return [d % rank for d in dims] if rank else []


def _reduction(name: str, cast_to_bool: bool = False):
    def lower(lctx: LoweringContext, node: fx.Node) -> ir.Value:
        dtype = torch.bool if cast_to_bool else out_dtype(node)
        x = lctx.typed(node.args[0], dtype)
        dims = _dims(node, 1, len(shapes.shape_of(x)))
        keepdim = arg(node, 2, "keepdim", False)
        return b.convert(b.reduce(name, x, dims, keepdim), shapes.element_type(out_dtype(node)))

    return lower


def _nonempty_extremum(node: fx.Node) -> str | None:
    """A max/min/argmax over a dim of size 0 has no value: eager raises (IndexError or
    RuntimeError, by op), so the node runs eagerly, unless no output element asks."""
    x = node_meta(node.args[0])
    if x.numel() or not math.prod(out_shape(node)):
        return None
    return "an extremum over an empty dim (eager raises)"


for _ops, _name, _bool in (
    ((aten.sum.dim_IntList, aten.sum.default), "reduce_sum", False),
    ((aten.prod.dim_int, aten.prod.default), "reduce_prod", False),
    ((aten.amax.default, aten.max.default), "reduce_max", False),
    ((aten.amin.default, aten.min.default), "reduce_min", False),
    ((aten.any.dim, aten.any.dims, aten.any.default), "reduce_any", True),
    ((aten.all.dim, aten.all.dims, aten.all.default), "reduce_all", True),
):
    check = _nonempty_extremum if _name in ("reduce_max", "reduce_min") else None
    register(*_ops, check=check)(_reduction(_name, _bool))


@register(aten.mean.dim, aten.mean.default)
def _mean(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """The sum divided by the count, both in opmath, rounded once (ATen's half-precision
    mean sums and divides in float32: the sum of 1000 float16 values of 100 is out of
    float16's range, their mean is not)."""
    dtype = opmath_dtype(node)
    x = lctx.typed(node.args[0], dtype)
    in_shape = shapes.shape_of(x)
    dims = _dims(node, 1, len(in_shape))
    total = b.reduce("reduce_sum", x, dims, arg(node, 2, "keepdim", False))
    count = lctx.size_tensor(lctx.element_count(node.args[0], dims), dtype)
    return narrow_to_out(b.elementwise("div", total, count), node)


def _float_input(node: fx.Node) -> str | None:
    dtype = node_meta(node.args[0]).dtype
    return None if dtype.is_floating_point else f"{dtype} input"


@register(
    aten.var.correction, aten.var_mean.correction, aten.std.correction, aten.std_mean.correction, check=_float_input
)
def _var(lctx: LoweringContext, node: fx.Node) -> ir.Value | tuple[ir.Value, ir.Value]:
    """Variance (or its root, std): the sum of squared deviations over
    max(N - correction, 0) (0/0 gives NaN as in eager).  In eager's accumulation
    type: float64 for float32 on the CPU (squares of 1e30 do not overflow there),
    in one pass (_shifted_sums); float32 for half types and on a GPU, and float64
    data, in two: the mean (_row_mean, which does not overflow where eager's Welford
    mean does not), then the deviations."""
    meta = node_meta(node.args[0])
    dtype = meta.dtype
    acc = torch.float64 if dtype == torch.float32 and meta.device.type == "cpu" else opmath_dtype(node)
    x = lctx.typed(node.args[0], acc)
    in_shape = shapes.shape_of(x)
    dims = _dims(node, 1, len(in_shape))
    keepdim = bool(node.kwargs.get("keepdim", False))
    correction = node.kwargs.get("correction")
    count = lctx.element_count(node.args[0], dims)
    if not isinstance(count, int) and not lctx.at_least(count, 2):
        raise UnsupportedOpError(str(node.target), "a count of symbolic size that may be 1")
    if acc == torch.float64 and dtype == torch.float32 and (not isinstance(count, int) or count >= 2):
        mean, squares = _shifted_sums(lctx, lctx.typed(node.args[0], dtype), dims, count, acc)
        if not keepdim:
            squares = b.reshape(squares, lctx.shape(node))
    else:
        # Not sum / n: 64 bfloat16 values of 3e38 sum to inf in float32, their mean does not
        mean = _row_mean(lctx, x, acc, dims, meta.shape, on_cpu=meta.device.type == "cpu")
        # One element: its deviation is 0 (NaN for inf or NaN), said as x * 0.  As x - mean,
        # a GPU kernel that computes x = a * b fuses the product into the subtraction (FP
        # contraction) and leaves the product's rounding error: var() was inf, not 0 / 0.
        one = isinstance(count, int) and count == 1
        dev = b.elementwise("mul", x, lctx.typed(0.0, acc)) if one else b.elementwise("sub", x, mean)
        squares = b.reduce("reduce_sum", b.elementwise("mul", dev, dev), dims, keepdim)
    correction = 1 if correction is None else correction
    if isinstance(count, int):
        divisor = lctx.typed(float(max(count - correction, 0)), acc)
    elif isinstance(correction, int):
        divisor = lctx.size_tensor(torch.sym_max(count - correction, 0), acc)
    else:
        raise UnsupportedOpError(str(node.target), f"correction {correction} of a count of symbolic size")
    var = b.elementwise("div", squares, divisor)
    if node.target in (aten.std.correction, aten.std_mean.correction):  # the root before rounding, as eager
        var = b.elementwise("sqrt", var)
    var = narrow_to_out(var, node)
    if node.target in (aten.var.correction, aten.std.correction):
        return var
    mean = narrow_to_out(mean, node)
    return var, mean if keepdim else b.reshape(mean, lctx.shape(node))


def _shifted_sums(
    lctx: LoweringContext, x: ir.Value, dims: list[int], count: int | torch.SymInt, acc: torch.dtype
) -> tuple[ir.Value, ir.Value]:
    """(mean, sum of squared deviations), keepdim, in one pass over `x` (float32 data,
    summed in `acc`, float64, on the CPU): the sums of d = x - k and of d * d, k each row's
    first element.  Then mean = k + s1 / n and the squares' sum is s2 - s1 * s1 / n.
    The subtraction cancels about log2(1 + (mean - k)^2 / var) of float64's 53 bits:
    float32's 24 stay exact unless k lies ~10^4 deviations from the mean, and a
    constant row's variance is exactly 0, as eager's Welford's.  Two passes read the activation
    twice: a batch norm's statistics, two kernels where one does
    (mlirc-fuse-sibling-reductions)."""
    rank = len(shapes.shape_of(x))
    kept = [dim_of(x, d) for d in range(rank)]
    # sliced before the conversion: each kernel then reads the float32 data and widens it
    wide = shapes.element_type(acc)
    pivot = b.convert(b.slice_(x, [0] * rank, [1] * rank, [1 if d in dims else n for d, n in enumerate(kept)]), wide)
    dev = b.elementwise("sub", b.convert(x, wide), pivot)
    total = b.reduce("reduce_sum", dev, dims, True)
    squared = b.reduce("reduce_sum", b.elementwise("mul", dev, dev), dims, True)
    n = lctx.size_tensor(count, acc)
    mean = b.elementwise("add", pivot, b.elementwise("div", total, n))
    squares = b.elementwise("sub", squared, b.elementwise("div", b.elementwise("mul", total, total), n))
    # rounding may leave a hair below 0, where a root would be NaN
    return mean, b.elementwise("maximum", squares, lctx.typed(0.0, acc))


def _arg_reduction(name: str):
    def lower(lctx: LoweringContext, node: fx.Node) -> ir.Value:
        x = lctx.value(node.args[0])
        dim = arg(node, 1, "dim", None)
        keepdim = arg(node, 2, "keepdim", False)
        if dim is None:  # over the flattened tensor
            x = b.reshape(x, [math.prod(shapes.shape_of(x))])
            return b.reshape(b.reduce(name, x, [0], False), lctx.shape(node))
        return b.reduce(name, x, [dim], keepdim)

    return lower


register(aten.argmax.default, check=_nonempty_extremum)(_arg_reduction("argmax"))
register(aten.argmin.default, check=_nonempty_extremum)(_arg_reduction("argmin"))


@register(aten.max.dim, aten.min.dim, check=_nonempty_extremum)
def _max_min_dim(lctx: LoweringContext, node: fx.Node) -> tuple[ir.Value, ir.Value]:
    x = lctx.value(node.args[0])
    dim, keepdim = node.args[1], arg(node, 2, "keepdim", False)
    is_max = node.target == aten.max.dim
    values = b.reduce("reduce_max" if is_max else "reduce_min", x, [dim], keepdim)
    return values, b.reduce("argmax" if is_max else "argmin", x, [dim], keepdim)


def _softmax_parts(lctx: LoweringContext, node: fx.Node) -> tuple[ir.Value, ir.Value, ir.Value]:
    """shifted = x - max(x), e = exp(shifted), total = sum(e); all keepdim over `dim`
    (a 0-d tensor as one row of one element)."""
    x = lctx.typed(node.args[0], out_dtype(node))
    rank = len(shapes.shape_of(x))
    if rank == 0:
        x = b.reshape(x, [1])
    dim = node.args[1] % max(rank, 1)
    shifted = b.elementwise("sub", x, b.reduce("reduce_max", x, [dim], True))
    e = b.elementwise("exp", shifted)
    return shifted, e, b.reduce("reduce_sum", e, [dim], True)


def _as_input_rank(value: ir.Value, node: fx.Node) -> ir.Value:
    return value if node_meta(node).dim() else b.reshape(value, [])  # a 0-d input's one row


@register(aten._softmax.default)
def _softmax(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    _, e, total = _softmax_parts(lctx, node)
    return _as_input_rank(b.elementwise("div", e, total), node)


@register(aten._log_softmax.default)
def _log_softmax(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    shifted, _, total = _softmax_parts(lctx, node)
    return _as_input_rank(b.elementwise("sub", shifted, b.elementwise("log", total)), node)


def _reshape_channels(value: ir.Value, rank: int) -> ir.Value:
    """A per-channel (dim 1) vector shaped to broadcast against an N-d activation."""
    return b.reshape(value, [1, shapes.shape_of(value)[0]] + [1] * (rank - 2))


def _row_mean(
    lctx: LoweringContext, x: ir.Value, dtype: torch.dtype, dims: list[int], shape: Sequence, on_cpu: bool
) -> ir.Value:
    """The mean over `dims` (keepdim), exact on a constant row as eager's Welford mean
    is: such a row then normalizes to exactly 0, where a rounded float32 sum / n
    leaves about 1e-4 |x|.  On the CPU, the deviations from each row's first element
    are summed (a constant row's are 0): the row loop reads that element in place
    (mlirc-fold-slice-reads), for one subtraction per element.  A GPU program holds
    its row in registers, where no element is at hand: it sums in float64, where n
    copies of a float32 add up exactly and divide back to the element itself."""
    count = lctx.count_of(shape, dims)
    if on_cpu and not lctx.at_least(count, 1) and not (isinstance(count, int) and count == 0):
        raise UnsupportedOpError("mean", "rows of a symbolic size that may be empty")
    if on_cpu and (not isinstance(count, int) or count != 0):
        rank = len(shape)
        # The kept dims read off x itself: the slice is then visibly whole there.
        kept = [dim_of(x, d) for d in range(rank)]
        pivot = b.slice_(x, [0] * rank, [1] * rank, [1 if d in dims else n for d, n in enumerate(kept)])
        deviations = b.reduce("reduce_sum", b.elementwise("sub", x, pivot), dims, True)
        return b.elementwise("add", pivot, b.elementwise("div", deviations, lctx.size_tensor(count, dtype)))
    wide = torch.float64 if dtype == torch.float32 else dtype
    total = b.reduce("reduce_sum", b.convert(x, shapes.element_type(wide)), dims, True)
    return b.convert(b.elementwise("div", total, lctx.size_tensor(count, wide)), shapes.elem_of(x))


@register(aten.native_layer_norm.default)
def _layer_norm(lctx: LoweringContext, node: fx.Node) -> tuple[ir.Value, ir.Value, ir.Value]:
    """In opmath (float32 for halves), each result rounded once, as eager's kernel."""
    dtype = opmath_dtype(node)
    x = lctx.typed(node.args[0], dtype)
    in_shape = shapes.shape_of(x)
    norm_dims = list(range(len(in_shape) - len(node.args[1]), len(in_shape)))
    count = lctx.element_count(node.args[0], norm_dims)
    meta = node_meta(node.args[0])
    mean = _row_mean(lctx, x, dtype, norm_dims, meta.shape, on_cpu=meta.device.type == "cpu")
    centered = b.elementwise("sub", x, mean)
    var = b.elementwise(
        "div",
        b.reduce("reduce_sum", b.elementwise("mul", centered, centered), norm_dims, True),
        lctx.size_tensor(count, dtype),
    )
    rstd = b.elementwise("rsqrt", b.elementwise("add", var, lctx.typed(float(node.args[4]), dtype)))
    out = b.elementwise("mul", centered, rstd)
    weight, bias = node.args[2], node.args[3]
    if weight is not None:
        out = b.elementwise("mul", out, lctx.typed(weight, dtype))
    if bias is not None:
        out = b.elementwise("add", out, lctx.typed(bias, dtype))
    results = node_meta(node)
    return tuple(b.convert(v, shapes.element_type(r.dtype)) for v, r in zip((out, mean, rstd), results, strict=True))


@register(aten._native_batch_norm_legit.no_stats, check=_float_input)
def _batch_norm_batch_statistics(lctx: LoweringContext, node: fx.Node) -> tuple[ir.Value, ir.Value, ir.Value]:
    """Normalized by the batch's own statistics (no running ones): biased variance
    over every dim but the channels; the mean and 1/std are results too.  In opmath
    (float32 for halves), each result rounded once, as eager's kernel -- which
    normalizes with the statistics it returns: rounded to float16 where they are
    float16 (no float32 weight), a 300-sized mean off by up to an eighth."""
    dtype = opmath_dtype(node)
    x = lctx.typed(node.args[0], dtype)
    in_shape = shapes.shape_of(x)
    dims = [d for d in range(len(in_shape)) if d != 1]
    count = lctx.size_tensor(lctx.element_count(node.args[0], dims), dtype)
    mean = b.elementwise("div", b.reduce("reduce_sum", x, dims, True), count)
    centered = b.elementwise("sub", x, mean)
    var = b.elementwise("div", b.reduce("reduce_sum", b.elementwise("mul", centered, centered), dims, True), count)
    rstd = b.elementwise("rsqrt", b.elementwise("add", var, lctx.typed(float(node.args[5]), dtype)))
    stats_elem = shapes.element_type(node_meta(node)[1].dtype)
    if stats_elem != shapes.elem_of(mean):
        rounded = lambda v: b.convert(b.convert(v, stats_elem), shapes.element_type(dtype))  # noqa: E731
        centered, rstd = b.elementwise("sub", x, rounded(mean)), rounded(rstd)
    out = b.elementwise("mul", centered, rstd)
    weight, bias = node.args[1], node.args[2]
    if weight is not None:
        out = b.elementwise("mul", out, _reshape_channels(lctx.typed(weight, dtype), len(in_shape)))
    if bias is not None:
        out = b.elementwise("add", out, _reshape_channels(lctx.typed(bias, dtype), len(in_shape)))
    channels = [in_shape[1]]
    results = (out, b.reshape(mean, channels), b.reshape(rstd, channels))
    return tuple(b.convert(v, shapes.element_type(r.dtype)) for v, r in zip(results, node_meta(node), strict=True))


@register(aten._native_batch_norm_legit_no_training.default)
def _batch_norm_inference(lctx: LoweringContext, node: fx.Node) -> tuple[ir.Value, ir.Value, ir.Value]:
    """In opmath (float32 for halves), rounded once, in the form of eager's kernel for
    the device.  The CPU's (ATen's batch_norm_cpu) is x * alpha + beta, alpha = weight /
    sqrt(var + eps) and beta = bias - mean * alpha per channel: two ops per element
    once mlirc-hoist-frozen has computed alpha and beta.  CUDA's is
    (x - mean) * invstd * weight + bias."""
    dtype = opmath_dtype(node)
    x = lctx.typed(node.args[0], dtype)
    rank = len(shapes.shape_of(x))
    weight, bias, running_mean, running_var = node.args[1:5]
    eps = float(node.args[6])

    def channel(v: fx.Node | None, default: float) -> ir.Value:
        return lctx.typed(default, dtype) if v is None else _reshape_channels(lctx.typed(v, dtype), rank)

    mean = channel(running_mean, 0.0)
    invstd = b.elementwise("rsqrt", b.elementwise("add", channel(running_var, 1.0), lctx.typed(eps, dtype)))
    if node_meta(node.args[0]).device.type == "cpu":
        alpha = invstd if weight is None else b.elementwise("mul", invstd, channel(weight, 1.0))
        beta = b.elementwise("sub", channel(bias, 0.0), b.elementwise("mul", mean, alpha))
        out = b.elementwise("add", b.elementwise("mul", x, alpha), beta)
    else:
        out = b.elementwise("mul", b.elementwise("sub", x, mean), invstd)
        if weight is not None:
            out = b.elementwise("mul", out, channel(weight, 1.0))
        if bias is not None:
            out = b.elementwise("add", out, channel(bias, 0.0))
    empty = b.broadcast(lctx.typed(0.0, out_dtype(node)), [0])  # inference saves no statistics: ATen's are size 0
    return narrow_to_out(out, node), empty, empty


def _float_only(node: fx.Node) -> str | None:
    return None if out_dtype(node).is_floating_point else "integer matmul"


@register(aten.mm.default, check=_float_only)
def _mm(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    dtype = out_dtype(node)
    lhs, rhs = lctx.typed(node.args[0], dtype), lctx.typed(node.args[1], dtype)
    return b.create("matmul", [lhs, rhs], shapes.torch_tensor_type(out_shape(node), dtype))


@register(aten.bmm.default, check=_float_only)
def _bmm(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    dtype = out_dtype(node)
    lhs, rhs = lctx.typed(node.args[0], dtype), lctx.typed(node.args[1], dtype)
    return b.create("batch_matmul", [lhs, rhs], shapes.torch_tensor_type(out_shape(node), dtype))


@register(aten.addmm.default, check=_float_only)
def _addmm(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    dtype = out_dtype(node)
    lhs, rhs = lctx.typed(node.args[1], dtype), lctx.typed(node.args[2], dtype)
    product = b.create("matmul", [lhs, rhs], shapes.torch_tensor_type(out_shape(node), dtype))
    beta, alpha = node.kwargs.get("beta", 1), node.kwargs.get("alpha", 1)
    if alpha != 1:
        product = b.elementwise("mul", product, lctx.typed(alpha, dtype))
    if beta == 0:  # as ATen: self is ignored, NaN or not
        return product
    bias = lctx.typed(node.args[0], dtype)
    if beta != 1:
        bias = b.elementwise("mul", bias, lctx.typed(beta, dtype))
    total = b.elementwise("add", product, bias)
    if alpha == 1 and beta == 1:
        total.owner.attributes[ADDMM_BIAS_ATTR] = ir.UnitAttr.get()
    return total


@register(aten.addbmm.default, check=_float_only)
def _addbmm(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    """beta * self + alpha * sum over the batch of batch1 @ batch2: one GEMM over
    K = batch x k (the batch sum inside its accumulator), with self added before the
    one rounding to a half type, as ATen's fused GEMM does."""
    dtype = opmath_dtype(node)
    lhs, rhs = lctx.typed(node.args[1], dtype), lctx.typed(node.args[2], dtype)
    batch, rows, inner = node_meta(node.args[1]).shape
    cols = out_shape(node)[1]
    lhs = b.reshape(b.permute(lhs, [1, 0, 2]), [rows, batch * inner])
    rhs = b.reshape(rhs, [batch * inner, cols])
    total = b.create("matmul", [lhs, rhs], shapes.torch_tensor_type((rows, cols), dtype))
    beta, alpha = node.kwargs.get("beta", 1), node.kwargs.get("alpha", 1)
    if alpha != 1:
        total = b.elementwise("mul", total, lctx.typed(alpha, dtype))
    if beta == 0:  # as ATen: self is ignored, NaN or not
        return narrow_to_out(total, node)
    bias = lctx.typed(node.args[0], dtype)
    if beta != 1:
        bias = b.elementwise("mul", bias, lctx.typed(beta, dtype))
    return narrow_to_out(b.elementwise("add", total, bias), node)


def _conv_check(node: fx.Node) -> str | None:
    if node.args[6]:
        return "transposed convolution"
    if len(node_meta(node.args[0]).shape) not in (3, 4):
        return "only 1-D and 2-D convolution"
    return _float_only(node)


@register(aten.convolution.default, check=_conv_check)
def _convolution(lctx: LoweringContext, node: fx.Node) -> ir.Value:
    dtype = out_dtype(node)
    x, weight = lctx.typed(node.args[0], dtype), lctx.typed(node.args[1], dtype)
    # ATen repeats a one-entry stride/padding/dilation over every spatial dim
    # (EfficientNet's convolutions pass padding=[0])
    spatial = len(shapes.shape_of(x)) - 2
    stride, padding, dilation = (
        list(node.args[i]) * spatial if len(node.args[i]) == 1 else list(node.args[i]) for i in (3, 4, 5)
    )
    if spatial == 1:  # 1-D: a 2-D convolution over a height of 1
        x, weight = (b.reshape(v, [*shapes.shape_of(v)[:2], 1, shapes.shape_of(v)[2]]) for v in (x, weight))
        stride, padding, dilation = [1, *stride], [0, *padding], [1, *dilation]
        shape = out_shape(node)
        out = _convolution_2d(lctx, node, x, weight, stride, padding, dilation, [shape[0], shape[1], 1, shape[2]])
        return b.reshape(out, list(shape))
    return _convolution_2d(lctx, node, x, weight, stride, padding, dilation, list(out_shape(node)))


def _convolution_2d(
    lctx: LoweringContext, node: fx.Node, x: ir.Value, weight: ir.Value, stride: list[int],
    padding: list[int], dilation: list[int], shape: list[int],
) -> ir.Value:  # fmt: skip
    dtype = out_dtype(node)
    result_type = shapes.torch_tensor_type(shape, dtype)
    out = b.create(
        "conv2d", [x, weight], result_type, stride=stride, padding=padding, dilation=dilation, groups=int(node.args[8])
    )
    if node.args[2] is not None:
        out = b.elementwise("add", out, _reshape_channels(lctx.typed(node.args[2], dtype), 4))
    return out
