"""The emitter that writes a tile's `tt` ops for a linalg generic under a TilePlan
(mlirc.passes.gpu.tt.tile_plans; used by mlirc-gpu-lower-to-tt).

A generic's iteration space is split into the parallel dims P and the reduction
dims R, each flattened; a program (one Triton block) computes

* pointwise: BLOCK_P consecutive points of P, as a 1-D tile;
* reductions: BLOCK_P rows as a [BLOCK_P, BLOCK_R] tile that walks R in steps of
  BLOCK_R, folding each step into the tile (masked lanes get the combiner's
  identity), then one `tt.reduce` per row.  A row that fits in one tile is read
  once (the loop has one trip), as Inductor's persistent reductions do.

Operands are read through their indexing maps over strided memory, so broadcasts,
transposes and row vectors (a softmax's max per row) need no copies: a value that
depends only on P is loaded as a 1-D [BLOCK_P] tile and broadcast when it meets
the 2-D tile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import sympy
from mlir import ir
from torch.utils._sympy.functions import FloorDiv

from mlirc.dialects import tt
from mlirc.errors import PipelineError
from mlirc.passes.gpu.tt.numerics import (
    FLOAT_IDENTITY,
    INT_IDENTITY,
    INTEGER_MIN_MAX,
    LIBDEVICE,
    LIBDEVICE_F64,
    ROUNDED,
    SHIELDED,
)
from mlirc.passes.gpu.tt.sizes import PASS, Size, divides, is_static, known
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


class TileEmitter:
    """Emits the tt.func body for one generic under a TilePlan."""

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

    # --- the generic's body --------------------------------------------------------
    def lookup(self, values: dict, v: ir.Value) -> Tiled:
        if v in values:
            return values[v]
        if v in self.scalars:
            return self.scalars[v]
        raise _fail(self.kernel, f"the generic's body uses a value from outside it: {v}")

    def apply_map(self, op: ir.Operation, values: dict) -> Tiled:
        """An affine.apply in the body: index arithmetic on loop indices (canonicalize
        folds a channels-last pad's bounds check, mlirc-channels-last, into one), in i64."""
        amap = ir.AffineMapAttr(op.attributes["map"]).value
        operands = [self.cast(self.lookup(values, v), self.i64) for v in op.operands]
        binary = {ir.AffineAddExpr: "arith.addi", ir.AffineMulExpr: "arith.muli"}

        def walk(expr: ir.AffineExpr) -> Tiled:
            if isinstance(expr, ir.AffineDimExpr):
                return operands[ir.AffineDimExpr(expr).position]
            if isinstance(expr, ir.AffineSymbolExpr):
                return operands[amap.n_dims + ir.AffineSymbolExpr(expr).position]
            if isinstance(expr, ir.AffineConstantExpr):
                return self.const(ir.AffineConstantExpr(expr).value, self.i64)
            for cls, name in binary.items():
                if isinstance(expr, cls):
                    return self.arith(name, walk(cls(expr).lhs), walk(cls(expr).rhs))
            # floordiv, ceildiv, mod round towards -inf: divsi/remsi would not on negatives
            raise _fail(self.kernel, f"index expression {expr} in a generic's body has no lowering")

        return walk(amap.results[0])

    def lower_op(self, op: ir.Operation, values: dict) -> list[Tiled]:
        name = op.name
        if name == "linalg.index":
            return [self.cast(self.dims[ir.IntegerAttr(op.attributes["dim"]).value], self.i64)]
        if name == "affine.apply":
            return [self.apply_map(op, values)]
        if name == "arith.constant":
            return [self.clone_constant(op)]
        if name in ("arith.index_cast", "arith.index_castui"):
            to = compute_type(op.results[0].type)
            return [self.cast(self.lookup(values, op.operands[0]), to, signed=name == "arith.index_cast")]
        if name == "tensor.extract":  # a gather: indices computed in the body
            indices = [self.cast(self.lookup(values, v), self.offset_type) for v in list(op.operands)[1:]]
            source = op.operands[0]
            if source in self.scalars:  # a splat constant
                return [self.scalars[source]]
            if source not in self.memory:
                raise _fail(self.kernel, "a gather from a tensor computed inside the kernel")
            return [self.load(source, self.offsets(indices, self.memory[source]))]
        if len(op.regions):
            raise _fail(self.kernel, f"'{name}' in a generic's body has no Triton lowering")
        if name in ROUNDED:
            return [self.libdevice(ROUNDED[name], [self.lookup(values, v) for v in op.operands], rounded=True)]
        if name in LIBDEVICE:
            return [self.libdevice(LIBDEVICE[name], [self.lookup(values, v) for v in op.operands])]
        if name in LIBDEVICE_F64 and isinstance(op.operands[0].type, ir.F64Type):
            return [self.libdevice(LIBDEVICE_F64[name], [self.lookup(values, v) for v in op.operands])]
        operands = [self.lookup(values, v) for v in op.operands]
        if name in SHIELDED:
            operands = [self.shield(x) for x in operands]
        if name in ("arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp"):
            return [self.lower_cast(op, operands[0])]
        if name == "arith.negf":  # Triton 3.6 has no negf: -0.0 - x keeps signed zeros
            zero = self.const(-0.0, tt.element_of(operands[0].value))
            return [self.arith("arith.subf", zero, operands[0])]
        if name == "arith.bitcast" and any(_is_half(t) for t in (op.operands[0].type, op.results[0].type)):
            raise _fail(self.kernel, "a bitcast of a half-precision value has no Triton lowering")
        kind = _join([x.kind for x in operands])
        types = [tt.tensor_type(self.shape(kind), compute_type(r.type)) for r in op.results]
        attrs = {a: op.attributes[a] for a in op.attributes}
        name = "tt.bitcast" if name == "arith.bitcast" else name  # Triton bitcasts tensors with its own op
        new = tt.create(name, [self.to_kind(x, kind) for x in operands], types, attrs)
        return [Tiled(r, kind) for r in new.results]

    def shield(self, x: Tiled) -> Tiled:
        """x + 0 that no compiler can fold (see SHIELDED); other types as they are."""
        element = tt.element_of(x.value)
        if not isinstance(element, ir.IntegerType) or ir.IntegerType(element).width == 1:
            return x
        if isinstance(x.value.owner, ir.OpView) and x.value.owner.name == "arith.constant":
            return x  # a constant is no negation
        if str(element) not in self.zeros:
            with ir.InsertionPoint.at_block_begin(self.entry):
                zero = tt.program_id(2)
                width = ir.IntegerType(element).width
                if width != 32:
                    zero = tt.one("arith.trunci" if width < 32 else "arith.extsi", [zero], element)
            self.zeros[str(element)] = zero
        return self.arith("arith.addi", x, Tiled(self.zeros[str(element)], "s"))

    def libdevice(self, function: str, operands: list[Tiled], rounded: bool = False) -> Tiled:
        """`__nv_<function>f` (f32) or `__nv_<function>` (f64); `rounded` ones are
        spelled `__nv_f<function>` / `__nv_d<function>`."""
        kind = _join([x.kind for x in operands])
        compute = tt.element_of(operands[0].value)  # f32 or f64: halves compute in f32
        args = [self.to_kind(x, kind) for x in operands]
        f64 = isinstance(compute, ir.F64Type)
        symbol = f"__nv_{'d' if f64 else 'f'}{function}" if rounded else f"__nv_{function}{'' if f64 else 'f'}"
        attrs = {
            "libname": ir.StringAttr.get(""),
            "libpath": ir.StringAttr.get(""),
            "pure": ir.BoolAttr.get(True),
            "symbol": ir.StringAttr.get(symbol),
        }
        return Tiled(tt.one("tt.extern_elementwise", args, tt.tensor_type(self.shape(kind), compute), attrs), kind)

    def clone_constant(self, op: ir.Operation) -> Tiled:
        value = scalar_constant(op)
        if value is None:
            raise _fail(self.kernel, "a tensor constant in a kernel has no Triton lowering")
        return Tiled(value, "s")

    def lower_cast(self, op: ir.Operation, x: Tiled) -> Tiled:
        """Float casts between compute types; a cast to a half rounds (and widens
        back), so explicit `.half()`s keep their rounding."""
        source, target = op.operands[0].type, op.results[0].type
        value = x.value
        if compute_type(source) != compute_type(target):
            value = tt.one(op.name, [value], tt.tensor_type(self.shape(x.kind), compute_type(target)))
        if _is_half(target) and not _is_half(source):
            value = tt.one("arith.truncf", [value], tt.tensor_type(self.shape(x.kind), target))
            value = tt.one("arith.extf", [value], tt.tensor_type(self.shape(x.kind), compute_type(target)))
        return Tiled(value, x.kind)

    def lower_body(self, values: dict, skip: ir.Operation | None = None) -> list[Tiled]:
        """Lower the body's ops (but `skip`, a reduction's combiner) and return the
        yielded values."""
        for op in self.generic.regions[0].blocks[0].operations:
            op = op.operation
            if op.name == "linalg.yield":
                return [] if skip is not None else [self.lookup(values, v) for v in op.operands]
            if skip is not None and op == skip:
                continue
            for result, tiled in zip(op.results, self.lower_op(op, values), strict=True):
                values[result] = tiled
        raise _fail(self.kernel, "the generic has no linalg.yield")

    # --- kernels -------------------------------------------------------------------
    def maps(self) -> list[ir.AffineMap]:
        return [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(self.generic.attributes["indexing_maps"])]

    def inputs(self) -> int:
        return ir.DenseI32ArrayAttr(self.generic.attributes["operandSegmentSizes"])[0]

    def read_inputs(self, held: dict | None = None) -> dict:
        """The body's block args: loaded, or `held` in registers (a row group's
        earlier results, read in place: mlirc-gpu-fuse-rows checked the maps)."""
        body = self.generic.regions[0].blocks[0]
        values = {}
        for i, (operand, amap) in enumerate(zip(self.generic.operands, self.maps(), strict=True)):
            arg = body.arguments[i]
            if held and operand in held:
                values[arg] = held[operand]
            elif any(True for _ in arg.uses):  # a pooling window's input is only a shape
                if i >= self.inputs() and operand not in self.scalars and operand not in self.memory:
                    raise _fail(self.kernel, "the body reads an uninitialised output")
                values[arg] = self.read_operand(operand, amap)
        return values

    def start(self, pid: Tiled, block: int, kind: str, size: Size) -> Tiled:
        """Block `pid`'s flat indices along `kind` (of `size` in all) and their mask."""
        if self.plan.wide_offsets:
            pid = self.cast(pid, self.i64)
        first = self.arith("arith.muli", pid, self.const(block, self.offset_type))
        flat = self.flat_index(first.value, block, kind)
        self.masks[kind] = self.bound_mask(flat, size, exact=divides(block, size))
        self.flat[kind] = flat
        return flat

    def start_rows(self) -> Tiled:
        """The program's rows of P: indices, mask, and the flat row index."""
        self.entry = ir.InsertionPoint.current.block
        flat = self.start(Tiled(tt.program_id(0), "s"), self.plan.block_p, "p", self.plan.size_p)
        self.unflatten(flat, self.plan.parallel)
        return flat

    def store_results(self, results: list[Tiled]) -> None:
        maps = self.maps()[self.inputs() :]
        for result, amap, value in zip(self.generic.results, maps, results, strict=True):
            if result in self.memory:  # a row group's intermediates stay in registers
                self.store(result, self.map_offsets(amap, self.memory[result]), value)

    def emit_pointwise(self) -> None:
        self.start_rows()
        self.store_results(self.lower_body(self.read_inputs()))

    def combiner(self) -> tuple[ir.Operation, ir.Value]:
        """The reduction's combining op and the operand it folds in."""
        body = self.generic.regions[0].blocks[0]
        if len(self.generic.results) != 1:
            raise _fail(self.kernel, "reductions with several results have no Triton lowering yet")
        out_arg = body.arguments[self.inputs()]
        yielded = list(body.operations)[-1].operands[0]
        combine = yielded.owner.operation
        uses = [u.owner.operation for u in out_arg.uses]
        if len(uses) != 1 or uses[0] != combine or out_arg not in list(combine.operands):
            raise _fail(self.kernel, "the reduction is not a fold of its output with one combining op")
        if combine.name not in FLOAT_IDENTITY and combine.name not in INT_IDENTITY:
            raise _fail(self.kernel, f"'{combine.name}' is not a reduction combiner Triton can fold")
        other = [v for v in combine.operands if v != out_arg]
        return combine, other[0] if other else out_arg

    def identity(self, combine: ir.Operation, element: ir.Type) -> Tiled:
        if combine.name in FLOAT_IDENTITY:
            return self.const(FLOAT_IDENTITY[combine.name], element)
        return self.const(INT_IDENTITY[combine.name](ir.IntegerType(element).width), element)

    def combine(self, combine: ir.Operation, a: Tiled, b: Tiled) -> Tiled:
        attrs = {n: combine.attributes[n] for n in combine.attributes}
        return self.arith(combine.name, a, b, attrs)

    def emit_reduction(self) -> None:
        combine, folded = self.combiner()
        element = compute_type(tt.element_of(self.generic.results[0]))
        self.start_rows()
        identity = self.identity(combine, element)
        acc0 = self.to_kind(identity, "t")
        index = self.offset_type
        bounds = [self.size(v).value for v in (0, self.plan.size_r, self.plan.block_r)]
        loop = tt.create("scf.for", [*bounds, acc0], [acc0.type], regions=1)
        block = loop.regions[0].blocks.append(index, acc0.type)
        with ir.InsertionPoint(block):
            flat_r = self.flat_index(block.arguments[0], self.plan.block_r, "r")
            self.masks["r"] = self.bound_mask(flat_r, self.plan.size_r, divides(self.plan.block_r, self.plan.size_r))
            self.flat["r"] = flat_r
            self.masks.pop("t", None)
            self.unflatten(flat_r, self.plan.reduction)
            values = self.read_inputs()
            self.lower_body(values, skip=combine)
            value = Tiled(self.to_kind(self.lookup(values, folded), "t"), "t")
            kept = Tiled(self.keep_in_bounds(value.value, self.to_kind(identity, "t")), "t")
            if combine.name in INTEGER_MIN_MAX:
                kept = self.shield(kept)
            acc = self.combine(combine, Tiled(block.arguments[1], "t"), kept)
            tt.create("scf.yield", [acc.value], [])
        self.store_results([self.finish_rows(combine, loop.results[0])])

    def finish_rows(self, combine: ir.Operation, tile: ir.Value) -> Tiled:
        """Fold each row of the [BLOCK_P, BLOCK_R] tile, then into the output's init."""
        rows = Tiled(tt.reduce(tile, 1, lambda a, b: self.combine(combine, Tiled(a, "s"), Tiled(b, "s")).value), "p")
        init = self.generic.operands[self.inputs()]
        if init in self.memory:
            rows = self.combine(combine, self.read_operand(init, self.maps()[self.inputs()]), rows)
        elif init in self.scalars:
            rows = self.combine(combine, self.scalars[init], rows)
        return rows

    def emit_rows(self, generics: list[ir.Operation]) -> None:
        """A row group (mlirc-gpu-fuse-rows): whole rows in one tile, every member
        computed on it in registers; only the kernel's results are stored."""
        self.row_group = True
        self.start_rows()
        flat_r = self.flat_index(tt.scalar_constant(0, self.offset_type), self.plan.block_r, "r")
        self.masks["r"] = self.bound_mask(flat_r, self.plan.size_r, self.plan.size_r == self.plan.block_r)
        self.flat["r"] = flat_r
        self.unflatten(flat_r, self.plan.reduction)
        self.loaded = {}
        held: dict = {}
        for generic in generics:
            self.generic = generic
            values = self.read_inputs(held)
            if any("reduction" in str(k) for k in ir.ArrayAttr(generic.attributes["iterator_types"])):
                combine, folded = self.combiner()
                self.lower_body(values, skip=combine)
                element = compute_type(tt.element_of(generic.results[0]))
                identity = self.to_kind(self.identity(combine, element), "t")
                value = self.to_kind(self.lookup(values, folded), "t")
                kept = Tiled(self.keep_in_bounds(value, identity), "t")
                if combine.name in INTEGER_MIN_MAX:
                    kept = self.shield(kept)
                results = [self.finish_rows(combine, kept.value)]
            else:
                results = self.lower_body(values)
            held.update(zip(generic.results, results, strict=True))
            self.store_results(results)
