"""The `mlirc` dialect, defined with IRDL from one table of op signatures.

Every op has exactly one result.  Operand and attribute names are part of the
signature so that IRDL checks arity and the presence of attributes; types are
builtin ranked tensors, and their shape/dtype rules live in `shapes.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import irdl

# The module attribute naming the device a graph runs on ("cpu", "cuda"): where
# eager's CPU and CUDA kernels give different answers, lowering follows it.
TARGET_ATTR = "mlirc.target"


def target_of(module: ir.Operation) -> str:
    attrs = module.attributes
    return ir.StringAttr(attrs[TARGET_ATTR]).value if TARGET_ATTR in attrs else "cpu"


@dataclass(frozen=True)
class OpSignature:
    operands: tuple[str, ...] = ("x",)
    attributes: tuple[str, ...] = ()
    variadic: bool = False  # a single variadic operand group (concat)


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
    "convert": OpSignature(),
    "broadcast": OpSignature(),
    "reshape": OpSignature(),
    "permute": OpSignature(attributes=("perm",)),
    "slice": OpSignature(attributes=("starts", "steps")),
    # Binary: IRDL binds one type to a variadic group, and concat's inputs differ in
    # size; the importer chains N-way cats.
    "concat": OpSignature(("lhs", "rhs"), attributes=("dim",)),
    "pad": OpSignature(("x", "value"), attributes=("low", "high")),
    "gather": OpSignature(("x", "index"), attributes=("dim",)),
    "index_select": OpSignature(("x", "index"), attributes=("dim",)),
    "iota": OpSignature((), attributes=("dim",)),
    "constant": OpSignature((), attributes=("value",)),
    "matmul": OpSignature(("lhs", "rhs")),
    "batch_matmul": OpSignature(("lhs", "rhs")),
    "conv2d": OpSignature(("x", "weight"), attributes=("stride", "padding", "dilation", "groups")),
    "max_pool2d": OpSignature(attributes=("kernel", "stride", "padding", "dilation")),
}


def irdl_source() -> str:
    """The dialect as IRDL text.

    Each operand/result gets its own `irdl.any`: IRDL unifies a constraint
    variable across its uses, and mlirc's type rules (broadcasting, casts) are
    checked by `shapes`, not by equal types.
    """
    lines = ["irdl.dialect @mlirc {"]
    for name, sig in OPS.items():
        lines.append(f"  irdl.operation @{name} {{")
        names = [*sig.operands, "result", *sig.attributes]
        for i, _ in enumerate(names):
            lines.append(f"    %c{i} = irdl.any")
        if sig.variadic:
            operands = f"{sig.operands[0]}: variadic %v"
        else:
            operands = ", ".join(f"{operand}: %c{i}" for i, operand in enumerate(sig.operands))
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
