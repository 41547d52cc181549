#!/usr/bin/env bash
# Issue 33 on one H200: the paper's base model trained on a GPU, the distributed path on
# NCCL killed and resumed, and chapters 7 and 10 run as a Colab GPU user runs them.
#
#   STEPS=1 bash benchmarks/gpu_train.sh          # device call 1, about 7.5 minutes
#   STEPS="2 3" bash benchmarks/gpu_train.sh      # device call 2, about 5 minutes
#   bash benchmarks/gpu_train.sh --dry-run        # on a CPU, in a minute (tests/test_gpu_train.py)
#
# Two calls, because one device command may run 10 minutes at most. Estimated H200 time
# (not yet measured; the machine's start adds 2-3 minutes to the first call):
#   1. base model  ~7.5 min  combine the corpora 5 s; BPE + encoding 195k pairs ~15 s;
#                            training 6 min (--time-limit-min, checkpoint writes included);
#                            final validation and averaging ~20 s; beam 4 on 1,000 + 1,703
#                            test sentences ~30 s with two process starts
#   2. torchrun    ~1 min    two launches of the small preset (~20 s each) and ~40 updates
#   3. notebooks   ~4 min    chapter 7 (the book's run: 800 small-preset updates, ~1 min on
#                            the GPU), chapter 10 (step-time and attention sweeps, 200 base
#                            updates of 25,000 tokens, greedy BLEU of 6 checkpoints)
#   In all about 12.5 minutes of commands plus a 2-3 minute start: the whole 15 minutes,
#   with no time for a rerun. TRAIN_MIN=5 takes a minute off step 1.
#
# Writes under $OUT (default _build/gpu_train), flat and at most 8 files, as the device tool
# returns them: log.txt, train.json + metrics.jsonl (1), torchrun.json (2), notebooks.json
# with 07_training.ipynb and 10_full_model.ipynb executed (3); then
# `python benchmarks/gpu_train_record.py OUT1 OUT2` (the two calls' folders) makes the
# committed record, book/results/gpu_train.json. Checkpoints,
# the combined corpus and the book's run cache go to $WORK (default /tmp/gpu_train), not
# $OUT. Needs: python3 with torch, sentencepiece and sacrebleu; the corpora in
# $TRANSFORMER_DATA (default .gpu_data/, `make gpu-data`); for step 3 nbclient, ipykernel,
# nbformat and plotly, installed from .gpu_data/wheels (`make gpu-wheels`) when missing.
set -uo pipefail
cd "$(dirname "$0")/.."
DRY=0
[ "${1:-}" = "--dry-run" ] && DRY=1
OUT=${OUT:-_build/gpu_train}
WORK=${WORK:-$([ $DRY = 1 ] && echo "$OUT/work" || echo /tmp/gpu_train)}
STEPS=${STEPS:-1 2 3}
source benchmarks/gpu_common.sh

# 1. The base model (Table 3: N=6, d_model 512, h=8, d_ff 2048, post-norm, Adam + eq. (3),
# label smoothing 0.1) on Multi30k + Tatoeba (their train and valid splits in one folder),
# bf16, for a fixed wall time; the last 5 checkpoints averaged; beam 4 on each test split.
# Update size: the paper's ~25,000 target tokens, in one micro-batch (the H200's memory
# holds it; no accumulation). Warm-up: the paper's 4,000 updates would not end in the run.
# Forward and backward cost ~6 x 48M parameters x 25,000 tokens = 7.2 TFLOP an update: at
# the ~790 TFLOP/s bf16 measured there, 9 ms; eager PyTorch on short sentences (Tatoeba
# averages 8 tokens) reaches perhaps 5-10% of that peak (200,000 target tokens/s would be
# 7%), so 90-180 ms an update, 5.5-11 updates a second: 2,000-4,000 updates in 6 minutes,
# 22-45 epochs of the 2.2M target tokens (88 updates an epoch). A warm-up of 500 ends
# 45-90 s in (12-25% of the run), and lr_factor 0.5 puts the peak at
# 0.5 x (512 x 500)^-0.5 = 1.0e-3, the top of what post-norm base models train at with
# batches this size (the paper's own peak is 7.0e-4, at update 4,000). The last 5
# checkpoints, 150 updates apart, span the last 20-40% of the updates.
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
  TRAIN=(--time-limit-min "${TRAIN_MIN:-6}" --vocab-size 8000 --max-tokens 25000
         --update-tokens 25000 --warmup 500 --lr-factor 0.5 --save-every 150 --keep-last 5
         --eval-every 250 --precision bf16)
  PAIRS=0; LIMIT=(); TORCHRUN=(--preset small --vocab-size 2000 --max-tokens 4096
    --update-tokens 8192 --precision bf16)     # 2 micro-batches an update: no_sync runs too
fi
if want 1; then
  step corpus "$PY" -c "from transformer.data import concatenate_corpora as c
print(c(['multi30k-en-de', 'tatoeba-en-de'], '$CORPUS', limit=$PAIRS))"
  TRAIN_CMD=("$PY" -m transformer train --preset base --corpus "$CORPUS" --out "$WORK/base"
             --eval-bleu-sentences 0 --no-progress "${TRAIN[@]}")
  started=$SECONDS
  step train "${TRAIN_CMD[@]}"; wall=$((SECONDS - started))
  scores=()
  for test in multi30k-en-de tatoeba-en-de; do
    step "score $test" "$PY" -m transformer evaluate "$WORK/base/average.pt" --corpus "$test" \
      --split test --beam 4 --json "$WORK/score-$test.json" "${LIMIT[@]}" && \
      scores+=("$WORK/score-$test.json")
  done
  step "record train" "$PY" benchmarks/gpu_train_steps.py train-record "$WORK/base" \
    "${scores[@]}" --command "${TRAIN_CMD[*]}" --wall-s "$wall" --out "$OUT/train.json"
  cp "$WORK/base/metrics.jsonl" "$OUT/metrics.jsonl" 2>/dev/null
fi

# 2. torchrun --nproc_per_node 1: DDP on NCCL (gloo on a CPU), SIGKILL after a checkpoint,
# the same command resumed and finished
want 2 && LIMIT_S=300 step torchrun "$PY" benchmarks/gpu_train_steps.py torchrun \
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
  TRANSFORMER_CACHE="$WORK/cache" LIMIT_S=480 step notebooks "$PY" benchmarks/gpu_train_steps.py \
    notebooks "${NOTEBOOKS[@]}" --kernel-cwd book --out-dir "$OUT" --out "$OUT/notebooks.json"
fi
echo "gpu_train: $([ $status = 0 ] && echo ok || echo 'some steps failed') (log: $LOG)" | tee -a "$LOG"
exit $status
