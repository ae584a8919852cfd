#!/usr/bin/env bash
# The asynchronous RL loop (make rl ASYNC=1 STALENESS=K, POLICY=vllm-server): collection never waits for the trainer.
#
#   collector (background): passes r = 0, 1, ... over the task pool (at most A = max(1, K / S) ahead of the
#       trainer's updates, A + 1 running at once; S = the optimizer steps one update makes, see `ahead` below),
#       each `swerl collect --policy-version server` (every turn records the server's weight version) | `swerl grade`,
#       pass r's graded records in their own file $RUNS/stream/async-r.jsonl (its collected ones in
#       $RUNS/collected/async-r.jsonl)
#   trainer (foreground):   `swerl dapo --follow $RUNS/stream --output $RUNS --push URL` (the directory: every pass
#       file): one update per POOL_GROUPS complete groups sampled at most K optimizer steps ago; each new checkpoint is
#       reloaded into the same server in place (drained: requests in flight finish on the old weights; probe-checked)
#
# Restartable after kill -9 of the collector, its collect or grade, or the trainer: the trainer resumes from
# $RUNS/follow_state.json and skips consumed records; a restarted collector skips finished passes (marked
# async-r.done) and resumes every unfinished one (collect --resume collects only its missing samples, grade --resume
# cuts a torn last line and grades only what its file lacks), so every group of every pass completes and is
# trained once. Each pass file has one writer at a time (grade -o locks it). Environment: what mk/rl.mk passes.
set -euo pipefail
export SWERL=${SWERL:-.venv/bin/swerl}

field() { grep -o "\"$1\": [0-9]*" "$RUNS/follow_state.json" 2>/dev/null | grep -o '[0-9]*$' || echo 0; }
used() { echo $(($(field updates) + $(field dropped_stale) / POOL_GROUPS)); } # passes the trainer has used up
# How far the collector runs ahead. Staleness K counts optimizer steps, and one update of POOL_GROUPS x G samples makes
# up to S = ceil(POOL_GROUPS x G / BATCH) of them, so a pass started A updates ahead of the trainer is about A x S
# steps old when it is trained: A = K / S passes ahead (at least 1; A = 0 would be the synchronous loop), A + 1 at once.
steps_per_update() { if [ -n "${BATCH:-}" ]; then echo $(((POOL_GROUPS * G + BATCH - 1) / BATCH)); else echo 1; fi; }
ahead() { local a=$((STALENESS / $(steps_per_update))); echo $((a > 1 ? a : 1)); }

one_pass() { # pass $1: fresh (collect | grade, pipelined) or resumed after a kill (the missing samples, then grade)
  local c=$RUNS/collected/async-$1.jsonl g=$RUNS/stream/async-$1.jsonl
  # shellcheck disable=SC2206  # COLLECT_ARGS / GRADE_ARGS are word lists
  local collect=($SWERL collect --policy openai --model swerl-policy --policy-version server --base-url "$URL/v1"
    --samples "$G" --run "async-$1" --max-turns "$MAX_TURNS" --max-context-tokens "$CONTEXT"
    --max-new-tokens "$MAX_NEW_TOKENS" --concurrency "$CONCURRENCY" --seed $((SEED * 100000 + $1 * 1000))
    ${COLLECT_ARGS:-}) grade=($SWERL grade --workers "$CONCURRENCY" --resume -o "$g" ${GRADE_ARGS:-})
  if [ -e "$c" ]; then
    "${collect[@]}" --resume -o "$c" "$POOL"
    "${grade[@]}" "$c"
  else
    "${collect[@]}" "$POOL" | tee -a "$c" | "${grade[@]}"
  fi
  touch "$RUNS/collected/async-$1.done"
}

collector() { # passes $1 .. $2 over the pool, at most A = ahead ahead of the trainer, A + 1 at once
  mkdir -p "$RUNS/collected" "$RUNS/stream"
  local r pids=() a
  a=$(ahead)
  for r in $(seq "$1" "$2"); do
    if [ -e "$RUNS/collected/async-$r.done" ]; then continue; fi
    # a pass is one update's worth of groups: running further ahead would only make groups the trainer drops
    while [ $((r - $(used))) -gt "$a" ]; do sleep 1; done
    # passes overlap: while one waits for its slowest episodes, the next keeps the server busy (a failed pass
    # ends the collector with its status: `wait -n` under set -e)
    while [ "$(jobs -rp | wc -l)" -gt "$a" ]; do wait -n; done
    one_pass "$r" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done # bash keeps each status, also of those `wait -n` reaped
}
if [ "${1:-}" = collector ]; then collector "$2" "$3"; exit 0; fi

: "${RUNS:?}" "${MODEL:?}" "${POOL:?}" "${ITERS:?}" "${STALENESS:?}" "${G:?}" "${VLLM_PORT:?}" "${VLLM_STATE:?}"
export URL=http://127.0.0.1:$VLLM_PORT
url=$URL
mkdir -p "$RUNS"
stream=$RUNS/stream
mkdir -p "$stream" "$RUNS/collected"
POOL_GROUPS=${GROUPS_PER_UPDATE:-$(grep -c . "$POOL")}
if [ "$STALENESS" -lt "$(steps_per_update)" ]; then
  echo "rl-async: STALENESS=$STALENESS is below the $(steps_per_update) optimizer steps one update can make" \
    "($POOL_GROUPS groups x G=$G / BATCH=$BATCH): a pass collected beside the trainer may age out and be dropped;" \
    "use STALENESS >= $(steps_per_update) or BATCH >= $((POOL_GROUPS * G))" >&2
fi
passes=$((ITERS + $(ahead) + 1))
start_ckpt=$MODEL
if [ -s "$RUNS/follow_state.json" ]; then
  start_ckpt=$("${PY:-.venv/bin/python}" -c 'import json,sys; print(json.load(open(sys.argv[1]))["model"])' "$RUNS/follow_state.json")
fi
bash scripts/rl-vllm.sh ensure "$start_ckpt" "$VLLM_PORT" "$VLLM_STATE"

export RUNS MODEL POOL G BATCH POOL_GROUPS SEED MAX_TURNS CONTEXT MAX_NEW_TOKENS CONCURRENCY COLLECT_ARGS GRADE_ARGS STALENESS
setsid bash "$0" collector 0 $((passes - 1)) &
cpid=$!
trap 'kill -TERM -- -$cpid 2>/dev/null || true' EXIT
# shellcheck disable=SC2086  # DAPO_ARGS is a word list
$SWERL dapo --follow "$stream" --model "$MODEL" --output "$RUNS" --push "$url" --max-staleness "$STALENESS" \
  --groups-per-update "$POOL_GROUPS" --max-updates "$ITERS" --group-size "$G" --t-max "$T_MAX" --l-thr "$L_THR" \
  --eps-high "$EPS_HIGH" --batch-size "$BATCH" --lr "$LR" --max-seq-len "$CONTEXT" --seed "$SEED" \
  --loss "${LOSS:-tis}" --idle-timeout "${IDLE_TIMEOUT:-3600}" ${DAPO_ARGS:-} >>"$RUNS/follow.jsonl"
