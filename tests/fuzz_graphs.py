"""A differential fuzzer: random graphs compiled with mlirc against eager PyTorch.

    python tests/fuzz_graphs.py --count 2000 --seed 1            # CPU
    python tests/fuzz_graphs.py --count 500 --device cuda --jobs 8
    python tests/fuzz_graphs.py --replay 17 --seed 1             # print one graph, run it
    python tests/fuzz_graphs.py --count 500 --dynamic            # compiled with dynamic=True
    python tests/fuzz_graphs.py --count 500 --half               # float16/bfloat16 graphs

Each graph is 1-12 ops drawn from what mlirc lowers (elementwise, reductions,
views, indexing, scatters, scans, GEMMs, convolutions, pooling, norms, casts), on
inputs of random shapes (0, 1, primes, large), dtypes and layouts (transposed,
sliced, expanded, channels_last, overlapping, offset), with IEEE special values
mixed in and indices sometimes out of range.  A graph passes when the compiled
function raises what eager raises, or returns the same values: exactly for
integers and bools, and for floats within 1e-4 or no further from a float64 run of
the same graph than eager is.  Output strides are compared too.

With --half, inputs are mostly float16 and bfloat16, of magnitudes (up to 1000,
around 300) and sizes (up to 4099) whose sums leave float16's range, and the graphs
draw the reductions half-precision models run (RMS and batch norms, losses,
log-softmax, global pooling); answers are compared at the half types' tolerances.

A failure is minimized (intermediate values become inputs until no step can go)
and printed as a standalone repro; tests/test_fuzz.py keeps the regressions.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import fuzz_oracle
import torch
import torch.nn.functional as F
from fuzz_minimize import minimize
from fuzz_oracle import Graph, check, provoked

SIZES = [1, 1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 64, 127]
BIG_SIZES = [257, 1000, 1031, 4099]
FLOAT_SPECIALS = [0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e-40, -1e-40, 1e30, -1e30, 1e-30]
DTYPES = [torch.float32] * 5 + [torch.float64] * 2 + [torch.int64, torch.int32, torch.bool]
# --half: half-precision graphs, of values whose sums leave float16's range (300 x 4099)
HALF_DTYPES = [torch.float16] * 3 + [torch.bfloat16] * 3 + [torch.float32, torch.int64, torch.bool]
HALF_SCALES = [1.0, 3.0, 100.0, 300.0, 1000.0]
HALF_WEIGHTS = {"reduction": 2.0, "norm": 4.0}  # the templates --half draws more often


# ------------------------------------------------------------------ inputs


class Builder:
    """Grows a graph one op at a time, running each step eagerly as it is added
    (so every op is given arguments eager accepts, or deliberately ones it rejects)."""

    def __init__(self, rng: random.Random, device: str, half: bool = False) -> None:
        self.rng = rng
        self.device = device
        self.half = half
        self.dtypes = HALF_DTYPES if half else DTYPES
        self.graph = Graph([])
        self.env: dict[str, torch.Tensor] = {}
        self.failed = False  # the last step raises in eager: the graph ends there

    # -- inputs --------------------------------------------------------------------

    def shape(self, rank: int | None = None) -> list[int]:
        rng = self.rng
        rank = rng.choice([0, 1, 1, 2, 2, 2, 3, 3, 4]) if rank is None else rank
        shape = [rng.choice(SIZES) for _ in range(rank)]
        if shape and rng.random() < 0.06:
            shape[rng.randrange(rank)] = 0
        if shape and rng.random() < (0.3 if self.half else 0.1):
            shape[rng.randrange(rank)] = rng.choice(BIG_SIZES)
        while math.prod(shape) > 300_000:
            shape[shape.index(max(shape))] //= 4
        return shape

    def values(self, shape: list[int], dtype: torch.dtype) -> torch.Tensor:
        rng = self.rng
        if dtype == torch.bool:
            return torch.rand(shape) < 0.5
        if not dtype.is_floating_point:
            info = torch.iinfo(dtype)
            if rng.random() < 0.1:
                return torch.randint(info.min, info.max, shape, dtype=dtype)
            return torch.randint(-20, 20, shape, dtype=dtype)
        if dtype in (torch.float16, torch.bfloat16):  # drawn in float32, rounded once
            offset = rng.choice([0.0, 0.0, 300.0])
            return (torch.randn(shape) * rng.choice(HALF_SCALES) + offset).to(dtype)
        x = torch.randn(shape, dtype=dtype) * rng.choice([1.0, 1.0, 3.0, 1e-3, 100.0])
        if x.numel() and rng.random() < 0.25:
            mask = torch.rand(shape) < 0.15
            specials = torch.tensor(FLOAT_SPECIALS, dtype=dtype)
            x = torch.where(mask, specials[torch.randint(0, len(FLOAT_SPECIALS), shape)], x)
        return x

    def layout(self, x: torch.Tensor) -> torch.Tensor:
        """`x`'s values in a random layout (a view of some larger or permuted storage)."""
        rng = self.rng
        kind = rng.choice(["contiguous"] * 5 + ["transposed", "sliced", "offset", "expanded", "channels_last"])
        if kind == "transposed" and x.dim() >= 2:
            perm = list(range(x.dim()))
            rng.shuffle(perm)
            inverse = [perm.index(d) for d in range(x.dim())]
            return x.permute(perm).contiguous().permute(inverse)
        if kind == "sliced" and x.dim() >= 1:
            d = rng.randrange(x.dim())
            big = torch.repeat_interleave(x, 2, dim=d)  # every other element is x's
            return big.narrow(d, 0, big.shape[d]).unflatten(d, (x.shape[d], 2)).select(d + 1, 0)
        if kind == "offset":
            flat = torch.cat([torch.zeros(3, dtype=x.dtype, device=x.device), x.reshape(-1)])
            return flat[3:].view(x.shape)
        if kind == "expanded" and x.dim() >= 1 and x.numel():
            d = rng.randrange(x.dim())
            return x.narrow(d, 0, 1).expand(x.shape)
        if kind == "channels_last" and x.dim() == 4:
            return x.contiguous(memory_format=torch.channels_last)
        return x

    def add_input(self, x: torch.Tensor, with_layout: bool = True) -> str:
        x = x.to(self.device)
        if with_layout:
            x = self.layout(x)
        name = f"a{len(self.graph.inputs)}"
        self.graph.inputs.append(x)
        self.env[name] = x
        return name

    def new_input(self, dtype: torch.dtype | None = None, shape: list[int] | None = None) -> str:
        dtype = dtype or self.rng.choice(self.dtypes)
        return self.add_input(self.values(shape if shape is not None else self.shape(), dtype))

    def index_input(self, size: int, shape: list[int], wraps: bool) -> str:
        """An int64 index tensor into a dim of `size`: in range (negative where the op
        wraps), now and then one element out of range."""
        low = -size if wraps else 0
        if size == 0:
            idx = torch.zeros(shape, dtype=torch.int64)
        else:
            idx = torch.randint(low, size, shape)
        # A bad index on a GPU is a device-side assert, as in eager, which poisons the
        # process: tests/test_gpu_errors.py checks those in child processes.
        if idx.numel() and self.rng.random() < 0.08 and self.device == "cpu":
            idx.view(-1)[self.rng.randrange(idx.numel())] = self.rng.choice([size, size + 3, low - 1])
        return self.add_input(idx, with_layout=self.rng.random() < 0.3)

    # -- steps ------------------------------------------------------------------------

    def pick(self, accept: Callable[[torch.Tensor], bool] = lambda t: True) -> str | None:
        names = [n for n, t in self.env.items() if accept(t)]
        return self.rng.choice(names) if names else None

    def emit(self, expr: str) -> str | None:
        """Add `name = expr` if eager runs it; a deliberate error ends the graph."""
        name = f"t{len(self.graph.steps)}"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = eval(expr, {"torch": torch, "F": F, "math": math}, dict(self.env))  # noqa: S307
        except (IndexError, RuntimeError, ValueError, ZeroDivisionError, TypeError) as err:
            if provoked(err):
                self.graph.steps.append((name, expr))
                self.failed = True
                return name
            return None
        if not isinstance(value, torch.Tensor) or value.numel() > 2_000_000:
            return None
        self.graph.steps.append((name, expr))
        self.env[name] = value
        return name


