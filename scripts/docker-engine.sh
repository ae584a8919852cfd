#!/usr/bin/env bash
# Make a Docker engine reachable: use a running one, else install Debian's docker.io and start dockerd.
# Idempotent; exits non-zero with one line when no engine can be had.
set -euo pipefail
log() { echo "setup: $*" >&2; }
if docker info >/dev/null 2>&1; then exit 0; fi
if [ -n "${DOCKER_HOST:-}" ]; then log "DOCKER_HOST=$DOCKER_HOST is set but not reachable"; exit 1; fi
if ! command -v dockerd >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    log "no Docker engine and cannot install one (need root and apt-get); install Docker and re-run"; exit 1
  fi
  log "installing docker.io from Debian"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq docker.io >/dev/null
fi
if ! pgrep -x dockerd >/dev/null 2>&1; then
  log "starting dockerd in the background (log: /var/log/swerl-dockerd.log)"
  # No bridge network (private ranges are unavailable here): sandboxes run with network 'none'.
  # Its own session (setsid): the engine outlives the shell, job or agent that started it (a nohup'd child of a
  # process group that is killed goes with it; this killed the engine under a running RL pipeline once).
  setsid nohup dockerd --bridge=none --iptables=false >/var/log/swerl-dockerd.log 2>&1 < /dev/null &
fi
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then exit 0; fi
  sleep 0.5
done
log "dockerd did not become ready in 30 s; see /var/log/swerl-dockerd.log"; exit 1
