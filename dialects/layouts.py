"""How a graph's inputs and outputs lie in memory when eager's are not row-major.

Kernels read and write dense row-major buffers.  A tensor whose strides are a
permutation of dense ones (a transposed or channels_last tensor), with stride-0
dims (an expanded one), is still one dense buffer: the buffer's dims are the
tensor's in stride order, the expanded dims held once (size 1).  The importer
types such an input as that buffer and rebuilds the tensor in IR (a permute and a
broadcast, which fusion folds into the readers' indexing maps): nothing is copied
or materialized on entry.  An output is computed straight into the buffer of
eager's layout, and the host wrapper hands back the view with eager's strides.

A result may also be a view of a padded buffer (eager's strides skip elements at
the end of each row, as a slice of a padded tensor does: attention masks padded
for the memory-efficient kernel): the buffer is allocated padded, the producing
kernel writes it whole (zeros in the padding), and the wrapper returns the view.

The entry function's `mlirc.arg_layouts` / `mlirc.result_layouts` hold one entry
per argument / result: empty for row-major, else `[order..., -1, expanded...]`,
followed by `-2, dim, size, ...` where buffer dims are padded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from mlir import ir

from mlirc.dialects.attributes import RESULT_EAGER_ATTR


@dataclass(frozen=True)
class Layout:
    order: tuple[int, ...]  # the buffer's dims: the tensor's, outermost (largest stride) first
    expanded: tuple[int, ...] = ()  # tensor dims of stride 0, held as size 1
    padded: tuple[tuple[int, int], ...] = ()  # (tensor dim, its longer size in the buffer)

    def buffer_shape(self, shape: Sequence[int]) -> list[int]:
        longer = dict(self.padded)
        return [1 if d in self.expanded else longer.get(d, shape[d]) for d in self.order]

    def inverse(self) -> list[int]:
        return [self.order.index(d) for d in range(len(self.order))]


def plan(shape: Sequence[int], strides: Sequence[int], padding: bool = False) -> Layout | None:
    """The layout of a tensor with these sizes and strides, or None where it is row
    major (nothing to do) or no dense buffer holds it (gaps, overlaps: copied).  With
    `padding` (a result's layout), a stride that skips past the end of the next inner
    dim makes that dim longer in the buffer."""
    rank = len(shape)
    expanded = tuple(d for d in range(rank) if shape[d] > 1 and strides[d] == 0)
    live = [d for d in range(rank) if shape[d] > 1 and d not in expanded]
    # unit and expanded dims first: they hold one element, their place is free
    order = tuple([d for d in range(rank) if d not in live] + sorted(live, key=lambda d: (-strides[d], d)))
    expected, inner, padded = 1, None, []
    for d in reversed(order):
        if d in live:
            if strides[d] != expected:
                if not padding or inner is None or strides[d] < expected or strides[d] % strides[inner]:
                    return None
                longer = strides[d] // strides[inner]
                if not _row_padding(longer, shape[inner]):
                    return None
                padded.append((inner, longer))
                expected = strides[d]
            expected *= shape[d]
            inner = d
    if padded:
        return Layout(order, expanded, tuple(padded))
    if not expanded and [d for d in order if d in live] == live:
        return None  # row-major already
    return Layout(order, expanded)


def _row_padding(longer: int, size: int) -> bool:
    """Is a dim `longer` in memory than its `size` by an alignment's padding (49 of
    56), not a narrow slice of a wide tensor, whose buffer would be mostly padding
    for its kernel to write?"""
    return longer < 2 * size + 16


def encode(layouts: Sequence[Layout | None]) -> ir.ArrayAttr:
    return ir.ArrayAttr.get(
        [
            ir.DenseI64ArrayAttr.get(
                []
                if lay is None
                else [
                    *lay.order,
                    -1,
                    *lay.expanded,
                    *([-2, *[n for pair in lay.padded for n in pair]] if lay.padded else []),
                ]
            )
            for lay in layouts
        ]
    )


def decode(attributes: object, name: str, count: int) -> list[Layout | None]:
    """The layouts under attribute `name` (all row-major, None, if it is absent)."""
    if name not in attributes:  # type: ignore[operator]
        return [None] * count
    found: list[Layout | None] = []
    for attr in ir.ArrayAttr(attributes[name]):  # type: ignore[index]
        values = list(ir.DenseI64ArrayAttr(attr))
        if not values:
            found.append(None)
            continue
        cut = values.index(-1)
        end = values.index(-2) if -2 in values else len(values)
        pairs = values[end + 1 :]
        padded = tuple((pairs[i], pairs[i + 1]) for i in range(0, len(pairs), 2))
        found.append(Layout(tuple(values[:cut]), tuple(values[cut + 1 : end]), padded))
    return found


def encode_eager(tensors: Sequence[tuple[Sequence[int], Sequence[int]]]) -> ir.ArrayAttr:
    """Eager's (sizes, strides) of each result, which the host wrapper reproduces."""
    return ir.ArrayAttr.get(
        [
            ir.DictAttr.get({"shape": ir.DenseI64ArrayAttr.get(list(n)), "strides": ir.DenseI64ArrayAttr.get(list(s))})
            for n, s in tensors
        ]
    )


def decode_eager(attributes: object, count: int) -> list[tuple[tuple[int, ...], tuple[int, ...]] | None]:
    if RESULT_EAGER_ATTR not in attributes:  # type: ignore[operator]
        return [None] * count
    found = []
    for attr in ir.ArrayAttr(attributes[RESULT_EAGER_ATTR]):  # type: ignore[index]
        entry = ir.DictAttr(attr)
        found.append((tuple(ir.DenseI64ArrayAttr(entry["shape"])), tuple(ir.DenseI64ArrayAttr(entry["strides"]))))
    return found


def same_strides(shape: Sequence[int], a: Sequence[int], b: Sequence[int]) -> bool:
    """Do two layouts of `shape` agree?  A dim of size 1 (or any dim of an empty or
    one-element tensor) has no meaningful stride."""
    if math.prod(shape) <= 1:
        return True
    return all(n == 1 or x == y for n, x, y in zip(shape, a, b, strict=True))
