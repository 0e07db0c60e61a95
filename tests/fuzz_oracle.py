"""The fuzzer's oracle: is mlirc's answer to a graph eager's answer, or eager's error?

A graph's program runs eagerly, compiled with mlirc, and in float64 (perturbed, and
with the steps where eager's float32 algorithm broke down replaced): mlirc passes where
it raises what eager raises, or returns values equal to eager's for integers and
bools and, for floats, within 1e-4 or no further from the float64 run than eager is,
anything where the float64 runs show the output to be ill-conditioned.  Output
strides are eager's or the ones torch.compile promises.  tests/fuzz_graphs.py makes
the graphs.
"""

from __future__ import annotations

import math
import re
import traceback
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from mlirc.dialects.layouts import same_strides

# ------------------------------------------------------------------ a graph


@dataclass
class Graph:
    """A straight-line program: `steps` are `name = expression` lines over the
    inputs (a0, a1, ...) and earlier names; `outputs` are returned."""

    inputs: list[torch.Tensor]
    steps: list[tuple[str, str]] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)

    def source(self, hooked: bool = False) -> str:
        args = ", ".join(f"a{i}" for i in range(len(self.inputs)))
        body = [
            f"    {name} = _hook({name!r}, {expr})" if hooked else f"    {name} = {expr}" for name, expr in self.steps
        ]
        return "\n".join([f"def graph({args}):", *body, f"    return ({', '.join(self.outputs)},)"])

    def function(self, hook: Callable[[str, Any], Any] | None = None) -> Callable:
        """The program; `hook(name, value)` (eager runs only) sees and may replace each step's value."""
        scope = {"torch": torch, "F": F, "math": math, "_hook": hook}
        exec(compile(self.source(hook is not None), "<fuzz-graph>", "exec"), scope)  # noqa: S102 - our own program
        return scope["graph"]

    def slice(self, output: str) -> Graph:
        """The steps `output` depends on, and only it as the output."""
        needed, steps = {output}, []
        for name, expr in reversed(self.steps):
            if name in needed:
                steps.append((name, expr))
                needed |= set(re.findall(r"\b[at]\d+\b", expr))
        return Graph(inputs=self.inputs, steps=steps[::-1], outputs=[output])

    def repro(self) -> str:
        """A standalone script that reproduces the graph on its inputs."""
        lines = ["import torch, torch.nn.functional as F, math, mlirc", "", self.source(), "", "inputs = ["]
        for x in self.inputs:
            lines.append(f"    {_tensor_code(x)}")
        lines += [
            "]",
            "expected = graph(*inputs)",
            'actual = torch.compile(graph, backend="mlirc")(*inputs)',
            "for e, a in zip(expected, actual):",
            "    torch.testing.assert_close(a, e, equal_nan=True)",
        ]
        return "\n".join(lines)


def _tensor_code(x: torch.Tensor) -> str:
    base = x.contiguous()
    values = base.tolist() if base.numel() <= 64 else None
    notes = []
    if values is None:
        text = f"torch.randn({list(base.shape)}).to({x.dtype})"
        notes.append(f"{base.numel()} values, not spelled out: --replay the seed for them")
    else:
        text = f"torch.tensor({values!r}, dtype={x.dtype}).reshape({list(base.shape)})"
        text = text.replace("nan", "float('nan')").replace("inf", "float('inf')")
    if not x.is_contiguous() or x.storage_offset():
        text += f".as_strided({list(x.shape)}, {list(x.stride())})"
        notes.append("the fuzzed layout; check the storage size")
    return text + ("," + "  # " + "; ".join(notes) if notes else ",")


def _both_index_errors(expected: BaseException, actual: BaseException) -> bool:
    """A bad index, reported as IndexError by one of eager's paths and RuntimeError by
    another (index_add's type depends on the tensor's layout and dtype):
    tests/test_eager_errors.py pins the type of the common cases."""
    kinds = (IndexError, RuntimeError)
    return (
        isinstance(expected, kinds)
        and isinstance(actual, kinds)
        and "mlirc: aten." in str(actual)
        and provoked(expected)
    )


def provoked(err: Exception) -> bool:
    """The errors the fuzzer provokes on purpose (bad indices, integer division by zero)."""
    text = str(err)
    return any(k in text for k in ("out of bounds", "out of range", "ZeroDivisionError", "invalid max index"))


# ------------------------------------------------------------------ checking


