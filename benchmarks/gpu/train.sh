#!/usr/bin/env bash
# Issue 33 on your GPU: the paper's base model trained there, the distributed path on NCCL
# killed and resumed, and chapters 7 and 10 run as a Colab GPU user runs them; or a tiny
# rehearsal on a CPU.
#
#   bash benchmarks/gpu/train.sh                   # from the repository root, on the GPU machine
#   bash benchmarks/gpu/train.sh --dry-run         # on a CPU, in a minute (tests/test_gpu_train.py)
#   bash benchmarks/gpu/train.sh --updates 6000 --train-min 30
#
# Options:
#   --steps "1 2 3"   the steps to run (default: all three)
#   --updates N       step 1 trains N updates (default 3000: what its schedule was set for)
#   --train-min M     and stops training after M minutes, if sooner (default 0: no limit)
#   --limit-min M     stop any step that runs longer than M minutes (default 0: none)
# Environment: OUT (default _build/gpu/train), WORK (default /tmp/gpu_train), PY (default
# .venv/bin/python, else python3), TRANSFORMER_DATA (default .gpu_data/ when `make
# gpu-data` made it).
#
# Steps, estimated on one H200 (not yet measured):
#   1. base model  combine the corpora 5 s; BPE + encoding 195k pairs ~15 s; 3,000 updates
#                  at 5.5-11 a second (below), 4.5-9 min; final validation and averaging
#                  ~20 s; beam 4 on 1,000 + 1,703 test sentences ~30 s
#   2. torchrun    ~1 min: two launches of the small preset (~20 s each) and ~40 updates
#   3. notebooks   ~4 min: chapter 7 (the book's run: 800 small-preset updates, ~1 min on
#                  the GPU), chapter 10 (step-time and attention sweeps, 200 base updates
#                  of 25,000 tokens, greedy BLEU of 6 checkpoints)
# In all 10-15 minutes on an H200; a smaller GPU takes longer for the same work.
#
# Writes under $OUT, flat: log.txt, train.json + metrics.jsonl (1), torchrun.json (2),
# notebooks.json with 07_training.ipynb and 10_full_model.ipynb executed (3); then
# `python -m benchmarks.gpu.train_record $OUT --out book/results/gpu_train.json` makes the
# committed record. Checkpoints, the combined corpus and the book's run cache go to $WORK.
# Needs: torch, sentencepiece and sacrebleu; the corpora (`python -m transformer fetch`, or
# `make gpu-data`); for step 3 nbclient, ipykernel, nbformat and plotly (`make setup`), or
# wheels in .gpu_data/wheels (`make gpu-wheels`), installed from there when missing.
set -uo pipefail
cd "$(dirname "$0")/../.."
source benchmarks/gpu/common.sh
ALL_STEPS="1 2 3"; STEPS=$ALL_STEPS; UPDATES=3000; TRAIN_MIN=0; LIMIT_MIN=0
OPTIONS="steps updates train-min limit-min"
options "$@"
OUT=${OUT:-_build/gpu/train}
WORK=${WORK:-$([ $DRY = 1 ] && echo "$OUT/work" || echo /tmp/gpu_train)}
setup

# 1. The base model (Table 3: N=6, d_model 512, h=8, d_ff 2048, post-norm, Adam + eq. (3),
# label smoothing 0.1) on Multi30k + Tatoeba (their train and valid splits in one folder),
# bf16, for --updates updates (or --train-min minutes); the last 5 checkpoints averaged;
# beam 4 on each test split. Update size: the paper's ~25,000 target tokens, in one
# micro-batch (an H200's memory holds it; no accumulation). Warm-up: the paper's 4,000
# updates would take the whole run. Forward and backward cost ~6 x 48M parameters x
# 25,000 tokens = 7.2 TFLOP an update: at the ~790 TFLOP/s bf16 measured on an H200, 9 ms;
# eager PyTorch on short sentences (Tatoeba averages 8 tokens) reaches perhaps 5-10% of
# that peak (200,000 target tokens/s would be 7%), so 90-180 ms an update. 3,000 updates
# are 34 epochs of the 2.2M target tokens (88 updates an epoch). A warm-up of 500 is the
# first sixth of them, and lr_factor 0.5 puts the peak at 0.5 x (512 x 500)^-0.5 = 1.0e-3,
# the top of what post-norm base models train at with batches this size (the paper's own
# peak is 7.0e-4, at update 4,000). The last 5 checkpoints, 150 updates apart, are those
# of the last fifth of the updates.
CORPUS="$WORK/data/multi30k+tatoeba-en-de"
if [ $DRY = 1 ]; then
  TRAIN=(--model n_encoder_layers=1 --model n_decoder_layers=1 --model d_model=32
         --model d_ff=64 --model n_heads=2 --max-updates 6 --vocab-size 300 --max-tokens 512
         --update-tokens 1024 --warmup 10 --save-every 2 --keep-last 2 --eval-every 3
         --log-every 1 --precision fp32 --threads 1)
  PAIRS=2000; LIMIT=(--limit 5); TORCHRUN=(--model d_model=32 --model d_ff=64 --model n_heads=2
    --model n_encoder_layers=1 --model n_decoder_layers=1 --vocab-size 300 --max-tokens 512
    --update-tokens 1024 --precision fp32 --threads 1)