# ------------------------------------------------------------------ op templates

Template = Callable[[Builder], str | None]
TEMPLATES: list[tuple[float, Template]] = []


def template(weight: float = 1.0) -> Callable[[Template], Template]:
    def wrap(fn: Template) -> Template:
        TEMPLATES.append((weight, fn))
        return fn

    return wrap


def _is_float(t: torch.Tensor) -> bool:
    return t.dtype.is_floating_point


def _is_int(t: torch.Tensor) -> bool:
    return t.dtype in (torch.int32, torch.int64)


FLOAT_UNARY = (
    "torch.exp({})", "torch.log({})", "torch.sin({})", "torch.cos({})", "torch.tanh({})", "torch.sigmoid({})",
    "torch.relu({})", "torch.abs({})", "torch.neg({})", "torch.sqrt({})", "torch.rsqrt({})", "torch.erf({})",
    "torch.floor({})", "torch.ceil({})", "torch.round({})", "torch.sign({})", "torch.reciprocal({})",
    "torch.expm1({})", "torch.log1p({})", "F.gelu({})", "F.silu({})", "torch.square({})", "torch.trunc({})",
    "torch.frac({})", "torch.asinh({})", "torch.atan({})", "torch.log2({})", "torch.exp2({})", "torch.isnan({})",
    "torch.isinf({})", "F.gelu({}, approximate='tanh')", "F.softplus({})", "F.elu({})",
    "F.leaky_relu({}, 0.1)", "F.hardtanh({})", "torch.nan_to_num({})", "torch.erfc({})", "torch.lgamma({})",
)  # fmt: skip
INT_UNARY = ("torch.abs({})", "torch.neg({})", "torch.sign({})", "torch.bitwise_not({})", "torch.square({})")


