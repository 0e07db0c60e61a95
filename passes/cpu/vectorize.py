"""mlirc-cpu-vectorize: tile and vectorize each kernel's linalg op for the host CPU.

The schedule is decided here in Python, one small rule per op kind, and applied
through a generated transform-dialect script run by the transform interpreter:
the innermost dim is tiled to the vector width; an elementwise loop's partial last
vector is peeled off, so full vectors load and store without masks and the tail is
one exact short vector (other ops vectorize with masks); outer dims are tiled to 1.
Ops whose bodies read tensors through `tensor.extract` (gathers, pads) vectorize
where every read walks the result's innermost dim contiguously (a padding or a
padded pool on channels-last: one vector load per read); other gathers stay scalar.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from mlir import ir, passmanager

from mlirc.dialects import shapes
from mlirc.dialects.attributes import PARALLEL_LOOP_ATTR, SCHEDULE_ATTR, SPLIT_ATTR, TAIL_ATTR
from mlirc.errors import PipelineError
from mlirc.passes.base.ir_utils import erase_op, nested_ops
from mlirc.passes.base.linalg_utils import all_parallel, combines_accumulators, elem_bytes, written_map
from mlirc.passes.base.registry import register_pass

VECTORIZABLE = frozenset({"linalg.generic", "linalg.matmul", "linalg.batch_matmul", "linalg.copy"})
NOT_SCHEDULED = frozenset({"linalg.fill", "linalg.yield", "linalg.index"})  # fills fuse into their users
# Named ops whose first loop (batch / rows) is parallel and is the result's dim 0.
PARALLEL_OUTER_NAMED = frozenset(
    {"linalg.pooling_nchw_max", "linalg.pooling_nchw_sum", "linalg.conv_2d_nchw_fchw", "linalg.conv_2d_ngchw_gfchw",
     "linalg.matmul", "linalg.batch_matmul", "linalg.copy"}
)  # fmt: skip


@dataclass(frozen=True)
class CpuVectorizeOptions:
    vector_bytes: int = 0  # the vector width kernels are scheduled for; 0: the host's
    vectorize: bool = True  # off: every op stays scalar (a debugging aid)

    def width(self) -> int:
        if self.vector_bytes not in (0, 16, 32, 64):
            raise PipelineError(
                "mlirc-cpu-vectorize", f"vector-bytes={self.vector_bytes}: 0 (the host's), 16, 32 or 64"
            )
        return self.vector_bytes or host_vector_bytes()


@functools.cache
def host_vector_bytes() -> int:
    import llvmlite.binding as llvm

    features = llvm.get_host_cpu_features()
    return 64 if features.get("avx512f", False) else 32


def _has_gather(op: ir.Operation) -> bool:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                if inner.operation.name == "tensor.extract" or _has_gather(inner.operation):
                    return True
    return False


# Integer divisions trap (SIGFPE) on x86 for a 0 divisor.  Vectorized with masks, the
# lanes past a row's end are read as poison, and LLVM may fold the guard that makes a 0
# divisor 1 (select(poison, ...)) away: a permuted a // b died of SIGFPE.  x86 has no
# vector integer division anyway (LLVM scalarizes it), so these stay scalar.
INTEGER_DIVISIONS = frozenset(
    {"arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi", "arith.ceildivsi",
     "arith.ceildivui"}
)  # fmt: skip


def _divides_integers(op: ir.Operation) -> bool:
    """Does `op` divide by anything but a constant (a constant other than 0 and -1
    cannot trap, whatever the dividend: index arithmetic `% size` stays vectorized)?"""
    for inner in nested_ops(op):
        if inner.name not in INTEGER_DIVISIONS:
            continue
        divisor = inner.operands[1].owner
        if isinstance(divisor, ir.Block) or divisor.name != "arith.constant":
            return True
        value = divisor.attributes["value"]
        if not isinstance(value, ir.IntegerAttr) or ir.IntegerAttr(value).value in (0, -1):
            return True
    return False


def _contracts_into_a_scalar(op: ir.Operation) -> bool:
    """A whole reduction (a 0-d result) of operands read through different maps, as
    (x * w).sum() with w broadcast along the rows: vectorized, MLIR's
    reduction_to_contract makes it a vector.contract into a scalar accumulator, whose
    outer-product lowering casts that scalar to a vector and aborts the process.
    These stay scalar loops (a large one is split into partial sums before, by
    mlirc-split-reductions, and only its last, short stage is a whole reduction)."""
    if op.name != "linalg.generic" or any(shapes.shape_of(r) for r in op.results):
        return False
    maps = ir.ArrayAttr(op.attributes["indexing_maps"])
    read = {str(m) for m in list(maps)[: len(op.operands) - len(op.results)] if ir.AffineMapAttr(m).value.results}
    return len(read) > 1


# A generic that loads and stores fewer bytes than this in all runs on one thread
# (its loop is not marked for mlirc-cpu-parallelize): a fork and join costs more.
MIN_PARALLEL_BYTES = 16 << 10


def _moves_little(op: ir.Operation, sizes: list[int | None]) -> bool:
    """Does the generic move fewer than MIN_PARALLEL_BYTES: each of its iterations
    loads one element of each input and stores one of each result, through whatever
    maps?  mlirc-cpu-parallelize sizes a kernel by its buffers, which overstates a
    read through constant indices: a variance's pivot row, 24 elements of a 275 KB
    activation, forked onto 16 threads."""
    if op.name != "linalg.generic" or any(s is None for s in sizes):
        return False
    per_iteration = sum(elem_bytes(shapes.elem_of(v)) for v in op.operands if isinstance(v.type, ir.ShapedType))
    return math.prod(sizes) * per_iteration < MIN_PARALLEL_BYTES


def _reduces_an_invariant(op: ir.Operation) -> bool:
    """A reduction whose yielded values depend on no input element and no index
    (`acc + 1` once a comparison folds to true): MLIR's vectorizer combines such a
    scalar into the accumulator once instead of once per element, so it stays scalar."""
    if op.name != "linalg.generic" or not any(it.endswith("<reduction>") for it in _iterators(op)):
        return False
    body = op.regions[0].blocks[0]
    varying = {arg for arg in list(body.arguments)[: len(op.operands) - len(op.results)]}
    for inner in body.operations:
        if inner.name == "linalg.index" or any(v in varying for v in inner.operands):
            varying.update(inner.results)
    yielded = list(body.operations)[-1].operands
    return not all(v in varying for v in yielded)


def _loop_sizes(op: ir.Operation) -> list[int | None] | None:
    """Iteration-space sizes of a linalg op (from its operands' shapes; None: known
    only at run time)."""
    if op.name == "linalg.matmul":
        m, k = shapes.shape_of(op.operands[0])
        return [m, shapes.shape_of(op.operands[1])[1], k]
    if op.name == "linalg.batch_matmul":
        bsz, m, k = shapes.shape_of(op.operands[0])
        return [bsz, m, shapes.shape_of(op.operands[1])[2], k]
    if op.name == "linalg.copy":
        return list(shapes.shape_of(op.results[0]))
    maps = ir.ArrayAttr(op.attributes["indexing_maps"])
    sizes: dict[int, int] = {}
    for value, attr in zip(op.operands, maps, strict=False):
        amap = ir.AffineMapAttr(attr).value
        for expr, size in zip(amap.results, shapes.shape_of(value), strict=False):
            if isinstance(expr, ir.AffineDimExpr) and sizes.get(expr.position) is None:
                sizes[expr.position] = size
    count = ir.AffineMapAttr(maps[0]).value.n_dims
    return [sizes.get(d, 1) for d in range(count)]


@dataclass(frozen=True)
class Plan:
    """How one linalg op is tiled and vectorized.

    Plain: tile to `tiles`, vectorize the tile with `vectors` (masked at the edges).
    Inner reduction (`reduction_tile` set): parallel dims tiled to 1, the reduction
    split into `reduction_tile`-wide partial results kept in vector registers across
    the loop (tile_reduction_using_for + hoisting), so the horizontal reduction runs
    once per row instead of once per vector; a remainder of `tail` elements is
    peeled off and vectorized exactly.
    """

    tiles: list[int]
    vectors: list[int]
    reduction_tile: int = 0
    tail: int = 0
    # The outermost tile loop runs over a parallel dim: mlirc-cpu-parallelize may
    # split it across threads.  With `fuse_init` the init (a fill) is computed
    # inside that loop, tile by tile, so the loop is the kernel's only writer.
    parallel_outer: bool = False
    fuse_init: bool = False
    # How many tile loops from the outermost run over parallel dims (all marked):
    # mlirc-cpu-parallelize coalesces them when the outermost alone is too short
    # to share among threads.
    parallel_loops: int = 1
    # Loop order first (transform.structured.interchange: new loop i is old loop
    # interchange[i]); `tiles` and `vectors` are in the new order.
    interchange: tuple[int, ...] | None = None
    # A window op (pooling): after tiling, its unit loops are folded away and the
    # tile -- the window's dims and the vector dim -- vectorizes with these sizes.
    window_vectors: tuple[int, ...] | None = None
    out_rank: int = 0  # the result's rank: a window or gather plan's init (a fill) keeps its unit dims
    # Plain plans whose vector loop ends in a partial vector: that last trip is
    # peeled off so the full vectors need no mask (a masked load/store per vector
    # ran a 129-wide softmax 3x slower than a 128-wide one).
    peel: bool = False
    # The vector loop's length is known only at run time: its full trips are peeled
    # from the last, partial one (as above), which is vectorized with masks.
    masked_tail: bool = False
    # Set for a gather read contiguously along the vector dim (_gather_plan): after
    # the parallel tiling, its reduction loops are tiled with these sizes (1, or 0
    # for none) and the unit tile vectorizes with `vectors`, each read one vector load.
    gather_reduction_tiles: tuple[int, ...] | None = None


UNROLL = 4  # vectors per partial-sum register block: hides the combiner's latency


def _inner_reduction(op: ir.Operation, sizes: list[int], lanes: int) -> Plan | None:
    """The split-reduction plan when `op` reduces only its innermost loop dim."""
    if op.name != "linalg.generic" or len(op.results) != 1:
        return None
    iterators = _iterators(op)
    reductions = [i for i, it in enumerate(iterators) if it.endswith("<reduction>")]
    if reductions != [len(sizes) - 1]:
        return None
    out_map = ir.AffineMapAttr(ir.ArrayAttr(op.attributes["indexing_maps"])[len(op.operands) - 1]).value
    if not all(isinstance(e, ir.AffineDimExpr) for e in out_map.results):
        return None  # the split-reduction tiling asserts (aborts) on constant results
    body = op.regions[0].blocks[0]
    if any(inner.name == "linalg.index" for inner in body.operations):
        # The reduction's split tiling and its vectorization both misplace an index
        # of the reduced dim (argmax-like bodies came out wrong): these stay scalar.
        return None
    if not combines_accumulators(op):
        return None
    outer = [1] * (len(sizes) - 1)
    size, block = sizes[-1], UNROLL * lanes
    rows = {"parallel_outer": bool(outer), "fuse_init": True, "parallel_loops": len(outer)}
    if size is not None and size < 2 * block:  # a short row in one vector op (a 1-trip loop would fold away)
        return Plan([*outer, 0], [*outer, size], **rows)
    tail = 0 if size is None else size % block
    return Plan([*outer, 0], [*outer, block], reduction_tile=block, tail=tail, masked_tail=size is None, **rows)


def _contiguous_gather_dim(op: ir.Operation) -> int | None:
    """The result's innermost loop dim where every `tensor.extract` in the body reads
    along it contiguously -- its last index is that loop's `linalg.index`, and no other
    index depends on it or on data (an element read is a true gather) -- or reads one
    element for all of it (no index depends on it or on data).  Tiled to 1
    elsewhere, each read is one vector load (a padded max pool or a padding on
    channels-last: the channel loop)."""
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    out = maps[-1].results
    if not out or not isinstance(out[-1], ir.AffineDimExpr):
        return None
    dim = ir.AffineDimExpr(out[-1]).position
    if not _iterators(op)[dim].endswith("<parallel>") or not all(reads_dims_or_constants(m, dim) for m in maps):
        return None
    body = op.regions[0].blocks[0]
    along, varying, data = set(), set(), set(body.arguments)  # varying: depends on the vector loop
    for inner in body.operations:
        if inner.regions:
            return None
        operands = list(inner.operands)
        if inner.name == "linalg.index":
            if ir.IntegerAttr(inner.attributes["dim"]).value == dim:
                along.add(inner.result)
            continue
        if inner.name == "tensor.extract":
            if len(operands) < 2:
                return None  # a 0-d tensor's element: not along anything
            *leading, last = operands[1:]
            if any(v in varying or v in along or v in data for v in leading):
                return None
            if last not in along and (last in varying or last in data):
                return None
            # last in `along`: one vector load; otherwise every index is the same for
            # all lanes (a per-row scale of a [rows, cols] loop): one scalar, broadcast
            data.add(inner.result)
            continue
        if any(v in along or v in varying for v in operands):
            varying.update(inner.results)
        if any(v in data for v in operands):
            data.update(inner.results)
    return dim


def _gather_plan(op: ir.Operation, sizes: list[int | None], lanes: int) -> Plan | None:
    """Gathers read contiguously along the result's innermost dim (see
    _contiguous_gather_dim): that loop vectorized, one vector per tile (_unit_tiles_plan)."""
    if op.name != "linalg.generic" or len(op.results) != 1:
        return None
    dim = _contiguous_gather_dim(op)
    return None if dim is None else _unit_tiles_plan(op, sizes, dim, lanes)


def _column_plan(op: ir.Operation, sizes: list[int | None], order: tuple[int, ...] | None, lanes: int) -> Plan | None:
    """Reductions whose innermost loop (after `order`) is parallel and is the result's
    contiguous dim: sums over rows that keep columns (batch-norm statistics on
    channels-last activations, a sum over dim 0).  Tiled as the plain plan does, the
    partial result was read, added to and stored back at every reduction step, one
    chain through memory per vector; here (_unit_tiles_plan) it stays in registers,
    several vectors wide, across the reduction loops."""
    if op.name != "linalg.generic" or written_map(op) is None:
        return None
    iterators = _iterators(op)
    dim = order[-1] if order else len(sizes) - 1
    if not iterators[dim].endswith("<parallel>") or not any(it.endswith("<reduction>") for it in iterators):
        return None
    out = ir.AffineMapAttr(ir.ArrayAttr(op.attributes["indexing_maps"])[len(op.operands) - 1]).value.results
    if not out or not isinstance(out[-1], ir.AffineDimExpr) or ir.AffineDimExpr(out[-1]).position != dim:
        return None
    if any(inner.name == "linalg.index" for inner in op.regions[0].blocks[0].operations):
        return None  # as for inner reductions: index bodies (argmax-like) stay as they were
    return _unit_tiles_plan(op, sizes, dim, UNROLL * lanes)


def _unit_tiles_plan(op: ir.Operation, sizes: list[int | None], dim: int, widest: int) -> Plan | None:
    """Loop `dim` vectorized (whole vectors of up to `widest` lanes), every other loop
    tiled to 1 -- the parallel ones first (with the init, across threads), then the
    reductions, whose partial result stays in vector registers."""
    if sizes[dim] is None:
        return None
    iterators = _iterators(op)
    reductions = [d for d, it in enumerate(iterators) if it.endswith("<reduction>")]
    if reductions and not combines_accumulators(op):
        return None
    vector = min(sizes[dim], widest)
    while sizes[dim] % vector:  # whole vectors only: no masked loads in a gather
        vector //= 2
    if vector < 2 or vector < min(4, sizes[dim]):  # one lane: MLIR would emit an n-D gather
        return None
    order = tuple(d for d in range(len(sizes)) if d != dim) + (dim,)
    parallel = [0 if d in reductions else 1 for d in order[:-1]]
    # a one-trip reduction loop is not tiled: canonicalization would fold it away
    reduction_tiles = tuple(1 if d in reductions and sizes[d] != 1 else 0 for d in order)
    inits = [v.owner for v in list(op.operands)[len(op.operands) - len(op.results) :]]
    fills = all(not isinstance(init, ir.Block) and init.name == "linalg.fill" for init in inits)
    return Plan(
        [*parallel, vector], [1] * (len(order) - 1) + [vector], parallel_outer=parallel[:1] == [1], fuse_init=fills,
        parallel_loops=max(1, sum(parallel)), interchange=order, out_rank=len(shapes.shape_of(op.results[0])),
        gather_reduction_tiles=reduction_tiles,
    )  # fmt: skip


def _scalar_plan(op: ir.Operation) -> Plan | None:
    """Ops that stay scalar (gathers, pads, pooling, argmax, bf16) are still split
    over their outermost parallel dim, with their inits, so they can run on threads."""
    if not op.results or not shapes.shape_of(op.results[0]) or 0 in shapes.shape_of(op.results[0]):
        return None
    if op.name == "linalg.generic":
        if not _iterators(op):
            return None
        if not _iterators(op)[0].endswith("<parallel>") or _at_most((_loop_sizes(op) or [0])[0], 1):
            return None
    elif op.name not in PARALLEL_OUTER_NAMED or _at_most(shapes.shape_of(op.results[0])[0], 1):
        return None
    inits = list(op.operands)[len(op.operands) - len(op.results) :]
    fills = [not isinstance(v.owner, ir.Block) and v.owner.name == "linalg.fill" for v in inits]
    sizes = (_loop_sizes(op) if op.name == "linalg.generic" else None) or [None]  # named ops: their maps are implicit
    return Plan(
        [1], [], parallel_outer=not _moves_little(op, sizes), fuse_init=any(fills), interchange=_output_order(op)
    )


def _at_most(size: int | None, bound: int) -> bool:
    """Is `size` known to be at most `bound` (a size known only at run time is not)?"""
    return size is not None and size <= bound


# What a size known only at run time counts as where sizes are compared: large.
UNKNOWN_SIZE = 1 << 20


def _known(size: int | None) -> int:
    return UNKNOWN_SIZE if size is None else size


def _output_order(op: ir.Operation) -> tuple[int, ...] | None:
    """The loops in the order the result lies in memory, where the result's map is a
    permutation of all-parallel loops: a gather writing channels-last (a padding
    between convolutions) then writes, and mostly reads, contiguous rows."""
    if op.name != "linalg.generic" or len(op.results) != 1:
        return None
    out_map = ir.AffineMapAttr(ir.ArrayAttr(op.attributes["indexing_maps"])[len(op.operands) - 1]).value
    if not out_map.is_permutation or any(not it.endswith("<parallel>") for it in _iterators(op)):
        return None
    order = tuple(ir.AffineDimExpr(e).position for e in out_map.results)
    return None if order == tuple(range(len(order))) else order


def _largest_input(op: ir.Operation) -> int | None:
    inputs = list(op.operands)[: len(op.operands) - len(op.results)]
    sizes = [math.prod(map(_known, shapes.shape_of(v))) if isinstance(v.type, ir.ShapedType) else 0 for v in inputs]
    return max(range(len(sizes)), key=sizes.__getitem__) if sizes and max(sizes) > 1 else None


def _interchange(op: ir.Operation) -> tuple[int, ...] | None:
    """Move the loop that walks both the result's and the largest input's last
    (contiguous) dim innermost, where it is not: channels-last kernels come out of
    mlirc-channels-last with the channel loop second, and vectorizing the
    innermost loop would then read and write with a stride."""
    out_map = written_map(op)
    if out_map is None:
        return None
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    largest = _largest_input(op)
    if largest is None or not out_map.results or not maps[largest].results:
        return None
    last_out, last_in = out_map.results[-1], maps[largest].results[-1]
    if not (isinstance(last_out, ir.AffineDimExpr) and isinstance(last_in, ir.AffineDimExpr)):
        return None
    dim = ir.AffineDimExpr(last_out).position
    if dim != ir.AffineDimExpr(last_in).position or dim == out_map.n_dims - 1:
        return None
    if not _iterators(op)[dim].endswith("<parallel>"):
        return None
    return tuple(d for d in range(out_map.n_dims) if d != dim) + (dim,)


def _linear_dims(expr: ir.AffineExpr) -> dict[int, int] | None:
    """Coefficients of the dims in an affine sum (None where it is not one)."""
    if isinstance(expr, ir.AffineDimExpr):
        return {expr.position: 1}
    if isinstance(expr, ir.AffineConstantExpr):
        return {}
    if isinstance(expr, ir.AffineAddExpr):
        lhs, rhs = _linear_dims(expr.lhs), _linear_dims(expr.rhs)
        if lhs is None or rhs is None:
            return None
        return {d: lhs.get(d, 0) + rhs.get(d, 0) for d in {*lhs, *rhs}}
    if isinstance(expr, ir.AffineMulExpr) and isinstance(expr.rhs, ir.AffineConstantExpr):
        inner = _linear_dims(expr.lhs)
        return None if inner is None else {d: c * expr.rhs.value for d, c in inner.items()}
    return None


def reads_dims_or_constants(amap: ir.AffineMap, vector_dim: int | None = None) -> bool:
    """A projected permutation, or one with zeros among its results (a row's first
    element, mlirc-fold-slice-reads).  With `vector_dim` (the loop that is
    vectorized), a map with zeros must not read along it: MLIR's vectorizer takes
    (d0, d1) -> (d0, 0) as a broadcast of one element, and fails on (d0) -> (0, d0)."""
    results = list(amap.results)
    dims = [ir.AffineDimExpr(e).position for e in results if isinstance(e, ir.AffineDimExpr)]
    # a 0 only: the vectorizer reads it as a broadcast, and fails on other constants
    constants = sum(1 for e in results if isinstance(e, ir.AffineConstantExpr) and ir.AffineConstantExpr(e).value == 0)
    if len(dims) + constants != len(results) or len(set(dims)) != len(dims):
        return False
    return vector_dim is None or not constants or vector_dim not in dims


def _window_plan(op: ir.Operation, sizes: list[int], order: tuple[int, ...], lanes: int) -> Plan | None:
    """Pooling-like ops (an input read at `stride * out + window`) after `order`:
    parallel loops but the last tiled to 1, the window's reductions whole, the last
    loop to `lanes`.  With the unit loops folded, every map must be a projected
    permutation of what is left (the window dims and the vector dim), or the
    vectorizer would fail."""
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    if all(reads_dims_or_constants(m) for m in maps):
        return None
    iterators = _iterators(op)
    last = order[-1]
    if not iterators[last].endswith("<parallel>") or _at_most(sizes[last], 1):
        return None
    kept = [d for d in order[:-1] if iterators[d].endswith("<reduction>") and not _at_most(sizes[d], 1)] + [last]
    if any(sizes[d] is None for d in kept[:-1]):
        return None  # a window of run-time size: no static vector shape holds it
    for amap in maps:
        seen = []
        for expr in amap.results:
            coefs = _linear_dims(expr)
            if coefs is None:
                return None
            live = {d: c for d, c in coefs.items() if d in kept and c}
            if len(live) > 1 or any(c != 1 for c in live.values()):
                return None
            seen += list(live)
        if len(seen) != len(set(seen)):
            return None
    tiles = [0 if iterators[d].endswith("<reduction>") else 1 for d in order[:-1]] + [lanes]
    return Plan(
        tiles, [], parallel_outer=True, fuse_init=True, interchange=order, parallel_loops=sum(1 for t in tiles[:-1] if t),
        window_vectors=tuple([sizes[d] for d in kept[:-1]] + [lanes]), out_rank=len(maps[-1].results),
    )  # fmt: skip


def _computes_on_bf16(op: ir.Operation) -> bool:
    """bf16 vectors only as loads, stores and casts to and from f32: x86 code generation
    of other bf16 vector ops (a select, a bitcast, a compare) asserts in LLVM 20.  A
    widened generic (mlirc-cpu-widen-halves) computes in f32 and qualifies; a body left
    in bf16 (nextafter's bit arithmetic), or a named contraction on bf16, stays scalar."""
    if op.name == "linalg.copy":
        return False
    if op.name != "linalg.generic":
        return any(isinstance(shapes.elem_of(v), ir.BF16Type) for v in [*op.operands, *op.results])
    for inner in op.regions[0].blocks[0].operations:
        if inner.name in ("arith.extf", "arith.truncf", "linalg.yield"):
            continue
        if any(isinstance(v.type, ir.BF16Type) for v in [*inner.operands, *inner.results]):
            return True
    return False


def _one_result_or_elementwise(op: ir.Operation) -> bool:
    """One result, or several written together: all loops parallel, every result
    through one permutation (the loop's element, or channels-last's;
    mlirc-fuse-multi-output), or column sums through one map
    (mlirc-fuse-sibling-reductions, planned by _column_plan).  Of several element
    widths (a ReLU and its mask) the vector length is the widest's lanes: the
    narrower results store part of a register."""
    if len(op.results) == 1:
        return True
    written = written_map(op)
    if written is None:
        return False
    return (written.is_permutation and all_parallel(op)) or combines_accumulators(op)


def _has_no_iterations(op: ir.Operation) -> bool:
    """An operand of a static size 0: the loops run no trip (a sum over an empty dim
    only leaves its init), and MLIR's tiling asserts on a loop of size 0."""
    return any(isinstance(v.type, ir.ShapedType) and 0 in shapes.shape_of(v) for v in op.operands)


def schedule(op: ir.Operation, vector_bytes: int) -> Plan | None:
    """The tiling/vectorization plan for `op` on `vector_bytes`-wide vectors, or None to leave it alone."""
    if _has_no_iterations(op):
        return None
    if op.name not in VECTORIZABLE or not _one_result_or_elementwise(op) or _reduces_an_invariant(op):
        return _scalar_plan(op)  # multi-result reductions (argmax) stay scalar
    if _divides_integers(op) or _computes_on_bf16(op):
        return _scalar_plan(op)
    if _contracts_into_a_scalar(op):
        return None
    sizes = _loop_sizes(op)
    if not sizes or 0 in sizes:
        return None
    lanes = vector_bytes // max(elem_bytes(shapes.elem_of(r)) for r in op.results)
    if _has_gather(op):  # other gathers stay scalar
        return _gather_plan(op, sizes, lanes) or _scalar_plan(op)
    if op.name == "linalg.matmul":
        return Plan([8, 2 * lanes, 1], [8, 2 * lanes, 1])
    if op.name == "linalg.batch_matmul":
        return Plan([1, 8, 2 * lanes, 1], [1, 8, 2 * lanes, 1])
    order = _interchange(op)
    if len(op.results) > 1 and not all_parallel(op):  # sibling column sums, or scalar
        return _column_plan(op, sizes, order, lanes) or _scalar_plan(op)
    if op.name == "linalg.generic":
        window = _window_plan(op, sizes, order or tuple(range(len(sizes))), lanes)
        if window is not None:
            return window
        vector_dim = order[-1] if order else len(sizes) - 1
        maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
        if not all(reads_dims_or_constants(m, vector_dim) for m in maps):
            return _scalar_plan(op)
    if order is None:
        reduction = _inner_reduction(op, sizes, lanes)
        if reduction is not None:
            return reduction
    column = _column_plan(op, sizes, order, lanes)
    if column is not None:
        return column
    iterators = [_iterators(op)[d] for d in order] if order else _iterators(op) if op.name == "linalg.generic" else []
    tiles = [1] * (len(sizes) - 1) + [lanes]
    outer_parallel = op.name == "linalg.copy" or iterators[:1] == ["#linalg.iterator_type<parallel>"]
    outer_parallel = outer_parallel and not _moves_little(op, sizes)
    inner = sizes[order[-1] if order else -1]
    # Only a generic's parallel vector loop: peeling the trips of a reduction that
    # carries its accumulator (a whole-tensor sum) came out wrong, and a peeled
    # linalg.copy canonicalizes into a memref copy that needs a runtime library.
    inner_parallel = op.name == "linalg.generic" and iterators[-1].endswith("<parallel>")
    peel = inner_parallel and (inner is None or (inner > lanes and inner % lanes != 0))
    kinds = iterators or ["#linalg.iterator_type<parallel>"] * len(sizes)  # a copy: all parallel
    leading = next((i for i, it in enumerate(kinds[:-1]) if not it.endswith("<parallel>")), len(kinds) - 1)
    return Plan(
        tiles, tiles, parallel_outer=outer_parallel, interchange=order, peel=peel, parallel_loops=leading,
        masked_tail=peel and inner is None,
    )  # fmt: skip


def _iterators(op: ir.Operation) -> list[str]:
    return [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]


def _handles(n: int) -> str:
    return ", ".join(["!transform.any_op"] * n)


def _tile(handle: str, out: str, plan: Plan) -> list[str]:
    loops = sum(1 for t in plan.tiles if t)
    if not loops:
        return [f"    {out} = transform.cast {handle} : !transform.any_op to !transform.any_op"]
    how = "fuse" if plan.fuse_init else "tile_using_for"
    lines = [
        f"    {out}, %loops_{out[1:]}:{loops} = transform.structured.{how} {handle}"
        f" tile_sizes {plan.tiles} : (!transform.any_op) -> ({_handles(loops + 1)})"
    ]
    if plan.parallel_outer and plan.tiles[0]:
        for i in range(max(1, min(plan.parallel_loops, loops))):
            lines.append(f'    transform.annotate %loops_{out[1:]}#{i} "{PARALLEL_LOOP_ATTR}" : !transform.any_op')
    return lines


def _vectorize(handle: str, sizes: list[int]) -> str:
    return f"    transform.structured.vectorize {handle} vector_sizes {sizes} : !transform.any_op"


def _window_lines(sid: int, plan: Plan) -> list[str]:
    """Fold the tile's unit loops (the window map becomes a projected permutation)
    and vectorize what is left in the innermost tile loop: the op and its init."""
    inner = f"%loops_tiled{sid}#{sum(1 for t in plan.tiles if t) - 1}"
    lines = [
        f"    transform.apply_patterns to {inner} {{ transform.apply_patterns.linalg.fold_unit_extent_dims_via_slices }}"
        " : !transform.any_op",
    ]
    fill = [1] * (plan.out_rank - 1) + [plan.window_vectors[-1]]
    for kind, sizes in (("linalg.generic", list(plan.window_vectors)), ("linalg.fill", fill)):
        lines += [
            f'    %w{sid}_{kind[7:]} = transform.structured.match ops{{["{kind}"]}} in {inner}'
            " : (!transform.any_op) -> !transform.any_op",
            _vectorize(f"%w{sid}_{kind[7:]}", sizes),
        ]
    # The window's reduction dims are outer to the vector dim: reduce them with
    # lane-wise max/add of whole vectors, not lane by lane (the global lowering's
    # strategy, right for row reductions).
    lines.append(
        f"    transform.apply_patterns to {inner} {{"
        ' transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerparallel" }'
        " : !transform.any_op"
    )
    return lines


def _gather_lines(sid: int, plan: Plan) -> list[str]:
    """Tile the reductions to 1, vectorize the unit tile (its reads become contiguous
    vector loads) and its init, and keep the partial result in a register across
    the reduction loops."""
    inner = f"%loops_tiled{sid}#{sum(1 for t in plan.tiles if t) - 1}"
    tiles = list(plan.gather_reduction_tiles or ())
    handle, lines, reductions = f"%tiled{sid}", [], sum(1 for t in tiles if t)
    if reductions:
        handle = f"%gather{sid}"
        lines.append(
            f"    {handle}, %gloops{sid}:{reductions} = transform.structured.tile_using_for %tiled{sid}"
            f" tile_sizes {tiles} : (!transform.any_op) -> ({_handles(reductions + 1)})"
        )
    lines.append(
        f"    transform.structured.vectorize {handle} vector_sizes {plan.vectors} {{vectorize_nd_extract}}"
        " : !transform.any_op"
    )
    if plan.fuse_init:
        fill = [1] * (plan.out_rank - 1) + [plan.vectors[-1]]
        lines += [
            f'    %gfill{sid} = transform.structured.match ops{{["linalg.fill"]}} in {inner}'
            " : (!transform.any_op) -> !transform.any_op",
            _vectorize(f"%gfill{sid}", fill),
        ]
    if not reductions:
        return lines
    # The partial result's read/write pair moves out of the reduction loops, innermost
    # first (each hoist leaves the pair in the loop around it); unit dims go first, as
    # for split reductions (a loop-carried vector<1x..> made later patterns loop forever).
    lines += [
        f"    %gfn{sid} = transform.get_parent_op %gloops{sid}#0 {{isolated_from_above}}"
        " : (!transform.any_op) -> !transform.any_op",
        f"    transform.apply_patterns to %gfn{sid} {{ transform.apply_patterns.canonicalization"
        " transform.apply_patterns.vector.cast_away_vector_leading_one_dim } : !transform.any_op",
    ]
    lines += [
        f"    transform.loop.hoist_loop_invariant_subsets %gloops{sid}#{i} : !transform.any_op"
        for i in reversed(range(reductions))
    ]
    return lines


def _mark_tail(sid: int, rest: str, mark: str) -> list[str]:
    """Mark the ops that `mark` matches in the peeled last trip `rest` as the tail's."""
    return [
        f"    %tail{sid} = transform.structured.match attributes{{{mark}}} in {rest}"
        " : (!transform.any_op) -> !transform.any_op",
        f'    transform.annotate %tail{sid} "{TAIL_ATTR}" : !transform.any_op',
    ]


def _vectorize_tail(sid: int, fn: str, sizes: list[int]) -> list[str]:
    """Vectorize the marked tail (of run-time size) with masks at `sizes`."""
    return [
        f"    %tails{sid} = transform.structured.match attributes{{{TAIL_ATTR}}} in {fn}"
        " : (!transform.any_op) -> !transform.any_op",
        _vectorize(f"%tails{sid}", sizes),
    ]


def _peeled_lines(sid: int, plan: Plan) -> list[str]:
    """Peel the vector loop's partial last trip; with the sizes folded to constants
    the full tiles and the tail both vectorize exactly, without masks.  Where the
    loop's length is known only at run time, the full tiles still fold to vector
    size and the tail is vectorized with masks."""
    inner = f"%loops_tiled{sid}#{sum(1 for t in plan.tiles if t) - 1}"
    lines = [
        f'    %pfor{sid} = transform.cast {inner} : !transform.any_op to !transform.op<"scf.for">',
        f"    %pmain{sid}, %prest{sid} = transform.loop.peel %pfor{sid}"
        ' : (!transform.op<"scf.for">) -> (!transform.any_op, !transform.any_op)',
        f"    %pfn{sid} = transform.get_parent_op %pmain{sid} {{isolated_from_above}}"
        " : (!transform.any_op) -> !transform.any_op",
    ]
    if plan.masked_tail:
        lines += _mark_tail(sid, f"%prest{sid}", f"{SCHEDULE_ATTR} = {sid} : i64")
    lines.append(
        f"    transform.apply_patterns to %pfn{sid} {{ transform.apply_patterns.canonicalization }} : !transform.any_op"
    )
    if plan.masked_tail:
        lines += _vectorize_tail(sid, f"%pfn{sid}", plan.vectors)
    return [
        *lines,
        # Peeling cloned the tiled op, its schedule mark included: this finds both
        # (the masked tail, vectorized already, no longer).
        f"    %peeled{sid} = transform.structured.match attributes{{{SCHEDULE_ATTR} = {sid} : i64}} in %pfn{sid}"
        " : (!transform.any_op) -> !transform.any_op",
        f"    transform.structured.vectorize %peeled{sid} : !transform.any_op",
    ]


def _plan_lines(sid: int, plan: Plan) -> list[str]:
    lines = [
        f"    %op{sid} = transform.structured.match attributes{{{SCHEDULE_ATTR} = {sid} : i64}} in %root"
        " : (!transform.any_op) -> !transform.any_op",
    ]
    handle = f"%op{sid}"
    if plan.interchange:
        lines.append(
            f"    %ic{sid} = transform.structured.interchange %op{sid} iterator_interchange = {list(plan.interchange)}"
            " : (!transform.any_op) -> !transform.any_op"
        )
        handle = f"%ic{sid}"
    lines += _tile(handle, f"%tiled{sid}", plan)
    if plan.gather_reduction_tiles is not None:
        return lines + _gather_lines(sid, plan)
    if plan.window_vectors:
        return lines + _window_lines(sid, plan)
    if not plan.vectors:
        return lines
    if plan.peel:
        return lines + _peeled_lines(sid, plan)
    if not plan.reduction_tile:
        return [*lines, _vectorize(f"%tiled{sid}", plan.vectors)]
    outer = plan.vectors[:-1]
    split = [0] * len(outer) + [plan.reduction_tile]
    lines.append(
        f"    %fill{sid}, %split{sid}, %comb{sid}, %for{sid} = transform.structured.tile_reduction_using_for"
        f" %tiled{sid} by tile_sizes = {split} : (!transform.any_op) -> ({_handles(4)})"
    )
    lines += [_vectorize(f"%fill{sid}", plan.vectors), _vectorize(f"%comb{sid}", plan.vectors)]
    # Peeling clones the loop body, attributes included: the mark finds both copies.
    lines.append(f'    transform.annotate %split{sid} "{SPLIT_ATTR}" : !transform.any_op')
    fn = f"%fn{sid}"
    if plan.tail or plan.masked_tail:  # the last, partial block: its own copy of the loop body
        lines.append(f'    %sfor{sid} = transform.cast %for{sid} : !transform.any_op to !transform.op<"scf.for">')
        lines.append(
            f"    %main{sid}, %rest{sid} = transform.loop.peel %sfor{sid}"
            ' : (!transform.op<"scf.for">) -> (!transform.any_op, !transform.any_op)'
        )
    else:
        lines.append(f"    %main{sid} = transform.cast %for{sid} : !transform.any_op to !transform.any_op")
    if plan.masked_tail:
        lines += _mark_tail(sid, f"%rest{sid}", SPLIT_ATTR)
    lines += [
        f"    {fn} = transform.get_parent_op %main{sid} {{isolated_from_above}} : (!transform.any_op) -> !transform.any_op",
        # Folds the peeled blocks' sizes to constants: both vectorize exactly, unmasked
        # (a tail of run-time size is vectorized with masks first).
        f"    transform.apply_patterns to {fn} {{ transform.apply_patterns.canonicalization }} : !transform.any_op",
        *(_vectorize_tail(sid, fn, [*outer, plan.reduction_tile]) if plan.masked_tail else []),
        f"    %splits{sid} = transform.structured.match attributes{{{SPLIT_ATTR}}} in {fn}"
        " : (!transform.any_op) -> !transform.any_op",
        f"    transform.structured.vectorize %splits{sid} : !transform.any_op",
        # Drop unit dims before hoisting: a vector<1x..> loop-carried value makes the
        # later leading-one-dim patterns loop forever (out of memory).
        f"    transform.apply_patterns to {fn} {{ transform.apply_patterns.canonicalization"
        " transform.apply_patterns.vector.cast_away_vector_leading_one_dim } : !transform.any_op",
        # With static slices the partial sums' read/write pair moves out of the loop.
        f"    transform.loop.hoist_loop_invariant_subsets %main{sid} : !transform.any_op",
    ]
    return lines


def _script(plans: list[tuple[int, Plan]]) -> str:
    lines = [
        "module attributes {transform.with_named_sequence} {",
        "  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {",
    ]
    for sid, plan in plans:
        lines += _plan_lines(sid, plan)
    lines += [
        '    %funcs = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op',
        "    transform.apply_patterns to %funcs {",
        "      transform.apply_patterns.vector.lower_masked_transfers",
        "      transform.apply_patterns.vector.transfer_permutation_patterns",
        "      transform.apply_patterns.vector.reduction_to_contract",
        # f(broadcast(x)) -> broadcast(f(x)): a row's log(sum) once, not once per lane
        "      transform.apply_patterns.vector.sink_ops",
        "      transform.apply_patterns.canonicalization",
        "    } : !transform.any_op",
        # Lower what the LLVM conversion cannot take as is (masked reductions, contractions);
        # no canonicalization here: with these patterns it can loop forever.
        "    transform.apply_patterns to %funcs {",
        "      transform.apply_patterns.vector.cast_away_vector_leading_one_dim",
        "      transform.apply_patterns.vector.lower_masks",
        '      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerreduction"',
        '      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"',
        "      transform.apply_patterns.vector.lower_outerproduct",
        "      transform.apply_patterns.vector.lower_transpose",
        "      transform.apply_patterns.vector.lower_shape_cast",
        "      transform.apply_patterns.vector.lower_broadcast",
        "    } : !transform.any_op",
        "    transform.yield",
        "  }",
        "}",
    ]
    return "\n".join(lines)


@register_pass(
    "mlirc-cpu-vectorize", "Tile kernels' linalg ops to the host vector width and vectorize them", CpuVectorizeOptions
)
def cpu_vectorize(module: ir.Operation, options: CpuVectorizeOptions) -> None:
    if not options.vectorize:
        return
    width = options.width()
    plans = []
    i64 = ir.IntegerType.get_signless(64, module.context)
    for op in _linalg_ops(module):
        plan = schedule(op, width)
        if plan is None:
            continue
        sid = len(plans)
        op.attributes[SCHEDULE_ATTR] = ir.IntegerAttr.get(i64, sid)
        plans.append((sid, plan))
    if not plans:
        return
    body = module.regions[0].blocks[0]
    with module.context, ir.Location.unknown():
        script = ir.Module.parse(_script(plans))
        transform_module = script.operation.clone(ir.InsertionPoint(body))
    try:
        passmanager.PassManager.parse("builtin.module(transform-interpreter)").run(module)
    finally:
        erase_op(transform_module)
    for op in _linalg_ops(module):
        if SCHEDULE_ATTR in op.attributes:
            del op.attributes[SCHEDULE_ATTR]
    _reassociate_horizontal_reductions(module)


def _reassociate_horizontal_reductions(module: ir.Operation) -> None:
    """Let LLVM reduce a vector's lanes as a tree, not one add after another.

    The partial sums already changed the order of the additions (as eager's
    vectorized reductions do); an ordered `llvm.vector.reduce.fadd` would spend 4
    cycles per lane on every row's final reduction.
    """
    reassoc = ir.Attribute.parse("#arith.fastmath<reassoc>")
    for op in nested_ops(module):
        if op.name == "vector.reduction":
            op.attributes["fastmath"] = reassoc


def _linalg_ops(module: ir.Operation) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def walk(op: ir.Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    o = inner.operation
                    if o.name.startswith("linalg.") and o.name not in NOT_SCHEDULED:
                        found.append(o)
                    else:
                        walk(o)

    walk(module)
    return found
