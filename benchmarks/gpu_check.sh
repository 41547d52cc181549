#!/usr/bin/env bash
# The GPU path measured in one run (about 8 minutes on one H200), or a tiny CPU rehearsal.
#
#   bash benchmarks/gpu_check.sh              # on the GPU machine, from the repository root
#   bash benchmarks/gpu_check.sh --dry-run    # on a CPU, in a minute (tests/test_gpu_check.py)
#   STEPS="1 2" bash benchmarks/gpu_check.sh  # only the steps named
#
# Writes its log and results under $OUT (default _build/gpu_check):
#   1. tests.xml       the device-aware tests on CUDA (every precision, --compile included)
#   2. throughput.json ours / torch.nn.Transformer / Marian at base and big dims, bf16,
#                      ~25,000 target tokens per update, MFU against the measured peak,
#                      eager and torch.compile (benchmarks/gpu_throughput.py); then
#                      `python benchmarks/gpu_record.py $OUT` makes the committed record
#   3. train/          a base-preset run on Multi30k for 3 minutes, then greedy and beam-4
#                      sacreBLEU on the test split (bleu.txt)
#   4. notebooks/      chapter 10 in its full form and chapter 7 as a Colab GPU user runs it
# Needs: python3 with torch (CUDA) and the project installed (pip install --no-deps -e .),
# the corpora in $TRANSFORMER_DATA (default .gpu_data/ in the repository), and for step 4
# nbclient, ipykernel and plotly.
set -uo pipefail
cd "$(dirname "$0")/.."
DRY=0
[ "${1:-}" = "--dry-run" ] && DRY=1
OUT=${OUT:-_build/gpu_check}
PY=${PY:-python3}
STEPS=${STEPS:-1 2 3 4}
want() { [[ " $STEPS " == *" $1 "* ]]; }
export TRANSFORMER_DATA=${TRANSFORMER_DATA:-$PWD/.gpu_data}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
LOG="$OUT/log.txt"
status=0
step() {   # step NAME COMMAND...: run (at most $LIMIT_S seconds), log, keep going on failure
  local name=$1; shift
  echo "[$(date -u +%T)] $name: $*" | tee -a "$LOG"
  local started=$SECONDS
  timeout "${LIMIT_S:-3600}" "$@" >>"$LOG" 2>&1
  local rc=$?
  echo "[$(date -u +%T)] $name: exit $rc after $((SECONDS - started)) s" | tee -a "$LOG"
  [ $rc -eq 0 ] || status=1
}
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(),
          torch.cuda.get_device_name() if torch.cuda.is_available() else '')" | tee -a "$LOG"

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

# 3. a real training run and its BLEU
if [ $DRY = 1 ]; then
  TRAIN=(--preset small --max-updates 3 --vocab-size 300 --max-tokens 512 --update-tokens 512
         --model d_model=32 --model d_ff=64 --model n_heads=2 --model n_encoder_layers=1
         --model n_decoder_layers=1 --eval-bleu-sentences 0 --precision fp32)
  LIMIT=(--limit 5)
else
  TRAIN=(--preset base --time-limit-min 3 --update-tokens 25000 --max-tokens 12500
         --warmup 4000 --precision bf16 --eval-bleu-sentences 200)
  LIMIT=()
fi
want 3 && step train "$PY" -m transformer train --corpus multi30k-en-de --out "$OUT/train" --no-progress \
  --save-every 100 --keep-last 5 "${TRAIN[@]}"
want 3 && for beam in 1 4; do
  step "bleu beam $beam" "$PY" -m transformer evaluate "$OUT/train/average.pt" \
    --corpus multi30k-en-de --split test --beam "$beam" "${LIMIT[@]}"
done
grep -h "^BLEU" "$LOG" > "$OUT/bleu.txt" || true

# 4. the notebooks: chapter 10 full, chapter 7 as on Colab (its cached run trains on the GPU)
mkdir -p "$OUT/notebooks"
if ! want 4; then :
elif [ $DRY = 1 ]; then
  step notebooks "$PY" -c "import nbformat, json, pathlib
for name in ('07_training', '10_full_model'):
    nb = nbformat.read(f'book/{name}.ipynb', as_version=4)
    assert nb.cells, name
print('notebooks readable; not executed in --dry-run')"
else
  for name in 10_full_model 07_training; do
    step "notebook $name" "$PY" -m jupyter nbconvert --to notebook --execute \
      --ExecutePreprocessor.timeout=1800 --output-dir "$OUT/notebooks" "book/$name.ipynb"
  done
fi
echo "gpu_check: $([ $status = 0 ] && echo ok || echo 'some steps failed') (log: $LOG)" | tee -a "$LOG"
exit $status