@template(3.0)
def unary(b: Builder) -> str | None:
    x = b.pick()
    if x is None:
        return None
    t = b.env[x]
    if t.dtype == torch.bool:
        return b.emit(b.rng.choice(["torch.logical_not({})", "~{}", "{}.int()"]).format(x))
    forms = FLOAT_UNARY if _is_float(t) else INT_UNARY
    return b.emit(b.rng.choice(forms).format(x))


BINARY = ("{} + {}", "{} - {}", "{} * {}", "{} / {}", "torch.maximum({}, {})", "torch.minimum({}, {})",
          "{} == {}", "{} < {}", "{} >= {}", "{} != {}", "torch.atan2({}, {})", "torch.fmod({}, {})",
          "torch.remainder({}, {})", "{} // {}", "torch.pow({}, {})", "torch.hypot({}, {})", "torch.fmax({}, {})",
          "torch.logical_and({}, {})", "torch.logical_xor({}, {})")  # fmt: skip
INT_BINARY = ("{} & {}", "{} | {}", "{} ^ {}")
SCALARS = ["0", "1", "-1", "2", "3", "0.5", "-2.5", "1e-3", "7", "1e30", "float('inf')", "float('nan')", "2**31"]


def _broadcastable(a: torch.Tensor, c: torch.Tensor) -> bool:
    try:
        torch.broadcast_shapes(a.shape, c.shape)
    except RuntimeError:
        return False
    return True


@template(4.0)
def binary(b: Builder) -> str | None:
    x = b.pick()
    if x is None:
        return None
    t = b.env[x]
    if b.rng.random() < 0.3:
        other = b.rng.choice(SCALARS)
    else:
        other = b.pick(lambda c: _broadcastable(t, c))
        if other is None or b.rng.random() < 0.3:  # a fresh operand of a broadcasting shape
            shape = [d if b.rng.random() < 0.7 else 1 for d in t.shape][b.rng.randrange(t.dim() + 1) :]
            other = b.new_input(b.rng.choice([t.dtype, t.dtype, torch.float32, torch.int64]), shape)
    forms = BINARY + (INT_BINARY if not _is_float(t) else ())
    if b.device != "cpu" and not _is_float(t):  # eager's CUDA integer division by 0 is not an error
        forms = tuple(f for f in forms if "//" not in f and "fmod" not in f and "remainder" not in f)
    form = b.rng.choice(forms)
    return b.emit(form.format(*((x, other) if b.rng.random() < 0.8 else (other, x))))


