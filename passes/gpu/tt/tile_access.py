"""A tile's shapes, broadcasts, sizes, indices, masks and memory accesses: the
values TileEmitter (mlirc.passes.gpu.tt.tiles) lowers a generic's body with.

A tile is named by the axes it spans (Tiled.kind); operands are addressed through
their indexing maps over strided memory (Memory, mlirc.passes.gpu.tt.tile_plans).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import sympy
from mlir import ir
from torch.utils._sympy.functions import FloorDiv

from mlirc.dialects import tt
from mlirc.errors import PipelineError
from mlirc.passes.gpu.tt.sizes import PASS, Size, is_static, known
from mlirc.passes.gpu.tt.tile_plans import Memory, Part, TilePlan


def _fail(kernel: str, message: str) -> PipelineError:
    return PipelineError(PASS, f"kernel @{kernel}: {message}")


def compute_type(t: ir.Type) -> ir.Type:
    """Kernels compute halves in f32 (loads widen, stores round, as Inductor's
    kernels do) and index values in i64."""
    if isinstance(t, (ir.F16Type, ir.BF16Type)):
        return ir.F32Type.get()
    if isinstance(t, ir.IndexType):
        return ir.IntegerType.get_signless(64)
    return t


def _is_half(t: ir.Type) -> bool:
    return isinstance(t, (ir.F16Type, ir.BF16Type))


def scalar_constant(op: ir.Operation) -> ir.Value | None:
    """A scalar (or splat tensor) arith.constant as one scalar in its compute type;
    None for other tensor constants."""
    attr, result_type = op.attributes["value"], op.results[0].type
    if isinstance(result_type, ir.ShapedType):
        dense = ir.DenseElementsAttr(attr) if isinstance(attr, ir.DenseElementsAttr) else None
        if dense is None or not dense.is_splat:
            return None
        attr, result_type = dense.get_splat_value(), ir.ShapedType(result_type).element_type
    if isinstance(result_type, ir.IndexType):
        attr = ir.IntegerAttr.get(compute_type(result_type), ir.IntegerAttr(attr).value)
    elif _is_half(result_type):
        attr = ir.FloatAttr.get(compute_type(result_type), ir.FloatAttr(attr).value)
    return tt.constant(attr, compute_type(result_type))


CMPI_NE, CMPI_SLT = 1, 2  # arith.cmpi's predicate numbers


def _predicate(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


@dataclass
class Tiled:
    """A value inside the tt.func: `kind` says which tile axes it spans.

    s: scalar; p: [BLOCK_P]; r: [BLOCK_R]; t: [BLOCK_P, BLOCK_R]."""

    value: ir.Value
    kind: str


def _same(a: Size, b: Size) -> bool:
    return sympy.expand(sympy.sympify(a) - sympy.sympify(b)) == 0


def _join(kinds: list[str]) -> str:
    spans = {k for k in kinds if k != "s"}
    if not spans:
        return "s"
    return spans.pop() if len(spans) == 1 else "t"


class TileAccess:
    """The state and tile-level building blocks of one generic's tt.func body under
    a TilePlan: shapes and broadcasts, iteration indices and masks, loads and stores."""

    def __init__(
        self,
        kernel: str,
        generic: ir.Operation,
        plan: TilePlan,
        memory: dict,
        scalars: dict,
        size_values: dict | None = None,
    ) -> None:
        self.kernel = kernel
        self.generic = generic
        self.plan = plan
        self.memory: dict[ir.Value, Memory] = memory  # tensors in memory: args, results, their views
        self.scalars = scalars  # values defined outside the generic -> Tiled (constants, fills)
        self.offset_type = ir.IntegerType.get_signless(64 if plan.wide_offsets else 32)
        self.i64 = ir.IntegerType.get_signless(64)
        self.dims: dict[int, Tiled] = {}
        self.flat: dict[str, Tiled] = {}  # "p"/"r" -> flattened index of those dims
        self.flat_dims = {"p": plan.parallel, "r": plan.reduction}
        self.masks: dict[str, ir.Value | None] = {"s": None}
        # (operand, map) -> its tile, while all loads share one scope (a row group):
        # each input is read from memory once however many members read it.
        self.loaded: dict[tuple[ir.Value, str], Tiled] | None = None
        self.row_group = False  # emit_rows: whole rows in registers
        self.entry: ir.Block | None = None  # the tt.func's body, where start_rows began
        self.zeros: dict[str, ir.Value] = {}  # integer type -> an opaque zero (see SHIELDED)
        # run-time sizes: symbol -> the tt.func's i64 argument, and each size expression
        # computed once, before the anchor at the top of the body
        self.size_values: dict[sympy.Expr, ir.Value] = dict(size_values or {})
        self.size_anchor: ir.Operation | None = None

    # --- shapes and broadcasts -------------------------------------------------
    def shape(self, kind: str) -> list[int]:
        return {
            "s": [],
            "p": [self.plan.block_p],
            "r": [self.plan.block_r],
            "t": [self.plan.block_p, self.plan.block_r],
        }[kind]

    def to_kind(self, x: Tiled, kind: str) -> ir.Value:
        if x.kind == kind:
            return x.value
        if x.kind == "s":
            return tt.splat(x.value, self.shape(kind))
        if kind != "t":
            raise _fail(self.kernel, f"cannot broadcast a {x.kind}-tile to a {kind}-tile")
        return tt.broadcast(tt.expand_dims(x.value, 1 if x.kind == "p" else 0), self.shape("t"))

    def const(self, value: int | float, element: ir.Type) -> Tiled:
        return Tiled(tt.scalar_constant(value, element), "s")

    def size(self, size: Size) -> Tiled:
        """A size as a scalar of the offset type: a constant, or (a kernel of run-time
        sizes, whose offsets are i64) computed from its size arguments at the top."""
        if is_static(size):
            return self.const(int(size), self.offset_type)
        if self.offset_type != self.i64:
            raise _fail(self.kernel, f"the run-time size {size} in a kernel of i32 offsets")
        if self.size_anchor is None:
            with ir.InsertionPoint.at_block_begin(self.entry_block()):
                self.size_anchor = tt.scalar_constant(0, self.i64).owner
        with ir.InsertionPoint(self.size_anchor):
            return Tiled(self._size_value(sympy.sympify(size)), "s")

    def _size_value(self, expr: sympy.Expr) -> ir.Value:
        if expr in self.size_values:
            return self.size_values[expr]
        if expr.is_number:
            if not expr.is_integer:
                raise _fail(self.kernel, f"the size {expr} is not an integer")
            value = tt.scalar_constant(int(expr), self.i64)
        elif isinstance(expr, (sympy.Add, sympy.Mul)):
            name = "arith.addi" if isinstance(expr, sympy.Add) else "arith.muli"
            parts = [self._size_value(a) for a in expr.args]
            value = parts[0]
            for part in parts[1:]:
                value = tt.one(name, [value, part], self.i64)
        elif isinstance(expr, sympy.Pow) and expr.exp.is_integer and expr.exp > 0:
            base = value = self._size_value(expr.base)
            for _ in range(int(expr.exp) - 1):
                value = tt.one("arith.muli", [value, base], self.i64)
        elif isinstance(expr, (FloorDiv, sympy.Mod)):  # of sizes, >= 0: truncation is floor
            name = "arith.divsi" if isinstance(expr, FloorDiv) else "arith.remsi"
            value = tt.one(name, [self._size_value(expr.args[0]), self._size_value(expr.args[1])], self.i64)
        else:
            raise _fail(self.kernel, f"the size {expr} has no lowering")
        self.size_values[expr] = value
        return value

    def entry_block(self) -> ir.Block:
        """The tt.func's body: the block of the innermost insertion point's ancestors."""
        block = ir.InsertionPoint.current.block
        while block.owner.operation.name != "tt.func":
            block = block.owner.operation.block
        return block

    def arith(self, name: str, a: Tiled, b: Tiled, attrs: dict | None = None) -> Tiled:
        kind = _join([a.kind, b.kind])
        operands = [self.to_kind(a, kind), self.to_kind(b, kind)]
        result = tt.tensor_type(self.shape(kind), tt.element_of(operands[0]))
        if name == "arith.cmpi":
            result = tt.tensor_type(self.shape(kind), ir.IntegerType.get_signless(1))
        return Tiled(tt.one(name, operands, result, attrs), kind)

    def cast(self, x: Tiled, to: ir.Type, signed: bool = True) -> Tiled:
        src = ir.IntegerType(tt.element_of(x.value)).width
        dst = ir.IntegerType(to).width
        if src == dst:
            return x
        name = "arith.trunci" if src > dst else ("arith.extsi" if signed else "arith.extui")
        return Tiled(tt.one(name, [x.value], tt.tensor_type(self.shape(x.kind), to)), x.kind)

    # --- iteration indices ---------------------------------------------------------
    def flat_index(self, base: ir.Value, block: int, kind: str) -> Tiled:
        """base + arange(block) in the offset type."""
        lane = Tiled(tt.make_range(block), kind)
        start = Tiled(base, "s")
        if self.plan.wide_offsets:
            lane, start = self.cast(lane, self.i64), self.cast(start, self.i64)
        return self.arith("arith.addi", start, lane)

    def unflatten(self, flat: Tiled, dims: list[int]) -> None:
        """Row-major indices of `dims` from their flattened index."""
        stride: Size = 1
        for d in reversed(dims):
            size = self.plan.ranges[d]
            index = flat
            if known(size, 1):
                self.dims[d] = self.const(0, self.offset_type)
                continue
            if not known(stride, 1):
                index = self.arith("arith.divsi", index, self.size(stride))
            if d != dims[0]:
                index = self.arith("arith.remsi", index, self.size(size))
            self.dims[d] = index
            stride *= size

    def mask(self, kind: str) -> ir.Value | None:
        if kind not in self.masks:  # only "t" is built lazily
            p, r = self.masks["p"], self.masks["r"]
            if p is not None and r is not None:
                self.masks[kind] = self.arith("arith.andi", Tiled(p, "p"), Tiled(r, "r")).value
            elif p is not None or r is not None:
                self.masks[kind] = self.to_kind(Tiled(p, "p") if r is None else Tiled(r, "r"), kind)
            else:
                self.masks[kind] = None
        return self.masks[kind]

    def bound_mask(self, flat: Tiled, size: Size, exact: bool = False) -> ir.Value | None:
        """flat < size; None where the blocks tile the size exactly (no lane is out of
        bounds), so that loads and stores carry no predicate and reductions no select."""
        if exact:
            return None
        return self.arith("arith.cmpi", flat, self.size(size), {"predicate": _predicate(CMPI_SLT)}).value

    def keep_in_bounds(self, value: ir.Value, identity: ir.Value) -> ir.Value:
        """Out-of-bounds lanes of a tile to be reduced hold the combiner's identity."""
        mask = self.mask("t")
        return value if mask is None else tt.one("arith.select", [mask, value, identity], value.type)

    # --- memory ------------------------------------------------------------------
    def affine(self, expr: ir.AffineExpr) -> Tiled:
        if isinstance(expr, ir.AffineDimExpr):
            return self.dims[ir.AffineDimExpr(expr).position]
        if isinstance(expr, ir.AffineConstantExpr):
            return self.const(ir.AffineConstantExpr(expr).value, self.offset_type)
        binary = {
            ir.AffineAddExpr: "arith.addi",
            ir.AffineMulExpr: "arith.muli",
            ir.AffineFloorDivExpr: "arith.divsi",
            ir.AffineModExpr: "arith.remsi",
        }
        for cls, name in binary.items():
            if isinstance(expr, cls):
                e = cls(expr)
                return self.arith(name, self.affine(e.lhs), self.affine(e.rhs))
        raise _fail(self.kernel, f"indexing expression {expr} has no lowering")

    def offsets(self, indices: list[Tiled], memory: Memory) -> Tiled:
        total: Tiled | None = None
        for dim, index in enumerate(indices):
            term = self.dim_offset(index, memory.parts(dim))
            if term is not None:
                total = term if total is None else self.arith("arith.addi", total, term)
        return total or self.const(0, self.offset_type)

    def dim_offset(self, index: Tiled, parts: list[Part]) -> Tiled | None:
        """The offset of `index` along a dim of these (size, stride) parts, outer
        first (a split dim, Memory's, has several): each part is read at the index's
        row-major digit.  The outermost digit needs no remainder: in-bounds indices
        are below the dim's size, and the others' lanes are masked.  None: no offset."""
        total: Tiled | None = None
        inner: Size = 1
        for k in reversed(range(len(parts))):
            size, stride = parts[k]
            digit = index if known(inner, 1) else self.arith("arith.divsi", index, self.size(inner))
            if k > 0:
                digit = self.arith("arith.remsi", digit, self.size(size))
            inner *= size
            if known(stride, 0):
                continue
            term = digit if known(stride, 1) else self.arith("arith.muli", digit, self.size(stride))
            total = term if total is None else self.arith("arith.addi", total, term)
        return total

    def map_offsets(self, amap: ir.AffineMap, memory: Memory) -> Tiled:
        """Offsets of an operand read through `amap`.  A trailing run of its dims that
        is a suffix of the flattened P (or R) dims, laid out contiguously, is the flat
        index itself (modulo the run's size): Triton then sees contiguous addresses
        and vectorizes.  A split dim (Memory.splits) is in no run."""
        items = [
            (e, n, memory.parts(d))
            for d, (e, n) in enumerate(zip(amap.results, memory.shape, strict=True))
            if not known(n, 1)
        ]
        runs = {k: [d for d in dims if not known(self.plan.ranges[d], 1)] for k, dims in self.flat_dims.items()}
        total: Tiled | None = None
        i = len(items)
        while i > 0:
            kind, length = self.flat_run(items[:i], runs)
            if length:
                size = math.prod(n for _, n, _ in items[i - length : i])
                term = self.flat[kind]
                if length < len(runs[kind]):
                    term = self.arith("arith.remsi", term, self.size(size))
                innermost = items[i - 1][2][0]  # a run's items are single parts
                scaled = self.dim_offset(term, [(size, innermost[1])])
            else:
                scaled, length = self.dim_offset(self.affine(items[i - 1][0]), items[i - 1][2]), 1
            if scaled is not None:
                total = scaled if total is None else self.arith("arith.addi", total, scaled)
            i -= length
        return total or self.const(0, self.offset_type)

    def flat_run(self, items: list, runs: dict[str, list[int]]) -> tuple[str, int]:
        """The longest contiguous tail of `items` (expr, size, parts) whose dims are a
        suffix of a flattened index."""
        for kind, dims in runs.items():
            length = 0
            while length < min(len(dims), len(items)):
                expr, size, parts = items[-1 - length]
                dim = dims[-1 - length]
                if (
                    len(parts) > 1
                    or not isinstance(expr, ir.AffineDimExpr)
                    or expr.position != dim
                    or not _same(size, self.plan.ranges[dim])
                ):
                    break
                if length:
                    _, inner_size, inner_parts = items[-length]
                    if not _same(parts[0][1], inner_parts[0][1] * inner_size):
                        break  # not contiguous with the inner part of the run
                length += 1
            if length:
                return kind, length
        return "", 0

    def address(self, tensor: ir.Value, offsets: Tiled) -> ir.Value:
        memory = self.memory[tensor]
        base = memory.pointer
        if not known(memory.offset, 0):
            base = tt.addptr(base, self.size(memory.offset).value)
        if offsets.kind == "s":
            return tt.addptr(base, offsets.value)
        return tt.addptr(tt.splat(base, self.shape(offsets.kind)), offsets.value)

    def load(self, tensor: ir.Value, offsets: Tiled) -> Tiled:
        # A tile that does not move with the program's rows (a bias, a norm's weight)
        # is read by every program: ask L2 to keep it.  A row group's rows get the same
        # hint, as Inductor gives its reductions' loads: on an H100, softmax and layer
        # norm over 16384x4096 ran 0.4-1% faster with it (0.1822 -> 0.1815 ms, L2
        # flushed before each call), and evict-first was 1% slower.
        size_p = self.plan.size_p
        shared = offsets.kind in ("r", "s") and (not is_static(size_p) or int(size_p) > self.plan.block_p)
        evict = tt.EVICT_LAST if shared or self.row_group else None
        value = tt.load(self.address(tensor, offsets), self.mask(offsets.kind), evict=evict)
        if isinstance(tt.element_of(tensor), ir.IntegerType) and ir.IntegerType(tt.element_of(tensor)).width == 1:
            value = self.arith(
                "arith.cmpi",
                Tiled(value, offsets.kind),
                self.const(0, tt.element_of(value)),
                {"predicate": _predicate(CMPI_NE)},
            ).value  # bools are bytes in memory
        if _is_half(tt.element_of(value)):
            value = tt.one(
                "arith.extf", [value], tt.tensor_type(self.shape(offsets.kind), compute_type(tt.element_of(value)))
            )
        return Tiled(value, offsets.kind)

    def store(self, tensor: ir.Value, offsets: Tiled, value: Tiled) -> None:
        if offsets.kind == "s" and value.kind != "s":  # a 0-d result of a reduction: lane 0 stores it
            offsets = Tiled(self.to_kind(offsets, value.kind), value.kind)
        elif value.kind == "t" and offsets.kind != "t":  # unit dims: a tile's row or column is one address
            offsets = Tiled(self.to_kind(offsets, "t"), "t")
        data = self.to_kind(value, offsets.kind)
        element = tt.element_of(tensor)
        if isinstance(element, ir.IntegerType) and ir.IntegerType(element).width == 1:
            data = tt.one(
                "arith.extui", [data], tt.tensor_type(self.shape(offsets.kind), ir.IntegerType.get_signless(8))
            )
        elif _is_half(element):
            data = tt.one("arith.truncf", [data], tt.tensor_type(self.shape(offsets.kind), element))
        tt.store(self.address(tensor, offsets), data, self.mask(offsets.kind))

    def read_operand(self, operand: ir.Value, amap: ir.AffineMap) -> Tiled:
        if operand in self.scalars:
            return self.scalars[operand]
        if operand not in self.memory:
            raise _fail(self.kernel, "an operand of the generic is computed inside the kernel")
        key = (operand, str(amap))
        if self.loaded is not None and key in self.loaded:
            return self.loaded[key]
        tile = self.load(operand, self.map_offsets(amap, self.memory[operand]))
        if self.loaded is not None:
            self.loaded[key] = tile
        return tile
