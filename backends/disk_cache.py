"""Files mlirc keeps between processes (GPU kernels' TTIR, autotuning choices),
checked, never trusted.

Every entry is written atomically (a temporary file renamed over it: a reader
never sees half a file) and read back only if it proves itself: a text entry must
be exactly the text it stands for, a JSON entry must name its own key and carry
the hash of its value.  Anything else -- missing, empty, truncated, swapped with
another entry, not JSON, a directory, unreadable -- is a miss: the caller
recompiles and the entry is written again, with a warning when it was there but
bad.  No error from the cache reaches the caller as anything but a miss.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

from mlirc.config import config

log = logging.getLogger(__name__)


def cache_dir() -> Path:
    """MLIRC_CACHE_DIR, or the user's cache folder's mlirc/."""
    return Path(config.cache_dir or os.path.join(os.path.expanduser("~"), ".cache", "mlirc"))


def _warn(path: Path, why: str) -> None:
    warnings.warn(f"mlirc: cache entry {path} {why}; recompiling it", stacklevel=3)


def write_atomic(path: Path, text: str) -> bool:
    """Write `text` to `path` by renaming a finished temporary file over it; False
    (and a logged reason) where the cache folder cannot take it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError as err:
        log.warning("mlirc: cannot write cache entry %s: %s", path, err)
        return False
    return True


def text_file(path: Path, text: str) -> Path:
    """A file holding exactly `text` (the one at `path` once it does): a tool that
    reads a file (triton.compile) gets what was asked for, never a stale,
    truncated or swapped entry."""
    try:
        if path.read_text() == text:
            return path
        _warn(path, "holds other text")
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError) as err:  # a directory, unreadable bytes, ...
        _warn(path, f"cannot be read ({type(err).__name__})")
    if write_atomic(path, text):
        return path
    fd, tmp = tempfile.mkstemp(prefix="mlirc-", suffix=path.suffix)  # the cache folder is unusable
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return Path(tmp)


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def read_json(path: Path, key: str) -> Any | None:
    """The value stored under `key` at `path`, or None (a miss) unless the entry is
    whole, names `key` and matches its hash."""
    try:
        entry = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:  # unreadable, a directory, not JSON (truncated)
        _warn(path, f"is unreadable or not JSON ({type(err).__name__})")
        return None
    if not isinstance(entry, dict) or entry.get("key") != key or "value" not in entry:
        _warn(path, "belongs to another key")
        return None
    if entry.get("sha256") != _digest(entry["value"]):
        _warn(path, "does not match its hash")
        return None
    return entry["value"]


def write_json(path: Path, key: str, value: Any) -> None:
    write_atomic(path, json.dumps({"key": key, "sha256": _digest(value), "value": value}, sort_keys=True))
