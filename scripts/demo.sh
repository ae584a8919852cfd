#!/usr/bin/env bash
# The swerl pipeline on the bundled example tasks (examples/tasks.jsonl), outputs in demo-out/:
#   collect (gold policy: submits each task's gold patch) -> grade -> eval, then filter + eval on the result.
# Steps whose command has not landed yet are skipped with a note. Run via `make demo` (after `make setup`).
set -euo pipefail
cd "$(dirname "$0")/.."
SWERL="${SWERL:-.venv/bin/swerl}"
TASKS="${TASKS:-examples/tasks.jsonl}"
OUT="${OUT:-demo-out}"
mkdir -p "$OUT"

if [ -t 2 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold="" plain=""; fi
step() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain" >&2; }
# A command "exists" when swerl lists it and its --help works; stubs of unfinished commands exit 1 when run.
have() { "$SWERL" "$1" --help >/dev/null 2>&1; }

for cmd in collect grade filter eval; do
  if ! have "$cmd"; then echo "demo: \`swerl $cmd\` is not available in this build; stopping" >&2; exit 1; fi
done

step "collect: the gold policy on $(wc -l <"$TASKS") example tasks (docker sandboxes, network off)"
"$SWERL" collect --policy gold --run demo "$TASKS" -o "$OUT/trajectories.jsonl"

step "grade | tee $OUT/graded.jsonl | eval"
"$SWERL" grade "$OUT/trajectories.jsonl" | tee "$OUT/graded.jsonl" | "$SWERL" eval

step "filter --resolved -> $OUT/resolved.jsonl"
"$SWERL" filter --resolved "$OUT/graded.jsonl" -o "$OUT/resolved.jsonl"
echo "resolved: $(wc -l <"$OUT/resolved.jsonl") of $(wc -l <"$OUT/graded.jsonl")" >&2

step "filter --where: short episodes that resolved"
short=$("$SWERL" filter --where 'stats.turns <= 5 and grade.status == "resolved"' "$OUT/graded.jsonl" | wc -l)
echo "$short records" >&2

step "eval --json -> $OUT/eval.json"
"$SWERL" eval --json "$OUT/graded.jsonl" >"$OUT/eval.json" 2>/dev/null
echo "outputs: $(ls "$OUT" | tr '\n' ' ')" >&2
