"""mlirc-opt as a user runs it: diagnostics and exit codes, never a traceback."""

import subprocess
import sys


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
