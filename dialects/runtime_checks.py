"""Run-time checks: the errors eager PyTorch raises that only the data can tell
(an index out of range, an integer division by zero).

The importer computes each check as a 0-d i1 "ok" tensor and returns it from the
entry function after the graph's own results; the entry's `mlirc.checks`
attribute names, in order, the exception and message of each.  The kernels stay
memory-safe whatever the data (index reads are clamped, divisors made nonzero),
so the host wrapper can test the flags once, after the kernels ran: on the CPU it
raises eager's exception type; on a GPU the test is a device-side assert reported
at the next synchronization, as eager's CUDA kernels and Inductor report theirs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mlir import ir

from mlirc.dialects.attributes import CHECKS_ATTR

# Exceptions a check may raise: the ones eager's index and division errors use.
ERRORS = ("IndexError", "RuntimeError")


@dataclass(frozen=True)
class RuntimeCheck:
    error: str  # one of ERRORS
    message: str

    def __post_init__(self) -> None:
        if self.error not in ERRORS:
            raise ValueError(f"a run-time check raises one of {ERRORS}, not {self.error!r}")


def encode(checks: Sequence[RuntimeCheck]) -> ir.ArrayAttr:
    return ir.ArrayAttr.get([ir.StringAttr.get(f"{c.error}: {c.message}") for c in checks])


def decode(attributes: object) -> list[RuntimeCheck]:
    """The checks named by an entry function's attributes (none if it has no CHECKS_ATTR)."""
    if CHECKS_ATTR not in attributes:  # type: ignore[operator]
        return []
    checks = []
    for attr in ir.ArrayAttr(attributes[CHECKS_ATTR]):  # type: ignore[index]
        error, _, message = ir.StringAttr(attr).value.partition(": ")
        checks.append(RuntimeCheck(error, message))
    return checks
