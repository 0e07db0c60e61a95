"""mlirc passes (one per file) and the named stage pipelines."""

from mlirc.passes import pipelines  # noqa: F401  (registers every pass and stage)
from mlirc.passes.base.registry import PASSES, run_passes

__all__ = ["PASSES", "run_passes"]
