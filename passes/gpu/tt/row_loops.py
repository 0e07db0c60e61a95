"""Row groups over rows of run-time length (used by mlirc-gpu-lower-to-tt).

A row group (mlirc-gpu-fuse-rows: softmax's max, exp, sum and divide) keeps a whole
row in one tile when the row's length is known (TileEmitter.emit_rows).  A kernel
compiled for every size cannot: its rows may be of any length.  It walks each row in
BLOCK_R-wide chunks instead, one pass per reduction of the group, as Inductor's
non-persistent reductions do: a pass recomputes the members before its reduction
from the inputs (the earlier reductions' results, one value per row, stay in
registers) and folds the chunk into an accumulator; a last pass computes the
pointwise members again and stores what the kernel returns.  The inputs are so read
once per pass, from L2 where they fit (the loads ask L2 to keep them), and nothing
the group computes is written but its results.  Per-row members (pointwise over the
rows alone) are computed once, between the passes, on the rows' values.

A max fold followed by a sum of `exp(a - max)` (softmax's denominator) is one pass,
not two (Inductor's online softmax): each lane carries its running max and a sum
rescaled by exp(old max - new max) whenever the max grows; after the loop the
lanes' sums are rescaled to the row's max and added.  The inputs are so read twice
(the fold, the store) instead of three times.
"""

from __future__ import annotations

from mlir import ir

from mlirc.dialects import tt
from mlirc.passes.base.ir_utils import defining_op
from mlirc.passes.gpu.tt.numerics import INTEGER_MIN_MAX
from mlirc.passes.gpu.tt.sizes import divides
from mlirc.passes.gpu.tt.tile_access import Tiled, compute_type
from mlirc.passes.gpu.tt.tiles import TileEmitter

CMPF_OEQ = 1  # arith.cmpf's predicate number: ordered and equal


def _reduces(generic: ir.Operation) -> bool:
    return any("reduction" in str(k) for k in ir.ArrayAttr(generic.attributes["iterator_types"]))


def emit_row_loops(emitter: TileEmitter, generics: list[ir.Operation]) -> None:
    """The group's tt ops: a pass per reduction, then one that stores."""
    emitter.row_group = True
    emitter.start_rows()
    rows: dict = {}  # the reductions' results so far: a value per row
    folded: set = set()  # sums already folded together with their max
    for k, generic in enumerate(generics):
        if generic in folded:
            continue
        partner = online_sum(emitter, generics, k) if _reduces(generic) else None
        if partner is not None:
            _online_pass(emitter, generics, k, partner, rows)
            folded.add(generics[partner])
        elif _reduces(generic):
            _fold_pass(emitter, generics[:k], generic, rows)
        elif _per_row(emitter, generic):
            emitter.generic = generic
            results = emitter.lower_body(emitter.read_inputs(rows))
            rows.update(zip(generic.results, results, strict=True))
            emitter.store_results(results)
    pointwise = [g for g in generics if not _reduces(g) and not _per_row(emitter, g)]
    if any(r in emitter.memory for g in pointwise for r in g.results):
        _store_pass(emitter, generics, rows)


def _per_row(emitter: TileEmitter, generic: ir.Operation) -> bool:
    """Is `generic` pointwise over the rows alone (no loop over a row's elements)?"""
    return len(ir.ArrayAttr(generic.attributes["iterator_types"])) == len(emitter.plan.parallel)


def _loop(emitter: TileEmitter, carried: list[ir.Value]) -> tuple[ir.Operation, ir.Block]:
    """A loop over the row's chunks; its body starts with the chunk's indices."""
    index = emitter.offset_type
    bounds = [emitter.size(v).value for v in (0, emitter.plan.size_r, emitter.plan.block_r)]
    loop = tt.create("scf.for", [*bounds, *carried], [v.type for v in carried], regions=1)
    block = loop.regions[0].blocks.append(index, *[v.type for v in carried])
    with ir.InsertionPoint(block):
        flat_r = emitter.flat_index(block.arguments[0], emitter.plan.block_r, "r")
        emitter.masks["r"] = emitter.bound_mask(
            flat_r, emitter.plan.size_r, divides(emitter.plan.block_r, emitter.plan.size_r)
        )
        emitter.flat["r"] = flat_r
        emitter.masks.pop("t", None)
        emitter.unflatten(flat_r, emitter.plan.reduction)
        emitter.loaded = {}  # loads of this chunk, shared by its members
    return loop, block


def _after_loop(emitter: TileEmitter) -> None:
    """Values of the loop's body do not reach past it."""
    emitter.loaded = {}
    for kind in ("r", "t"):
        emitter.masks.pop(kind, None)
    emitter.flat.pop("r", None)
    for dim in emitter.plan.reduction:
        emitter.dims.pop(dim, None)


