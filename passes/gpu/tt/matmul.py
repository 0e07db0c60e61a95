"""The tt lowering of a GEMM kernel (mlirc-gpu-matmul): a `tt.dot` loop over K with
the epilogue applied to the accumulator in registers.

A program owns a [BLOCK_M, BLOCK_N] tile of the result.  Programs are numbered in
groups of GROUP_M rows of tiles, so the programs running at once share panels of
A and B in L2 (the ordering of Triton's matmul tutorial).  Each K step loads an A
tile [BLOCK_M, BLOCK_K] and a B tile [BLOCK_K, BLOCK_N] in their storage type and
folds `tt.dot` into an f32 accumulator; Triton pipelines the loads over
`num_stages` steps.  Rows and columns past the edge are read modulo M and N (always
in bounds, no masks in the loop) and never stored; a K tail is masked to zeros.

The accumulator then stands for the GEMM's result: the epilogue's generics read it
in place, as a row group reads its members (TileEmitter.read_inputs), and only the
kernel's results are stored.  The tile's rows are the epilogue's leading loop
dims (M, possibly split by a reshape) and its columns the last one (N).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from mlir import ir

from mlirc.dialects import tt
from mlirc.errors import PipelineError
from mlirc.passes.base.linalg_utils import loop_ranges
from mlirc.passes.gpu.tt.tile_access import Tiled
from mlirc.passes.gpu.tt.tile_plans import TilePlan
from mlirc.passes.gpu.tt.tiles import TileEmitter

GROUP_M = 8


@dataclass
class Contraction:
    """A generic that is a (batched) GEMM: dims of its loops by role."""

    generic: ir.Operation
    m: int
    n: int
    k: int
    batch: int | None


def _maps(generic: ir.Operation) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(generic.attributes["indexing_maps"])]


def _dims(amap: ir.AffineMap) -> list[int] | None:
    if not all(isinstance(e, ir.AffineDimExpr) for e in amap.results):
        return None
    return [ir.AffineDimExpr(e).position for e in amap.results]


def _multiply_add(generic: ir.Operation) -> bool:
    """The body is out + a * b (with casts of the inputs allowed)."""
    names = [op.operation.name for op in generic.regions[0].blocks[0].operations]
    core = [n for n in names if n not in ("arith.extf", "arith.truncf")]
    return core == ["arith.mulf", "arith.addf", "linalg.yield"]


def find_contraction(generic: ir.Operation) -> Contraction | None:
    kinds = ["reduction" in str(k) for k in ir.ArrayAttr(generic.attributes["iterator_types"])]
    inputs = ir.DenseI32ArrayAttr(generic.attributes["operandSegmentSizes"])[0]
    if kinds.count(True) != 1 or inputs != 2 or len(generic.results) != 1 or not _multiply_add(generic):
        return None
    a_map, b_map, out_map = (_dims(m) for m in _maps(generic))
    if a_map is None or b_map is None or out_map != [d for d, red in enumerate(kinds) if not red]:
        return None
    k = kinds.index(True)
    m = [d for d in a_map if d not in b_map]
    n = [d for d in b_map if d not in a_map]
    batch = [d for d in a_map if d in b_map and d != k]
    if len(m) != 1 or len(n) != 1 or len(batch) > 1 or k not in a_map or k not in b_map:
        return None
    if out_map[-2:] != [m[0], n[0]]:
        return None
    return Contraction(generic, m[0], n[0], k, batch[0] if batch else None)


@dataclass
class MatmulPlan(TilePlan):
    """TilePlan over the stored generic's loops: rows (P) are M, columns (R) are N."""

    block_k: int = 32
    num_stages: int = 3
    size_m: int = 1
    size_n: int = 1
    size_k: int = 1
    batch: int = 1

    @property
    def grid(self) -> list[int]:
        return [-(-self.size_m // self.block_p) * -(-self.size_n // self.block_r), self.batch, 1]


def _pow2_at_least_16(n: int, cap: int) -> int:
    return max(16, min(cap, 1 << max(0, (n - 1).bit_length())))


def default_tile(size_m: int, size_n: int, size_k: int, element: ir.Type) -> tuple[int, ...]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) for H100-class GPUs:
    128x128 output tiles (128x256 for large half GEMMs), K steps of 128 bytes,
    clamped to small problems.  Measured on an H100, bf16 4096^3: 128x256x64 with
    8 warps and 3 stages reaches 92% of torch.mm, 128x128x64 79%, 256x128x64 88%."""
    bytes_per = 4 if isinstance(element, ir.F32Type) else 2
    if bytes_per == 2 and size_m >= 128 and size_n >= 256:
        return 128, 256, _pow2_at_least_16(size_k, 64), 8, 3
    block_m, block_n = _pow2_at_least_16(size_m, 128), _pow2_at_least_16(size_n, 128)
    block_k = _pow2_at_least_16(size_k, 128 // bytes_per)
    return block_m, block_n, block_k, 8 if block_m * block_n >= 128 * 128 else 4, 3


def plan_matmul(contraction: Contraction, tiled: ir.Operation, wide: bool, tile: tuple | None = None) -> MatmulPlan:
    """`tile`: (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages), by default default_tile's."""
    ranges = loop_ranges(contraction.generic)
    size_m, size_n, size_k = (ranges[d] for d in (contraction.m, contraction.n, contraction.k))
    element = ir.RankedTensorType(contraction.generic.operands[0].type).element_type
    block_m, block_n, block_k, warps, stages = tile or default_tile(size_m, size_n, size_k, element)
    tiled_ranges = loop_ranges(tiled)
    if tiled is contraction.generic:
        rows, cols = [contraction.m], [contraction.n]
    else:  # the epilogue's loops: (M split..., N)
        rows, cols = list(range(len(tiled_ranges) - 1)), [len(tiled_ranges) - 1]
    batch = ranges[contraction.batch] if contraction.batch is not None else 1
    return MatmulPlan(
        tiled_ranges, rows, cols, block_m, block_n, warps, wide, block_k, stages, size_m, size_n, size_k, batch
    )


def dot_precision(element: ir.Type) -> int:
    """f32 GEMMs follow torch's setting, as cuBLAS calls do."""
    if isinstance(element, ir.F32Type) and torch.backends.cuda.matmul.allow_tf32:
        return tt.TF32
    return tt.IEEE


class MatmulEmitter(TileEmitter):
    """Emits a GEMM kernel: the K loop, then the epilogue on the accumulator."""

    def __init__(self, kernel: str, contraction: Contraction, plan: MatmulPlan, memory: dict, scalars: dict) -> None:
        super().__init__(kernel, contraction.generic, plan, memory, scalars)
        self.contraction = contraction
        self.plan: MatmulPlan = plan

    def i32(self, value: int) -> Tiled:
        return self.const(value, ir.IntegerType.get_signless(32))

    def tile_ids(self) -> tuple[Tiled, Tiled]:
        """(pid_m, pid_n) of this program, in GROUP_M-row groups."""
        plan = self.plan
        tiles_m, tiles_n = -(-plan.size_m // plan.block_p), -(-plan.size_n // plan.block_r)
        pid = Tiled(tt.program_id(0), "s")
        per_group = self.i32(GROUP_M * tiles_n)
        first_m = self.arith("arith.muli", self.arith("arith.divsi", pid, per_group), self.i32(GROUP_M))
        left = self.arith("arith.subi", self.i32(tiles_m), first_m)
        group_m = self.arith("arith.minsi", left, self.i32(GROUP_M))
        in_group = self.arith("arith.remsi", pid, per_group)
        pid_m = self.arith("arith.addi", first_m, self.arith("arith.remsi", in_group, group_m))
        return pid_m, self.arith("arith.divsi", in_group, group_m)

    def shape(self, kind: str) -> list[int]:
        return [self.plan.block_k] if kind == "k" else super().shape(kind)

    def operand_tile(self, operand: ir.Value, axes: dict[int, tuple[Tiled, int]], shape: list[int]) -> ir.Value:
        """Pointers of a [rows, cols] tile of `operand`: each loop dim of its map is a
        1-D index along tile axis 0 or 1, or a scalar (the batch)."""
        generic = self.contraction.generic
        amap = _maps(generic)[list(generic.operands).index(operand)]
        memory = self.memory[operand]
        total = None
        for source_dim, (dim, size) in enumerate(zip(_dims(amap), memory.shape, strict=True)):
            if size == 1:
                continue
            index, axis = axes[dim]
            term = self.dim_offset(index, memory.parts(source_dim))  # None: a stride of 0
            if term is None:
                continue
            if term.kind == "s":
                value = tt.splat(term.value, shape)
            else:
                value = tt.broadcast(tt.expand_dims(term.value, 1 - axis), shape)
            total = value if total is None else tt.one("arith.addi", [total, value], value.type)
        if total is None:
            total = tt.splat(tt.scalar_constant(0, self.offset_type), shape)
        return self.tile_address(operand, total, shape)

    def tile_address(self, operand: ir.Value, offsets: ir.Value, shape: list[int]) -> ir.Value:
        memory = self.memory[operand]
        base = memory.pointer
        if memory.offset:
            base = tt.addptr(base, tt.scalar_constant(memory.offset, self.offset_type))
        return tt.addptr(tt.splat(base, shape), offsets)

    def load_tile(self, operand: ir.Value, pointers: ir.Value, mask: ir.Value | None) -> ir.Value:
        if mask is None:
            return tt.load(pointers, None)
        shape, element = tt.shape_of(pointers), tt.element_of(operand)
        zeros = tt.splat(tt.scalar_constant(0.0, element), shape)
        return tt.load(pointers, tt.broadcast(mask, shape), zeros)

    def emit(self, epilogue: list[ir.Operation], held_aliases: dict) -> None:
        c, plan = self.contraction, self.plan
        pid_m, pid_n = self.tile_ids()
        flat_m = self.start(pid_m, plan.block_p, "p", plan.size_m)
        flat_n = self.start(pid_n, plan.block_r, "r", plan.size_n)
        self.unflatten(flat_m, plan.parallel)
        self.unflatten(flat_n, plan.reduction)
        wrap = {}  # in-bounds rows/columns for the loads
        for dim, flat, size, block in (
            (c.m, flat_m, plan.size_m, plan.block_p),
            (c.n, flat_n, plan.size_n, plan.block_r),
        ):
            wrap[dim] = (
                flat if size % block == 0 else self.arith("arith.remsi", flat, self.const(size, self.offset_type))
            )
        if c.batch is not None:
            batch = Tiled(tt.program_id(1), "s")
            wrap[c.batch] = self.cast(batch, self.i64) if plan.wide_offsets else batch
            self.dims[c.batch] = wrap[c.batch]
        acc = self.k_loop(wrap)
        held = {c.generic.results[0]: acc}
        held.update({alias: acc for alias in held_aliases})
        for generic in epilogue:
            self.generic = generic
            results = self.lower_body(self.read_inputs(held))
            held.update(zip(generic.results, results, strict=True))
            self.store_results(results)
        if not epilogue:
            self.store_results([acc])

    def k_loop(self, wrap: dict) -> Tiled:
        c, plan = self.contraction, self.plan
        a, b = c.generic.operands[0], c.generic.operands[1]
        f32 = ir.F32Type.get()
        acc0 = tt.splat(tt.scalar_constant(0.0, f32), [plan.block_p, plan.block_r])
        index = self.offset_type
        bounds = [tt.scalar_constant(v, index) for v in (0, plan.size_k, plan.block_k)]
        loop = tt.create("scf.for", [*bounds, acc0], [acc0.type], regions=1)
        block = loop.regions[0].blocks.append(index, acc0.type)
        with ir.InsertionPoint(block):
            k = self.flat_index(block.arguments[0], plan.block_k, "k")
            k_mask = self.bound_mask(k, plan.size_k) if plan.size_k % plan.block_k else None
            a_shape, b_shape = [plan.block_p, plan.block_k], [plan.block_k, plan.block_r]
            a_ptrs = self.operand_tile(a, {c.m: (wrap[c.m], 0), c.k: (k, 1), **self.batch_axes(wrap)}, a_shape)
            b_ptrs = self.operand_tile(b, {c.k: (k, 0), c.n: (wrap[c.n], 1), **self.batch_axes(wrap)}, b_shape)
            a_mask = tt.expand_dims(k_mask, 0) if k_mask is not None else None
            b_mask = tt.expand_dims(k_mask, 1) if k_mask is not None else None
            a_tile, b_tile = self.load_tile(a, a_ptrs, a_mask), self.load_tile(b, b_ptrs, b_mask)
            precision = dot_precision(tt.element_of(a))
            tt.create("scf.yield", [tt.dot(a_tile, b_tile, block.arguments[1], precision)], [])
        return Tiled(loop.results[0], "t")

    def batch_axes(self, wrap: dict) -> dict:
        batch = self.contraction.batch
        return {} if batch is None else {batch: (wrap[batch], 0)}


def check_operands(kernel: str, contraction: Contraction) -> None:
    types = {str(tt.element_of(v)) for v in contraction.generic.operands[:2]}
    if len(types) != 1 or types.pop() not in ("f16", "bf16", "f32"):
        raise PipelineError("mlirc-gpu-lower-to-tt", f"kernel @{kernel}: tt.dot needs two f16, bf16 or f32 operands")
