"""mlirc-cpu-vector-math: vector `math` ops become calls to SLEEF's vector functions.

LLVM has no vector exp/tanh/erf of its own: left alone, `math.exp` on a vector
is scalarized into one libm call per lane, which makes any kernel with a
transcendental op several times slower than eager.  PyTorch's CPU kernels use
SLEEF, and libtorch_cpu exports it, so calling the same functions gives eager's
speed and eager's rounding (1.0 ULP variants).  The CPU codegen resolves the
`Sleef_*` symbols in the loaded libtorch_cpu.

Vectors of any shape whose element count is a multiple of a SLEEF width for the
host (8 x f32 / 4 x f64 with AVX2, 16 / 8 with AVX-512) are flattened, split into
SLEEF-width chunks and put back together; other vectors are left to the libm path.
"""

from __future__ import annotations

import functools
import math

from mlir import ir
from mlir.dialects import arith, func, vector
from mlir.dialects import math as math_d

from mlirc.passes.ir_utils import nested_ops
from mlirc.passes.registry import register_pass

# math op -> (SLEEF function stem, accuracy suffix).  Names are `Sleef_<stem><f|d><lanes>_<ulp>`.
SLEEF_FUNCTIONS: dict[str, tuple[str, str]] = {
    "math.exp": ("exp", "u10"),
    "math.exp2": ("exp2", "u10"),
    "math.expm1": ("expm1", "u10"),
    "math.log": ("log", "u10"),
    "math.log2": ("log2", "u10"),
    "math.log10": ("log10", "u10"),
    "math.log1p": ("log1p", "u10"),
    "math.tanh": ("tanh", "u10"),
    "math.sinh": ("sinh", "u10"),
    "math.cosh": ("cosh", "u10"),
    "math.sin": ("sin", "u10"),
    "math.cos": ("cos", "u10"),
    "math.tan": ("tan", "u10"),
    "math.asin": ("asin", "u10"),
    "math.acos": ("acos", "u10"),
    "math.atan": ("atan", "u10"),
    "math.asinh": ("asinh", "u10"),
    "math.acosh": ("acosh", "u10"),
    "math.atanh": ("atanh", "u10"),
    "math.erf": ("erf", "u10"),
    "math.erfc": ("erfc", "u15"),
    "math.cbrt": ("cbrt", "u10"),
    "math.powf": ("pow", "u10"),
    "math.atan2": ("atan2", "u10"),
}


@functools.cache
def host_vector_bits() -> tuple[int, ...]:
    """SLEEF vector widths (bits) the host can run, widest first."""
    import llvmlite.binding as llvm

    features = llvm.get_host_cpu_features()
    widths = []
    if features.get("avx512f", False):
        widths.append(512)
    if features.get("avx2", False) or features.get("avx", False):
        widths.append(256)
    return tuple(widths)


def sleef_name(op_name: str, elem: ir.Type, lanes: int) -> str:
    stem, ulp = SLEEF_FUNCTIONS[op_name]
    kind = "f" if isinstance(elem, ir.F32Type) else "d"
    return f"Sleef_{stem}{kind}{lanes}_{ulp}"


def _chunk_lanes(count: int, elem_bits: int) -> int | None:
    for bits in host_vector_bits():
        lanes = bits // elem_bits
        if count % lanes == 0:
            return lanes
    return None


def _declare(module: ir.Operation, name: str, arity: int, vtype: ir.Type) -> None:
    table = ir.SymbolTable(module)
    if name in table:
        return
    with ir.InsertionPoint(module.regions[0].blocks[0]):
        decl = func.FuncOp(name, ir.FunctionType.get([vtype] * arity, [vtype]), visibility="private")
    del decl  # a declaration: the body stays empty


def _rewrite(module: ir.Operation, op: ir.Operation, lanes: int) -> None:
    vtype = ir.VectorType(op.results[0].type)
    elem, count = vtype.element_type, functools.reduce(lambda a, b: a * b, vtype.shape, 1)
    flat_t = ir.VectorType.get([count], elem)
    chunk_t = ir.VectorType.get([lanes], elem)
    name = sleef_name(op.name, elem, lanes)
    _declare(module, name, len(op.operands), chunk_t)
    with ir.InsertionPoint(op), op.location:
        flat_args = [v if vtype.rank == 1 else vector.shape_cast(flat_t, v) for v in op.operands]
        if lanes != count:
            result = arith.constant(flat_t, ir.DenseElementsAttr.get_splat(flat_t, ir.FloatAttr.get(elem, 0.0)))
        for start in range(0, count, lanes):
            if lanes == count:
                chunk_args = flat_args
            else:
                chunk_args = [vector.extract_strided_slice(chunk_t, a, [start], [lanes], [1]) for a in flat_args]
            value = func.call([chunk_t], ir.FlatSymbolRefAttr.get(name), chunk_args)
            result = value if lanes == count else vector.insert_strided_slice(value, result, [start], [1])
        if vtype.rank != 1:
            result = vector.shape_cast(vtype, result)
    op.results[0].replace_all_uses_with(result)
    op.erase()


