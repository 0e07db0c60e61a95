"""The CPU kernels' LLVM compile on several cores.

LLVM's middle end and codegen are most of a CPU compile (resnet: 1.5 of 3.2 s at a
new batch size on 2 cores), and llvmlite serializes all LLVM work in a process.  So
the kernels module (LLVM dialect) is split into shards -- each kernel with the
private functions it calls (its OpenMP chunk), balanced by size -- and each shard
is compiled to object code by a worker process (backends/cpu/llvm_worker.py); the
parent loads the objects into one engine (codegen.compile_kernels).

The workers start with the first compile that wants them (in parallel with the rest
of it: Popen returns at once), live as long as the process, and are replaced when
one dies.  A worker that dies while compiling a shard fails that region's compile
(an LLVM crash stays out of the user's process); it is not retried in-process.
"""

from __future__ import annotations

import atexit
import logging
import os
import pickle
import subprocess
import sys
from pathlib import Path

from mlir import ir
from mlir.dialects import llvm as llvm_dialect

from mlirc.backends.cpu.llvm_worker import HEADER
from mlirc.config import config
from mlirc.errors import PipelineError

log = logging.getLogger(__name__)

WORKER = Path(__file__).with_name("llvm_worker.py")
# Below this many LLVM-dialect ops a module compiles in-process: the round trip costs
# about what the other cores save (2 cores: small_cnn's 3,253 ops 1.71 -> 1.64 s,
# bert's 6,330 ops 3.11 -> 2.72 s).
MIN_PARALLEL_OPS = 2000


def worker_count() -> int:
    """config.compile_workers, or one per core (at most 8) where it is left at -1;
    0 where worker processes cannot be started here."""
    if _pool.unavailable:
        return 0
    if config.compile_workers >= 0:
        return config.compile_workers
    return min(os.cpu_count() or 1, 8)


class _Pool:
    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []
        self.owner = os.getpid()
        self.unavailable: str | None = None  # why no worker starts here: compiles stay in-process

    def ensure(self, size: int) -> list[subprocess.Popen]:
        """`size` live workers, started now where missing or dead (fewer where they
        cannot start: an interpreter embedded where sys.executable is no Python)."""
        if os.getpid() != self.owner:  # a forked child: its parent's pipes are not its own
            self.procs, self.owner = [], os.getpid()
        self.procs = [p for p in self.procs if p.poll() is None]
        while len(self.procs) < size and not self.unavailable:
            try:
                proc = subprocess.Popen([sys.executable, str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            except OSError as err:
                self.unavailable = f"{sys.executable} {WORKER}: {err}"
                log.warning("mlirc: LLVM compile workers cannot start (%s); compiling in-process", self.unavailable)
                break
            self.procs.append(proc)
        return self.procs[:size]

    def close(self) -> None:
        if os.getpid() != self.owner:
            return
        for proc in self.procs:
            if proc.stdin:
                proc.stdin.close()
        for proc in self.procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.procs = []


_pool = _Pool()
atexit.register(_pool.close)


def start_workers() -> None:
    """Start the workers ahead of the first compile that uses them."""
    if worker_count() > 1:
        _pool.ensure(worker_count())


def _references_and_size(func: ir.Operation) -> tuple[set[str], int]:
    """The symbols `func` names (calls, and addresses taken: an OpenMP chunk function
    is passed to GOMP_parallel by address) and its op count."""
    names: set[str] = set()
    size = 0

    def walk(op: ir.Operation) -> None:
        nonlocal size
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    size += 1
                    attributes = inner.attributes
                    for name in attributes:
                        if isinstance(attributes[name], ir.FlatSymbolRefAttr):
                            names.add(attributes[name].value)
                    walk(inner.operation)

    walk(func)
    return names, size


def shard_texts(module: ir.Module, count: int) -> list[str] | None:
    """The LLVM IR of `module` split into at most `count` modules, or None where it is
    too small to be worth splitting.  Each shard keeps every declaration; its
    definitions are whole units: a public function and what it calls, transitively."""
    funcs = [op.operation for op in module.body.operations if op.operation.name == "llvm.func"]
    defined = {f.attributes["sym_name"].value: f for f in funcs if f.regions[0].blocks}
    info = {name: _references_and_size(f) for name, f in defined.items()}
    if count < 2 or sum(size for _, size in info.values()) < MIN_PARALLEL_OPS:
        return None
    units: list[set[str]] = []
    for root, func in defined.items():
        if "sym_visibility" in func.attributes:  # private: part of its callers' unit
            continue
        unit, todo = {root}, [root]
        while todo:
            for callee in info[todo.pop()][0]:
                if callee in defined and callee not in unit:
                    unit.add(callee)
                    todo.append(callee)
        units.append(unit)
    shards: list[set[str]] = [set() for _ in range(min(count, len(units)))]
    loads = [0] * len(shards)
    for unit in sorted(units, key=lambda u: -sum(info[n][1] for n in u)):  # largest first, to the lightest
        lightest = loads.index(min(loads))
        shards[lightest] |= unit
        loads[lightest] += sum(info[n][1] for n in unit)
    if len(shards) < 2:
        return None
    texts = []
    for shard in shards:
        clone = module.operation.clone().operation
        for op in list(clone.regions[0].blocks[0].operations):
            op = op.operation
            if op.name == "llvm.func" and op.regions[0].blocks and op.attributes["sym_name"].value not in shard:
                op.erase()
        clone.verify()  # a dangling reference would abort the translation, and the process
        texts.append(str(llvm_dialect.translate_module_to_llvmir(clone)))
    return texts


def compile_objects(texts: list[str], cpu: str, features: str) -> list[bytes] | None:
    """Object code for each LLVM IR text, compiled on the workers in parallel; None
    where there are not enough workers (the caller compiles in-process)."""
    procs = _pool.ensure(len(texts))
    if len(procs) < len(texts):
        return None
    try:
        for proc, text in zip(procs, texts, strict=True):
            data = pickle.dumps({"ir": text, "cpu": cpu, "features": features, "opt": config.llvm_opt})
            proc.stdin.write(HEADER.pack(len(data)) + data)
            proc.stdin.flush()
        replies = []
        for proc in procs:
            head = proc.stdout.read(HEADER.size)
            if len(head) < HEADER.size:
                raise EOFError(f"LLVM worker {proc.pid} exited with {proc.wait()}")
            replies.append(pickle.loads(proc.stdout.read(HEADER.unpack(head)[0])))
    except (OSError, EOFError, pickle.UnpicklingError) as err:
        _pool.close()  # a half-read reply leaves the pipes out of step: start afresh
        raise PipelineError("llvmlite", f"an LLVM worker process failed: {err}") from err
    errors = [message for status, message in replies if status != "ok"]
    if errors:
        raise PipelineError("llvmlite", errors[0])
    return [obj for _, obj in replies]
