#!/usr/bin/env bash
# The GPU path's tests and throughput in one run (about 8 minutes on one H200), or a tiny
# CPU rehearsal. Training the base model and running the chapters there is
# benchmarks/gpu_train.sh; Table 3 at a GPU budget is benchmarks/gpu_table3.sh.
#
#   bash benchmarks/gpu_check.sh              # on the GPU machine, from the repository root
#   bash benchmarks/gpu_check.sh --dry-run    # on a CPU, in a minute (tests/test_gpu_check.py)
#   STEPS="1" bash benchmarks/gpu_check.sh    # only the steps named
#
# Writes its log and results under $OUT (default _build/gpu_check):
#   1. tests.xml       the device-aware tests on CUDA (every precision, --compile included)
#   2. throughput.json ours / torch.nn.Transformer / Marian at base and big dims, bf16,
#                      ~25,000 target tokens per update, MFU against the measured peak,
#                      eager and torch.compile (benchmarks/gpu_throughput.py); then
#                      `python benchmarks/gpu_record.py $OUT` makes the committed record
# Needs: python3 with torch (CUDA); the project is imported from the repository root, the
# corpora from $TRANSFORMER_DATA (default .gpu_data/, `make gpu-data`).
set -uo pipefail
cd "$(dirname "$0")/.."
DRY=0
[ "${1:-}" = "--dry-run" ] && DRY=1
OUT=${OUT:-_build/gpu_check}
STEPS=${STEPS:-1 2}
source benchmarks/gpu_common.sh

# 1. the device-aware tests (the `device` fixture runs them on CUDA when it is there)
if [ $DRY = 1 ]; then TESTS=(tests/test_fast.py -k "fused_attention or incremental"); else
  TESTS=(tests/test_fast.py tests/test_parity.py tests/test_properties.py
         tests/test_decoding.py tests/test_schedule_loss.py tests/test_device_training.py); fi
want 1 && LIMIT_S=240 step tests "$PY" -m pytest -q -p no:cacheprovider "${TESTS[@]}" \
  -o addopts="" --junitxml="$OUT/tests.xml"

# 2. throughput, eager and compiled (rows start within THROUGHPUT_BUDGET_S seconds)
if want 2; then
  if [ $DRY = 1 ]; then step throughput "$PY" benchmarks/gpu_throughput.py --dry-run --json "$OUT/throughput.json"
  else LIMIT_S=$(( ${THROUGHPUT_BUDGET_S:-600} + 180 )) step throughput "$PY" \
    benchmarks/gpu_throughput.py --compile --budget-s "${THROUGHPUT_BUDGET_S:-600}" \
    --json "$OUT/throughput.json"; fi
fi

echo "gpu_check: $([ $status = 0 ] && echo ok || echo 'some steps failed') (log: $LOG)" | tee -a "$LOG"
exit $status
