"""mlirc-channels-last: CNN activations live in channels-last (NHWC) memory.

oneDNN's CPU convolutions run 1.1-7x faster on NHWC data than on NCHW (a
3-channel stem: 2.6 ms against 0.35 ms on 2 cores), and Inductor keeps whole CNNs
channels-last for that reason.  cuDNN's TF32 kernels on the H100 are NHWC too: given
NCHW it converts both ways around each convolution (ResNet-18 at batch 128: 1 of
3.1 ms in nchwToNhwc/nhwcToNchw kernels).  Converting at each call would cost two
copies per convolution, so the layout travels with the data instead:

1. Every `conv2d` library call becomes `conv2d_nhwc` (its input and result are
   NHWC tensors), wrapped as permute(conv2d_nhwc(permute(x, to NHWC)), to NCHW).
2. In program order, a generic that reads one of those "back to NCHW" permutes
   reads the NHWC tensor through its indexing map instead; if its result is an
   activation (4-D, more than one pixel) it also writes NHWC, and a new "back to
   NCHW" permute after it carries the layout on to its users.  Loops and bodies
   do not change: only the maps that place operands in memory do.
3. A "to NHWC" permute of a "back to NCHW" one is the identity, which
   canonicalization erases: between two convolutions nothing is copied.

A "back to NCHW" permute that is in the graph already seeds step 2 as a
convolution's result does: the importer's, of an argument whose buffer is NHWC (a
training backward's saved activations, frontend/training_layouts.py), and a model's
own (a channels-first layer norm computed as permute, norm over C, permute back).

What is left are permutes at the edges (the network's input, a flatten, a
result), each a copy kernel.  Pooling ops become generics first, so that they
take part (and their elementwise producers fuse into them).  It runs on the
linalg stage's IR, before fusion, for both targets (stages cpu-layout, gpu-layout).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func

from mlirc.dialects import shapes
from mlirc.dialects.attributes import LIBRARY_ATTR
from mlirc.passes.base import linalg_emit as le
from mlirc.passes.base.ir_utils import callee, entry_functions, functions, nested_ops, run_transform
from mlirc.passes.base.linalg_utils import indexing_maps, set_indexing_maps
from mlirc.passes.base.registry import register_pass
from mlirc.passes.outline_library_calls import library_of
from mlirc.passes.transpose_views import generic_perm

TO_NHWC = (0, 2, 3, 1)  # torch.permute order: NCHW -> NHWC
TO_NCHW = (0, 3, 1, 2)
CONV_LIBRARY, CONV_NHWC_LIBRARY = "conv2d", "conv2d_nhwc"
POOLING_OPS = ("linalg.pooling_nchw_max", "linalg.pooling_nchw_sum")


def permute(value: ir.Value, perm: tuple[int, ...]) -> ir.Value:
    """torch.permute(value, perm) as a transpose generic (what fusion folds away)."""
    rank = len(perm)
    in_map = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(perm.index(j)) for j in range(rank)])
    sizes = le.dims_of(value)
    init = le.empty([sizes[p] for p in perm], shapes.elem_of(value))
    return le.generic([value], [in_map], [init], [le.identity_map(rank)], [le.PARALLEL] * rank, lambda a: [a[0]])[0]


def _permuted_type(t: ir.Type, perm: tuple[int, ...]) -> ir.Type:
    shape = shapes.shape_of(t)
    return shapes.tensor_type([shape[p] for p in perm], shapes.elem_of(t))


def _reorder(amap: ir.AffineMap, perm: tuple[int, ...]) -> ir.AffineMap:
    """The map reading (or writing) the same elements from a tensor permuted by `perm`."""
    return ir.AffineMap.get(amap.n_dims, amap.n_symbols, [amap.results[p] for p in perm])


# -- 1. convolutions ---------------------------------------------------------------------


def _retype_conv_kernel(kernel: func.FuncOp) -> None:
    """The library kernel's body computes in NCHW between permutes, so that
    mlirc-opt still runs it; the host calls oneDNN or cuDNN on the NHWC input and OHWI weight."""
    block = kernel.entry_block
    first = block.operations[0]
    for arg, back in zip(block.arguments[:2], (permute, _weight_layout), strict=True):  # NHWC input, OHWI weight
        uses = [(u.owner, u.operand_number) for u in arg.uses]
        arg.set_type(_permuted_type(arg.type, TO_NHWC))
        with ir.InsertionPoint(first), kernel.location:
            logical = back(arg, TO_NCHW)
        for owner, index in uses:
            owner.operands[index] = logical
    ret = block.operations[len(block.operations) - 1]
    with ir.InsertionPoint(ret), kernel.location:
        ret.operands[0] = permute(ret.operands[0], TO_NHWC)
    kernel.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get([a.type for a in block.arguments], [ret.operands[0].type])
    )
    kernel.attributes[LIBRARY_ATTR] = ir.StringAttr.get(CONV_NHWC_LIBRARY)


def _weight_layout(weight: ir.Value, perm: tuple[int, ...]) -> ir.Value:
    """OIHW <-> OHWI.  oneDNN (and torch for cuDNN) would copy an OIHW weight to channels-last itself
    (aten::copy_, per convolution and call: 1.5 ms of a 16-core resnet call), and our
    transpose kernel is the faster copy (256x256x3x3: 0.27 against 0.47 ms on 2
    cores).  A 1x1 kernel's two layouts are the same memory: a reshape, no copy."""
    shape = shapes.shape_of(weight)
    moved = [p for p in perm if shape[p] != 1]
    if moved == sorted(moved):  # only unit dims move
        return le.reshape(weight, [shape[p] for p in perm])
    return permute(weight, perm)


