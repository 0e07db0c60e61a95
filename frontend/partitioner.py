"""Capability partitioner: supported nodes form regions that mlirc compiles; the rest
run eagerly.  Each unsupported op is logged once with its reason."""

from __future__ import annotations

import logging
import operator

import torch.fx as fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupport

from mlirc.frontend.importer import unsupported_reason

log = logging.getLogger(__name__)
_logged: set[str] = set()


class MlircSupport(OperatorSupport):
    def is_node_supported(self, submodules: object, node: fx.Node) -> bool:
        if node.op != "call_function":
            return False
        if node.target is operator.getitem:
            return self.is_node_supported(submodules, node.args[0])
        return unsupported_reason(node) is None


def unsupported_nodes(gm: fx.GraphModule) -> list[tuple[fx.Node, str]]:
    found = []
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is not operator.getitem:
            reason = unsupported_reason(node)
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