@template(1.5)
def where(b: Builder) -> str | None:
    x = b.pick()
    if x is None:
        return None
    cond = f"({x} > 0)" if b.env[x].dtype != torch.bool else x
    other = b.pick(lambda c: _broadcastable(b.env[x], c)) or b.rng.choice(SCALARS)
    return b.emit(f"torch.where({cond}, {x}, {b.rng.choice([other, '0.5', '-1'])})")


@template(0.8)
def clamp(b: Builder) -> str | None:
    x = b.pick(lambda t: t.dtype != torch.bool)
    if x is None:
        return None
    low, high = sorted(b.rng.sample([-3, -1, 0, 1, 2, 5], 2))
    form = b.rng.choice([f"{x}.clamp({low}, {high})", f"{x}.clamp(min={low})", f"{x}.clamp(max={high})"])
    return b.emit(form)


@template(0.8)
def cast(b: Builder) -> str | None:
    x = b.pick()
    dtypes = ["torch.float32", "torch.float64", "torch.int32", "torch.int64", "torch.bool"]
    dtypes += ["torch.float16", "torch.bfloat16"] * 2 if b.half else []
    dtype = b.rng.choice(dtypes)
    return None if x is None else b.emit(f"{x}.to({dtype})")


def _dims(b: Builder, t: torch.Tensor) -> str:
    if t.dim() == 0 or b.rng.random() < 0.25:
        return ""
    dims = sorted(b.rng.sample(range(t.dim()), b.rng.randint(1, t.dim())))
    dims = [d - t.dim() if b.rng.random() < 0.3 else d for d in dims]
    return f"{dims}" if len(dims) > 1 or b.rng.random() < 0.5 else f"{dims[0]}"


@template(3.0)
def reduction(b: Builder) -> str | None:
    x = b.pick()
    if x is None:
        return None
    t = b.env[x]
    dims, keep = _dims(b, t), b.rng.choice(["", ", keepdim=True"])
    if dims == "":
        keep = ""
    sep = ", " if dims else ""
    forms = [f"{x}.sum({dims}{keep})", f"{x}.amax({dims}{keep})", f"{x}.amin({dims}{keep})"]
    if _is_float(t):
        forms += [f"{x}.mean({dims}{keep})", f"{x}.var({dims}{keep})", f"{x}.std({dims}{keep})"]
        if dims:
            forms += [f"torch.logsumexp({x}, {dims}{keep})"]
    if t.dim() and dims and "[" not in dims:
        forms += [f"{x}.argmax({dims}{keep})", f"{x}.argmin({dims}{keep})", f"torch.cumsum({x}, {dims})"]
        if _is_float(t):
            forms += [f"torch.softmax({x}, {dims})", f"torch.log_softmax({x}, {dims})"]
        forms += [f"{x}.max({dims}{keep}).values", f"{x}.min({dims}{keep}).indices"]
    forms += [f"{x}.any({dims}{sep[:0]}{keep})" if dims and "[" not in dims else f"{x}.any()"]
    if t.numel() <= 64:
        forms.append(f"{x}.prod({dims}{keep})" if dims and "[" not in dims else f"{x}.prod()")
    return b.emit(b.rng.choice(forms))


@template(3.0)
def view(b: Builder) -> str | None:
    x = b.pick()
    if x is None:
        return None
    t, rng = b.env[x], b.rng
    rank = t.dim()
    forms = [
        f"{x}.reshape(-1)",
        f"{x}.unsqueeze({rng.randint(-rank - 1, rank)})",
        f"{x}.flip({[rng.randrange(max(rank, 1))]})",
    ]
    if rank >= 1:
        d = rng.randrange(rank)
        size = t.shape[d]
        start, step = rng.randint(0, max(size - 1, 0)), rng.choice([1, 1, 2, 3])
        stop = rng.randint(start, size)
        slices = ", ".join([":"] * d + [f"{start}:{stop}:{step}"])
        forms += [
            f"{x}[{slices}]",
            f"{x}.squeeze({d})",
            f"{x}.flatten({d})",
            f"{x}.transpose({d}, {rng.randrange(rank)})",
        ]
        if size:
            forms += [f"{x}.select({d}, {rng.randrange(-size, size)})", f"{x}.narrow({d}, 0, {rng.randint(0, size)})"]
        if t.numel():
            factor = _a_factor(t.shape[-1], rng)
            forms.append(f"{x}.reshape({list(t.shape[:-1]) + [factor, -1]})")
    if rank >= 2:
        perm = list(range(rank))
        rng.shuffle(perm)
        forms += [f"{x}.permute({perm})", f"{x}.mT", f"torch.tril({x})", f"torch.triu({x}, 1)"]
    ones = [d for d in range(rank) if t.shape[d] == 1]
    if ones:
        shape = list(t.shape)
        shape[rng.choice(ones)] = rng.choice([2, 5, 17])
        forms.append(f"{x}.expand({shape})")
    if rank <= 3:
        forms.append(f"{x}.unsqueeze(0).expand({[3, *t.shape]})")
    forms += [f"{x}.contiguous()", f"{x}.clone()"]
    return b.emit(rng.choice(forms))


