"""mlirc-fold-symbolic-reshapes: an `expand_shape` that undoes a `collapse_shape`
is the collapsed tensor itself, on `?` dims too.

Elementwise fusion moves a reshape across the ops it fuses (a linear layer's
output computed on flattened rows, then viewed as [batch, seq, features] for a
residual add), and leaves `expand_shape(collapse_shape(x))` where the two meet.
On static shapes canonicalization folds the pair (the types say it is the
identity) and the ops on either side fuse into one kernel.  On `?` dims the
expand's output sizes are values, read off some other tensor of the same sizes:
the pair stays and splits the kernel in two.  Here the pair folds where each
output size is provably x's (passes/base/size_keys.py), and the caller fuses again.
"""

from __future__ import annotations

from mlir import ir

from mlirc.passes.base.ir_utils import defining_op, erase_op, nested_ops
from mlirc.passes.base.registry import register_pass
from mlirc.passes.base.size_keys import SizeKeys, same_size

NAME = "mlirc-fold-symbolic-reshapes"


def _undone_collapse(expand: ir.Operation, keys: SizeKeys) -> ir.Value | None:
    """The tensor that `expand` gives back unchanged, if it undoes a collapse of one."""
    collapse = defining_op(expand.operands[0])
    if collapse is None or collapse.name != "tensor.collapse_shape":
        return None
    source = collapse.operands[0]
    same_groups = str(expand.attributes["reassociation"]) == str(collapse.attributes["reassociation"])
    if not same_groups or source.type != expand.results[0].type:
        return None
    shape = ir.RankedTensorType(source.type).shape
    sizes = iter(list(expand.operands)[1:])
    for dim, size in enumerate(shape):
        if size == ir.ShapedType.get_dynamic_size() and not same_size(keys.size(next(sizes)), keys.dim(source, dim)):
            return None
    return source


def fold_reshape_pairs(module: ir.Operation) -> int:
    """Fold the pairs; how many folded."""
    folded = 0
    for op in [op for op in nested_ops(module) if op.name == "tensor.expand_shape"]:
        # keys of this IR: a fold erases ops, whose values' addresses may come back
        source = _undone_collapse(op, SizeKeys())
        if source is not None:
            op.results[0].replace_all_uses_with(source)
            erase_op(op)
            folded += 1
    return folded


@register_pass(NAME, "Fold expand_shape(collapse_shape(x)) to x where its `?` output sizes are x's")
def fold_symbolic_reshapes(module: ir.Operation) -> None:
    fold_reshape_pairs(module)
