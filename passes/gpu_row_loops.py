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
"""

from __future__ import annotations

from mlir import ir

from mlirc.dialects import tt
from mlirc.passes.gpu_numerics import INTEGER_MIN_MAX
from mlirc.passes.gpu_sizes import divides
from mlirc.passes.gpu_tiles import Tiled, TileEmitter, compute_type


def _reduces(generic: ir.Operation) -> bool:
    return any("reduction" in str(k) for k in ir.ArrayAttr(generic.attributes["iterator_types"]))


def emit_row_loops(emitter: TileEmitter, generics: list[ir.Operation]) -> None:
    """The group's tt ops: a pass per reduction, then one that stores."""
    emitter.row_group = True
    emitter.start_rows()
    rows: dict = {}  # the reductions' results so far: a value per row
    for k, generic in enumerate(generics):
        if _reduces(generic):
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