def _a_factor(n: int, rng: random.Random) -> int:
    return rng.choice([f for f in range(1, n + 1) if n % f == 0] or [1])


@template(1.2)
def join(b: Builder) -> str | None:
    x = b.pick(lambda t: t.dim() >= 1)
    if x is None:
        return None
    t = b.env[x]
    d = b.rng.randrange(t.dim())
    same = b.pick(lambda c: c.dim() == t.dim() and all(c.shape[i] == t.shape[i] for i in range(t.dim()) if i != d))
    if same is None or b.env[same].dtype != t.dtype:
        return None
    forms = [f"torch.cat([{x}, {same}], {d})"]
    if b.env[same].shape == t.shape:
        forms.append(f"torch.stack([{x}, {same}], {d})")
    pad = [b.rng.randint(0, 2) for _ in range(2 * min(t.dim(), 2))]
    if _is_float(t):
        forms.append(f"F.pad({x}, {pad}, value={b.rng.choice(['0.0', '-1.5'])})")
    return b.emit(b.rng.choice(forms))


@template(2.0)
def indexing(b: Builder) -> str | None:
    x = b.pick(lambda t: t.dim() >= 1)
    if x is None:
        return None
    t, rng = b.env[x], b.rng
    if not t.numel() and b.device != "cpu":  # any index into it is out of range (a device assert)
        return None
    d = rng.randrange(t.dim())
    size = t.shape[d]
    count = rng.choice([1, 3, 7, 20])
    kind = rng.choice(["getitem", "getitem2", "index_select", "gather", "take", "embedding", "scatter_add", "index_add", "index_put", "index_fill"])  # fmt: skip
    if kind == "getitem":
        i = b.index_input(size, [count], wraps=True)
        return b.emit(f"{x}[{', '.join([':'] * d + [i])}]")
    if kind == "getitem2" and t.dim() >= 2:
        i, j = b.index_input(t.shape[0], [count], True), b.index_input(t.shape[1], [count], True)
        return b.emit(f"{x}[{i}, {j}]")
    if kind == "index_select":
        return b.emit(f"torch.index_select({x}, {d}, {b.index_input(size, [count], wraps=False)})")
    if kind == "gather":
        shape = [min(s, rng.choice([1, 2, s])) for s in t.shape]
        shape[d] = count
        return b.emit(f"torch.gather({x}, {d}, {b.index_input(size, shape, wraps=False)})")
    if kind == "take":
        return b.emit(f"torch.take({x}, {b.index_input(t.numel(), [count], wraps=True)})")
    if kind == "embedding" and t.dim() == 2 and _is_float(t):
        return b.emit(f"F.embedding({b.index_input(t.shape[0], [2, count], wraps=False)}, {x})")
    if kind in ("scatter_add", "index_add") and t.numel() <= 4096 and t.dtype != torch.bool:
        src = b.new_input(t.dtype, list(t.shape))
        if kind == "scatter_add":
            return b.emit(f"{x}.scatter_add({d}, {b.index_input(size, list(t.shape), wraps=False)}, {src})")
        return b.emit(f"{x}.index_add({d}, {b.index_input(size, [size], wraps=False)}, {src})")
    if kind == "index_put" and t.numel() <= 4096:
        i = b.index_input(t.shape[0], [count], wraps=True)
        value = b.rng.choice(["1.0", "-2.0"]) if _is_float(t) else "1"
        return b.emit(
            f"{x}.index_put(({i},), torch.tensor({value}, dtype={x}.dtype, device={x}.device), accumulate={rng.random() < 0.5})"
        )
    if kind == "index_fill" and t.numel() <= 4096 and t.dtype != torch.bool:
        return b.emit(f"{x}.index_fill({d}, {b.index_input(size, [count], wraps=True)}, 2)")
    return None


