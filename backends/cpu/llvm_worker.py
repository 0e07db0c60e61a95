"""A process that turns LLVM IR into object code for mlirc (backends/cpu/jit_pool.py).

Run as a script: it loads llvmlite and nothing else (not mlirc, which loads torch), so
it starts in a tenth of a second.  mlirc imports it for its framing and for
`compile_object`, which is also its in-process compile.  llvmlite serializes every
LLVM call in a process behind one lock, so kernels compile on several cores only in
several processes.

Protocol on stdin/stdout, one request at a time: an 8-byte little-endian length,
then a pickled dict {"ir", "cpu", "features", "opt"}; the reply is the same framing
around ("ok", object bytes) or ("error", message).  EOF on stdin ends the process.
"""

from __future__ import annotations

import functools
import pickle
import signal
import struct
import sys

import llvmlite.binding as llvm

HEADER = struct.Struct("<Q")


def compile_object(request: dict) -> bytes:
    """Object code for LLVM IR: parse, verify, the middle end at -O`opt` (none at 0),
    codegen at -O3 for a JIT (large code model: the caller loads the object wherever
    its memory manager puts it).  The parent's in-process compile runs the same steps
    (object_code), so both paths make the same code."""
    return object_code(llvm.parse_assembly(request["ir"]), request["cpu"], request["features"], request["opt"])


def object_code(module: llvm.ModuleRef, cpu: str, features: str, level: int) -> bytes:
    module.verify()
    middle_end(module, cpu, features, level)
    return _machine(cpu, features).emit_object(module)


@functools.cache
def _machine(cpu: str, features: str) -> llvm.TargetMachine:
    """One target machine per process: emitting objects does not consume it (an MCJIT
    engine does: engines get their own)."""
    return llvm.Target.from_default_triple().create_target_machine(cpu=cpu, features=features, opt=3, jit=True)


@functools.cache
def _pass_builder(cpu: str, features: str, level: int) -> llvm.PassBuilder:
    """One pass builder per -O level: llvmlite never frees what building one
    allocates (its instrumentation callbacks), about 30 KB a builder."""
    tuning = llvm.create_pipeline_tuning_options(speed_level=min(level, 3))
    return llvm.create_pass_builder(_machine(cpu, features), tuning)


def middle_end(module: llvm.ModuleRef, cpu: str, features: str, level: int) -> None:
    """LLVM's -O`level` module pipeline (nothing at 0)."""
    if level > 0:
        builder = _pass_builder(cpu, features, level)
        builder.getModulePassManager().run(module, builder)


def serve(source: object, sink: object) -> None:
    while True:
        head = source.read(HEADER.size)
        if len(head) < HEADER.size:
            return
        request = pickle.loads(source.read(HEADER.unpack(head)[0]))
        try:
            reply = ("ok", compile_object(request))
        except Exception as err:  # reported to the parent, which names the region
            reply = ("error", f"{type(err).__name__}: {err}")
        data = pickle.dumps(reply)
        sink.write(HEADER.pack(len(data)) + data)
        sink.flush()


if __name__ == "__main__":
    # Ctrl-C reaches the whole process group: the parent decides; a worker ends when
    # its stdin closes (the parent exited or closed the pool), not with a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    serve(sys.stdin.buffer, sys.stdout.buffer)
