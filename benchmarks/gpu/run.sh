#!/usr/bin/env bash
# The prepared GPU check, for a machine with an NVIDIA GPU and the dev dependencies
# already installed (torch, triton, pytest): it installs nothing from the network.
# Device time is short (a lent machine gives 15 minutes, its start included), so the
# numbers come first and the tests after, each step with a time limit:
#
#   1. installs this checkout in editable mode (--no-deps: no downloads),
#   2. runs the benchmark (bench_gpu.py: every case against PyTorch, about 7 minutes; no
#      case starts after TP_GPU_BENCH_BUDGET seconds, default 420, and the whole step is
#      cut at 540 s); its table goes to the top of benchmarks/RESULTS.md (and its output
#      to benchmarks/gpu/last_run.txt); with $OUT set (the lent machine's folder that
#      comes back), both are copied there too,
#   3. runs the Triton tests, then the operator database's reduced cuda sweep, on the
#      real GPU (TRITON_INTERPRET=0 overrides the interpreter default of
#      tests/conftest.py); each new kernel specialisation compiles once (~1 s), so
#      each gets a time limit (TP_GPU_TESTS_SECONDS, default 180; TP_GPU_DB_SECONDS,
#      default 240).
#
# Usage: benchmarks/gpu/run.sh [extra bench_gpu.py arguments, e.g. --only attention]
#        TP_SKIP_TESTS=1 benchmarks/gpu/run.sh      # the benchmark only
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON="${PYTHON:-python}"

"$PYTHON" -m pip install --no-deps --no-build-isolation -e . -q
export TRITON_INTERPRET=0
unset TENSORPLAY_TRITON_INTERPRET
"$PYTHON" -c "import tensorplay as tp; assert tp.cuda.is_available(), 'no GPU visible'; \
print('GPU:', __import__('torch').cuda.get_device_name())"
timeout 540 "$PYTHON" benchmarks/gpu/bench_gpu.py --markdown --results benchmarks/RESULTS.md \
    --budget "${TP_GPU_BENCH_BUDGET:-420}" "$@" | tee benchmarks/gpu/last_run.txt \
    || echo "benchmark: exit $? (124: time limit)"
if [ -n "${OUT:-}" ]; then
    cp benchmarks/RESULTS.md benchmarks/gpu/last_run.txt "$OUT"/ || true
fi
if [ -n "${TP_SKIP_TESTS:-}" ]; then
    exit 0
fi
timeout "${TP_GPU_TESTS_SECONDS:-180}" "$PYTHON" -m pytest -q tests/triton_backend/ \
    -p no:cacheprovider -x || echo "Triton tests on the GPU: exit $? (124: time limit)"
timeout "${TP_GPU_DB_SECONDS:-240}" "$PYTHON" -m pytest -q tests/test_ops.py -k "cuda-" \
    -p no:cacheprovider || echo "operator database on the GPU: exit $? (124: time limit)"
