"""The host wrapper for every size of a symbolic graph: one wrapper, no compile per
size (the CPU's and the GPU's share this part).

The kernels compiled for every size (passes/cpu/size_args.py on the CPU,
passes/gpu/lower_to_tt.py on the GPU) take their sizes as arguments; this wrapper
runs the symbolic module's entry as it is, unbound.  Each `?` size is a SymInt of
Dynamo's shape environment (backends/symbolic_sizes.py), printed as a Python
expression of the graph's symbols, which the wrapper's first lines read from its
arguments (`s0 = arg4.shape[0]`): allocations, views, the kernels' size arguments
and (GPU) grids are then evaluated once per call, as Inductor's wrapper evaluates
its size expressions.

It is planned as the bound wrappers are (backends/host_wrapper.py and
backends/memory_plan.py: views worked out on meta tensors, buffers reused where a
released one is provably the same size), with three differences: it keeps no scratch between calls (a buffer's size changes from
call to call), its GEMMs are torch's own (the bound wrapper of a hot size times and
packs them), and its size assertions (a pass's assumption, such as
mlirc-split-reductions' short sums) are also a separate `fits` function the caller
asks before a new size runs here.  Every decision is made on the symbols, never on
the sizes Dynamo traced with: built under frontend/dynamic.py's no_new_guards, a
question only a size's value answers fails the build, and each size is then bound.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Sequence

import sympy
import torch
from mlir import ir
from torch.utils._sympy.printers import PythonPrinter

from mlirc.backends.host_wrapper import WrapperBuilder
from mlirc.backends.memory_plan import _dtype
from mlirc.backends.symbolic_sizes import INDEX_OPS, SymbolicSizes
from mlirc.errors import SizeAssumptionFailed, UnsupportedOpError

_LOGIC = {"arith.andi": "and", "arith.ori": "or"}
# arith.cmpi predicates (signed and unsigned alike: sizes are >= 0) as Python
_COMPARISONS = {0: "==", 1: "!=", 2: "<", 3: "<=", 4: ">", 5: ">=", 6: "<", 7: "<=", 8: ">", 9: ">="}


def _expr(size: object) -> object:
    return size.node.expr if isinstance(size, torch.SymInt) else size


def _is_one(size: object) -> bool:
    return isinstance(size, int) and size == 1


def _equal(a: object, b: object) -> bool:
    """Equal for every value of the symbols (as polynomials; False where unknown)."""
    return sympy.expand(sympy.sympify(_expr(a)) - sympy.sympify(_expr(b))) == 0


@dataclasses.dataclass(frozen=True)
class SymbolicMeta:
    """A buffer's layout (sizes, strides, offset) in SymInts: what the wrapper builder
    reads of a meta tensor, without torch's checks, which ask for the sizes' values
    (a strided view's bounds against its storage's)."""

    shape: tuple
    strides: tuple
    offset: object
    dtype: torch.dtype

    def stride(self) -> tuple:
        return self.strides

    def storage_offset(self) -> object:
        return self.offset

    def dim(self) -> int:
        return len(self.shape)

    def numel(self) -> object:
        return math.prod(self.shape)

    def element_size(self) -> int:
        return self.dtype.itemsize

    def as_strided(self, shape: Sequence, strides: Sequence, offset: object) -> SymbolicMeta:
        return SymbolicMeta(tuple(shape), tuple(strides), offset, self.dtype)

    def permute(self, order: Sequence[int]) -> SymbolicMeta:
        return self.as_strided([self.shape[d] for d in order], [self.strides[d] for d in order], self.offset)

    def expand(self, shape: Sequence) -> SymbolicMeta:
        """Unit dims (a layout's expanded dims, held as size 1) repeated: stride 0."""
        strides = [
            0 if _is_one(n) and not _is_one(m) else s for n, m, s in zip(self.shape, shape, self.strides, strict=True)
        ]
        return self.as_strided(shape, strides, self.offset)

    def view(self, shape: Sequence) -> SymbolicMeta:
        raise UnsupportedOpError("mlirc-host-wrapper", "a view by sizes (reshapes use their reassociation)")


class SymbolicWrapper(WrapperBuilder):
    """What a wrapper whose sizes are expressions of the graph's symbols does on any
    device (mixed in before the device's builder)."""

    def symbolic(self, sizes: SymbolicSizes, eager: list) -> None:
        self.sizes = sizes
        self.eager = eager
        self.printer = PythonPrinter()
        self.symbols: set[sympy.Symbol] = set()  # what the code reads, defined from the arguments
        self.assertions: list[str] = []  # the conditions of the entry's size assertions

    # -- sizes as expressions ------------------------------------------------------------

    def shape_of(self, value: ir.Value) -> list:
        return list(self.sizes.shape(value))

    def size_text(self, size: object) -> str:
        expr = _expr(size)
        if isinstance(expr, sympy.Expr) and not expr.is_number:
            self.symbols |= expr.free_symbols
            return f"({self.printer.doprint(expr)})"
        return str(int(expr))  # type: ignore[call-overload]

    def text(self, sizes: Sequence) -> str:
        items = [self.size_text(s) for s in sizes]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"

    def size_key(self, size: object) -> object:
        return _expr(size)

    def same_sizes(self, a: Sequence, b: Sequence) -> bool:
        return len(a) == len(b) and all(_expr(x) == _expr(y) for x, y in zip(a, b, strict=True))

    def aligned(self, name: str, alignment: int) -> bool:
        """Aligned for every value of the symbols (else the call checks)."""
        meta = self.meta.get(name)
        if meta is None:
            return False
        offset = sympy.sympify(_expr(meta.storage_offset())) * meta.element_size()
        return sympy.Mod(offset, alignment) == 0

    def new_meta(self, shape: list, dtype: torch.dtype) -> SymbolicMeta:
        # plain products, as Dynamo's strides of sizes >= 2: a size that is 0 makes the
        # buffer empty, where strides mean nothing
        strides = [math.prod(shape[d + 1 :]) for d in range(len(shape))]
        return SymbolicMeta(tuple(shape), tuple(strides), 0, dtype)

    def eager_results(self, count: int) -> list:
        return self.eager if len(self.eager) == count else [None] * count

    def _assign_scratch(self) -> None:
        """No scratch: a buffer's size changes from call to call."""

    # -- the host's size arithmetic ----------------------------------------------------------

    def emit_host_op(self, op: ir.Operation) -> None:
        if op.name in INDEX_OPS or op.name == "tensor.dim":
            self._name_integer(op.results[0], self.size_text(self.sizes.index(op.results[0])))
        elif op.name == "arith.cmpi":
            predicate = ir.IntegerAttr(op.attributes["predicate"]).value
            a, b = (self.size_text(self.sizes.index(v)) for v in op.operands)
            self.names[op.results[0]] = f"({a} {_COMPARISONS[predicate]} {b})"
        elif op.name in _LOGIC and str(op.results[0].type) == "i1":  # an assertion's condition
            a, b = (self.names[v] for v in op.operands)
            self.names[op.results[0]] = f"({a} {_LOGIC[op.name]} {b})"
        elif op.name == "cf.assert":
            condition, message = self.names[op.operands[0]], ir.StringAttr(op.attributes["msg"]).value
            self.assertions.append(condition)
            self.lines.append(f"    if not {condition}: raise SizeAssumptionFailed('mlirc-host-wrapper', {message!r})")
        elif op.name in ("arith.sitofp", "arith.uitofp"):
            self.names[op.results[0]] = f"float({self.size_text(self.sizes.index(op.operands[0]))})"
        elif op.name == "tensor.from_elements":
            self._from_elements(op)
        elif op.name == "tensor.cast":  # the same buffer, some `?` sizes known (Dynamo's guards hold them)
            shape = self.shape_of(op.results[0])
            self.emit_view(
                op.results[0],
                self.names[op.operands[0]],
                lambda m: m.as_strided(shape, m.stride(), m.storage_offset()),
                "",
            )
        else:
            super().emit_host_op(op)

    def _name_integer(self, value: ir.Value, text: str) -> None:
        self.names[value] = text
        self.integers.add(text)

    def _from_elements(self, op: ir.Operation) -> None:
        result = op.results[0]
        shape = self.shape_of(result)
        dtype = _dtype(result.type, None)
        values = [self.names[v] for v in op.operands]
        data = values[0] if not shape else f"[{', '.join(values)}]"
        n = self.fresh(result)
        self.lines.append(f"    {n} = torch.tensor({data}, dtype={dtype}, device=device).reshape({self.text(shape)})")
        self._own(n, self.new_meta(shape, dtype))

    def emit_slice(self, op: ir.Operation) -> None:
        """A slice as a strided view, its offsets and sizes read from the op (MLIR's
        slices are in bounds): no torch indexing, which would ask how a `?` size
        compares with the slice's bounds."""
        dynamic = ir.ShapedType.get_dynamic_size()
        operands = iter(op.operands[1:])

        def read(name: str) -> list:
            return [
                self.sizes.index(next(operands)) if v == dynamic else v
                for v in ir.DenseI64ArrayAttr(op.attributes[name])
            ]

        offsets, sizes, steps = read("static_offsets"), read("static_sizes"), read("static_strides")
        shape = self.shape_of(op.results[0])
        kept = list(range(len(sizes)))
        if len(shape) != len(sizes):  # rank-reducing: the unit sizes it drops
            kept = [d for d in kept if not _is_one(sizes[d])]
            if len(kept) != len(shape):
                raise UnsupportedOpError(op.name, "a rank-reducing slice whose dropped dims are not its unit sizes")

        def view(m: torch.Tensor) -> torch.Tensor:
            stride = m.stride()
            offset = m.storage_offset() + sum(o * s for o, s in zip(offsets, stride, strict=True))
            return m.as_strided([sizes[d] for d in kept], [stride[d] * steps[d] for d in kept], offset)

        self.emit_view(op.results[0], self.names[op.operands[0]], view, "")

    def reshaped(self, op: ir.Operation, shape: list) -> Callable[[torch.Tensor], torch.Tensor]:
        """The view a reshape makes, from its reassociation: torch's view would match
        dims by comparing sizes, which for `?` sizes asks for their values."""
        groups = [[ir.IntegerAttr(d).value for d in group] for group in ir.ArrayAttr(op.attributes["reassociation"])]
        collapse = op.name == "tensor.collapse_shape"

        def view(m: torch.Tensor) -> torch.Tensor:
            size, stride = list(m.shape), list(m.stride())
            if not groups:  # to or from a 0-d tensor: unit dims only
                return m.as_strided(shape, [1] * len(shape), m.storage_offset())
            new_stride: list = []
            for d, group in enumerate(groups):
                if collapse:
                    for outer, inner in itertools.pairwise(group):
                        if not _is_one(size[outer]) and not _equal(stride[outer], stride[inner] * size[inner]):
                            raise UnsupportedOpError(op.name, "collapses dims that are not contiguous")
                    new_stride.append(stride[group[-1]])
                else:
                    step, strides = stride[d], []
                    for i in reversed(group):
                        strides.append(step)
                        step = step * shape[i]
                    new_stride.extend(reversed(strides))
            return m.as_strided(shape, new_stride, m.storage_offset())

        return view

    # -- the source ----------------------------------------------------------------------

    def definitions(self, sources: dict[sympy.Symbol, str]) -> list[str]:
        """The lines that read each symbol the code uses from the arguments."""
        missing = self.symbols - set(sources)
        if missing:
            raise UnsupportedOpError("mlirc-host-wrapper", f"sizes {sorted(map(str, missing))} read from no argument")
        return [f"    {symbol} = {sources[symbol]}" for symbol in sorted(self.symbols, key=str)]


def every_size_source(
    builder: SymbolicWrapper, source: str, sources: dict[sympy.Symbol, str], placeholders: int
) -> str:
    """The wrapper's source with the lines that read its symbols, and `fits`:
    whether a call's sizes hold the entry's size assertions."""
    lines = source.split("\n")
    defs = builder.definitions(sources)
    start = lines.index("    args.clear()") + 1  # the arguments unpacked (host_wrapper's build)
    body = "\n".join([*lines[:start], *defs, *lines[start:]])
    args = ", ".join(f"arg{i}" for i in range(placeholders))
    fits = " and ".join(builder.assertions) or "True"
    return body + f"\n\ndef fits({args}):\n" + "\n".join([*defs, f"    return {fits}"]) + "\n"


def build_every_size_wrapper(
    build_wrapper: Callable[..., tuple[Callable, str, dict]],
    make_builder: Callable[..., SymbolicWrapper],
    module: ir.Module,
    compiled: object,
    result_dtypes: list[torch.dtype],
    device: torch.device,
    sizes: SymbolicSizes,
    eager: list,
    sources: dict[sympy.Symbol, str],
    placeholders: int,
) -> tuple[Callable, Callable[..., bool], str]:
    """(call, fits, source): the wrapper over `module`'s unbound entry, and whether a
    call's sizes hold the entry's size assertions.  `build_wrapper`, `make_builder`:
    the device's wrapper build and its builder class (entry, result dtypes, kernels);
    `sizes`: the entry's sizes as expressions of the graph's symbols; `sources`:
    symbol -> how the wrapper reads it from its arguments (`arg4.shape[0]`);
    `placeholders`: how many of the entry's arguments a caller passes (the rest are
    prepared)."""
    holder: dict = {}

    def builder(entry: object, dtypes: list, kernels: dict) -> SymbolicWrapper:
        made = make_builder(entry, dtypes, kernels)
        made.symbolic(sizes, eager)
        holder["builder"] = made
        return made

    def finish(source: str) -> str:
        return every_size_source(holder["builder"], source, sources, placeholders)

    call, source, scope = build_wrapper(
        module, compiled, result_dtypes, device, builder=builder, finish=finish,
        extra_scope={"SizeAssumptionFailed": SizeAssumptionFailed},
    )  # fmt: skip
    return call, scope["fits"], source
