"""mlirc-opt: parse any stage's IR (mlirc dialect loaded), verify, run passes, print.

mlirc-opt input.mlir -p mlirc-lower-to-linalg --print-ir-after-all
mlirc-opt --pass-pipeline='builtin.module(mlirc-stage-linalg)' input.mlir
mlirc-opt --list-passes

Each input (each split of one, with --split-input-file) is parsed, verified and run
in a forked child: MLIR's parser asserts on some malformed inputs instead of
diagnosing them, and mlirc-opt must still end with a located error and exit 1.
The mlirc dialect's own rules (dims in range, stride lengths) are checked after
parsing (mlirc.dialects.verifier).
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import pickle
import re
import signal
import sys
from collections.abc import Callable

from mlir import ir

from mlirc.dialects import make_context, tt
from mlirc.dialects.mlirc_dialect import irdl_source
from mlirc.dialects.verifier import verify_ops
from mlirc.errors import MlircError
from mlirc.passes import PASSES
from mlirc.passes.base.registry import build_pass_manager, option_fields, split_pipeline

SPLIT_MARKER = "// -----"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mlirc-opt", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("input", nargs="?", default="-", help="input file ('-' for stdin)")
    p.add_argument("-p", "--passes", default="", help="comma-separated passes/pipelines (mlirc or upstream)")
    p.add_argument("--pass-pipeline", default="", help="a textual pipeline, e.g. builtin.module(a,b)")
    p.add_argument("-o", "--output", default="-", help="output file")
    p.add_argument("--print-ir-after-all", action="store_true")
    p.add_argument("--split-input-file", action="store_true", help=f"split the input at '{SPLIT_MARKER}'")
    p.add_argument("--verify-diagnostics", action="store_true", help="check expected-error annotations")
    p.add_argument("--list-passes", action="store_true")
    p.add_argument("--print-dialect", action="store_true", help="print the mlirc dialect's IRDL definition")
    p.add_argument("--mlir-print-generic", action="store_true", help="print ops in generic form")
    p.add_argument(
        "--emit-llvm",
        action="store_true",
        help="print the result (in the LLVM dialect) as LLVM IR, as llvmlite gets it",
    )
    p.add_argument(
        "--in-process",
        action="store_true",
        help="do not fork a child per input (for a debugger; a crash then kills it)",
    )
    p.add_argument("--timeout", type=int, default=0, help="give up on an input after this many seconds (0: never)")
    return p


def _list_passes() -> str:
    lines = ["mlirc passes and pipelines (any upstream MLIR pass name also works):"]
    for name, info in sorted(PASSES.items()):
        kind = "pipeline" if info.pipeline else "pass"
        lines.append(f"  {name:32} [{kind}] {info.description}")
        if info.pipeline:
            lines.append(f"  {'':32}   = {','.join(info.pipeline)}")
        if info.options is not None:
            default = info.options()
            for option, (field, kind) in option_fields(info.options).items():
                shown = getattr(default, field)
                lines.append(f"  {'':32}   {{{option}=...}} {getattr(kind, '__name__', kind)}, default {shown!r}")
    return "\n".join(lines)


def _located(message: str, filename: str, line_offset: int) -> str:
    """MLIR names string input "-"; report the real file and line instead."""

    def fix(m: re.Match) -> str:
        return f"{filename}:{int(m.group(2)) + line_offset}:{m.group(3)}: {m.group(1)}: "

    message = re.sub(r'(error|note|warning): "-":(\d+):(\d+): ', fix, message)
    return re.sub(
        r'loc\("-":(\d+):(\d+)\)', lambda m: f"{filename}:{int(m.group(1)) + line_offset}:{m.group(2)}", message
    )


def _reject_unknown_ops(op: ir.Operation) -> None:
    unknown = tt.unknown_ops(op)
    if unknown:
        first = unknown[0]
        raise ValueError(f"{first.location}: error: unregistered operation '{first.name}' (only Triton's `tt` may be)")


def _process(chunk: str, elements: list[str], args: argparse.Namespace, errors: list[str]) -> str | None:
    context = make_context()
    if args.print_ir_after_all:
        context.enable_multithreading(False)  # MLIR's IR printer requires it
    diagnostics: list[str] = []

    def handler(diag: ir.Diagnostic) -> bool:
        diagnostics.append(f"{diag.location}: {str(diag.severity).split('.')[-1].lower()}: {diag.message}")
        return True

    context.attach_diagnostic_handler(handler)
    with context, ir.Location.unknown():
        try:
            module = ir.Module.parse(chunk)
            _reject_unknown_ops(module.operation)
            problems = verify_ops(module.operation)
            if problems:
                raise ValueError("\n".join(problems))
            if elements:
                pm = build_pass_manager(elements, context)
                if args.print_ir_after_all:
                    pm.enable_ir_printing(print_after_all=True, print_module_scope=True)
                pm.run(module.operation)
            module.operation.verify()
            if args.emit_llvm:
                from mlirc.backends.cpu.codegen import emit_llvm  # llvmlite only when asked

                return emit_llvm(module)
        except Exception as err:  # a diagnostic, never a traceback
            known = isinstance(err, (ir.MLIRError, MlircError, ValueError, RuntimeError))
            message = str(err) if known else f"internal error: {type(err).__name__}: {err}"
            text = "\n".join(diagnostics) or message
            if message and message not in text and not diagnostics:
                text = message
            text = _located(text, args.input, args.line_offset)
            if ": error: " not in text:  # not from MLIR's diagnostics: at the input's first line
                text = f"{args.input}:{args.line_offset + 1}:1: error: {text}"
            errors.append(text)
            return None
        return module.operation.get_asm(print_generic_op_form=args.mlir_print_generic)


def _in_child(work: Callable[[], object], timeout: int = 0) -> tuple[object, str | None]:
    """work()'s result, computed in a forked child: MLIR's parser asserts (aborts the
    process) on some malformed inputs it does not diagnose, and that must end in a
    diagnostic, not a dead mlirc-opt.  Returns (result, None), or (None, the signal
    that killed the child)."""
    if not hasattr(os, "fork"):
        return work(), None
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: send back the pickled result, never return into the caller
        os.close(read_end)
        # An abort is the expected way for the child to fail: the parent reports it as a
        # diagnostic, and pytest's faulthandler must not print a Python stack for it.
        faulthandler.disable()
        # SIGALRM ends a child that runs too long (0: no limit) -- by its default action:
        # a Python handler the parent installed (pytest-timeout's) runs only between
        # bytecodes, never while the child waits inside MLIR.
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(timeout)
        code = 0
        try:
            with os.fdopen(write_end, "wb") as pipe:
                pickle.dump(work(), pipe)
        except BaseException:  # noqa: BLE001 - reported by the parent as a missing result
            code = 70
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return None, signal.Signals(os.WTERMSIG(status)).name
    if not data:
        return None, f"exit status {os.waitstatus_to_exitcode(status)}"
    return pickle.loads(data), None


def _process_isolated(chunk: str, elements: list[str], args: argparse.Namespace, errors: list[str]) -> str | None:
    def work() -> tuple[str | None, list[str]]:
        found: list[str] = []
        return _process(chunk, elements, args, found), found

    result, crash = _in_child(work, args.timeout) if not args.in_process else (work(), None)
    if crash == "SIGALRM":
        errors.append(f"{args.input}:{args.line_offset + 1}:1: error: gave up after --timeout {args.timeout} s")
        return None
    if crash is not None:
        errors.append(
            f"{args.input}:{args.line_offset + 1}:1: error: MLIR crashed ({crash}) on this input: it is malformed"
            " in a way MLIR's parser or a pass does not diagnose"
        )
        return None
    out, found = result  # type: ignore[misc]
    errors.extend(found)
    return out


def _read_input(path: str) -> str | None:
    """The input's text, or None after a one-line diagnostic: a file that cannot be
    read, or bytes that are not UTF-8 text (MLIR's assembly is UTF-8)."""
    name = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except OSError as err:
        print(f"mlirc-opt: error: cannot read {name}: {err}", file=sys.stderr)
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        print(
            f"mlirc-opt: error: {name} is not UTF-8 text (byte {err.object[err.start]:#04x} at offset {err.start})",
            file=sys.stderr,
        )
        return None
    if "\0" in text:
        print(f"mlirc-opt: error: {name} is not text (a NUL byte at offset {text.index(chr(0))})", file=sys.stderr)
        return None
    return text


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.list_passes:
        print(_list_passes())
        return 0
    if args.print_dialect:
        print(irdl_source())
        return 0
    text = _read_input(args.input)
    if text is None:
        return 1
    elements = split_pipeline(args.passes) + split_pipeline(args.pass_pipeline)
    chunks = text.split(SPLIT_MARKER) if args.split_input_file else [text]
    outputs, errors = [], []
    args.line_offset = 0
    for chunk in chunks:
        chunk_errors: list[str] = []
        out = _process_isolated(chunk, elements, args, chunk_errors)
        if out is not None:
            outputs.append(out)
        errors.extend(chunk_errors)
        args.line_offset += chunk.count("\n")
    if args.verify_diagnostics:
        return _verify_diagnostics(text, errors)
    result = f"\n{SPLIT_MARKER}\n".join(outputs)
    if args.output == "-":
        sys.stdout.write(result)
    else:
        with open(args.output, "w") as f:
            f.write(result)
    for e in errors:
        print(e, file=sys.stderr)
    return 1 if errors else 0


_EXPECTED = re.compile(r"expected-error\s*(@(?:[+-]\d+|above|below))?\s*\{\{(.*?)\}\}")
_REPORTED = re.compile(r":(\d+):\d+: error: (.*)")


def _expected_errors(text: str) -> list[tuple[int, str]]:
    """(line, message) of each `expected-error` annotation: its own line, or the one
    `@+N` / `@-N` / `@above` / `@below` names, as mlir-opt reads them."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for where, message in _EXPECTED.findall(line):
            offset = {"": 0, "@above": -1, "@below": 1}.get(where)
            found.append((number + (int(where[1:]) if offset is None else offset), message))
    return found


def _verify_diagnostics(text: str, errors: list[str]) -> int:
    """Every `expected-error {{msg}}` must match an error reported at its line, and
    every reported error an annotation."""
    reported = []
    for error in errors:
        located = _REPORTED.search(error)
        reported.append((int(located.group(1)), located.group(2)) if located else (0, error))
    unmatched = list(reported)
    status = 0
    for line, message in _expected_errors(text):
        match = next((r for r in unmatched if r[0] == line and message in r[1]), None)
        if match is None:
            print(f"mlirc-opt: line {line}: expected error not produced: {message}", file=sys.stderr)
            status = 1
        else:
            unmatched.remove(match)
    for line, message in unmatched:
        print(f"mlirc-opt: line {line}: unexpected error: {message}", file=sys.stderr)
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
