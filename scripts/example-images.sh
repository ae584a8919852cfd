#!/usr/bin/env bash
# Build the image of every example task (examples/tasks.jsonl, examples/toy-tasks.jsonl) that is absent:
# a container from swerl-base with no network runs the task's `setup` commands, then `docker commit`.
# Idempotent: tasks whose image exists are skipped, so a second run takes about a second.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE="${SWERL_BASE_IMAGE:-swerl-base}"
log() { echo "setup: $*" >&2; }

docker image inspect "$BASE" >/dev/null 2>&1 || { log "$BASE is missing; run scripts/base-image.sh"; exit 1; }
existing=$(docker image ls --format '{{.Repository}}:{{.Tag}}')
work=$(mktemp -d /tmp/swerl-example-images.XXXXXX)
container=""
cleanup() {
  if [ -n "$container" ]; then docker rm -f "$container" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# One line per task: "<image> <instance_id> <script file>"; each script runs the setup commands in order, stopping
# at the first failure. Python from the standard library only: this runs before anything else is installed.
python3 - "$work" examples/tasks.jsonl examples/toy-tasks.jsonl <<'EOF' >"$work/list"
import json, sys
work, paths = sys.argv[1], sys.argv[2:]
for path in paths:
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f):
            task = json.loads(line)
            script = f"{work}/{task['instance_id']}.sh"
            with open(script, "w", encoding="utf-8") as out:
                out.write("set -euo pipefail\n")
                for command in task["setup"]:
                    out.write(f"( {command}\n)\n")
            print(task["image"], task["instance_id"], script)
EOF

built=0
while read -r image instance script; do
  if grep -qxF "$image" <<<"$existing"; then continue; fi
  log "building $image ($instance)"
  container="swerl-build-${instance//[^a-zA-Z0-9_.-]/_}-$$"
  if ! docker run -i --network none --name "$container" "$BASE" bash -s <"$script" >"$work/build.log" 2>&1; then
    log "setup of $instance failed:"; cat "$work/build.log" >&2; exit 1
  fi
  docker commit -c "WORKDIR /testbed" -c 'CMD ["/bin/bash"]' -c "LABEL swerl.instance_id=$instance" \
    "$container" "$image" >/dev/null
  docker rm "$container" >/dev/null
  container=""
  built=$((built + 1))
done <"$work/list"
total=$(wc -l <"$work/list")
if [ "$built" -gt 0 ]; then log "built $built of $total example task images"; fi