def _candidates(module: ir.Operation) -> list[tuple[ir.Operation, int]]:
    found: list[tuple[ir.Operation, int]] = []

    def walk(op: ir.Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    o = inner.operation
                    if o.name in SLEEF_FUNCTIONS and isinstance(o.results[0].type, ir.VectorType):
                        vtype = ir.VectorType(o.results[0].type)
                        elem = vtype.element_type
                        if isinstance(elem, ir.F32Type) or isinstance(elem, ir.F64Type):
                            count = functools.reduce(lambda a, b: a * b, vtype.shape, 1)
                            lanes = _chunk_lanes(count, 32 if isinstance(elem, ir.F32Type) else 64)
                            if lanes is not None and not vtype.scalable:
                                found.append((o, lanes))
                    walk(o)

    walk(module)
    return found


# erf(|x|) = 1 - t * P(t) * exp(-x^2), t = 1 / (1 + p |x|): Abramowitz & Stegun 7.1.26
# (absolute error below 1.5e-7), the form ATen's vectorized float erf uses.  SLEEF's
# erff costs about three times as much per vector, which made GELU slower than eager.
ERF_P = 0.3275911
ERF_COEFFS = (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)
# Below |x| = 0.5 that form loses all relative accuracy (1 - t P(t) exp(-x^2) cancels):
# the Maclaurin series 2/sqrt(pi) sum (-1)^k x^(2k+1) / (k! (2k+1)) is used there,
# exact to float32 rounding with these seven terms.
ERF_SMALL = 0.5
ERF_SERIES = tuple(2 / math.sqrt(math.pi) * (-1) ** k / (math.factorial(k) * (2 * k + 1)) for k in range(7))


def _expand_f32_vector_erf(op: ir.Operation) -> None:
    vtype = ir.VectorType(op.results[0].type)

    def splat(value: float) -> ir.Value:
        attr = ir.DenseElementsAttr.get_splat(vtype, ir.FloatAttr.get(vtype.element_type, value))
        return arith.constant(vtype, attr)

    with ir.InsertionPoint(op), op.location:
        x = op.operands[0]
        ax = math_d.absf(x)
        t = arith.divf(splat(1.0), arith.addf(splat(1.0), arith.mulf(splat(ERF_P), ax)))
        poly = splat(ERF_COEFFS[0])
        for coeff in ERF_COEFFS[1:]:
            poly = arith.addf(arith.mulf(poly, t), splat(coeff))
        x2 = arith.mulf(x, x)
        gauss = math_d.exp(arith.negf(x2))
        erf_abs = arith.subf(splat(1.0), arith.mulf(arith.mulf(poly, t), gauss))
        series = splat(ERF_SERIES[-1])
        for coeff in reversed(ERF_SERIES[:-1]):
            series = arith.addf(arith.mulf(series, x2), splat(coeff))
        small = arith.cmpf(arith.CmpFPredicate.OLT, ax, splat(ERF_SMALL))
        result = arith.select(small, arith.mulf(series, x), math_d.copysign(erf_abs, x))
    op.results[0].replace_all_uses_with(result)
    op.erase()


def _vector_erfs(module: ir.Operation) -> list[ir.Operation]:
    return [
        op
        for op in nested_ops(module)
        if op.name == "math.erf"
        and isinstance(op.results[0].type, ir.VectorType)
        and isinstance(ir.VectorType(op.results[0].type).element_type, ir.F32Type)
    ]


@register_pass("mlirc-cpu-vector-math", "Vector math ops (exp, tanh, erf, ...) -> SLEEF vector calls for the host")
def cpu_vector_math(module: ir.Operation) -> None:
    for op in _vector_erfs(module):
        _expand_f32_vector_erf(op)
    for op, lanes in _candidates(module):
        _rewrite(module, op, lanes)
