#!/usr/bin/env bash
# Run the CPU benchmark suite on the GPU host (its 16-core Xeon), which has torch and
# llvmlite but no MLIR bindings and no package index: see ../shared/device/README.md.
#   bash benchmarks/gpu_host.sh [run.py arguments...]     (results under $OUT or ./results)
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p /tmp/site
[ -d /tmp/site/mlir ] || tar -xJf .device/mlir-site-cp312.tar.xz -C /tmp/site
ln -sfn "$PWD" /tmp/site/mlirc
export PYTHONPATH=/tmp/site
python3 -c "import torch, mlirc; print('torch', torch.__version__, 'threads', torch.get_num_threads())"
python3 benchmarks/run.py --results "${OUT:-.}/results" "$@"
