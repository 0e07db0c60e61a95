"""Pass registry: mlirc's Python passes and named pipelines, runnable by CLI name.

A Python pass is a function `run(module_op)` registered under its CLI name
(`mlirc-<file-name-with-dashes>`).  Pipeline elements that are not mlirc names
are upstream MLIR pass texts (`canonicalize`, `one-shot-bufferize{...}`) and go to
MLIR's own parser, so the two kinds mix freely in `-p a,b,c`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mlir import ir, passmanager

from mlirc.errors import MlircError, PipelineError

log = logging.getLogger(__name__)

PassFn = Callable[[ir.Operation], None]


@dataclass(frozen=True)
class PassInfo:
    name: str
    description: str
    run: PassFn | None = None  # a Python pass
    pipeline: tuple[str, ...] = ()  # a named pipeline (stage) of other elements


PASSES: dict[str, PassInfo] = {}


def register_pass(name: str, description: str) -> Callable[[PassFn], PassFn]:
    def wrap(fn: PassFn) -> PassFn:
        PASSES[name] = PassInfo(name, description, run=fn)
        return fn

    return wrap


def register_pipeline(name: str, description: str, elements: Sequence[str]) -> None:
    PASSES[name] = PassInfo(name, description, pipeline=tuple(elements))


def split_pipeline(text: str) -> list[str]:
    """Split 'a,b{x=1,y=2},c' at top-level commas; strip a builtin.module(...) wrapper."""
    text = text.strip()
    for prefix in ("builtin.module(", "any("):
        if text.startswith(prefix) and text.endswith(")"):
            text = text[len(prefix) : -1]
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch in "{(":
            depth += 1
        elif ch in "})":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current.strip())
    return parts


def expand(elements: Sequence[str]) -> list[str]:
    """Named pipelines replaced by their passes, recursively."""
    out: list[str] = []
    for element in elements:
        info = PASSES.get(element)
        if info is not None and info.pipeline:
            out.extend(expand(info.pipeline))
        else:
            out.append(element)
    return out


def _python_pass(info: PassInfo) -> Callable:
    def run(op: ir.Operation, pass_: object) -> None:
        try:
            with op.context, ir.Location.unknown(op.context):
                info.run(op)  # type: ignore[misc]
        except MlircError as err:
            location = getattr(err, "location", None) or op.location
            location.emit_error(f"{info.name}: {err}")
            _failures.append(f"{info.name}: {err}")
            pass_.signal_pass_failure()  # type: ignore[attr-defined]
        except Exception as err:  # a bug in the pass: still a diagnostic, not a traceback
            log.debug("%s crashed", info.name, exc_info=True)
            op.location.emit_error(f"{info.name}: internal error: {type(err).__name__}: {err}")
            _failures.append(f"{info.name}: internal error: {err}")
            pass_.signal_pass_failure()  # type: ignore[attr-defined]

    return run


_failures: list[str] = []


def build_pass_manager(elements: Sequence[str], context: ir.Context) -> passmanager.PassManager:
    with context:
        pm = passmanager.PassManager("builtin.module")
        upstream: list[str] = []

        def flush() -> None:
            if upstream:
                pm.add(",".join(upstream))
                upstream.clear()

        for element in expand(elements):
            info = PASSES.get(element)
            if info is None:
                upstream.append(element)
                continue
            flush()
            pm.add(_python_pass(info), name=info.name, argument=info.name, description=info.description)
        flush()
    return pm


def run_passes(module: ir.Module, elements: Sequence[str], stage: str = "") -> None:
    """Run `elements` on `module`; raise PipelineError naming the failing pass."""
    _failures.clear()
    pm = build_pass_manager(elements, module.context)
    try:
        pm.run(module.operation)
    except Exception as err:  # MLIR reports pass failures as a generic exception
        failed = _failures[-1] if _failures else str(err)
        name = failed.split(":", 1)[0] if _failures else (stage or ",".join(elements))
        raise PipelineError(name, failed) from err
