"""mlirc's exception hierarchy: every error a user can see derives from MlircError."""

from __future__ import annotations


class MlircError(Exception):
    """Base class of all mlirc errors."""


class UnsupportedOpError(MlircError):
    """The importer has no lowering for an ATen op (or for its arguments)."""

    def __init__(self, op: str, reason: str) -> None:
        super().__init__(f"mlirc cannot lower {op}: {reason}")
        self.op = op
        self.reason = reason


class VerificationError(MlircError):
    """IR failed to verify (before or after a pass)."""


class PipelineError(MlircError):
    """A pass or a pipeline stage failed; names the pass and a repro command."""

    def __init__(self, pass_name: str, message: str, repro: str | None = None) -> None:
        text = f"mlirc pass '{pass_name}' failed: {message}"
        if repro:
            text += f"\n  reproduce with: {repro}"
        super().__init__(text)
        self.pass_name = pass_name
        self.repro = repro


class StaticSizesNeeded(PipelineError):
    """A pass met a symbolic (`?`) size it must know to decide, on an op that cannot
    wait for the binding (passes/base/ir_utils.py defer): the caller binds the sizes
    before that pass instead."""


class SizeAssumptionFailed(PipelineError):
    """Sizes bound into a symbolic graph break an assumption a pass compiled it under
    (a `cf.assert` on its `?` sizes, passes/split_reductions.py): the caller compiles
    that size from a form that assumed nothing."""