@template(1.2)
def matmul(b: Builder) -> str | None:
    x = b.pick(lambda t: _is_float(t) and 1 <= t.dim() <= 3 and t.shape[-1] > 0)
    if x is None:
        return None
    t = b.env[x]
    n = b.rng.choice([1, 3, 16, 33])
    w = b.new_input(t.dtype, [n, t.shape[-1]])
    forms = [f"F.linear({x}, {w})", f"{x} @ {w}.t()"]
    if t.dim() == 3:
        w3 = b.new_input(t.dtype, [t.shape[0], t.shape[-1], n])
        forms.append(f"torch.bmm({x}, {w3})")
    return b.emit(b.rng.choice(forms))


@template(0.8)
def conv_pool(b: Builder) -> str | None:
    x = b.pick(lambda t: _is_float(t) and t.dim() == 4 and min(t.shape) >= 1 and min(t.shape[2:]) >= 3)
    if x is None:
        if b.rng.random() < 0.5:
            shape = [b.rng.choice([1, 2]), b.rng.choice([1, 3, 8]), b.rng.choice([5, 8, 13]), b.rng.choice([5, 7, 16])]
            x = b.new_input(torch.float32, shape)
        else:
            return None
    t, rng = b.env[x], b.rng
    c = t.shape[1]
    kind = rng.choice(["conv", "maxpool", "avgpool", "bn", "adaptive"])
    if kind == "conv":
        out = rng.choice([1, 4, 8])
        w = b.new_input(t.dtype, [out, c, 3, 3])
        return b.emit(f"F.conv2d({x}, {w}, stride={rng.choice([1, 2])}, padding={rng.choice([0, 1])})")
    if kind == "maxpool":
        return b.emit(f"F.max_pool2d({x}, {rng.choice([2, 3])}, stride={rng.choice([1, 2])}, padding=1)")
    if kind == "avgpool":
        return b.emit(f"F.avg_pool2d({x}, 2, ceil_mode={rng.random() < 0.5})")
    if kind == "bn":
        mean, var = b.new_input(t.dtype, [c]), b.add_input(torch.rand(c, dtype=t.dtype) + 0.5)
        return b.emit(f"F.batch_norm({x}, {mean}, {var}, training=False)")
    return b.emit(f"F.adaptive_avg_pool2d({x}, 1)")


@template(1.0)
def norm(b: Builder) -> str | None:
    x = b.pick(lambda t: _is_float(t) and t.dim() >= 1 and t.shape[-1] > 0)
    if x is None:
        return None
    t = b.env[x]
    forms = [f"F.layer_norm({x}, [{t.shape[-1]}])", f"F.normalize({x}, dim=-1)", f"F.softmax({x}, -1)"]
    if b.half:  # the reductions a half-precision model runs (and eager's losses that round per op)
        forms += [
            f"F.rms_norm({x}, [{t.shape[-1]}])",
            f"{x} * torch.rsqrt({x}.pow(2).mean(-1, keepdim=True) + 1e-6)",
            f"F.log_softmax({x}, -1)",
            f"torch.logsumexp({x}, -1)",
            f"F.mse_loss({x}, {x}.flip(-1))",
            f"F.l1_loss({x}, {x}.flip(-1))",
            f"F.smooth_l1_loss({x}, {x}.flip(-1), beta={b.rng.choice([1.0, 100.0])})",
            f"{x}.norm(dim=-1)",
        ]
        if t.dim() >= 2 and t.shape[1] > 0:
            forms += [f"F.batch_norm({x}, None, None, training=True)"] if t.numel() > t.shape[1] else []
            forms += [f"F.group_norm({x}, 1)"]
        if t.dim() in (3, 4):
            forms += [f"F.adaptive_avg_pool{t.dim() - 2}d({x}, 1)"]
    return b.emit(b.rng.choice(forms))