def _convert_conv_call(call: ir.Operation, kernel: func.FuncOp, nchw_views: dict) -> ir.Value:
    """Returns the "back to NCHW" permute now standing for the call's result."""
    _retype_conv_kernel(kernel)
    result = call.results[0]
    users = [(u.owner, u.operand_number) for u in result.uses]
    x, weight = call.operands[0], call.operands[1]
    with ir.InsertionPoint(call), call.location:
        # Between two convolutions the input is already NHWC behind its view.
        call.operands[0] = nchw_views[x] if x in nchw_views else permute(x, TO_NHWC)
        call.operands[1] = _weight_layout(weight, TO_NHWC)
    return _nhwc_result(call, result, users)


def _nhwc_result(op: ir.Operation, result: ir.Value, users: list) -> ir.Value:
    """`result` now holds NHWC data: retype it, and hand its former `users` an NCHW
    view of it (a permute the later steps fold into their maps)."""
    result.set_type(_permuted_type(result.type, TO_NHWC))
    with ir.InsertionPoint.after(op), op.location:
        logical = permute(result, TO_NCHW)
    for owner, index in users:
        owner.operands[index] = logical
    return logical


def _convertible(kernel: func.FuncOp | None, call: ir.Operation, float64: bool) -> bool:
    """A 4-D library convolution; in float64 only where the backend says so (cuDNN
    never runs one channels-last: torch would copy the input back to NCHW and the
    result to NHWC)."""
    x = call.operands[0]
    if not float64 and isinstance(shapes.elem_of(x), ir.F64Type):
        return False
    return library_of(kernel) == CONV_LIBRARY and len(shapes.shape_of(x)) == 4


# -- 2. propagation ----------------------------------------------------------------------


def _writes_activation(op: ir.Operation) -> bool:
    """Should `op` write its result in NHWC too: a 4-D image of more than one pixel,
    written through plain loop dims (a map that a permutation can reorder)?"""
    if op.name != "linalg.generic" or len(op.results) != 1:
        return False
    shape = shapes.shape_of(op.results[0])
    # A `?` image dim is taken as more than one pixel: either layout computes the same.
    if len(shape) != 4 or (None not in shape[2:] and shape[2] * shape[3] <= 1):
        return False
    if not all(isinstance(e, ir.AffineDimExpr) for e in indexing_maps(op)[-1].results):
        return False
    init = op.operands[len(op.operands) - 1]
    return _fresh_init(init) is not None


def _fresh_init(init: ir.Value) -> str | None:
    """How the init is made, where it can be made again in another shape."""
    owner = init.owner
    if isinstance(owner, ir.Block):
        return None
    if owner.name == "tensor.empty":
        return "empty"
    if owner.name == "linalg.fill" and owner.operands[1].owner.name == "tensor.empty":
        return "fill"
    return None


def _nhwc_init(init: ir.Value) -> ir.Value:
    elem = shapes.elem_of(init)
    sizes = le.dims_of(init)
    empty = le.empty([sizes[p] for p in TO_NHWC], elem)
    if _fresh_init(init) == "empty":
        return empty
    return le.fill(init.owner.operands[0], empty)


