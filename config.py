"""Run-time switches, read from the environment once, at import, and changeable from Python.

MLIRC_STRICT=1       raise instead of falling back to eager for unsupported ops / failed regions
MLIRC_DUMP_DIR=path  write each stage's IR of every compiled region under this folder
MLIRC_VECTORIZE=0    turn off the CPU vectorization schedule (debugging aid)
MLIRC_VECTOR_BYTES=n CPU vector width in bytes (default 0: the host's, 64 with AVX-512, else 32;
                     mlirc-opt: 'mlirc-cpu-vectorize{vector-bytes=32}', as lit tests pin it)
MLIRC_LIBRARY_GEMM=0 generate GEMM/conv kernels instead of calling torch.mm/bmm/conv2d
MLIRC_GPU_GEMM=mode  GPU GEMMs: "auto" (today cuBLAS for every GEMM: the generated kernels do not
                     win yet, see passes/gpu/matmul.py; mode="max-autotune" times both),
                     "generated" (tt.dot kernels with fused epilogues) or "extern" (cuBLAS)
MLIRC_GPU_GEMM_TILE=BM,BN,BK,W,S  tiles of generated GEMMs (block sizes, warps, stages)
MLIRC_CPU_GEMM=mode  CPU GEMMs: "auto" (torch.mm or oneDNN, whichever a timing of the shape
                     picks, see backends/cpu/gemm_choice.py), "blas" (torch.mm) or "onednn"
MLIRC_CPU_HALF=0     run float16/bfloat16 compute eagerly on the CPU (default on: compiled,
                     each op in float32 and rounded at its result, as eager does)
MLIRC_PARALLEL_MIN_KIB=n  run a kernel on OpenMP threads when it moves at least n KiB
                     (default 128; 0 = every kernel, -1 = never)
MLIRC_MERGE_KIB=n    consecutive CPU kernels that each move at most n KiB run as one kernel, one
                     host call (default 64; -1 = never)
MLIRC_MERGE_LARGE=1  larger kernels join those runs too, passing each other host buffers, their
                     loops still on threads (default off: not yet measured faster on 16 cores)
MLIRC_SCRATCH_MB=n   CPU buffers that never reach a result are kept from call to call (per
                     thread) while a compiled graph's total is at most n MiB (default 512; 0 = off)
MLIRC_LLVM_OPT=n     LLVM's middle-end pipeline at -On over the CPU kernels before codegen
                     (default 3; 0 = codegen only, which is always -O3)
MLIRC_COMPILE_WORKERS=n  processes that compile a large graph's CPU kernels (LLVM) in parallel
                     (default -1: one per core, at most 8; 0 or 1: in-process)
MLIRC_CACHE_DIR=path where compiled GPU kernels and autotuning choices are kept (~/.cache/mlirc)
MLIRC_FREEZE=0       in inference (autograd off), do not cache the work done on parameters and
                     buffers alone (default on: it reruns when one changes, see
                     passes/hoist_frozen.py; edits through `.data` bypass version counters)
MLIRC_PROFILE=1      every kernel and library call runs inside a torch.profiler range named
                     after it (benchmarks/cpu_profile.py; costs ~0.3 us a call)
MLIRC_DYNAMIC_SIZES=n  a graph with symbolic sizes (dynamic=True, a second batch size) is
                     compiled at each new size it is called with, up to n sizes (default 16);
                     further sizes run eagerly, with a warning -- except where one
                     wrapper (CPU or GPU) serves every size: there n caps the hot sizes
                     compiled on their own, and every size runs compiled (0: symbolic
                     graphs run eagerly)
MLIRC_RUNTIME_SIZES=0  a symbolic graph's kernels are compiled per size, not once for
                     every size with their sizes as arguments (and no wrapper for every size)

A value outside what a variable allows is one ConfigError at import, naming the
variable and what it allows: a typo must not silently change (or break) every compile.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from mlirc.errors import MlircError


class ConfigError(MlircError):
    """An MLIRC_* environment variable (or torch.compile option) has a value it does
    not allow, or names no setting."""


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def _flag(text: str) -> bool:
    value = text.strip().lower()
    if value not in _TRUE + _FALSE:
        raise ValueError(text)
    return value in _TRUE


def _int_in(low: int, high: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text.strip())
        if value < low or (high is not None and value > high):
            raise ValueError(text)
        return value

    return parse


def _one_of(*choices: int | str) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        value: int | str = text.strip()
        if all(isinstance(c, int) for c in choices):
            value = int(value)
        if value not in choices:
            raise ValueError(text)
        return value

    return parse


def _power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _gemm_tile(text: str) -> tuple[int, ...]:
    values = tuple(int(v) for v in text.split(","))
    if len(values) != 5 or not all(_power_of_two(v) for v in values[:4]) or values[4] < 1 or values[3] > 32:
        raise ValueError(text)
    return values


def _path(text: str) -> str | None:
    return text or None


@dataclass(frozen=True)
class Setting:
    env: str
    parse: Callable[[str], Any]
    allowed: str  # what the error message says the variable takes
    default: Any


SETTINGS: dict[str, Setting] = {
    "strict": Setting("MLIRC_STRICT", _flag, "a flag: 1/0, true/false, yes/no, on/off", False),
    "dump_dir": Setting("MLIRC_DUMP_DIR", _path, "a folder", None),
    "vectorize": Setting("MLIRC_VECTORIZE", _flag, "a flag: 1/0, true/false, yes/no, on/off", True),
    "library_gemm": Setting("MLIRC_LIBRARY_GEMM", _flag, "a flag: 1/0, true/false, yes/no, on/off", True),
    "vector_bytes": Setting("MLIRC_VECTOR_BYTES", _one_of(0, 16, 32, 64), "0 (the host's), 16, 32 or 64", 0),
    "gpu_gemm": Setting("MLIRC_GPU_GEMM", _one_of("auto", "generated", "extern"), "auto, generated or extern", "auto"),
    "gpu_gemm_tile": Setting(
        "MLIRC_GPU_GEMM_TILE",
        _gemm_tile,
        "BM,BN,BK,warps,stages: powers of two for the first four (warps at most 32), stages >= 1",
        None,
    ),
    "cpu_gemm": Setting("MLIRC_CPU_GEMM", _one_of("auto", "blas", "onednn"), "auto, blas or onednn", "auto"),
    "cpu_half": Setting("MLIRC_CPU_HALF", _flag, "a flag: 1/0, true/false, yes/no, on/off", True),
    "parallel_min_kib": Setting("MLIRC_PARALLEL_MIN_KIB", _int_in(-1), "an integer >= -1 (-1: never)", 128),
    "merge_kib": Setting("MLIRC_MERGE_KIB", _int_in(-1), "an integer >= -1 (-1: never)", 64),
    "merge_large": Setting("MLIRC_MERGE_LARGE", _flag, "a flag: 1/0, true/false, yes/no, on/off", False),
    "llvm_opt": Setting("MLIRC_LLVM_OPT", _int_in(0, 3), "0, 1, 2 or 3", 3),
    "compile_workers": Setting("MLIRC_COMPILE_WORKERS", _int_in(-1), "an integer >= -1 (-1: one per core)", -1),
    "scratch_mb": Setting("MLIRC_SCRATCH_MB", _int_in(0), "an integer >= 0 (0: off)", 512),
    "cache_dir": Setting("MLIRC_CACHE_DIR", _path, "a folder", None),
    "profile": Setting("MLIRC_PROFILE", _flag, "a flag: 1/0, true/false, yes/no, on/off", False),
    "freeze": Setting("MLIRC_FREEZE", _flag, "a flag: 1/0, true/false, yes/no, on/off", True),
    "dynamic_sizes": Setting("MLIRC_DYNAMIC_SIZES", _int_in(0), "an integer >= 0 (0: symbolic graphs run eagerly)", 16),
    "runtime_sizes": Setting("MLIRC_RUNTIME_SIZES", _flag, "a flag: 1/0, true/false, yes/no, on/off", True),
}
# Variables that are not settings of the library (the test suite's own).
OTHER_VARIABLES = frozenset({"MLIRC_SKIP_OPINFO"})


def read_setting(name: str, environ: dict[str, str] | os._Environ = os.environ) -> Any:
    """The value of setting `name` in `environ`, or a ConfigError naming the variable."""
    setting = SETTINGS[name]
    text = environ.get(setting.env)
    if text is None:
        return setting.default
    try:
        return setting.parse(text)
    except ValueError:
        raise ConfigError(f"mlirc: {setting.env}={text!r} is not valid; it takes {setting.allowed}") from None


def _warn_unknown(environ: dict[str, str] | os._Environ) -> None:
    known = {s.env for s in SETTINGS.values()} | OTHER_VARIABLES
    unknown = sorted(name for name in environ if name.startswith("MLIRC_") and name not in known)
    if unknown:
        warnings.warn(
            f"mlirc: unknown environment variable(s) {', '.join(unknown)}; mlirc reads {', '.join(sorted(known))}",
            stacklevel=3,
        )


# Settings given to one compile (torch.compile's `options=`), over the environment's.
_NO_OVERRIDES: Mapping[str, Any] = MappingProxyType({})
_overrides: ContextVar[Mapping[str, Any]] = ContextVar("mlirc_overrides", default=_NO_OVERRIDES)


class _SettingValue:
    """A Config attribute: the compile's override where one is in force, else the
    process-wide value (the environment's, or what Python assigned)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        overrides = _overrides.get()
        return overrides[self.name] if self.name in overrides else obj.__dict__[self.name]

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.name] = value


