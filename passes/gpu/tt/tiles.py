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

from mlir import ir

from mlirc.dialects import tt
from mlirc.passes.gpu.tt.numerics import (
    FLOAT_IDENTITY,
    INT_IDENTITY,
    INTEGER_MIN_MAX,
    LIBDEVICE,
    LIBDEVICE_F64,
    ROUNDED,
    SHIELDED,
)
from mlirc.passes.gpu.tt.sizes import Size, divides
from mlirc.passes.gpu.tt.tile_access import TileAccess, Tiled, _fail, _is_half, _join, compute_type, scalar_constant


class TileEmitter(TileAccess):
    """Emits the tt.func body for one generic under a TilePlan."""

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