@dataclass
class Outcome:
    values: tuple | None = None
    error: BaseException | None = None


def _run(fn: Callable, inputs: list[torch.Tensor]) -> Outcome:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            values = fn(*inputs)
            if inputs and inputs[0].is_cuda:
                torch.cuda.synchronize()
        return Outcome(values=values)
    except Exception as err:  # noqa: BLE001 - the type is compared
        return Outcome(error=err)


def _float64_reference(
    graph: Graph,
    wobble: float = 0.0,
    step_dtypes: dict[str, torch.dtype] | None = None,
    inputs_too: bool = True,
    widen: bool = True,
    substitute: dict[str, tuple[torch.Tensor, float]] | None = None,
    record: dict[str, Any] | None = None,
) -> tuple | None:
    """The graph in float64, its float inputs optionally perturbed by `wobble`
    (relative): where that moves an output by more than the comparison's tolerance,
    the output is ill-conditioned there (a sum of +1e30 and -1e30, a cast of a value
    next to an integer) and float32 results may differ in any way.

    Each float step is perturbed too, by a few ulps (of the dtype eager computes it in)
    of the step's magnitude, as a rounding error of its operands would move it
    (STEP_WOBBLE, with the sign of `wobble`; a log_softmax near 0 is a cancellation of
    operands far larger than itself): a remainder or a comparison of an
    intermediate one rounding from a multiple or from 0 flips with the intermediate's
    rounding, which no input perturbation shows when the step barely depends on its
    inputs (a softmax of 1e-3-sized logits).  Near 0 likewise: a cancellation (x - mean, a running sum) that lands on 0
    in one summation order is a rounding's width from 0 in another, so one run snaps
    such values to 0 and the other moves exact zeros off it.

    `substitute` (step -> (mask, value)) replaces those elements of those steps;
    `record` receives every step's value."""
    inputs = []
    for x in graph.inputs:
        if x.is_floating_point():
            x = x.double() if widen else x
            if wobble and inputs_too:
                x = x * (1 + wobble * _noise(x, 0))
        inputs.append(x)
    env: dict[str, Any] = {f"a{i}": x for i, x in enumerate(inputs)}
    exprs = dict(graph.steps)

    def hook(name: str, value: Any) -> Any:
        if substitute and name in substitute:
            mask, fill = substitute[name]
            value = torch.where(mask.to(value.device), torch.tensor(fill, dtype=value.dtype), value)
        elif wobble and step_dtypes and not _exact_cast(exprs[name], env):
            value = _perturb_step(value, (step_dtypes or {}).get(name), wobble, name, _magnitude(exprs[name], env))
        env[name] = value
        if record is not None:
            record[name] = value
        return value

    fn = graph.function(hook)
    if not widen:
        return _run(fn, inputs).values
    # Floats made inside the graph (atan2 of bools, a mean of integers) are float64
    # too, or they would meet the widened inputs in float32 (a GEMM that cancels).
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        return _run(fn, inputs).values
    finally:
        torch.set_default_dtype(default)


# Steps that sum products of their operands' elements: their rounding error scales with
# the sum of the terms' magnitudes, which a cancellation leaves far above the result.
# Scatters that add are sums in an order of their own (eager's: the index's).
SUMS = (
    ".sum(", ".mean(", "torch.cumsum(", "F.linear(", " @ ", "torch.bmm(", "F.conv2d(", "avg_pool2d(",
    ".scatter_add(", ".index_add(", "accumulate=True",
)  # fmt: skip


# (x - mean) / std rounds with the mean, a few ulps of |x| and not of the result: a row
# whose mean is far above its spread is ill-conditioned (frac of a layer norm of
# (-78.04, -83.30): -1.0000007 in mlirc, -0.99999994 in eager, graph 24602073849)
LAYER_NORM = re.compile(r"F\.layer_norm\((\w+), \[\d+\]\)")


def _normalized_magnitude(expr: str, env: dict[str, Any]) -> torch.Tensor | None:
    """For a layer norm over the last dim, (|x| + |mean|) / std per element: the
    scale of its rounding error, as a sum's terms are of a sum's."""
    match = LAYER_NORM.fullmatch(expr)
    x = env.get(match.group(1)) if match else None
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or not x.dim() or not x.shape[-1]:
        return None
    x = x.double()
    mean = x.mean(-1, keepdim=True)
    std = (x.var(-1, unbiased=False, keepdim=True) + 1e-5).sqrt()
    return ((x.abs() + mean.abs()) / std).nan_to_num(0.0, 0.0, 0.0)


