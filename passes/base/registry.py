"""Pass registry: mlirc's Python passes and named pipelines, runnable by CLI name.

A Python pass is a function `run(module_op)` registered under its CLI name
(`mlirc-<file-name-with-dashes>`).  Pipeline elements that are not mlirc names
are upstream MLIR pass texts (`canonicalize`, `one-shot-bufferize{...}`) and go to
MLIR's own parser, so the two kinds mix freely in `-p a,b,c`.

A pass with options declares them as a frozen dataclass and is called as
`run(module_op, options)`; they are written as MLIR writes pass options,
`mlirc-cpu-vectorize{vector-bytes=32 enabled=0}` (a field's name with dashes).  Options
given to a named pipeline go to every pass in it that declares them:
`mlirc-stage-cpu{vector-bytes=32}`.  Passes never read the global config: the
driver turns it into options (mlirc.passes.pipelines.configured), so a printed
pipeline is the whole configuration of a run.
"""

from __future__ import annotations

import dataclasses
import logging
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mlir import ir, passmanager

from mlirc.errors import MlircError, PipelineError

log = logging.getLogger(__name__)

PassFn = Callable[..., None]


@dataclass(frozen=True)
class PassInfo:
    name: str
    description: str
    run: PassFn | None = None  # a Python pass
    pipeline: tuple[str, ...] = ()  # a named pipeline (stage) of other elements
    options: type | None = None  # a Python pass's options: a frozen dataclass


PASSES: dict[str, PassInfo] = {}


def register_pass(name: str, description: str, options: type | None = None) -> Callable[[PassFn], PassFn]:
    """Register `fn(module_op)`, or `fn(module_op, options)` when `options` (a frozen
    dataclass whose fields all have defaults) is given."""

    def wrap(fn: PassFn) -> PassFn:
        PASSES[name] = PassInfo(name, description, run=fn, options=options)
        return fn

    return wrap


# ---------------------------------------------------------------- pass options


def parse_element(text: str) -> tuple[str, dict[str, str]]:
    """'name{a=1 b=x,y}' -> ('name', {'a': '1', 'b': 'x,y'})."""
    text = text.strip()
    if not text.endswith("}") or "{" not in text:
        return text, {}
    name, body = text[:-1].split("{", 1)
    raw: dict[str, str] = {}
    for item in body.split():
        key, sep, value = item.partition("=")
        if not sep:
            raise PipelineError(name, f"option '{item}' is not key=value")
        raw[key] = value
    return name.strip(), raw


def option_fields(options: type) -> dict[str, tuple[str, Any]]:
    """CLI option name -> (field name, type) of an options dataclass."""
    hints = typing.get_type_hints(options)
    return {f.name.replace("_", "-"): (f.name, hints[f.name]) for f in dataclasses.fields(options)}


def _option_value(pass_name: str, key: str, text: str, kind: Any) -> Any:
    try:
        if kind is bool:
            if text.lower() not in ("1", "0", "true", "false"):
                raise ValueError(text)
            return text.lower() in ("1", "true")
        if kind is int:
            return int(text)
        if kind is str:
            return text
        if typing.get_origin(kind) in (tuple, typing.Union, type(int | None)):
            return tuple(int(v) for v in text.split(",") if v) or None
    except ValueError:
        pass
    raise PipelineError(pass_name, f"option {key}={text!r} is not a valid {getattr(kind, '__name__', kind)}")


def make_options(info: PassInfo, raw: dict[str, str]) -> Any:
    """`info`'s options dataclass from CLI text; unknown names are errors."""
    fields = option_fields(info.options) if info.options else {}
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        known = ", ".join(fields) or "none"
        raise PipelineError(info.name, f"unknown option {', '.join(unknown)} (options: {known})")
    values = {fields[k][0]: _option_value(info.name, k, v, fields[k][1]) for k, v in raw.items()}
    return info.options(**values) if info.options else None


