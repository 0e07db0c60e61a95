"""The schedule choice: one Plan per linalg op -- tile sizes, vector sizes, loop order,
and how reductions, gathers and windows are split -- one small rule per op kind."""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from mlirc.dialects import shapes
from mlirc.passes.base.linalg_utils import all_parallel, combines_accumulators, elem_bytes, written_map
from mlirc.passes.cpu.schedule.loops import (
    at_most,
    interchange,
    iterator_types,
    loop_sizes,
    output_order,
    reads_dims_or_constants,
)
from mlirc.passes.cpu.schedule.op_checks import (
    computes_on_bf16,
    contracts_into_a_scalar,
    divides_integers,
    has_gather,
    has_no_iterations,
    moves_little,
    one_result_or_elementwise,
    reduces_an_invariant,
)

VECTORIZABLE = frozenset({"linalg.generic", "linalg.matmul", "linalg.batch_matmul", "linalg.copy"})
# Named ops whose first loop (batch / rows) is parallel and is the result's dim 0.
PARALLEL_OUTER_NAMED = frozenset(
    {"linalg.pooling_nchw_max", "linalg.pooling_nchw_sum", "linalg.conv_2d_nchw_fchw", "linalg.conv_2d_ngchw_gfchw",
     "linalg.matmul", "linalg.batch_matmul", "linalg.copy"}
)  # fmt: skip


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
    iterators = iterator_types(op)
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
    if not iterator_types(op)[dim].endswith("<parallel>") or not all(reads_dims_or_constants(m, dim) for m in maps):
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
    iterators = iterator_types(op)
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
    iterators = iterator_types(op)
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
        if not iterator_types(op):
            return None
        if not iterator_types(op)[0].endswith("<parallel>") or at_most((loop_sizes(op) or [0])[0], 1):
            return None
    elif op.name not in PARALLEL_OUTER_NAMED or at_most(shapes.shape_of(op.results[0])[0], 1):
        return None
    inits = list(op.operands)[len(op.operands) - len(op.results) :]
    fills = [not isinstance(v.owner, ir.Block) and v.owner.name == "linalg.fill" for v in inits]
    sizes = (loop_sizes(op) if op.name == "linalg.generic" else None) or [None]  # named ops: their maps are implicit
    return Plan([1], [], parallel_outer=not moves_little(op, sizes), fuse_init=any(fills), interchange=output_order(op))


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


def _window_plan(op: ir.Operation, sizes: list[int], order: tuple[int, ...], lanes: int) -> Plan | None:
    """Pooling-like ops (an input read at `stride * out + window`) after `order`:
    parallel loops but the last tiled to 1, the window's reductions whole, the last
    loop to `lanes`.  With the unit loops folded, every map must be a projected
    permutation of what is left (the window dims and the vector dim), or the
    vectorizer would fail."""
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    if all(reads_dims_or_constants(m) for m in maps):
        return None
    iterators = iterator_types(op)
    last = order[-1]
    if not iterators[last].endswith("<parallel>") or at_most(sizes[last], 1):
        return None
    kept = [d for d in order[:-1] if iterators[d].endswith("<reduction>") and not at_most(sizes[d], 1)] + [last]
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


def schedule(op: ir.Operation, vector_bytes: int) -> Plan | None:
    """The tiling/vectorization plan for `op` on `vector_bytes`-wide vectors, or None to leave it alone."""
    if has_no_iterations(op):
        return None
    if op.name not in VECTORIZABLE or not one_result_or_elementwise(op) or reduces_an_invariant(op):
        return _scalar_plan(op)  # multi-result reductions (argmax) stay scalar
    if divides_integers(op) or computes_on_bf16(op):
        return _scalar_plan(op)
    if contracts_into_a_scalar(op):
        return None
    sizes = loop_sizes(op)
    if not sizes or 0 in sizes:
        return None
    lanes = vector_bytes // max(elem_bytes(shapes.elem_of(r)) for r in op.results)
    if has_gather(op):  # other gathers stay scalar
        return _gather_plan(op, sizes, lanes) or _scalar_plan(op)
    if op.name == "linalg.matmul":
        return Plan([8, 2 * lanes, 1], [8, 2 * lanes, 1])
    if op.name == "linalg.batch_matmul":
        return Plan([1, 8, 2 * lanes, 1], [1, 8, 2 * lanes, 1])
    order = interchange(op)
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
    iterators = (
        [iterator_types(op)[d] for d in order] if order else iterator_types(op) if op.name == "linalg.generic" else []
    )
    tiles = [1] * (len(sizes) - 1) + [lanes]
    outer_parallel = op.name == "linalg.copy" or iterators[:1] == ["#linalg.iterator_type<parallel>"]
    outer_parallel = outer_parallel and not moves_little(op, sizes)
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
