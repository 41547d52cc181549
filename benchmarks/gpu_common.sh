# Sourced by the GPU scripts (gpu_check.sh, gpu_train.sh, gpu_table3.sh) after they set
# OUT (and WORK where they use one): the environment, the log and the `step` runner.
export TRANSFORMER_DATA=${TRANSFORMER_DATA:-$PWD/.gpu_data}
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
# the copy of the working tree on the device has no .git: `make gpu-data` notes the commit
if [ -z "${TRANSFORMER_COMMIT:-}" ] && ! git rev-parse HEAD >/dev/null 2>&1 \
   && [ -f .gpu_data/COMMIT ]; then export TRANSFORMER_COMMIT="$(cat .gpu_data/COMMIT) (make gpu-data)"; fi
PY=${PY:-python3}
mkdir -p "$OUT" ${WORK:+"$WORK"}
LOG="$OUT/log.txt"
status=0
want() { [[ " $STEPS " == *" $1 "* ]]; }
step() {   # step NAME COMMAND...: run (at most $LIMIT_S seconds), log, keep going on failure
  local name=$1; shift
  echo "[$(date -u +%T)] $name: $*" | tee -a "$LOG"
  local started=$SECONDS
  timeout "${LIMIT_S:-3600}" "$@" >>"$LOG" 2>&1
  local rc=$?
  echo "[$(date -u +%T)] $name: exit $rc after $((SECONDS - started)) s" | tee -a "$LOG"
  [ $rc -eq 0 ] || status=1
  return $rc
}
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(),
          torch.cuda.get_device_name() if torch.cuda.is_available() else '')" | tee -a "$LOG"
