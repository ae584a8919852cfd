#!/usr/bin/env bash
# (Re)start or stop the `vllm serve` process of the RL loop (mk/rl.mk, POLICY=vllm-server).
#   rl-vllm.sh restart CKPT PORT STATE_DIR [VLLM_BIN [EXTRA_ARGS...]]   stop the old server, serve CKPT, wait for /health
#   rl-vllm.sh stop    -    PORT STATE_DIR                             stop it (frees the GPU for the DAPO update)
# The server runs with `--generation-config vllm`: vLLM's neutral sampling defaults, so a checkpoint's HF
# generation_config (top_k, top_p, repetition_penalty...) can never leak into rollouts (paper §5.2).
set -euo pipefail
action=$1 ckpt=$2 port=$3 state=$4
shift 4
vllm_bin=${1:-vllm}
[ $# -gt 0 ] && shift
mkdir -p "$state"
pidfile=$state/server.pid

stop() {
  if [ -s "$pidfile" ]; then
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 120); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
      kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    fi
    rm -f "$pidfile"
  fi
}

case "$action" in
  stop) stop ;;
  restart)
    stop
    "$vllm_bin" serve "$ckpt" --port "$port" --generation-config vllm --served-model-name "$ckpt" "$@" \
      >"$state/server.log" 2>&1 &
    echo $! >"$pidfile"
    for _ in $(seq ${VLLM_WAIT_S:-900}); do
      if curl -sf "http://127.0.0.1:$port/health" >/dev/null; then echo "rl: vllm serving $ckpt on :$port" >&2; exit 0; fi
      kill -0 "$(cat "$pidfile")" 2>/dev/null || { echo "rl: vllm exited; see $state/server.log" >&2; exit 1; }
      sleep 1
    done
    echo "rl: vllm not healthy after ${VLLM_WAIT_S:-900}s; see $state/server.log" >&2
    stop
    exit 1 ;;
  *) echo "usage: $0 restart|stop CKPT PORT STATE_DIR [VLLM_BIN [ARGS...]]" >&2; exit 2 ;;
esac
