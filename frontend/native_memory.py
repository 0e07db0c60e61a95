"""Giving back to the system the memory a compile has freed.

A compile builds and drops MLIR contexts, LLVM modules and JIT engines: tens of
megabytes in small native blocks, among which the objects that live on (Dynamo's
records of the compile, the compiled code) end up scattered.  glibc's allocator
keeps the freed pages between live blocks, so a process that compiles new graphs
grows by about 0.8 MB a compile even when every compiled function is deleted;
`malloc_trim` returns those pages (about 0.15 MB a compile remains, as with
Dynamo's `aot_eager`).  Elsewhere (macOS, musl) there is no such call, and nothing
is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        trim = None
    if trim is not None:
        trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def release_freed_memory() -> None:
    """Return the free pages of the process's heaps to the system (glibc only)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