class Config:
    """Every setting of SETTINGS as an attribute (`config.vector_bytes`), read from
    the environment when made; assignable from Python, for the whole process."""

    def __init__(self, environ: dict[str, str] | os._Environ = os.environ) -> None:
        for name in SETTINGS:
            setattr(self, name, read_setting(name, environ))

    def __repr__(self) -> str:
        return f"Config({', '.join(f'{name}={getattr(self, name)!r}' for name in SETTINGS)})"

    @staticmethod
    @contextmanager
    def overriding(settings: dict[str, Any]) -> Iterator[None]:
        """`settings` (from parse_options) in force for this thread's compiles inside."""
        token = _overrides.set(MappingProxyType({**_overrides.get(), **settings}))
        try:
            yield
        finally:
            _overrides.reset(token)


for _name in SETTINGS:
    setattr(Config, _name, _SettingValue(_name))


def _option_text(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if value is None:
        return ""
    if isinstance(value, (tuple, list)):
        return ",".join(str(v) for v in value)
    return str(value)


def parse_options(options: dict[str, Any] | None) -> dict[str, Any]:
    """torch.compile's `options=` as settings: the names of SETTINGS (`vector_bytes`,
    or the variable's own name, `MLIRC_VECTOR_BYTES`), values as Python values or as
    the variable's text; an unknown name or a value the setting does not allow is a
    ConfigError naming it."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise ConfigError(f"mlirc: torch.compile options must be a dict, not {type(options).__name__}")
    by_variable = {s.env: name for name, s in SETTINGS.items()}
    settings: dict[str, Any] = {}
    for key, value in options.items():
        name = by_variable.get(key, key)
        if name not in SETTINGS:
            raise ConfigError(f"mlirc: unknown torch.compile option {key!r}; mlirc takes {', '.join(SETTINGS)}")
        setting = SETTINGS[name]
        invalid = isinstance(value, bool) and setting.parse is not _flag  # True is no integer here
        try:
            if not invalid:
                settings[name] = setting.parse(_option_text(value))
        except ValueError:
            invalid = True
        if invalid:
            raise ConfigError(f"mlirc: option {key}={value!r} is not valid; it takes {setting.allowed}")
    return settings


_warn_unknown(os.environ)
config = Config()