@template(0.7)
def masked(b: Builder) -> str | None:
    x = b.pick(lambda t: t.dtype != torch.bool)
    if x is None:
        return None
    value = b.rng.choice(["0", "-1", "3"]) if not _is_float(b.env[x]) else b.rng.choice(["0.0", "float('-inf')", "2.5"])
    return b.emit(f"{x}.masked_fill({x} > 1, {value})")


# ------------------------------------------------------------------ generation


def generate(seed: int, device: str = "cpu", half: bool = False) -> Graph:
    rng = random.Random(seed)
    torch.manual_seed(seed)
    b = Builder(rng, device, half)
    for _ in range(rng.choice([1, 1, 2])):
        b.new_input()
    length = rng.randint(1, 12)
    weights = [w * (HALF_WEIGHTS.get(fn.__name__, 1.0) if half else 1.0) for w, fn in TEMPLATES]
    tries = 0
    while len(b.graph.steps) < length and not b.failed and tries < 60:
        tries += 1
        _, fn = rng.choices(TEMPLATES, weights)[0]
        fn(b)
    steps = [name for name, _ in b.graph.steps]
    if not steps:
        b.graph.steps.append(("t0", "a0 * 2" if b.graph.inputs[0].dtype != torch.bool else "a0 | a0"))
        steps = ["t0"]
    outputs = [steps[-1]] + rng.sample(steps[:-1], min(len(steps) - 1, rng.choice([0, 0, 1, 2])))
    b.graph.outputs = outputs
    return b.graph


# ------------------------------------------------------------------ driver


@dataclass
class Report:
    graphs: int = 0
    raised_both: int = 0
    failures: list[tuple[int, str, str]] = field(default_factory=list)  # (seed, problem, repro)


def fuzz(
    count: int, seed: int, device: str = "cpu", minimize_failures: bool = True, log=None, half: bool = False
) -> Report:
    report = Report()
    for i in range(count):
        graph_seed = seed * 1_000_003 + i
        graph = generate(graph_seed, device, half)
        problem = check(graph)
        report.graphs += 1
        if problem is None:
            continue
        if minimize_failures:
            graph = minimize(graph, lambda g: check(g) is not None)
            problem = check(graph) or problem
        report.failures.append((graph_seed, problem, graph.repro()))
        if log:
            log(f"graph {graph_seed}: {problem.splitlines()[0][:300]}")
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--replay", type=int, help="print and check one graph (its seed as the fuzzer printed it)")
    parser.add_argument("--no-minimize", action="store_true")
    parser.add_argument("--dynamic", action="store_true", help="compile with dynamic=True (symbolic sizes)")
    parser.add_argument("--half", action="store_true", help="float16/bfloat16 graphs whose sums leave float16's range")
    args = parser.parse_args()
    fuzz_oracle.DYNAMIC = args.dynamic
    # float32 convolutions in float32: with cuDNN's default TF32 the answer depends on the
    # algorithm cuDNN picks (eager's NCHW and mlirc's channels-last ones differed by 4e-4
    # on a 3x3 convolution), which says nothing about mlirc's own code
    torch.backends.cudnn.allow_tf32 = False
    import mlirc  # noqa: F401 - registers the backend

    if args.replay is not None:
        graph = generate(args.replay, args.device, args.half)
        problem = check(graph)
        if problem and not args.no_minimize:
            graph = minimize(graph, lambda g: check(g) is not None)
            problem = check(graph)
        print(graph.repro())
        print(problem or "agrees with eager")
        return 0
    started = time.monotonic()
    report = fuzz(
        args.count, args.seed, args.device, not args.no_minimize, log=lambda m: print(m, flush=True), half=args.half
    )
    for graph_seed, problem, repro in report.failures:
        print(f"\n==== graph {graph_seed}: {problem}\n{repro}")
    print(
        f"\n{report.graphs}{' half-precision' if args.half else ''} graphs on {args.device} (seed {args.seed})"
        f" in {time.monotonic() - started:.0f} s:"
        f" {len(report.failures)} mismatches"
    )
    if args.dynamic:  # which path the symbolic graphs took (frontend/compile.py SymbolicRegion)
        print(mlirc.stats().summary().splitlines()[0])
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
