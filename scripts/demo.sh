#!/usr/bin/env bash
# The swerl pipeline on the bundled example tasks (examples/tasks.jsonl), outputs in demo-out/:
#   1. collect --policy gold | grade      (validates every task environment end to end)
#   2. collect --policy hf (tiny model)   | grade   (a real sampled policy, G samples per task)
#   3. eval of both runs side by side, filter examples
#   4. rft on the resolved gold trajectories -> checkpoint; collect with it (it loads and runs)
#   5. dapo: one RL update on the tiny model's graded groups -> checkpoint
# Everything runs on CPU in a few minutes. Run via `make demo` (which runs `make setup` first).
set -euo pipefail
cd "$(dirname "$0")/.."
SWERL="${SWERL:-.venv/bin/swerl}"
TASKS="${TASKS:-examples/tasks.jsonl}"
MODEL="${MODEL:-.cache/tiny-model}"
OUT="${OUT:-demo-out}"
G="${G:-2}"
rm -rf "$OUT" && mkdir -p "$OUT"

if [ -t 2 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold="" plain=""; fi
step() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain" >&2; }

step "1. collect --policy gold on $(wc -l <"$TASKS") example tasks | grade  (docker sandboxes, network off)"
"$SWERL" collect --policy gold --run gold --concurrency 4 "$TASKS" \
  | "$SWERL" grade --workers 4 -o "$OUT/graded-gold.jsonl"

step "2. collect --policy hf ($MODEL, $G samples per task, 3 turns) | grade"
"$SWERL" collect --policy hf --model "$MODEL" --run tiny --samples "$G" --max-turns 3 --max-new-tokens 48 \
    --concurrency 4 --seed 0 "$TASKS" -o "$OUT/trajectories-tiny.jsonl"
"$SWERL" grade --workers 4 "$OUT/trajectories-tiny.jsonl" -o "$OUT/graded-tiny.jsonl"

step "3. eval: gold vs tiny, side by side (human table on stderr, JSON in $OUT/eval.json)"
"$SWERL" eval "$OUT/graded-gold.jsonl" "$OUT/graded-tiny.jsonl"
"$SWERL" eval --json "$OUT/graded-gold.jsonl" "$OUT/graded-tiny.jsonl" >"$OUT/eval.json" 2>/dev/null
"$SWERL" filter --resolved "$OUT/graded-gold.jsonl" -o "$OUT/resolved.jsonl"
"$SWERL" filter -q --where 'stats.turns <= 3 and grade.status != "resolved"' "$OUT/graded-tiny.jsonl" \
  | head -1 >"$OUT/one-failure.jsonl"
echo "resolved gold trajectories: $(wc -l <"$OUT/resolved.jsonl"); unresolved tiny sample kept: $(wc -l <"$OUT/one-failure.jsonl")" >&2

step "4. rft on the resolved trajectories -> $OUT/ckpt-rft, then collect with it"
"$SWERL" rft --model "$MODEL" --output "$OUT/ckpt-rft" --batch-size 4 --lr 1e-4 --warmup-steps 1 \
    "$OUT/resolved.jsonl" >"$OUT/rft-summary.json"
head -c 300 "$OUT/rft-summary.json" >&2; echo >&2
"$SWERL" collect --policy hf --model "$OUT/ckpt-rft" --run rft --max-turns 2 --max-new-tokens 32 "$TASKS" \
  | "$SWERL" grade --workers 4 -o "$OUT/graded-rft.jsonl"

# With 3 turns the step penalty needs l_thr < t_max. A random tiny model resolves nothing, so every group has equal
# rewards and DAPO's dynamic sampling drops them all (0 optimizer steps, reported); tests/dapo/test_learning.py runs
# the full `make rl` loop where reward does rise.
step "5. dapo: one RL update on the tiny run's groups -> $OUT/ckpt-dapo"
"$SWERL" dapo --model "$MODEL" --output "$OUT/ckpt-dapo" --group-size "$G" --l-thr 1 --t-max 3 --batch-size 4 \
    "$OUT/graded-tiny.jsonl" >"$OUT/dapo-summary.json"
python3 - "$OUT/dapo-summary.json" >&2 <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
c = s["counts"]
print(f"dapo: {s['steps']} steps, {c['groups_dropped']} of {c['groups']} groups dropped (equal rewards), "
      f"checkpoint {s['checkpoint']}")
PY

step "done: outputs in $OUT/"
ls "$OUT" >&2
