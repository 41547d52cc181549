#!/usr/bin/env bash
# The GPU path's tests and throughput on your GPU, or a tiny rehearsal on a CPU. Training
# the base model and running the chapters there is benchmarks/gpu/train.sh; Table 3 at a
# GPU budget is benchmarks/gpu/table3.sh.
#
#   bash benchmarks/gpu/check.sh                 # from the repository root, on the GPU machine
#   bash benchmarks/gpu/check.sh --dry-run       # on a CPU, in a minute (tests/test_gpu_check.py)
#   bash benchmarks/gpu/check.sh --steps 2 --budget-min 10
#
# Options:
#   --steps "1 2"     the steps to run (default: both)
#   --budget-min M    step 2 starts no row after M minutes (default 0: every row)
#   --limit-min M     stop any step that runs longer than M minutes (default 0: none)
# Environment: OUT (default _build/gpu/check), PY (default .venv/bin/python, else python3),
# TRANSFORMER_DATA (default .gpu_data/ when `make gpu-data` made it).
#
# Steps, each writing into $OUT:
#   1. tests.xml       the device-aware tests on CUDA (every precision, --compile included)
#   2. throughput.json ours / torch.nn.Transformer / Marian at base and big dims, bf16,
#                      ~25,000 target tokens per update, MFU against the measured peak,
#                      eager and torch.compile (benchmarks/gpu/throughput.py)
# About 8 minutes on one H200. Then `python -m benchmarks.gpu.check_record $OUT --out
# book/results/gpu_step.json` makes the committed record.
set -uo pipefail
cd "$(dirname "$0")/../.."
source benchmarks/gpu/common.sh
ALL_STEPS="1 2"; STEPS=$ALL_STEPS; BUDGET_MIN=0; LIMIT_MIN=0
OPTIONS="steps budget-min limit-min"
options "$@"
OUT=${OUT:-_build/gpu/check}
setup

# 1. the device-aware tests (the `device` fixture runs them on CUDA when it is there)
if [ $DRY = 1 ]; then TESTS=(tests/test_fast.py -k "fused_attention or incremental"); else
  TESTS=(tests/test_fast.py tests/test_parity.py tests/test_properties.py
         tests/test_decoding.py tests/test_schedule_loss.py tests/test_device_training.py); fi
want 1 && step tests "$PY" -m pytest -q -p no:cacheprovider "${TESTS[@]}" \
  -o addopts="" --junitxml="$OUT/tests.xml"

# 2. throughput, eager and compiled
if want 2; then
  if [ $DRY = 1 ]; then THROUGHPUT=(--dry-run); else THROUGHPUT=(--compile); fi
  step throughput "$PY" -m benchmarks.gpu.throughput "${THROUGHPUT[@]}" \
    --budget-min "$BUDGET_MIN" --json "$OUT/throughput.json"
fi

echo "gpu_check: $([ $status = 0 ] && echo ok || echo 'some steps failed') (log: $LOG)" | tee -a "$LOG"
exit $status
