"""mlirc-gpu-matmul: GEMMs that Triton should generate become kernels, with the
transposes that feed them and the elementwise epilogue that consumes them.

After `mlirc-outline-library-calls` every GEMM is a cuBLAS call, which wins alone
but writes its result to memory for the next kernel (bias, GELU, residual) to read
back.  A generated GEMM keeps its accumulator in registers and applies the
epilogue before the one store.  Per `mm` call, by the pass's `mode` option
(MLIRC_GPU_GEMM):

* "extern": leave every GEMM to cuBLAS;
* "generated": generate every 2-D `mm` and 3-D `bmm`;
* "auto" (the default): cuBLAS for now.  Measured on an H100 (gpu_bench.py), the
  generated bf16 4096^3 GEMM reaches 92% of torch.mm, and an 8192x4096x4096
  linear + GELU with its epilogue fused 93% of cuBLAS plus a separate GELU kernel:
  the saved round trip of the result does not yet pay for the slower main loop.
  f32 GEMMs without TF32 run on FMA units, where cuBLAS's SGEMM is ahead too.

The group -- `permute` views of the operands, the GEMM, the epilogue -- is inlined
into one kernel `matmul_N`; `mlirc-gpu-lower-to-tt` recognises the contraction in
it and lowers it to a `tt.dot` loop (passes/gpu/tt/matmul.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func

from mlirc.dialects.attributes import TILE_ATTR
from mlirc.errors import PipelineError
from mlirc.passes.base.ir_utils import callee, entry_functions, erase_op, erase_uncalled_kernels, functions, fuse_calls
from mlirc.passes.base.linalg_utils import KERNEL_PLUMBING, VIEWS, is_fill, loop_ranges
from mlirc.passes.base.registry import register_pass
from mlirc.passes.outline_library_calls import library_of

GEMMS = frozenset({"mm", "bmm"})
GEMM_TYPES = (ir.F16Type, ir.BF16Type, ir.F32Type)  # what tt.dot multiplies
MODES = ("auto", "generated", "extern")


@dataclass(frozen=True)
class GpuMatmulOptions:
    mode: str = "auto"  # one of MODES (above)
    # The generated kernels' tiles: BLOCK_M, BLOCK_N, BLOCK_K, warps, stages (None:
    # mlirc-gpu-lower-to-tt's own choice).
    tile: tuple[int, ...] | None = None


def _pointwise_generic(kernel: func.FuncOp) -> ir.Operation | None:
    ops = [op.operation for op in kernel.entry_block.operations]
    if any(op.name not in KERNEL_PLUMBING | VIEWS for op in ops):
        return None
    generics = [op for op in ops if op.name == "linalg.generic" and not is_fill(op)]
    if len(generics) != 1 or len(generics[0].results) != 1:
        return None
    generic = generics[0]
    if any("reduction" in str(k) for k in ir.ArrayAttr(generic.attributes["iterator_types"])):
        return None
    return generic


def _identity(amap: ir.AffineMap) -> bool:
    return [str(e) for e in amap.results] == [f"d{i}" for i in range(amap.n_dims)]


class Planner:
    def __init__(self, kernels: dict[str, func.FuncOp], mode: str) -> None:
        self.kernels = kernels
        self.mode = mode

    def kernel(self, call: ir.Operation) -> func.FuncOp | None:
        return self.kernels.get(callee(call)) if call.name == "func.call" else None

    def epilogue(self, gemm: ir.Operation) -> ir.Operation | None:
        """The one pointwise kernel call that reads the GEMM's [M, N] result in place
        (directly or through a reshape that splits M), over loops (M..., N)."""
        result = gemm.results[0]
        users = [u.owner.operation for u in result.uses]
        if len(gemm.results) != 1 or len(users) != 1 or users[0].name != "func.call":
            return None
        call = users[0]
        kernel = self.kernel(call)
        generic = _pointwise_generic(kernel) if kernel is not None and library_of(kernel) is None else None
        if generic is None:
            return None
        m, n = ir.RankedTensorType(result.type).shape
        ranges = loop_ranges(generic)
        if ranges[-1] != n or math.prod(ranges[:-1]) != m:
            return None
        maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(generic.attributes["indexing_maps"])]
        if not _identity(maps[-1]):
            return None
        for index, operand in enumerate(call.operands):
            if operand != result:
                continue
            arg = kernel.entry_block.arguments[index]
            if not self.read_in_place(arg, generic, maps):
                return None
        return call

    @staticmethod
    def read_in_place(arg: ir.Value, generic: ir.Operation, maps: list[ir.AffineMap]) -> bool:
        value, uses = arg, [u.owner.operation for u in arg.uses]
        if len(uses) == 1 and uses[0].name == "tensor.expand_shape":
            value = uses[0].results[0]
            uses = [u.owner.operation for u in value.uses]
        if len(uses) != 1 or uses[0] != generic:
            return False
        inputs = ir.DenseI32ArrayAttr(generic.attributes["operandSegmentSizes"])[0]
        positions = [i for i, v in enumerate(generic.operands) if v == value]
        return all(i < inputs and _identity(maps[i]) for i in positions)

    def wanted(self, gemm: ir.Operation, epilogue: ir.Operation | None) -> bool:
        library = library_of(self.kernel(gemm))
        if library not in GEMMS or self.mode == "extern":
            return False
        element = ir.RankedTensorType(gemm.results[0].type).element_type
        return self.mode == "generated" and isinstance(element, GEMM_TYPES)

    def group(self, gemm: ir.Operation) -> list[ir.Operation] | None:
        epilogue = self.epilogue(gemm) if library_of(self.kernel(gemm)) == "mm" else None
        if not self.wanted(gemm, epilogue):
            return None
        views = []
        for i, operand in enumerate(gemm.operands):
            if isinstance(operand.owner, ir.Block):
                continue
            producer = operand.owner.operation
            if library_of(self.kernel(producer)) == "permute":
                # a private copy of the view: other GEMMs may read the same one
                with ir.InsertionPoint(gemm), gemm.location:
                    view = func.CallOp([operand.type], ir.FlatSymbolRefAttr.get(callee(producer)), producer.operands)
                gemm.operands[i] = view.results[0]
                views.append(view.operation)
                if not any(True for _ in producer.results[0].uses):
                    erase_op(producer)
        return [*views, gemm, *([epilogue] if epilogue is not None else [])]


@register_pass(
    "mlirc-gpu-matmul", "GPU: GEMMs worth generating become tt.dot kernels with their epilogue", GpuMatmulOptions
)
def gpu_matmul(module: ir.Operation, options: GpuMatmulOptions) -> None:
    if options.mode not in MODES:
        raise PipelineError("mlirc-gpu-matmul", f"mode={options.mode}: one of {', '.join(MODES)}")
    if options.tile is not None and len(options.tile) != 5:
        raise PipelineError("mlirc-gpu-matmul", f"tile={options.tile}: BLOCK_M,BLOCK_N,BLOCK_K,warps,stages")
    top = module.regions[0].blocks[0]
    kernels = functions(top)
    planner = Planner(kernels, options.mode)
    count = 0
    for entry in entry_functions(top):
        for call in [op.operation for op in entry.entry_block.operations]:
            if call.name != "func.call" or library_of(planner.kernel(call)) not in GEMMS:
                continue
            group = planner.group(call)
            if group is not None:
                fused = fuse_calls(group, kernels, f"matmul_{count}")
                if options.tile:
                    fused.attributes[TILE_ATTR] = ir.DenseI64ArrayAttr.get(list(options.tile))
                count += 1
    erase_uncalled_kernels(top, kernels)
