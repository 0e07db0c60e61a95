"""The `mlirc` dialect: IRDL definition, Python builders and shape/dtype rules."""

from mlirc.dialects.mlirc_dialect import OPS, load_dialect, make_context

__all__ = ["OPS", "make_context", "load_dialect"]
