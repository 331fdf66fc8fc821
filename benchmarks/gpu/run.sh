#!/usr/bin/env bash
# The prepared GPU check, for a machine with an NVIDIA GPU and the dev dependencies
# already installed (torch, triton, pytest): it installs nothing from the network.
# Device time is short, so the numbers come first and the tests after:
#
#   1. installs this checkout in editable mode (--no-deps: no downloads),
#   2. runs the benchmark; its output is kept in benchmarks/gpu/last_run.txt (copy it
#      into benchmarks/RESULTS.md with the date and the hardware),
#   3. runs the Triton tests, then the operator database's reduced cuda sweep, on the
#      real GPU (TRITON_INTERPRET=0 overrides the interpreter default of
#      tests/conftest.py); each new kernel specialisation compiles once (~1 s), so
#      the sweep gets a time limit (TP_GPU_DB_SECONDS, default 240).
#
# Usage: benchmarks/gpu/run.sh [extra bench_gpu.py arguments, e.g. --only matmul]
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON="${PYTHON:-python}"

"$PYTHON" -m pip install --no-deps --no-build-isolation -e . -q
export TRITON_INTERPRET=0
unset TENSORPLAY_TRITON_INTERPRET
"$PYTHON" -c "import tensorplay as tp; assert tp.cuda.is_available(), 'no GPU visible'; \
print('GPU:', __import__('torch').cuda.get_device_name())"
"$PYTHON" benchmarks/gpu/bench_gpu.py --markdown "$@" | tee benchmarks/gpu/last_run.txt
"$PYTHON" -m pytest -q tests/triton_backend/ -p no:cacheprovider -x
timeout "${TP_GPU_DB_SECONDS:-240}" "$PYTHON" -m pytest -q tests/test_ops.py -k "cuda-" \
    -p no:cacheprovider || echo "operator database on the GPU: exit $? (124: time limit)"