def _magnitude(expr: str, env: dict[str, Any], finite_terms: bool = False) -> torch.Tensor | None:
    """For a sum-like step, its value on its operands' magnitudes: the sum of the
    |terms| behind each element (a convolution's 576 products, not the -15 they add
    up to); of its finite operands' only, in float64, with `finite_terms`.  For a
    layer norm (not with `finite_terms`: nothing of it overflows), its rounding's
    scale (`_normalized_magnitude`).  None for other steps."""
    if not finite_terms and LAYER_NORM.fullmatch(expr):
        return _normalized_magnitude(expr, env)
    if not any(marker in expr for marker in SUMS):
        return None

    def magnitude(v: Any) -> Any:
        if not (isinstance(v, torch.Tensor) and v.is_floating_point()):
            return v
        return v.double().nan_to_num(0.0, 0.0, 0.0).abs() if finite_terms else v.abs()

    scope = {k: magnitude(v) for k, v in env.items()}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return eval(expr, {"torch": torch, "F": F, "math": math}, scope)  # noqa: S307 - our own program
    except Exception:  # noqa: BLE001 - the step itself raised: no magnitude
        return None


def _perturb_step(
    value: Any, dtype: torch.dtype | None, wobble: float, name: str, magnitude: torch.Tensor | None
) -> Any:
    if dtype not in STEP_WOBBLE or not isinstance(value, torch.Tensor) or not value.is_floating_point():
        return value
    finite = value[value.isfinite()].abs().flatten()
    # the step's typical magnitude (its upper quartile): a few special values
    # (1e30) must not make every element of the step ill-conditioned
    typical = finite.kthvalue(max(1, (3 * finite.numel()) // 4)).values if finite.numel() else 0.0
    scale = torch.as_tensor(typical, dtype=value.dtype, device=value.device)
    if isinstance(magnitude, torch.Tensor) and magnitude.shape == value.shape:
        scale = torch.maximum(scale, magnitude.to(value.dtype).nan_to_num(0.0, 0.0, 0.0))
    if dtype in HALF_TYPES:
        # eager rounds each half step to its own ulp: a float32 value a rounding away
        # from another half value (a softmax's 0.99976 between float16's 0.99951 and
        # 1) lands on either, which frac or fmod by 1 then tells apart
        scale = torch.maximum(scale, value.abs().nan_to_num(0.0, 0.0, 0.0))
    part = round(WOBBLE / abs(wobble))
    width = STEP_WOBBLE[dtype] * scale / part
    seed = 1 + sum(map(ord, name))
    # each fineness draws its own signs: one draw moved a layer norm's row of 5 all one
    # way, which the norm does not see (a shift), and hid a cancellation (1804005421)
    step = math.copysign(1.0, wobble) * width * _noise(value, seed + (part if part > 1 else 0))
    if wobble > 0:  # what is within a few roundings of 0 may be 0 ...
        return torch.where(value.abs() <= width, 0.0, value + step)
    # ... and may as well be a width off 0 either way: the other way in the finer runs
    # (the same draw, or half of them would go one way only)
    away = -math.copysign(1.0, wobble) * width * _noise(value, seed) * (1 if part == 1 else -1)
    return torch.where(value.abs() <= width, away, value + step)


def _exact_cast(expr: str, env: dict[str, Any]) -> bool:
    """A float cast of bools or small integers has no rounding to perturb; moved off 0,
    a cast False turned True again in a logical_xor and hid a comparison's flip
    (graph 18300054905)."""
    match = re.fullmatch(r"(\w+)\.to\(torch\.float(32|64)\)", expr)
    operand = env.get(match.group(1)) if match else None
    if not isinstance(operand, torch.Tensor) or operand.is_floating_point() or operand.is_complex():
        return False
    return operand.dtype == torch.bool or not operand.numel() or bool(operand.abs().max() < 2**24)


_WOBBLE = torch.Generator()
WOBBLE = 1e-6  # how far (relative) the perturbed runs move the inputs
# relative: a few ulps (float32's is 6e-8 .. 1.2e-7, float64's 1.1e-16 .. 2.2e-16,
# float16's 4.9e-4 .. 9.8e-4, bfloat16's 3.9e-3 .. 7.8e-3)
STEP_WOBBLE = {torch.float32: 4e-7, torch.float64: 8e-16, torch.float16: 3e-3, torch.bfloat16: 2.4e-2}
HALF_TYPES = (torch.float16, torch.bfloat16)
# How far an answer may be from eager's: a float64 result carries the error of the
# widest-ulp work behind it (float32 work, then .double(): 1e-4), half types about two
# of their ulps (torch.testing's float16 and bfloat16 tolerances).
TOLERANCES = {torch.float64: 1e-7, torch.float32: 1e-4, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def _noise(like: torch.Tensor, seed: int) -> torch.Tensor:
    """Random signs, each element's move a whole width: the runs with +wobble and
    -wobble then take every element both ways by the full amount, so a value within a
    perturbation of a step (cos(3e-4) a third of an ulp from 1, then cast to int) is
    always found, not when a Gaussian draw happens to be large there."""
    signs = torch.randint(0, 2, like.shape, generator=_WOBBLE.manual_seed(seed), dtype=torch.int8)
    return (signs.to(torch.float64) * 2 - 1).to(like.device, like.dtype)


def _promised_strides(graph: Graph) -> list[list[tuple]]:
    """The strides torch.compile may promise for each output: the graph's on fake
    tensors, and Dynamo's own (its output node's example values).  A few eager
    kernels differ from their meta functions (batch norm returns a contiguous tensor
    whatever its input's layout), and Dynamo's trace from both where a size-1 dim has
    an odd stride (a stack of a compare: eager contiguous, Dynamo's meta permuted):
    Inductor keeps the promised strides there too."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    promised: list[list[tuple]] = [[] for _ in graph.outputs]
    try:
        with warnings.catch_warnings(), FakeTensorMode(allow_non_fake_inputs=True) as mode:
            warnings.simplefilter("ignore")
            values = graph.function()(*(mode.from_tensor(x) for x in graph.inputs))
        for i, v in enumerate(values):
            promised[i].append(tuple(v.stride()))
    except Exception:  # noqa: BLE001 - no promise from the metas then
        pass
    traced: list[list] = []

    def capture(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        output = next(n for n in gm.graph.nodes if n.op == "output")
        traced.append([a.meta.get("example_value") if isinstance(a, torch.fx.Node) else a for a in output.args[0]])
        return gm

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch._dynamo.reset()
            torch.compile(graph.function(), backend=capture)(*graph.inputs)
    except Exception:  # noqa: BLE001 - no promise from Dynamo then
        return promised
    if len(traced) == 1 and len(traced[0]) == len(graph.outputs):  # one graph, its outputs the graph's
        for i, v in enumerate(traced[0]):
            if isinstance(v, torch.Tensor):
                promised[i].append(tuple(v.stride()))
    return promised


def _close(
    actual: torch.Tensor,
    expected: torch.Tensor,
    reference: torch.Tensor | None,
    wobbled: list[torch.Tensor],
    promised: list[tuple] = (),
    work_tolerance: float = 0.0,
) -> str | None:
    if actual.shape != expected.shape:
        return f"shape {tuple(actual.shape)} != eager's {tuple(expected.shape)}"
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype} != eager's {expected.dtype}"
    # Eager's strides, or ones torch.compile promises (its fake tensors', Dynamo's):
    # where eager's kernel and its meta function disagree (a cat of a permuted
    # input), Dynamo may hand mlirc either.
    if CHECK_STRIDES and not any(
        same_strides(expected.shape, actual.stride(), s) for s in [expected.stride(), *promised]
    ):
        return f"strides {actual.stride()} are neither eager's {expected.stride()} nor a promised one {promised}"
    a, e = actual.cpu(), expected.cpu()
    if not e.is_floating_point():
        ok = a == e
        if reference is not None and reference.shape == e.shape and not ok.all():
            # an integer made from floats (a cast, a compare): where eager's differs from the
            # float64 run's, or a perturbed run's, the input is ill-conditioned there
            r = reference.cpu().to(e.dtype)
            ok |= (a == r) | (e != r)
            for w in wobbled:
                if w.shape == e.shape:
                    ok |= w.cpu().to(e.dtype) != r
        if ok.all():
            return None
        where = (~ok).nonzero()[0].tolist()
        return f"values differ at {where}: mlirc {a[tuple(where)].item()!r}, eager {e[tuple(where)].item()!r}"
    both_nan = a.isnan() & e.isnan()
    tol = max(TOLERANCES.get(e.dtype, 1e-7), work_tolerance)
    ok = both_nan | (a == e) | ((a - e).abs() <= tol * (1 + e.abs()))
    if reference is not None and not ok.all():
        r = reference.cpu().to(torch.float64)
        a64, e64 = a.double(), e.double()
        # no tolerance around an infinite reference: -inf is not "near" inf
        near = torch.where(r.isfinite(), tol * (1 + r.abs()), 0.0)
        ok |= (a64 - r).abs() <= 2 * (e64 - r).abs() + near  # as close to float64 as eager
        # where eager's own float32 result is off (a GEMM or sum that cancels), a different
        # summation order is off differently: within tol of the output's largest value
        scale = e64[e64.isfinite()].abs().max() if e64.isfinite().any() else torch.tensor(0.0)
        ok |= ((e64 - r).abs() > near) & ((a64 - e64).abs() <= tol * scale)
        # eager's float32 algorithm broke down (overflowed to inf or NaN, or is off by
        # more than 10%) where the float64 run did not, or NaN came of the order in which
        # an inf met a 0 (a padded convolution) in one run and not the other: any answer
        ok |= ~e64.isfinite() & r.isfinite()
        ok |= (e64 - r).abs() > 0.1 * (1 + r.abs())
        ok |= e64.isnan() != r.isnan()
        ok |= e64.isnan() & (a64 == r)  # eager's float32 NaN where float64 gives ours (gelu(inf))
        for w in wobbled:  # ill-conditioned elements
            if w.shape == r.shape:
                w = w.cpu().to(torch.float64)
                ok |= ~(((w - r).abs() <= near) | (w.isnan() & r.isnan()) | (w == r))
    if ok.all():
        return None
    where = (~ok).nonzero()[0].tolist()
    return f"values differ at {where}: mlirc {a[tuple(where)].item()!r}, eager {e[tuple(where)].item()!r}"


DYNAMIC = False  # compile with dynamic=True: every size symbolic (fuzz_graphs.py --dynamic)
CHECK_STRIDES = True  # outputs keep eager's strides (mlirc.dialects.layouts)


# What a broken-down step's elements are replaced by, one run each: whatever depends on
# them moves in some run.
BREAKDOWN_FILLS = (0.0, 1.0, -1.0, math.inf, -math.inf, math.nan)


def _breakdowns(eager_steps: dict[str, torch.Tensor], reference_steps: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Where eager's float32 algorithm broke down: a step's elements that are NaN or
    inf, or off by more than 10%, where the float64 run's are finite (a layer norm of
    1e30-sized rows: Welford's NaN in eager, 0 from mlirc's sum, 0.5 in float64), and
    NaN where the float64 run's are infinite."""
    found = {}
    for name, e in eager_steps.items():
        r = reference_steps.get(name)
        if not (isinstance(r, torch.Tensor) and e.is_floating_point() and r.is_floating_point()):
            continue
        if r.shape != e.shape:
            continue
        e64, r = e.detach().cpu().double(), r.detach().cpu().double()
        mask = r.isfinite() & (~e64.isfinite() | ((e64 - r).abs() > 0.1 * (1 + r.abs())))
        # NaN where float64 is +-inf: AVX-512's float32 gelu(inf) is inf * 0 (AVX2's is inf)
        mask |= e64.isnan() & r.isinf()
        if mask.any():
            found[name] = mask
    return found


def _overflows(graph: Graph, eager_steps: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The elements of sum-like steps whose finite terms add up past their dtype's
    range: a product or a partial sum overflows in some orders of summation and not
    in others, so inf, -inf or NaN each may come out (1e30 * -1e30 beside an inf
    term: eager's FMA kept the inf, a blocked GEMM made NaN of it); and of products
    whose partial products may leave the range (`_partial_products`)."""
    env: dict[str, Any] = {f"a{i}": x for i, x in enumerate(graph.inputs)} | dict(eager_steps)
    found = {}
    for name, expr in graph.steps:
        value = eager_steps.get(name)
        if value is None or not value.is_floating_point():
            continue
        finfo = torch.finfo(value.dtype)
        # eager sums half-precision terms in float32: only float32's range bounds the order
        accumulator = torch.finfo(torch.float32) if value.dtype in HALF_TYPES else finfo
        magnitude = _magnitude(expr, env, finite_terms=True)
        if isinstance(magnitude, torch.Tensor) and magnitude.shape == value.shape:
            mask = (magnitude > accumulator.max).cpu()
            if mask.any():
                found[name] = mask
        largest, smallest = _partial_products(expr, env)
        if isinstance(largest, torch.Tensor) and largest.shape == value.shape:
            mask = ((largest > finfo.max) | (smallest < finfo.tiny)).cpu()
            if mask.any():
                found[name] = found[name] | mask if name in found else mask
    return found


PRODUCTS = (".prod(",)


def _partial_products(expr: str, env: dict[str, Any]) -> tuple[Any, Any]:
    """For a product step, bounds on its partial products' magnitudes over every
    order: the product of its finite factors above 1, and of those below 1 (zeros
    aside).  Past the dtype's range some order overflows or underflows where another
    does not, and 1e30 * -1e30 * 1e-30 * 1e-40 * -inf is -inf in one order and NaN
    (0 * inf) in another (graph 6706020172)."""
    if not any(marker in expr for marker in PRODUCTS):
        return None, None

    def side(above: bool) -> dict[str, Any]:
        scope = {}
        for k, v in env.items():
            if isinstance(v, torch.Tensor) and v.is_floating_point():
                v = v.double().abs()
                keep = v.isfinite() & ((v > 1) if above else ((v < 1) & (v > 0)))
                v = torch.where(keep, v, 1.0)
            scope[k] = v
        return scope

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = lambda scope: eval(expr, {"torch": torch, "F": F, "math": math}, scope)  # noqa: E731, S307
            return run(side(True)), run(side(False))
    except Exception:  # noqa: BLE001 - the step itself raised: no bounds
        return None, None


def _breakdown_runs(graph: Graph, broken: dict[str, torch.Tensor]) -> list:
    """The float64 graph with the broken-down elements set to each of BREAKDOWN_FILLS:
    an output element that differs between these runs depends on a value that eager's
    float32 run got wrong, and float32 answers may differ there in any way (the
    comparison takes it as ill-conditioned).  Deterministic, unlike a perturbation,
    and it follows the dependence through comparisons and reductions (an any() of a
    NaN row) that a NaN alone would not survive."""
    if not broken:
        return []
    return [_float64_reference(graph, substitute={n: (m, fill) for n, m in broken.items()}) for fill in BREAKDOWN_FILLS]


def _references(
    graph: Graph, eager_steps: dict[str, torch.Tensor], step_dtypes: dict[str, torch.dtype], expected: list
) -> tuple[list, list[list], bool]:
    """Per output: the float64 run's value, the perturbed runs' values, and whether
    they ran in float64.  A graph that does not run in float64 (a float32 tensor made
    from bools meets a widened input) is perturbed in its own dtypes, against eager's
    values."""
    reference_steps: dict[str, Any] = {}
    reference = _float64_reference(graph, record=reference_steps)
    widen = reference is not None
    reference = list(reference if widen else expected)
    # Two opposite perturbations: what is left of a cancellation (1e30 - 1e30 + ...)
    # takes the noise's sign, so one draw alone flags only half of such elements; and
    # the steps' alone, whose roundings near 0 the inputs' would drown.
    # A periodic step (fmod(6, x) of a 6e-4 x: 10000 periods per unit) can wrap a whole
    # perturbation back near the reference, so the steps also move by 1/4 and 1/16.
    runs = [(d, inputs) for inputs in (True, False) for d in (WOBBLE, -WOBBLE)]
    runs += [(sign * WOBBLE / part, False) for part in (4, 16) for sign in (1, -1)]
    wobbles = [_float64_reference(graph, d, step_dtypes, inputs, widen) for d, inputs in runs]
    if widen:
        broken = _breakdowns(eager_steps, reference_steps)
        for name, mask in _overflows(graph, eager_steps).items():
            broken[name] = broken[name] | mask if name in broken else mask
        wobbles += _breakdown_runs(graph, broken)
    wobbles = [w for w in wobbles if w is not None]
    return reference, [[w[i] for w in wobbles] for i in range(len(reference))], widen


def check(graph: Graph) -> str | None:
    """None if mlirc agrees with eager on `graph`, else what differs.  With DYNAMIC,
    the graph compiled once is also checked at other sizes (`resized`): the second
    call is where a symbolic graph's sizes are bound anew."""
    torch._dynamo.reset()
    compiled = torch.compile(graph.function(), backend="mlirc", dynamic=DYNAMIC or None)
    problem = _check_compiled(graph, compiled)
    for other in resized(graph) if DYNAMIC and problem is None else []:
        if _runs_eagerly(other):  # error parity is the static fuzzer's
            problem = _check_compiled(other, compiled)
            if problem:
                return f"at input sizes {[list(x.shape) for x in other.inputs]}: {problem}"
    return problem


def _runs_eagerly(graph: Graph) -> bool:
    """Does eager run `graph` without raising?  On CUDA it is asked on the CPU first:
    an index past a dim there is a device-side assert, which ends the process (a
    gather's indices, valid before, past the dim of a convolution whose kernel grew:
    graph 31000296000618)."""
    if any(x.is_cuda for x in graph.inputs) and _run(graph.function(), [x.cpu() for x in graph.inputs]).error:
        return False
    return _run(graph.function(), graph.inputs).error is None


def resized(graph: Graph) -> list[Graph]:
    """The graph over inputs whose most common size above 1 grows by 3 and shrinks by 1:
    every dim of that size changes (dims of 1 stay, so broadcasts stay broadcasts);
    values are drawn from each input's own (its specials and index ranges kept)."""
    sizes = Counter(d for x in graph.inputs for d in x.shape if d > 1)
    if not sizes:
        return []
    common = sizes.most_common(1)[0][0]
    generator = torch.Generator().manual_seed(common)
    graphs = []
    for new in (common + 3, common - 1):
        if new < 2:
            continue
        inputs = []
        for x in graph.inputs:
            shape = [new if d == common else d for d in x.shape]
            flat = x.flatten()
            picks = torch.randint(0, max(flat.numel(), 1), shape, generator=generator).to(x.device)
            inputs.append(flat[picks] if flat.numel() else x.new_empty(shape))
        graphs.append(Graph(inputs=inputs, steps=graph.steps, outputs=graph.outputs))
    return graphs


def _check_compiled(graph: Graph, compiled: Callable) -> str | None:
    step_dtypes: dict[str, torch.dtype] = {}
    eager_steps: dict[str, torch.Tensor] = {}

    def record(name: str, value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            step_dtypes[name] = value.dtype
            eager_steps[name] = value
        return value

    expected = _run(graph.function(record), graph.inputs)
    actual = _run(compiled, graph.inputs)
    if expected.error is not None:
        if actual.error is None:
            return f"eager raised {type(expected.error).__name__}: {expected.error}; mlirc returned"
        if not isinstance(actual.error, type(expected.error)) and not _both_index_errors(expected.error, actual.error):
            return f"eager raised {expected.error!r}; mlirc raised {actual.error!r}"
        return None
    if actual.error is not None:
        text = "".join(traceback.format_exception_only(actual.error)).strip()
        return f"mlirc raised where eager did not: {text[:400]} ... {text[-600:]}"
    reference, wobbled, widened = _references(graph, eager_steps, step_dtypes, expected.values)
    if not widened and len(graph.outputs) > 1:
        # A step that cannot run in float64 (a scatter of float32 values made from
        # bools into a widened tensor) need not keep the other outputs from it: each
        # is referenced on the steps it depends on (a layer norm beside such a scatter)
        for i, name in enumerate(graph.outputs):
            (reference[i],), (wobbled[i],), _ = _references(
                graph.slice(name), eager_steps, step_dtypes, [expected.values[i]]
            )
    # A float64 result of float32 work (a float32 GEMM, then .double()) carries float32 error.
    work = {*step_dtypes.values(), *(x.dtype for x in graph.inputs)}
    work_tolerance = max((TOLERANCES[d] for d in work if d in TOLERANCES), default=0.0)
    # the promises only where eager's strides are not the answer: Dynamo traces again
    promised = [[] for _ in expected.values]
    pairs = zip(actual.values, expected.values, strict=False)
    if any(isinstance(a, torch.Tensor) and not same_strides(e.shape, a.stride(), e.stride()) for a, e in pairs):
        promised = _promised_strides(graph)
    for i, (a, e) in enumerate(zip(actual.values, expected.values, strict=True)):
        problem = _close(a, e, reference[i], wobbled[i], promised[i], work_tolerance)
        if problem:
            return f"output {i} ({graph.outputs[i]}): {problem}"
    return None