def _pointwise(emitter: TileEmitter, members: list[ir.Operation], values: dict, store: bool = False) -> None:
    """The members that do not reduce, on the current chunk (earlier reductions' rows
    are in `values` already)."""
    for generic in members:
        if _reduces(generic) or _per_row(emitter, generic):  # their rows are in `values`
            continue
        emitter.generic = generic
        results = emitter.lower_body(emitter.read_inputs(values))
        values.update(zip(generic.results, results, strict=True))
        if store:
            emitter.store_results(results)


def _fold_pass(emitter: TileEmitter, before: list[ir.Operation], target: ir.Operation, rows: dict) -> None:
    emitter.generic = target
    combine, folded = emitter.combiner()
    identity = emitter.identity(combine, compute_type(tt.element_of(target.results[0])))
    loop, block = _loop(emitter, [emitter.to_kind(identity, "t")])
    with ir.InsertionPoint(block):
        values = dict(rows)
        _pointwise(emitter, before, values)
        emitter.generic = target
        body = emitter.read_inputs(values)
        emitter.lower_body(body, skip=combine)
        value = emitter.to_kind(emitter.lookup(body, folded), "t")
        kept = Tiled(emitter.keep_in_bounds(value, emitter.to_kind(identity, "t")), "t")
        if combine.name in INTEGER_MIN_MAX:
            kept = emitter.shield(kept)
        acc = emitter.combine(combine, Tiled(block.arguments[1], "t"), kept)
        tt.create("scf.yield", [acc.value], [])
    _after_loop(emitter)
    emitter.generic = target
    result = emitter.finish_rows(combine, loop.results[0])
    rows[target.results[0]] = result
    emitter.store_results([result])


def _store_pass(emitter: TileEmitter, generics: list[ir.Operation], rows: dict) -> None:
    _, block = _loop(emitter, [])
    with ir.InsertionPoint(block):
        _pointwise(emitter, generics, dict(rows), store=True)
        tt.create("scf.yield", [], [])
    _after_loop(emitter)


# --- a max and the sum of exp(a - max) in one pass ---------------------------------
def _combiner_of(emitter: TileEmitter, generic: ir.Operation) -> tuple[ir.Operation, ir.Value]:
    emitter.generic = generic
    return emitter.combiner()


def _through_members(value: ir.Value, members: list[ir.Operation]) -> ir.Value:
    """`value`, with a block argument that reads a pointwise member's result replaced
    by what that member yields: a body value, or a tensor from outside the members."""
    pointwise = [m.operation for m in members if not _reduces(m)]
    while isinstance(value, ir.BlockArgument):
        operand = value.owner.owner.operands[value.arg_number]
        producer = getattr(operand.owner, "operation", None)
        if producer is None or producer not in pointwise:
            return operand
        value = list(producer.regions[0].blocks[0].operations)[-1].operands[ir.OpResult(operand).result_number]
    return value


def _depends_on(value: ir.Value, target: ir.Value, members: list[ir.Operation]) -> bool:
    value = _through_members(value, members)
    if value == target:
        return True
    op = defining_op(value)
    in_body = op is not None and op.parent is not None and op.parent.name == "linalg.generic"
    return in_body and any(_depends_on(v, target, members) for v in op.operands)


def online_sum(emitter: TileEmitter, generics: list[ir.Operation], k: int) -> int | None:
    """The index of the sum to fold together with generics[k], or None.  generics[k]
    must be a float32 max; the sum the next reduction, with only pointwise members
    between, of exp(a - max) where `a` does not depend on the max."""
    combine, _ = _combiner_of(emitter, generics[k])
    if combine.name != "arith.maximumf" or not isinstance(tt.element_of(generics[k].results[0]), ir.F32Type):
        return None
    j = next((j for j in range(k + 1, len(generics)) if _reduces(generics[j])), None)
    if j is None or any(_per_row(emitter, g) for g in generics[k + 1 : j]):
        return None
    combine, summand = _combiner_of(emitter, generics[j])
    if combine.name != "arith.addf":
        return None
    members = generics[:j]
    exp = defining_op(_through_members(summand, members))
    if exp is None or exp.name != "math.exp":
        return None
    sub = defining_op(_through_members(exp.operands[0], members))
    if sub is None or sub.name != "arith.subf":
        return None
    maximum = generics[k].results[0]
    a, m = sub.operands
    if _through_members(m, members) != maximum or _depends_on(a, maximum, members):
        return None
    return j


