"""MLIRC_* variables are validated once, at import: a bad value is one clear error
naming the variable and what it takes, never a crash or a silent default."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mlirc.config import SETTINGS, ConfigError, read_setting

BAD = {
    "strict": "maybe",
    "vectorize": "banana",
    "library_gemm": "2",
    "cpu_half": "yes please",
    "vector_bytes": "-32",
    "gpu_gemm": "nope",
    "gpu_gemm_tile": "128,128,64",
    "cpu_gemm": "mkl",
    "parallel_min_kib": "-2",
    "merge_kib": "64k",
    "llvm_opt": "4",
    "scratch_mb": "lots",
}
GOOD = {
    "strict": ("On", True),
    "vectorize": ("0", False),
    "vector_bytes": ("32", 32),
    "gpu_gemm_tile": ("128,64,32,4,3", (128, 64, 32, 4, 3)),
    "parallel_min_kib": ("-1", -1),
    "merge_kib": ("-1", -1),
    "scratch_mb": ("0", 0),
    "dump_dir": ("/tmp/x", "/tmp/x"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_value_names_the_variable(name):
    env = SETTINGS[name].env
    with pytest.raises(ConfigError) as info:
        read_setting(name, {env: BAD[name]})
    message = str(info.value)
    assert env in message and repr(BAD[name]) in message and SETTINGS[name].allowed in message


@pytest.mark.parametrize("name", sorted(GOOD))
def test_good_values(name):
    text, value = GOOD[name]
    assert read_setting(name, {SETTINGS[name].env: text}) == value


def test_defaults():
    assert all(read_setting(name, {}) == setting.default for name, setting in SETTINGS.items())


def test_import_fails_once_with_the_variable():
    env = {"MLIRC_VECTOR_BYTES": "-32", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", "import mlirc"], env=env, capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    assert "ConfigError: mlirc: MLIRC_VECTOR_BYTES='-32' is not valid" in done.stderr


def test_unknown_variable_warns():
    env = {"MLIRC_STRCT": "1", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-W", "always", "-c", "import mlirc"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0 and "MLIRC_STRCT" in done.stderr


def test_passes_get_the_config_as_options(monkeypatch):
    """The driver hands the settings to the passes as options, so a stage's printed
    pipeline (the repro command's) is the whole configuration."""
    from mlirc.config import config
    from mlirc.frontend.compile import pass_options
    from mlirc.passes.pipelines import configured

    assert configured("cpu", pass_options()) in (
        "mlirc-stage-cpu",
        f"mlirc-stage-cpu{{vector-bytes={config.vector_bytes}}}",
    )
    monkeypatch.setattr(config, "vector_bytes", 16)
    monkeypatch.setattr(config, "parallel_min_kib", -1)
    monkeypatch.setattr(config, "gpu_gemm", "generated")
    options = pass_options()
    assert configured("cpu", options) == "mlirc-stage-cpu{vector-bytes=16 parallel-min-kib=-1}"
    assert configured("gpu-fusion", options) == "mlirc-stage-gpu-fusion{mode=generated}"
    assert configured("linalg", options) == "mlirc-stage-linalg"


def test_backends_give_their_policy_as_pass_options(monkeypatch):
    """Each backend's PASS_OPTIONS names registered passes with their own options
    classes; a GPU compile's stages print the GPU's policy (what mlirc-opt needs to
    repeat them), with the config's settings merged in, not in place of it."""
    import dataclasses

    from mlirc.backends import cpu as cpu_backend
    from mlirc.backends import gpu as gpu_backend
    from mlirc.config import config
    from mlirc.frontend.compile import pass_options
    from mlirc.passes.base.registry import PASSES
    from mlirc.passes.pipelines import configured

    for backend in (cpu_backend, gpu_backend):
        for name, options in backend.PASS_OPTIONS.items():
            assert name in PASSES and isinstance(options, PASSES[name].options), name
            assert options != PASSES[name].options(), f"{name}: the CPU's defaults need no entry"
    monkeypatch.setattr(config, "library_gemm", False)
    gpu = pass_options("cuda")
    assert gpu["mlirc-outline-library-calls"] == dataclasses.replace(
        gpu_backend.PASS_OPTIONS["mlirc-outline-library-calls"], library_gemm=False
    )
    linalg = configured("linalg", gpu)
    for option in ("numerics=cuda", "split-sliced=1", "contiguous-chunk=512,8192", "library-gemm=0"):
        assert option in linalg, linalg
    assert configured("linalg", pass_options("cpu")) == "mlirc-stage-linalg{library-gemm=0}"
    assert "fuse-sibling-sums=0" in configured("kernels", gpu)
