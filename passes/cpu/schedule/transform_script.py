"""The transform-dialect script that applies each op's Plan: match the op by its
schedule mark, interchange, tile, vectorize (peeling, splitting or folding as the
plan says), then the vector lowerings every kernel needs."""

from __future__ import annotations

from mlirc.dialects.attributes import PARALLEL_LOOP_ATTR, SCHEDULE_ATTR, SPLIT_ATTR, TAIL_ATTR
from mlirc.passes.cpu.schedule.plans import Plan


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


def transform_script(plans: list[tuple[int, Plan]]) -> str:
    """The transform module for `plans` (schedule mark, plan): each plan's lines, then the
    vector lowerings for every function."""
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
