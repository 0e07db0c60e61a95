"""The ATen -> mlirc lowering table.

`LOWERINGS[aten_op](lctx, node)` returns the op's IR value (or a tuple for
multi-result ops); `CHECKS[aten_op](node)` returns a reason string when a
particular call cannot be lowered (the partitioner then leaves it to eager).

Who imports whom: every lowering file imports `api` (the registry, the context a
lowering sees, the metadata helpers) and, for run-time checks, `checks` (which
lowers torch's own asserts too); this
package imports every lowering file, so the table is complete once it is
imported; the importer and the partitioner read the table from here.  No
lowering file imports the importer or another lowering file.
"""

from mlirc.frontend.lowerings import checks, distance, elementwise, nn, pooling, scan, scatter, search, tensor  # noqa: F401
from mlirc.frontend.lowerings.api import CHECKS, LOWERINGS

__all__ = ["CHECKS", "LOWERINGS"]
