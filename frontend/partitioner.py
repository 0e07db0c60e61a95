"""Capability partitioner: supported nodes form regions that mlirc compiles; the rest
run eagerly.  Each unsupported op is logged once with its reason."""

from __future__ import annotations

import logging
import operator
from typing import Any

import torch
import torch.fx as fx
from torch.fx.experimental import symbolic_shapes
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupport

from mlirc.config import config
from mlirc.dialects import shapes
from mlirc.frontend.lowerings import CHECKS, LOWERINGS
from mlirc.frontend.lowerings.api import computes_a_size, node_meta

log = logging.getLogger(__name__)
_logged: set[str] = set()

CPU_EAGER_DTYPES = frozenset({torch.float16, torch.bfloat16})
_aten = torch.ops.aten
CONTRACTIONS = frozenset(
    {_aten.mm.default, _aten.bmm.default, _aten.addmm.default, _aten.baddbmm.default, _aten.addbmm.default,
     _aten.convolution.default}
)  # fmt: skip
# Ops that move or convert half values without computing on them.
HALF_SAFE_OPS = frozenset(
    {_aten.view.default, _aten._unsafe_view.default, _aten.permute.default, _aten.clone.default,
     _aten.expand.default, _aten.slice.Tensor, _aten.select.int, _aten.squeeze.dim, _aten.unsqueeze.default,
     _aten.t.default, _aten.transpose.int, _aten.alias.default}
)  # fmt: skip


def unsupported_reason(node: fx.Node, symbolic: bool = False) -> str | None:
    """Why `node` cannot be imported, or None when it can (used by the partitioner).
    `symbolic`: the graph is imported with its symbolic sizes, whose size nodes
    (sym_size, arithmetic on sizes) it takes; else it is made static first."""
    if node.op != "call_function":
        return None
    if node.target is operator.getitem or (symbolic and computes_a_size(node)):
        return None
    if node.target not in LOWERINGS:
        return "no lowering"
    for meta in _tensor_metas(node):
        if not shapes.is_supported_dtype(meta.dtype):
            return f"dtype {meta.dtype} not supported"
        if any(
            not (isinstance(d, int) or (symbolic and not symbolic_shapes.free_unbacked_symbols(d))) for d in meta.shape
        ):
            # symbolic input sizes are made static per call (frontend/dynamic.py) or
            # imported as such: what is left is a size read off the data (nonzero, unique)
            return "data-dependent sizes not supported yet"
    half = _half_input_on_cpu(node)
    if half is not None:
        return half
    check = CHECKS.get(node.target)
    return check(node) if check else None


def _half_input_on_cpu(node: fx.Node) -> str | None:
    """With MLIRC_CPU_HALF=0, ops that compute on float16/bfloat16 inputs on the CPU run
    eagerly (a way to rule out mlirc's half-precision code when debugging); by default
    they compile, each op in float32 and rounded once at its result as eager's opmath
    does (mlirc-cpu-widen-halves), GEMMs and convolutions as library calls -- eagerly
    with MLIRC_LIBRARY_GEMM=0, whose generated contractions would sum in the half type.
    Ops that only move half values compile either way."""
    if node.target in HALF_SAFE_OPS:
        return None
    if config.cpu_half and (config.library_gemm or node.target not in CONTRACTIONS):
        return None
    for arg in node.all_input_nodes:
        meta = node_meta(arg)
        if isinstance(meta, torch.Tensor) and meta.dtype in CPU_EAGER_DTYPES and meta.device.type == "cpu":
            if config.cpu_half:  # generated contractions (named linalg ops) would sum in the half type
                return f"a {meta.dtype} contraction with MLIRC_LIBRARY_GEMM=0 computes eagerly on the CPU"
            return f"{meta.dtype} computes eagerly on the CPU"
    return None


def _tensor_metas(node: fx.Node) -> list[torch.Tensor]:
    metas = [node_meta(node)]
    metas += [node_meta(a) for a in node.all_input_nodes]
    flat: list[Any] = []
    for m in metas:
        flat.extend(m if isinstance(m, (tuple, list)) else [m])
    return [m for m in flat if isinstance(m, torch.Tensor)]


class MlircSupport(OperatorSupport):
    def is_node_supported(self, submodules: object, node: fx.Node) -> bool:
        if node.op != "call_function":
            return False
        if node.target is operator.getitem:
            return self.is_node_supported(submodules, node.args[0])
        return unsupported_reason(node) is None


def unsupported_nodes(gm: fx.GraphModule, symbolic: bool = False) -> list[tuple[fx.Node, str]]:
    found = []
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is not operator.getitem:
            reason = unsupported_reason(node, symbolic)
            if reason is not None:
                found.append((node, reason))
    return found


def log_fallback_once(op: str, reason: str) -> None:
    key = f"{op}: {reason}"
    if key not in _logged:
        _logged.add(key)
        log.warning("mlirc: %s runs eagerly (fallback): %s", op, reason)


def partition(gm: fx.GraphModule) -> fx.GraphModule:
    """`gm` with supported regions moved into `fused_N` submodules."""
    partitioner = CapabilityBasedPartitioner(gm, MlircSupport(), allows_single_node_partition=True)
    partitions = partitioner.propose_partitions()
    return partitioner.fuse_partitions(partitions)