else
  TRAIN=(--max-updates "$UPDATES" --vocab-size 8000 --max-tokens 25000
         --update-tokens 25000 --warmup 500 --lr-factor 0.5 --save-every 150 --keep-last 5
         --eval-every 250 --precision bf16)
  PAIRS=0; LIMIT=(); TORCHRUN=(--preset small --vocab-size 2000 --max-tokens 4096
    --update-tokens 8192 --precision bf16)     # 2 micro-batches an update: no_sync runs too
fi
if want 1; then
  step corpus "$PY" -c "from transformer.data import concatenate_corpora as c
print(c(['multi30k-en-de', 'tatoeba-en-de'], '$CORPUS', limit=$PAIRS))"
  TRAIN_CMD=("$PY" -m transformer train --preset base --corpus "$CORPUS" --out "$WORK/base"
             --eval-bleu-sentences 0 --no-progress --time-limit-min "$TRAIN_MIN" "${TRAIN[@]}")
  started=$SECONDS
  step train "${TRAIN_CMD[@]}"; wall=$((SECONDS - started))
  scores=()
  for test in multi30k-en-de tatoeba-en-de; do
    step "score $test" "$PY" -m transformer evaluate "$WORK/base/average.pt" --corpus "$test" \
      --split test --beam 4 --json "$WORK/score-$test.json" "${LIMIT[@]}" && \
      scores+=("$WORK/score-$test.json")
  done
  step "record train" "$PY" -m benchmarks.gpu.train_steps train-record "$WORK/base" \
    "${scores[@]}" --command "${TRAIN_CMD[*]}" --wall-s "$wall" --out "$OUT/train.json"
  cp "$WORK/base/metrics.jsonl" "$OUT/metrics.jsonl" 2>/dev/null
fi

# 2. torchrun --nproc_per_node 1: DDP on NCCL (gloo on a CPU), SIGKILL after a checkpoint,
# the same command resumed and finished
want 2 && step torchrun "$PY" -m benchmarks.gpu.train_steps torchrun \
  --corpus multi30k-en-de --work "$WORK" --out "$OUT/torchrun.json" -- "${TORCHRUN[@]}"

# 3. Chapters 7 and 10 through nbclient on a python3 kernel, as on Colab: the full form
# (BOOK_QUICK unset), the chapters' own cells choosing the GPU, the book's cached run
# trained there first (chapter 7), in a fresh cache
if want 3; then
  if [ $DRY = 1 ]; then      # nothing heavy: both chapters parse, a two-cell notebook runs
    step "notebooks parse" "$PY" -c "import nbformat
for name in ('07_training', '10_full_model'):
    nbformat.validate(nbformat.read(f'book/{name}.ipynb', as_version=4))
from nbformat.v4 import new_code_cell, new_notebook
nb = new_notebook(cells=[new_code_cell('import torch, transformer, transformer_book'),
                         new_code_cell('print(torch.cuda.is_available(), transformer.__file__)')])
nb.metadata['kernelspec'] = {'name': 'python3', 'display_name': 'Python 3', 'language': 'python'}
nbformat.write(nb, '$WORK/rehearsal.ipynb')"
    NOTEBOOKS=("$WORK/rehearsal.ipynb")
  else
    NOTEBOOKS=(book/07_training.ipynb book/10_full_model.ipynb)
    if ! "$PY" -c "import nbclient, ipykernel, nbformat, plotly" 2>/dev/null; then
      step wheels "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --upgrade --target "$WORK/site" .gpu_data/wheels/*.whl
      export PYTHONPATH="$WORK/site:$PYTHONPATH"
    fi
  fi
  TRANSFORMER_CACHE="$WORK/cache" step notebooks "$PY" -m benchmarks.gpu.train_steps \
    notebooks "${NOTEBOOKS[@]}" --kernel-cwd book --out-dir "$OUT" --out "$OUT/notebooks.json"
fi
echo "gpu_train: $([ $status = 0 ] && echo ok || echo 'some steps failed') (log: $LOG)" | tee -a "$LOG"
exit $status
