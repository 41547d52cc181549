# Sourced by the GPU scripts (check.sh, train.sh, table3.sh) from the repository root:
# their options, environment, log and `step` runner. A script sets its defaults and
# OPTIONS (the names of its --NAME VALUE options; --steps sets STEPS, --limit-min
# LIMIT_MIN, ...), calls `options "$@"`, sets OUT (and WORK), then calls `setup`.
SCRIPT="benchmarks/gpu/$(basename "$0")"
DRY=0

usage() {        # the script's header comment, without its '#'
  sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p;}' "$SCRIPT"
}

fail() {         # a user's mistake: one line, exit 2
  echo "$SCRIPT: $*" >&2
  exit 2
}

options() {      # --dry-run, --help, and --NAME VALUE for each NAME in $OPTIONS
  while [ $# -gt 0 ]; do
    case $1 in
      --dry-run) DRY=1; shift; continue ;;
      -h|--help) usage; exit 0 ;;
    esac
    local name=${1#--}
    [[ $1 == --* && " $OPTIONS " == *" $name "* ]] \
      || fail "unknown option '$1' (options: --dry-run --${OPTIONS// / --}; see --help)"
    [ $# -ge 2 ] || fail "$1 needs a value"
    case $name in
      *-min) [[ $2 =~ ^[0-9]+([.][0-9]+)?$ ]] \
               || fail "$1 takes minutes (a number, 0: no limit), not '$2'" ;;
      jobs|updates) [[ $2 =~ ^[1-9][0-9]*$ ]] || fail "$1 takes a whole number above 0, not '$2'" ;;
      steps) local s; for s in $2; do
               [[ " $ALL_STEPS " == *" $s "* ]] || fail "--steps: no step '$s' (steps: $ALL_STEPS)"
             done ;;
    esac
    local var=${name//-/_}
    printf -v "${var^^}" '%s' "$2"
    shift 2
  done
}

setup() {        # the environment, OUT (and WORK), the log; prints the torch and device
  # the corpora: $TRANSFORMER_DATA, else .gpu_data/ where `make gpu-data` made one (a
  # machine without network), else the library's default data root
  if [ -z "${TRANSFORMER_DATA:-}" ] && [ -d .gpu_data ]; then
    export TRANSFORMER_DATA="$PWD/.gpu_data"
  fi
  # the project's two packages (transformer/ and book/transformer_book/) from this
  # checkout, as `pip install -e .` would give them, on a machine without the install
  export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD:$PWD/book${PYTHONPATH:+:$PYTHONPATH}"
  # a copy of the checkout without .git: `make gpu-data` noted the commit
  if [ -z "${TRANSFORMER_COMMIT:-}" ] && ! git rev-parse HEAD >/dev/null 2>&1 \
     && [ -f .gpu_data/COMMIT ]; then
    export TRANSFORMER_COMMIT="$(cat .gpu_data/COMMIT) (make gpu-data)"
  fi
  if [ -z "${PY:-}" ]; then
    if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
  fi
  mkdir -p "$OUT" ${WORK:+"$WORK"}
  LOG="$OUT/log.txt"
  status=0
  local limit="$LIMIT_MIN min"; [ "$LIMIT_MIN" = 0 ] && limit=none
  echo "[$(date -u +%T)] $SCRIPT$([ $DRY = 1 ] && echo ' --dry-run')" \
       "(steps: $STEPS; limit a step: $limit)" | tee -a "$LOG"
  "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(),
            torch.cuda.get_device_name() if torch.cuda.is_available() else '')" | tee -a "$LOG"
}

want() { [[ " $STEPS " == *" $1 "* ]]; }

step() {         # step NAME COMMAND...: run (stopped after --limit-min, if given), log, go on
  local name=$1; shift
  echo "[$(date -u +%T)] $name: $*" | tee -a "$LOG"
  local started=$SECONDS
  timeout "${LIMIT_MIN}m" "$@" >>"$LOG" 2>&1         # 0m: no limit
  local rc=$?
  [ $rc -eq 124 ] && echo "[$(date -u +%T)] $name: stopped (--limit-min $LIMIT_MIN)" \
    | tee -a "$LOG"
  echo "[$(date -u +%T)] $name: exit $rc after $((SECONDS - started)) s" | tee -a "$LOG"
  [ $rc -eq 0 ] || status=1
  return $rc
}
