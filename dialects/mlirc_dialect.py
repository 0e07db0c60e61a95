"""The `mlirc` dialect, defined with IRDL from one table of op signatures.

Every op has exactly one result.  Operand and attribute names are part of the
signature so that IRDL checks arity and the presence of attributes; types are
builtin ranked tensors, `?` where a size is symbolic, and their shape/dtype rules
live in `shapes.py` (what a `?` is at run time: `dims.py`).
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import irdl

from mlirc.dialects.attributes import TARGET_ATTR

# The module attribute naming the device a graph runs on ("cpu", "cuda"): where
# eager's CPU and CUDA kernels give different answers, lowering follows it.


def target_of(module: ir.Operation) -> str:
    attrs = module.attributes
    return ir.StringAttr(attrs[TARGET_ATTR]).value if TARGET_ATTR in attrs else "cpu"


@dataclass(frozen=True)
class OpSignature:
    operands: tuple[str, ...] = ("x",)
    attributes: tuple[str, ...] = ()
    variadic: bool = False  # a single variadic operand group (concat)
    # Trailing `index` operands, one per `?` dim of the result, in order: the sizes an
    # op creates rather than takes from its operands (a reshape to [s0, s1, 64]).
    sized: bool = False
    # `index` operands that are values, not sizes (from_size's)
    index_operands: tuple[str, ...] = ()


UNARY_OPS = (
    "neg abs exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan "
    "sinh cosh tanh asinh acosh atanh sigmoid erf erfc floor ceil round trunc sign reciprocal "
    "logical_not bitwise_not isnan isinf relu signbit "
    "lgamma digamma trigamma erfinv erfcx ndtri i0 i0e i1 i1e spherical_bessel_j0"
).split()

BINARY_OPS = (
    "add sub mul div floor_div remainder fmod pow maximum minimum atan2 eq ne lt le gt ge "
    "logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor copysign fmax fmin hypot "
    "zeta nextafter"
).split()

REDUCTION_OPS = "reduce_sum reduce_prod reduce_max reduce_min reduce_any reduce_all argmax argmin".split()

OPS: dict[str, OpSignature] = {
    **{name: OpSignature() for name in UNARY_OPS},
    **{name: OpSignature(("lhs", "rhs")) for name in BINARY_OPS},
    **{name: OpSignature(attributes=("dims", "keepdim")) for name in REDUCTION_OPS},
    "select": OpSignature(("cond", "on_true", "on_false")),
    # a * b + c rounded once (a fused multiply-add): prims.fma, which Dynamo's
    # addcmul_ / addcdiv_ / add_(alpha=tensor) rewrites and the optimizers' steps use
    "fma": OpSignature(("a", "b", "c")),
    "convert": OpSignature(),
    "broadcast": OpSignature(sized=True),
    "reshape": OpSignature(sized=True),
    "permute": OpSignature(attributes=("perm",)),
    "slice": OpSignature(attributes=("starts", "steps"), sized=True),
    # Binary: IRDL binds one type to a variadic group, and concat's inputs differ in
    # size; the importer chains N-way cats.
    "concat": OpSignature(("lhs", "rhs"), attributes=("dim",)),
    "pad": OpSignature(("x", "value"), attributes=("low", "high")),
    "gather": OpSignature(("x", "index"), attributes=("dim",)),
    "index_select": OpSignature(("x", "index"), attributes=("dim",)),
    # x[T, R] with row index[k] of x += src[k] for each of the K updates, in order:
    # index_put(accumulate=True), index_add, scatter_add past the dense match's size
    # (frontend/lowerings/scatter.py).  Not a linalg op: it stays to the backends,
    # which write it into x's buffer (a loop on the CPU, atomics on the GPU).
    "scatter_add": OpSignature(("x", "index", "src")),
    "iota": OpSignature((), attributes=("dim",), sized=True),
    "constant": OpSignature((), attributes=("value",)),
    # A size as a 0-d tensor (a mean's count over a symbolic dim)
    "from_size": OpSignature((), index_operands=("size",)),
    "matmul": OpSignature(("lhs", "rhs")),
    "batch_matmul": OpSignature(("lhs", "rhs")),
    "conv2d": OpSignature(("x", "weight"), attributes=("stride", "padding", "dilation", "groups")),
    "max_pool2d": OpSignature(attributes=("kernel", "stride", "padding", "dilation")),
}


# Element types, checked by the dialect verifier (IRDL cannot constrain a builtin
# tensor's element type): ops that take and give floats only, that take integers or
# bools only, and that give bools (i1).
FLOAT_OPS = frozenset(
    "exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan sinh cosh tanh asinh acosh "
    "atanh sigmoid erf erfc lgamma digamma trigamma erfinv erfcx ndtri i0 i0e i1 i1e spherical_bessel_j0 "
    "atan2 hypot nextafter zeta".split()
)
INTEGER_OPS = frozenset("bitwise_and bitwise_or bitwise_xor bitwise_not".split())
PREDICATE_OPS = frozenset(
    "eq ne lt le gt ge logical_and logical_or logical_xor logical_not isnan isinf signbit reduce_any reduce_all".split()
)


def irdl_source() -> str:
    """The dialect as IRDL text.

    Operands and results are builtin tensors, each with its own constraint
    variable: IRDL unifies a variable across its uses, and mlirc's type rules
    (broadcasting, casts, element types) are checked by `shapes` and the dialect
    verifier, not by equal types.  Attributes are checked there too, where the
    diagnostic can name the attribute and say what it must be.
    """
    lines = ["irdl.dialect @mlirc {"]
    for name, sig in OPS.items():
        lines.append(f"  irdl.operation @{name} {{")
        constraints = ['irdl.base "!builtin.tensor"'] * (len(sig.operands) + 1) + ["irdl.any"] * len(sig.attributes)
        for i, constraint in enumerate(constraints):
            lines.append(f"    %c{i} = {constraint}")
        if sig.variadic:
            operands = f"{sig.operands[0]}: variadic %v"
        else:
            operands = ", ".join(f"{operand}: %c{i}" for i, operand in enumerate(sig.operands))
        if sig.sized or sig.index_operands:
            lines.append("    %index = irdl.is index")
            extra = [f"{name}: %index" for name in sig.index_operands]
            extra += ["sizes: variadic %index"] if sig.sized else []
            operands = ", ".join(filter(None, [operands, *extra]))
        lines.append(f"    irdl.operands({operands})")
        lines.append(f"    irdl.results(result: %c{len(sig.operands)})")
        if sig.attributes:
            first = len(sig.operands) + 1
            attrs = ", ".join(f'"{attr}" = %c{first + i}' for i, attr in enumerate(sig.attributes))
            lines.append(f"    irdl.attributes {{{attrs}}}")
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines)


_IRDL_TEXT = irdl_source()

# Each time the bindings wrap an op in a Python object they import its dialect's module
# (`mlir.dialects.<name>`) unless one was found before: for the mlirc and tt dialects,
# which have none, every op a Python pass visited cost a failed import (754 of them,
# half of binding a 2-layer transformer's sizes).  An empty module is found once.
for _dialect in ("mlirc", "tt"):
    sys.modules.setdefault(f"mlir.dialects.{_dialect}", types.ModuleType(f"mlir.dialects.{_dialect}"))


def load_dialect(context: ir.Context) -> None:
    """Register the `mlirc` dialect in `context` (idempotent per context)."""
    if getattr(context, "_mlirc_loaded", False):
        return
    with context, ir.Location.unknown():
        irdl.load_dialects(ir.Module.parse(_IRDL_TEXT))
    try:
        context._mlirc_loaded = True  # type: ignore[attr-defined]
    except AttributeError:
        pass


def make_context() -> ir.Context:
    """A new MLIR context with the mlirc dialect loaded; use it for all mlirc IR.

    Triton's `tt` ops are generic ops of an unregistered dialect (mlirc.dialects.tt),
    so the context allows those; mlirc-opt rejects any other unregistered op."""
    context = ir.Context()
    context.allow_unregistered_dialects = True
    load_dialect(context)
    return context
