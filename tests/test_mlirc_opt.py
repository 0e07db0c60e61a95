"""mlirc-opt as a user runs it: diagnostics and exit codes, never a traceback."""

import subprocess
import sys
from pathlib import Path


def run(*args, stdin=""):
    return subprocess.run(
        [sys.executable, "-m", "mlirc.tools.mlirc_opt", *args], input=stdin, capture_output=True, text=True
    )


def test_list_passes():
    out = run("--list-passes")
    assert out.returncode == 0 and "mlirc-lower-to-linalg" in out.stdout


def test_malformed_ir_is_a_diagnostic():
    out = run("-", stdin="func.func @f( {")
    assert out.returncode != 0
    assert "error" in out.stderr and "Traceback" not in out.stderr


def test_unknown_pass_is_a_diagnostic():
    out = run("-", "-p", "no-such-pass", stdin="module {}")
    assert out.returncode != 0 and "Traceback" not in out.stderr


def test_parser_assertion_is_a_diagnostic():
    """MLIR's parser aborts on this (an assertion in getIntOrFloatBitWidth): the
    child process dies, mlirc-opt reports it and exits 1."""
    text = 'func.func @f() {\n  "test.op"() {a = array<index: 1>} : () -> ()\n  return\n}\n'
    out = run("-", stdin=text)
    assert out.returncode == 1, out
    assert "-:1:1: error: MLIR crashed (SIGABRT)" in out.stderr and "Traceback" not in out.stderr


def test_split_input_keeps_going_after_a_crash():
    bad = 'func.func @f() {\n  "test.op"() {a = array<index: 1>} : () -> ()\n  return\n}\n'
    good = "func.func @g() {\n  return\n}\n"
    out = run("-", "--split-input-file", stdin=bad + "// -----\n" + good)
    assert out.returncode == 1 and "@g" in out.stdout and "MLIR crashed" in out.stderr


def test_mutated_lit_inputs():
    """A fixed-seed sample of tests/fuzz_mlirc_opt.py (its own CLI runs 1,000), in a
    process of its own: mlirc-opt forks a child per input, and a fork of this test
    process inherits whatever other tests' threads held at that moment."""
    script = Path(__file__).with_name("fuzz_mlirc_opt.py")
    out = subprocess.run(
        [sys.executable, str(script), "--count", "150", "--seed", "2026"], capture_output=True, text=True, timeout=900
    )
    assert out.returncode == 0 and "150 mutated inputs" in out.stdout, out.stdout[-3000:] + out.stderr[-3000:]


def _run_bytes(*args, stdin: bytes = b""):
    return subprocess.run([sys.executable, "-m", "mlirc.tools.mlirc_opt", *args], input=stdin, capture_output=True)


def test_binary_input_is_a_diagnostic(tmp_path):
    """Bytes that are not UTF-8 text, or hold a NUL, from a file or stdin: one line, exit 1."""
    path = tmp_path / "binary.mlir"
    path.write_bytes(bytes(range(256)))
    for out in (_run_bytes(str(path)), _run_bytes("-", stdin=b"module {}\x00\n")):
        err = out.stderr.decode()
        assert out.returncode == 1 and "Traceback" not in err and "internal error" not in err, err
        assert err.count("\n") == 1 and "mlirc-opt: error:" in err and "text" in err, err