def _online_pass(emitter: TileEmitter, generics: list[ir.Operation], k: int, j: int, rows: dict) -> None:
    """One loop folding generics[k] (the max) and generics[j] (the sum of exp(a - max))."""
    maxg, sumg = generics[k], generics[j]
    cmax, fmax = _combiner_of(emitter, maxg)
    csum, fsum = _combiner_of(emitter, sumg)
    f32 = tt.element_of(maxg.results[0])
    ninf = emitter.to_kind(emitter.identity(cmax, f32), "t")
    zero = emitter.to_kind(emitter.identity(csum, f32), "t")
    loop, block = _loop(emitter, [ninf, zero])
    with ir.InsertionPoint(block):
        lane_max, lane_sum = Tiled(block.arguments[1], "t"), Tiled(block.arguments[2], "t")
        values = dict(rows)
        _pointwise(emitter, generics[:k], values)
        chunk_max = _folded_chunk(emitter, maxg, cmax, fmax, values, ninf)
        new_max = emitter.combine(cmax, lane_max, chunk_max)
        values[maxg.results[0]] = new_max  # the members after the max read each lane's
        _pointwise(emitter, generics[k + 1 : j], values)
        chunk_sum = _folded_chunk(emitter, sumg, csum, fsum, values, zero)
        total = emitter.arith("arith.addf", _rescaled(emitter, lane_sum, lane_max, new_max), chunk_sum)
        # a lane that has seen only -inf has summed nothing (exp(-inf - -inf) is NaN)
        total = _select(emitter, _is_minus_inf(emitter, new_max), zero, total)
        tt.create("scf.yield", [new_max.value, total.value], [])
    _after_loop(emitter)
    emitter.generic = maxg
    row_max = emitter.finish_rows(cmax, loop.results[0])
    rows[maxg.results[0]] = row_max
    emitter.store_results([row_max])
    lane_max, lane_sum = Tiled(loop.results[0], "t"), Tiled(loop.results[1], "t")
    # such lanes add nothing, unless the whole row is -inf: eager's sum is NaN there
    empty_lane = emitter.arith(
        "arith.andi", _is_minus_inf(emitter, lane_max), _not(emitter, _is_minus_inf(emitter, row_max))
    )
    at_row_max = _select(emitter, empty_lane, zero, _rescaled(emitter, lane_sum, lane_max, row_max))
    emitter.generic = sumg
    row_sum = emitter.finish_rows(csum, at_row_max.value)
    rows[sumg.results[0]] = row_sum
    emitter.store_results([row_sum])


def _folded_chunk(
    emitter: TileEmitter, generic: ir.Operation, combine: ir.Operation, folded: ir.Value, values: dict, identity
) -> Tiled:
    """The chunk's values that `generic` folds in, its identity in lanes past the row."""
    emitter.generic = generic
    body = emitter.read_inputs(values)
    emitter.lower_body(body, skip=combine)
    return Tiled(emitter.keep_in_bounds(emitter.to_kind(emitter.lookup(body, folded), "t"), identity), "t")


def _rescaled(emitter: TileEmitter, total: Tiled, old_max: Tiled, new_max: Tiled) -> Tiled:
    """total * exp(old_max - new_max): a sum of exp(a - old_max) made one of exp(a - new_max)."""
    diff = Tiled(emitter.to_kind(emitter.arith("arith.subf", old_max, new_max), "t"), "t")
    scale = Tiled(tt.one("math.exp", [diff.value], diff.value.type), "t")
    return emitter.arith("arith.mulf", total, scale)


def _is_minus_inf(emitter: TileEmitter, x: Tiled) -> Tiled:
    element = tt.element_of(x.value)
    minus_inf = tt.splat(tt.scalar_constant(float("-inf"), element), emitter.shape(x.kind))
    i1 = tt.tensor_type(emitter.shape(x.kind), ir.IntegerType.get_signless(1))
    predicate = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), CMPF_OEQ)
    return Tiled(tt.one("arith.cmpf", [x.value, minus_inf], i1, {"predicate": predicate}), x.kind)


def _not(emitter: TileEmitter, x: Tiled) -> Tiled:
    return emitter.arith("arith.xori", x, emitter.const(1, ir.IntegerType.get_signless(1)))


def _select(emitter: TileEmitter, condition: Tiled, zero: ir.Value, value: Tiled) -> Tiled:
    """`zero` (a tile) where `condition` holds, else `value`."""
    operands = [emitter.to_kind(condition, "t"), zero, emitter.to_kind(value, "t")]
    return Tiled(tt.one("arith.select", operands, zero.type), "t")
