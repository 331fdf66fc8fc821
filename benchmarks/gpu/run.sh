#!/usr/bin/env bash
# The prepared GPU check, for a machine with an NVIDIA GPU and the dev dependencies
# already installed (torch, triton, pytest): it installs nothing from the network.
#
#   1. installs this checkout in editable mode (--no-deps: no downloads),
#   2. runs the Triton tests on the real GPU (TRITON_INTERPRET=0 overrides the
#      interpreter default that tests/conftest.py sets for machines without one),
#   3. runs the benchmark; its output is kept in benchmarks/gpu/last_run.txt.
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
"$PYTHON" -m pytest -q tests/test_triton_*.py -p no:cacheprovider
"$PYTHON" benchmarks/gpu/bench_gpu.py --markdown "$@" | tee benchmarks/gpu/last_run.txt
