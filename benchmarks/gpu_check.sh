#!/usr/bin/env bash
# The GPU backend on the GPU host in one call: the GPU tests, then the GPU benchmarks
# (table last).  The host has torch + Triton but no MLIR bindings and no package index
# (../shared/device/README.md): the bindings come from .device/.
#   bash benchmarks/gpu_check.sh [gpu_bench.py arguments, e.g. --cases mlp,bert, or --suite zoo]
#   SKIP_TESTS=1 / SKIP_FUZZ=1 / SKIP_OPINFO=1 / SKIP_BENCH=1 skip a part; PYTEST_K=expr selects tests;
#   FUZZ_COUNT (default 2000) random graphs for the CUDA fuzzer, seeds from FUZZ_SEED (default 900) + 1,
#   FUZZ_FLAGS more fuzz_graphs.py flags (--half: float16/bfloat16 graphs, --dynamic);
#   OPINFO_DTYPES (default float32,float16,bfloat16) and OPINFO_OPS narrow the sweep.
# The OpInfo sweep needs `expecttest` (torch's test helpers import it), which the host
# lacks: copy it into .device/pylib (see docs/user-guide.md, "The GPU").
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p /tmp/site
[ -d /tmp/site/mlir ] || tar -xJf .device/mlir-site-cp312.tar.xz -C /tmp/site
ln -sfn "$PWD" /tmp/site/mlirc
export PYTHONPATH=/tmp/site:$PWD/.device/pylib MLIRC_CACHE_DIR=/tmp/mlirc-cache
# the zoo's transformers (and its pure-Python dependencies), where a bundle was carried
# (docs/user-guide.md, "The GPU": `--suite zoo`)
if [ -f .device/zoo-site-cp312.tar.xz ]; then
  mkdir -p /tmp/zoosite && { [ -d /tmp/zoosite/transformers ] || tar -xJf .device/zoo-site-cp312.tar.xz -C /tmp/zoosite; }
  export PYTHONPATH=$PYTHONPATH:/tmp/zoosite
fi
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
status=0
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py tests/test_gpu_codegen.py tests/test_gpu_errors.py tests/test_half_precision.py \
    ${PYTEST_K:+-k "$PYTEST_K"} 2>&1 | tail -15
  status=${PIPESTATUS[0]}
  python3 -m pytest -q -p no:cacheprovider tests/test_special_values.py -k cuda 2>&1 | tail -5
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
if [ "${SKIP_FUZZ:-0}" != 1 ]; then
  # the differential fuzzer on CUDA tensors, one process per seed (FUZZ_COUNT graphs in all)
  jobs=$(( $(nproc) - 3 )); per=$(( ${FUZZ_COUNT:-2000} / jobs + 1 ))
  for s in $(seq 1 $jobs); do
    (cd tests && python3 fuzz_graphs.py --count $per --seed $((${FUZZ_SEED:-900} + s)) --device cuda ${FUZZ_FLAGS:-} > "/tmp/fuzz-cuda-$s.log" 2>&1) &
  done
  wait
  grep -h "graphs on" /tmp/fuzz-cuda-*.log
  grep -h "^==== graph" /tmp/fuzz-cuda-*.log && status=1
fi
if [ "${SKIP_OPINFO:-0}" != 1 ]; then
  # the CI sample of the OpInfo sweep on CUDA tensors: no case may be wrong
  dtypes=${OPINFO_DTYPES:-float32,float16,bfloat16}
  json="${OUT:-.}/opinfo-cuda.json"
  python3 tests/opinfo_sweep.py --device cuda --dtypes "$dtypes" ${OPINFO_OPS:+--ops "$OPINFO_OPS"} \
    --jobs "$(( $(nproc) - 2 ))" --json "$json" | head -12
  python3 - "$json" <<'EOF' || status=1
import json, sys
bad = [r for r in json.load(open(sys.argv[1])) if r["status"] in ("wrong", "error")]
for r in bad:
    print(f"{r['status']:6} {r['case']}: {r['reason'][:240]}")
sys.exit(1 if bad else 0)
EOF
fi
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  python3 benchmarks/gpu_bench.py "${OUT:-.}/gpu-results" "$@" 2>&1 | grep -v "^{" || status=1
fi
exit $status