def _option_text(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return "" if value is None else str(value)


def format_element(name: str, options: Any) -> str:
    """`name{...}` with the options that differ from their defaults (`name` alone if none)."""
    if options is None:
        return name
    default = type(options)()
    changed = [
        f"{f.name.replace('_', '-')}={_option_text(getattr(options, f.name))}"
        for f in dataclasses.fields(options)
        if getattr(options, f.name) != getattr(default, f.name)
    ]
    return f"{name}{{{' '.join(changed)}}}" if changed else name


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
    """Named pipelines replaced by their passes, recursively; a pipeline's options
    go to each of its passes that declares them (one no pass declares is an error)."""
    out: list[str] = []
    for element in elements:
        name, raw = parse_element(element)
        info = PASSES.get(name)
        if info is None or not info.pipeline:
            out.append(element)
            continue
        used: set[str] = set()
        for inner in expand(info.pipeline):
            inner_name, inner_raw = parse_element(inner)
            inner_info = PASSES.get(inner_name)
            accepted = option_fields(inner_info.options) if inner_info and inner_info.options else {}
            given = {k: v for k, v in raw.items() if k in accepted}
            used |= set(given)
            out.append(_with_raw(inner_name, {**inner_raw, **given}) if given else inner)
        if set(raw) - used:
            raise PipelineError(name, f"no pass in the pipeline takes option {', '.join(sorted(set(raw) - used))}")
    return out


def _with_raw(name: str, raw: dict[str, str]) -> str:
    return f"{name}{{{' '.join(f'{k}={v}' for k, v in raw.items())}}}" if raw else name


def _python_pass(info: PassInfo, options: Any) -> Callable:
    def run(op: ir.Operation, pass_: object) -> None:
        try:
            with op.context, ir.Location.unknown(op.context):
                if info.options is None:
                    info.run(op)  # type: ignore[misc]
                else:
                    info.run(op, options)  # type: ignore[misc]
        except MlircError as err:
            location = getattr(err, "location", None) or op.location
            location.emit_error(f"{info.name}: {err}")
            _failures.append(f"{info.name}: {err}")
            _raised.append(err)
            pass_.signal_pass_failure()  # type: ignore[attr-defined]
        except Exception as err:  # a bug in the pass: still a diagnostic, not a traceback
            log.debug("%s crashed", info.name, exc_info=True)
            op.location.emit_error(f"{info.name}: internal error: {type(err).__name__}: {err}")
            _failures.append(f"{info.name}: internal error: {err}")
            pass_.signal_pass_failure()  # type: ignore[attr-defined]

    return run


_failures: list[str] = []
_raised: list[MlircError] = []  # what the Python passes raised, for run_passes to raise on


def build_pass_manager(elements: Sequence[str], context: ir.Context) -> passmanager.PassManager:
    with context:
        pm = passmanager.PassManager("builtin.module")
        upstream: list[str] = []

        def flush() -> None:
            if upstream:
                pm.add(",".join(upstream))
                upstream.clear()

        for element in expand(elements):
            name, raw = parse_element(element)
            info = PASSES.get(name)
            if info is None:
                upstream.append(element)
                continue
            flush()
            run = _python_pass(info, make_options(info, raw))
            pm.add(run, name=info.name, argument=info.name, description=info.description)
        flush()
    return pm


def run_passes(module: ir.Module, elements: Sequence[str], stage: str = "") -> None:
    """Run `elements` on `module`; raise PipelineError naming the failing pass."""
    _failures.clear()
    _raised.clear()
    pm = build_pass_manager(elements, module.context)
    try:
        pm.run(module.operation)
    except Exception as err:  # MLIR reports pass failures as a generic exception
        raised = _raised.pop() if _raised else None
        _raised.clear()  # (their frames would stay alive until the next run)
        if isinstance(raised, PipelineError):  # its type tells the caller what to do
            raise raised from err
        failed = _failures[-1] if _failures else str(err)
        name = failed.split(":", 1)[0] if _failures else (stage or ",".join(elements))
        raise PipelineError(name, failed) from err