def _read_nhwc(op: ir.Operation, nchw_views: dict) -> tuple[bool, bool]:
    """Point `op` at the NHWC tensors behind its "back to NCHW" inputs, read through
    its indexing maps or gathered in its body (a padding's clamped reads).  Returns
    whether it changed, and whether one of those inputs keeps its batch and channel
    dims where the result has them (elementwise ops, pooling windows): only then is
    the result an NCHW image that NHWC suits.  A permute (ConvNeXt's NCHW -> NHWC) is not: written "NHWC" it
    came out as (N, W, C, H), and its layer norm reduced across strided memory."""
    maps = indexing_maps(op)
    changed = _gather_nhwc(op, nchw_views)
    aligned = changed  # a padding's (or concatenation's) reads follow the element it writes
    inputs = len(op.operands) - len(op.results)
    for i in range(inputs):
        source = nchw_views.get(op.operands[i])
        if source is not None:
            op.operands[i] = source
            aligned = aligned or _same_image_dims(maps[i], maps[-1])
            maps[i] = _reorder(maps[i], TO_NHWC)
            changed = True
    if changed:
        set_indexing_maps(op, maps)
    return changed, aligned


def _same_image_dims(read: ir.AffineMap, write: ir.AffineMap) -> bool:
    """Does the read take the batch and channel of the element written?"""
    if len(read.results) != 4 or len(write.results) != 4:
        return False
    return all(str(read.results[d]) == str(write.results[d]) for d in (0, 1))


def _gather_nhwc(op: ir.Operation, nchw_views: dict) -> bool:
    """`tensor.extract %nchw[n, c, h, w]` in the body becomes `tensor.extract %nhwc[n, h, w, c]`."""
    changed = False
    for inner in nested_ops(op):
        source = nchw_views.get(inner.operands[0]) if inner.name == "tensor.extract" else None
        if source is None:
            continue
        indices = list(inner.operands)[1:]
        inner.operands[0] = source
        for i, p in enumerate(TO_NHWC):
            inner.operands[1 + i] = indices[p]
        changed = True
    return changed


def _write_nhwc(op: ir.Operation) -> ir.Value:
    """Make `op` write NHWC; returns the "back to NCHW" permute for its users."""
    result = op.results[0]
    users = [(u.owner, u.operand_number) for u in result.uses]
    index = len(op.operands) - 1
    with ir.InsertionPoint(op), op.location:
        op.operands[index] = _nhwc_init(op.operands[index])
    maps = indexing_maps(op)
    maps[-1] = _reorder(maps[-1], TO_NHWC)
    set_indexing_maps(op, maps)
    return _nhwc_result(op, result, users)


def _nhwc_source(op: ir.Operation, nchw_views: dict) -> ir.Value | None:
    """The NHWC tensor behind a "back to NCHW" permute that the model (or the
    importer) wrote itself: the importer's permute of a channels-last argument (a
    training backward's saved activations and gradients), a channels-first layer
    norm's permute back (timm's LayerNorm2d: permute, layer norm over C, permute
    back; ConvNeXt's stem, whose result the stage's residual adds read).  Readers
    then take the NHWC tensor as they take a convolution's result."""
    if op.name != "linalg.generic" or op.operands[0] in nchw_views:
        return None
    return op.operands[0] if generic_perm(op) == list(TO_NCHW) else None


def _propagate(entry: func.FuncOp, kernels: dict[str, func.FuncOp], float64: bool) -> None:
    nchw_views: dict = {}  # "back to NCHW" permute result -> the NHWC tensor it reads
    for op in [o.operation for o in entry.entry_block.operations]:
        if op.name == "func.call" and _convertible(kernels.get(callee(op)), op, float64):
            view = _convert_conv_call(op, kernels[callee(op)], nchw_views)
            nchw_views[view] = view.owner.operands[0]
        elif (source := _nhwc_source(op, nchw_views)) is not None:
            nchw_views[op.results[0]] = source
        elif op.name == "linalg.generic" and op.results:
            changed, aligned = _read_nhwc(op, nchw_views)
            if changed and aligned and _writes_activation(op):
                view = _write_nhwc(op)
                nchw_views[view] = view.owner.operands[0]


def _generalize_pooling(module: ir.Operation) -> None:
    names = ", ".join(f'"{n}"' for n in POOLING_OPS)
    run_transform(
        module,
        [
            f"%pools = transform.structured.match ops{{[{names}]}} in %root : (!transform.any_op) -> !transform.any_op",
            "%generic = transform.structured.generalize %pools : (!transform.any_op) -> !transform.any_op",
        ],
    )


@dataclass(frozen=True)
class ChannelsLastOptions:
    # float64 convolutions channels-last too (the CPU's; the GPU backend's are not)
    channels_last_float64: bool = True


@register_pass(
    "mlirc-channels-last",
    "Keep CNN activations channels-last (NHWC) around library convolutions",
    ChannelsLastOptions,
)
def channels_last(module: ir.Operation, options: ChannelsLastOptions) -> None:
    _generalize_pooling(module)
    body = module.regions[0].blocks[0]
    kernels = functions(body)
    for entry in entry_functions(body):
        _propagate(entry, kernels, options.channels_last_float64)
