# The paper in miniature on a real open-weight model (issue 23; docs/training.md "paper-mini"), included from the
# Makefile. Every stage goes through the real CLI and the RL loop's own targets (mk/rl.mk, POLICY=vllm-server: one
# vLLM server for the whole run, new weights loaded into it in place and probe-checked):
#
#   1. rft-demos   BOOTSTRAP: gold patches acted out as readable steps by the agent loop (`swerl collect --policy
#                  gold-steps`: open the changed line, edit it, run the failing test, submit) on PM_DEMO_N train
#                  tasks, graded, resolved kept                        -> RUN/rft/demos.jsonl
#   2. rft         `swerl rft --rerender` on them (the model's chat template; gold records carry no token ids)
#                                                                  -> RUN/rft/ckpt, RUN/rft/rft.json
#   3. base-eval   the base model on the held-out split          -> RUN/base/iter-0/{eval-graded.jsonl,eval.json}
#                  (after rft, so no vLLM server competes with the trainer for the CPU)
#   4. eval-0: the RFT checkpoint on the held-out split (make rl-eval-start, MODEL=RUN/rft/ckpt) -> RUN/iter-0/
#   5. per DAPO iteration k < PM_ITERS (PM_ITERS=0: none): rollouts of checkpoint k, the DAPO update (turn penalty,
#      clip-higher, dynamic sampling), eval of checkpoint k+1                                      -> RUN/iter-k/...
#      From iteration PM_STAGE2_FROM on, the stage-2 rule: the pool is the train tasks solved in (0, 2/3) over the
#      run's history (make rl-stage2-pool), a longer T_max and a lower eps_high.
#   6. the table   scripts/paper_mini_table.py RUN                 -> RUN/table.md, RUN/table.json
#      and the report (swerl report RUN/base RUN)                   -> RUN/report.html
#
# The layout under RUN (iter-k/) is `make rl`'s, so `make rl-status RUNS=RUN` and `swerl report RUN` read it.
# Resumable: a stage whose output exists is skipped. Wall times land in RUN/times/<stage>.json.
# Why the bootstrap: the 135M base model resolves ~none of the tasks, so RFT on its own resolved samples (the paper's
# recipe) has no data. Every output names it (RUN/paper-mini.json, the demonstrations' run name, the table's header).

PM_RUNS ?= runs/paper-mini
PM_MODEL ?= .cache/smollm2-135m-instruct
# Task sources: the located toolz tasks (`make synth-tasks-located`: the statement's traceback shows the bug's line)
# when present, else the default toolz family (`make synth-tasks`), else the example-derived ones.
PM_SRC ?= $(firstword $(patsubst %/heldout.jsonl,%,$(wildcard .cache/synth/toolz-located/heldout.jsonl \
	.cache/synth/toolz/heldout.jsonl)) .cache/synth/examples/*)
PM_TRAIN_SRC ?= $(wildcard $(PM_SRC)/train.jsonl)
PM_HELDOUT_SRC ?= $(wildcard $(PM_SRC)/heldout.jsonl)
PM_HELDOUT_N ?= 16
PM_TRAIN_N ?= 16
PM_DEMO_N ?= 50
# PM_DISJOINT=1: cut the train tasks into two halves sharing no function (scripts/paper_mini_split.py): RFT's
# demonstrations come from one, DAPO's pool from the other, so DAPO trains on tasks RFT was never shown.
# Empty (the default): both draw from all train tasks, and every pool task is a demonstrated one.
PM_DISJOINT ?=
PM_SPLIT = $(filter-out 0 no false,$(PM_DISJOINT))
PM_DEMO_SRC ?= $(if $(PM_SPLIT),$(PM_RUNS)/demo-tasks.jsonl,$(PM_TRAIN_SRC))
# The demonstrations are drawn from PM_DEMO_SRC and DAPO's pool from PM_POOL_SRC: by default both from the train
# tasks (their two halves under PM_DISJOINT); either can name other task files (e.g. another library's `swerl tasks
# synth` output, alone or concatenated with toolz's), to demonstrate or train on more than one library.
PM_POOL_SRC ?= $(if $(PM_SPLIT),$(PM_RUNS)/pool-tasks.jsonl,$(PM_TRAIN_SRC))
# The small-model scaffold: a short prompt with one worked example, a 9-line editor window (examples/paper-mini/).
PM_COLLECT_CONFIG ?= examples/paper-mini/collect.yaml
PM_DEMO_POLICY ?= gold-steps
# Flags of the demonstrations' collect only, e.g. PM_DEMO_ARGS='--gold-mistakes 0.5': half the demonstrations make
# their first edit wrongly (masked in training) and correct it after the editor's answer (policy/gold_steps.py).
PM_DEMO_ARGS ?=
PM_ITERS ?= 2
PM_K ?= 4
PM_G ?= 4
PM_MAX_TURNS ?= 6
PM_MAX_NEW_TOKENS ?= 96
PM_CONTEXT ?= 2048
PM_CONCURRENCY ?= 6
# The step penalty (paper Eq. 4) for stage 1: 0 below PM_L_THR turns, reaching -1 at PM_T_MAX. With a 6-turn budget
# it also ranks failures by how they end (a 5-turn context-limit failure above a 6-turn turn-limit one);
# PM_L_THR=6 PM_T_MAX=12 leaves every stage-1 episode unpenalised, a binary reward (docs/training.md).
PM_L_THR ?= 2
PM_T_MAX ?= $(PM_MAX_TURNS)
PM_EPS_HIGH ?= 0.3
# DAPO's optimizer batch: 4 groups per step, so an iteration's pool makes up to 4 steps
PM_BATCH ?= $(shell echo $$(( $(PM_G) * 4 )))
PM_DAPO_LR ?= 2e-5
PM_RFT_LR ?= 2e-4
PM_RFT_EPOCHS ?= 3
PM_RFT_BATCH ?= 4
# Cap on RFT's optimizer steps (empty: every epoch in full); on a loaded 2-core machine the trainer sees ~8 tokens/s.
PM_RFT_MAX_STEPS ?=
# More `swerl rft` flags (make paper-mini-gain: --save-optimizer, for DAPO's optimizer start)
PM_RFT_ARGS ?=
PM_STAGE2_FROM ?= 2
# The grader's test timeout (swerl grade's default is the harness's 1,800 s): toolz's suite runs in 1-3 s quiet and
# ~25 s under heavy load, while a patch that makes it loop would hold a rollout batch for half an hour.
PM_GRADE_TIMEOUT ?= 120
PM_GRADE_ARGS = --timeout-s $(PM_GRADE_TIMEOUT)
# swerl dapo's default packs 16,384 tokens per forward/backward: ~20 GB of fp32 activations for SmolLM2's 30 layers,
# which with the vLLM server beside it does not fit 24 GiB (the kernel killed it); 4,096 tokens is ~5 GB.
PM_DAPO_ARGS ?= --micro-batch-tokens 4096
PM_SEED ?= 0
PM_PORT ?= 8012
PM_COLLECT_ARGS ?=

PM_STAGE = bash scripts/paper-mini-stage.sh $(PM_RUNS)
PM_SCAFFOLD = -c $(PM_COLLECT_CONFIG) --max-turns $(PM_MAX_TURNS) --max-context-tokens $(PM_CONTEXT) \
	--max-new-tokens $(PM_MAX_NEW_TOKENS) $(PM_COLLECT_ARGS)
# The RL loop's targets, run as a sub-make (written as plain `make` so that `make -n paper-mini` prints them).
PM_RL = make --no-print-directory RUNS=$(PM_RUNS) POLICY=vllm-server MODEL=$(PM_RUNS)/rft/ckpt \
	TASKS=$(PM_RUNS)/train.jsonl EVAL_TASKS=$(PM_RUNS)/heldout.jsonl G=$(PM_G) EVAL_SAMPLES=$(PM_K) \
	MAX_TURNS=$(PM_MAX_TURNS) MAX_NEW_TOKENS=$(PM_MAX_NEW_TOKENS) CONTEXT=$(PM_CONTEXT) \
	CONCURRENCY=$(PM_CONCURRENCY) L_THR=$(PM_L_THR) BATCH=$(PM_BATCH) LR=$(PM_DAPO_LR) SEED=$(PM_SEED) \
	VLLM_PORT=$(PM_PORT) VLLM_STATE=$(PM_RUNS)/vllm COLLECT_ARGS='-c $(PM_COLLECT_CONFIG) $(PM_COLLECT_ARGS)' \
	GRADE_ARGS='$(PM_GRADE_ARGS)' DAPO_ARGS='$(PM_DAPO_ARGS)'
PM_STAGE1 = STAGE=1 T_MAX=$(PM_T_MAX) EPS_HIGH=$(PM_EPS_HIGH)
PM_MAX_TURNS2 = $(shell echo $$(( 2 * $(PM_MAX_TURNS) )))
PM_STAGE2 = STAGE=2 T_MAX=$(PM_MAX_TURNS2) MAX_TURNS=$(PM_MAX_TURNS2) EPS_HIGH=0.26 \
	POOL=$(PM_RUNS)/stage2-pool.jsonl

.PHONY: paper-mini paper-mini-demos paper-mini-rft paper-mini-table paper-mini-report paper-mini-stop paper-mini-async

paper-mini:  ## the paper in miniature on SmolLM2-135M: base eval -> RFT (bootstrapped) -> eval -> DAPO -> eval, then the table
	@test -e $(PM_MODEL)/config.json || { echo "paper-mini: $(PM_MODEL) missing: run make real-model" >&2; exit 1; }
	@test -n "$(PM_HELDOUT_SRC)" || { echo "paper-mini: no tasks under $(PM_SRC): run make synth-tasks-located" >&2; exit 1; }
	@mkdir -p $(PM_RUNS)
	@test -s $(PM_RUNS)/heldout.jsonl || { cat $(PM_HELDOUT_SRC) | head -n $(PM_HELDOUT_N) > $(PM_RUNS)/.h.tmp \
	  && mv $(PM_RUNS)/.h.tmp $(PM_RUNS)/heldout.jsonl; }
	@test -z "$(PM_SPLIT)" -o -s $(PM_RUNS)/pool-tasks.jsonl || $(PY) scripts/paper_mini_split.py $(PM_TRAIN_SRC) \
	  $(PM_SEED) $(PM_RUNS)/demo-tasks.jsonl $(PM_RUNS)/pool-tasks.jsonl
	@test -s $(PM_RUNS)/train.jsonl || { cat $(PM_POOL_SRC) | shuf -n $(PM_TRAIN_N) --random-source=<(yes $(PM_SEED)) \
	  > $(PM_RUNS)/.t.tmp && mv $(PM_RUNS)/.t.tmp $(PM_RUNS)/train.jsonl; }
	@test -s $(PM_RUNS)/paper-mini.json || printf '%s\n' '{"bootstrap": "RFT on gold trajectories (BOOTSTRAPPED, not the model'"'"'s own): each train task'"'"'s gold patch acted out by the agent loop as readable steps (swerl collect --policy $(PM_DEMO_POLICY): open, edit, run the failing test, submit) and re-rendered with the model'"'"'s chat template; the base model resolves ~none, so the paper'"'"'s self-generated RFT data is empty", "model": "$(PM_MODEL)", "collect_config": "$(PM_COLLECT_CONFIG)", "demo_policy": "$(PM_DEMO_POLICY)", "demo_args": "$(PM_DEMO_ARGS)", "demo_n": $(PM_DEMO_N), "disjoint": "$(PM_DISJOINT)", "rft_epochs": $(PM_RFT_EPOCHS), "rft_max_steps": "$(PM_RFT_MAX_STEPS)", "rft_batch": $(PM_RFT_BATCH), "heldout": $(PM_HELDOUT_N), "train": $(PM_TRAIN_N), "k": $(PM_K), "g": $(PM_G), "iters": $(PM_ITERS), "max_turns": $(PM_MAX_TURNS), "max_new_tokens": $(PM_MAX_NEW_TOKENS), "context": $(PM_CONTEXT), "l_thr": $(PM_L_THR), "t_max": $(PM_T_MAX), "eps_high": $(PM_EPS_HIGH), "dapo_lr": $(PM_DAPO_LR), "rft_lr": $(PM_RFT_LR), "stage2_from": $(PM_STAGE2_FROM), "seed": $(PM_SEED), "batch": $(PM_BATCH), "grade_timeout_s": $(PM_GRADE_TIMEOUT), "dapo_args": "$(PM_DAPO_ARGS)", "tasks": "$(PM_SRC)", "demos": "$(PM_DEMO_SRC)", "pool": "$(PM_POOL_SRC)"}' > $(PM_RUNS)/paper-mini.json
	@set -e; trap 'bash scripts/rl-vllm.sh stop - $(PM_PORT) $(PM_RUNS)/vllm' EXIT; \
	$(PM_STAGE) rft-demos $(PM_RUNS)/rft/demos.jsonl -- make --no-print-directory paper-mini-demos PM_RUNS=$(PM_RUNS); \
	$(PM_STAGE) rft $(PM_RUNS)/rft/rft.json -- make --no-print-directory paper-mini-rft PM_RUNS=$(PM_RUNS); \
	$(PM_STAGE) base-eval $(PM_RUNS)/base/iter-0/eval.json -- \
	  $(PM_RL) $(PM_STAGE1) RUNS=$(PM_RUNS)/base MODEL=$(PM_MODEL) K=0 rl-eval-start; \
	$(PM_STAGE) eval-0 $(PM_RUNS)/iter-0/eval.json -- $(PM_RL) $(PM_STAGE1) K=0 rl-eval-start; \
	for k in $$(seq 0 $$(( $(PM_ITERS) - 1 ))); do \
	  if [ $$k -ge $(PM_STAGE2_FROM) ]; then s='$(PM_STAGE2)'; \
	    test -s $(PM_RUNS)/stage2-pool.jsonl || $(PM_RL) rl-stage2-pool; else s='$(PM_STAGE1)'; fi; \
	  $(PM_STAGE) rollouts-$$k $(PM_RUNS)/iter-$$k/graded.jsonl -- $(PM_RL) $$s K=$$k rl-collect; \
	  $(PM_STAGE) dapo-$$k $(PM_RUNS)/iter-$$k/dapo.json -- $(PM_RL) $$s K=$$k rl-update; \
	  $(PM_STAGE) eval-$$(( k + 1 )) $(PM_RUNS)/iter-$$(( k + 1 ))/eval.json -- $(PM_RL) $$s K=$$k rl-eval; \
	done
	@$(MAKE) --no-print-directory paper-mini-table paper-mini-report PM_RUNS=$(PM_RUNS)

# The bootstrap's demonstrations: gold patches acted out as readable steps by the agent loop in the small-model
# scaffold (policy/gold_steps.py), graded; only resolved ones are kept.
paper-mini-demos:
	@set -eo pipefail; mkdir -p $(PM_RUNS)/rft; cat $(PM_DEMO_SRC) | shuf -n $(PM_DEMO_N) --random-source=<(yes $(PM_SEED)-demos) \
	  | $(SWERL) collect --policy $(PM_DEMO_POLICY) --run bootstrap-gold-demos $(PM_SCAFFOLD) $(PM_DEMO_ARGS) \
	    --concurrency $(PM_CONCURRENCY) \
	  | $(SWERL) grade --workers $(PM_CONCURRENCY) $(PM_GRADE_ARGS) \
	  | $(SWERL) filter --resolved - > $(PM_RUNS)/rft/.demos.jsonl.tmp
	@mv $(PM_RUNS)/rft/.demos.jsonl.tmp $(PM_RUNS)/rft/demos.jsonl

# SmolLM2's template has no {% generation %} markers, which --rerender needs: rft starts from a copy of the model
# whose template renders the same bytes with markers (scripts/paper_mini_template.py checks that); the checkpoint then
# gets the model's own template back, so vLLM renders exactly what it rendered for the base model.
paper-mini-rft:
	@$(PY) scripts/paper_mini_template.py $(PM_MODEL) $(PM_RUNS)/rft/base-marked
	@set -eo pipefail; $(SWERL) rft $(PM_RUNS)/rft/demos.jsonl --model $(PM_RUNS)/rft/base-marked \
	  --output $(PM_RUNS)/rft/ckpt \
	  --rerender --lr $(PM_RFT_LR) --epochs $(PM_RFT_EPOCHS) --batch-size $(PM_RFT_BATCH) --warmup-steps 0 \
	  $(if $(PM_RFT_MAX_STEPS),--max-steps $(PM_RFT_MAX_STEPS)) $(PM_RFT_ARGS) \
	  --max-seq-len $(PM_CONTEXT) --too-long truncate --seed $(PM_SEED) > $(PM_RUNS)/rft/.rft.json.tmp
	@cp $(PM_MODEL)/chat_template.jinja $(PM_RUNS)/rft/ckpt/chat_template.jinja
	@mv $(PM_RUNS)/rft/.rft.json.tmp $(PM_RUNS)/rft/rft.json

paper-mini-table:  ## the paper-style table of a paper-mini run (PM_RUNS=runs/paper-mini): RUN/table.md, RUN/table.json
	@$(PY) scripts/paper_mini_table.py $(PM_RUNS)

# The base model's eval is RUN/base/iter-0 and the RFT checkpoint's RUN/iter-0: with two run directories the page
# labels each iteration by its directory ("base/iter-0", "<run>/iter-0").
paper-mini-report:  ## swerl report of a paper-mini run: RUN/report.html (base eval, then RFT and each DAPO checkpoint)
	@$(SWERL) report $(PM_RUNS)/base $(PM_RUNS) -o $(PM_RUNS)/report.html \
	  --title "paper-mini $(PM_RUNS): base/iter-0 = the base model, iter-0 = RFT (BOOTSTRAPPED on gold demonstrations), iter-k = DAPO-k"

paper-mini-stop:  ## stop paper-mini's vLLM server (make paper-mini stops it when it ends)
	@bash scripts/rl-vllm.sh stop - $(PM_PORT) $(PM_RUNS)/vllm

# The asynchronous loop on the same run (issue 25's learning test on the real-model family): from the same RFT
# checkpoint, on the same train pool and settings, `make rl ASYNC=1 STALENESS=PM_STALENESS` runs PM_ITERS updates of
# one pool's worth of groups each (collection never waits; groups at most K steps stale; loss `tis`), then the last
# checkpoint is evaluated on the held-out split with the same seeds as the synchronous evals, and
# scripts/paper_mini_async.py compares it with the synchronous run's last DAPO checkpoint (needs make paper-mini
# first):                                      -> RUN/async/iter-k/..., RUN/async/compare.{md,json}
# K in optimizer steps: one update of the pool makes up to ceil(PM_TRAIN_N x PM_G / PM_BATCH) = 4 steps, so K = 4
# lets the collector run one pass ahead of the trainer (scripts/rl-async.sh `ahead`); a smaller K drops that pass.
PM_STALENESS ?= $(shell echo $$(( ($(PM_TRAIN_N) * $(PM_G) + $(PM_BATCH) - 1) / $(PM_BATCH) )))
PM_ASYNC_PORT ?= 8014
PM_ASYNC = $(PM_RL) $(PM_STAGE1) RUNS=$(PM_RUNS)/async VLLM_STATE=$(PM_RUNS)/async/vllm VLLM_PORT=$(PM_ASYNC_PORT)

paper-mini-async:  ## the async loop (STALENESS=PM_STALENESS) from paper-mini's RFT checkpoint, evaluated and compared with the sync DAPO
	@test -s $(PM_RUNS)/iter-$(PM_ITERS)/eval.json || { echo "paper-mini-async: $(PM_RUNS)/iter-$(PM_ITERS)/eval.json missing: run make paper-mini first" >&2; exit 1; }
	@set -e; trap 'bash scripts/rl-vllm.sh stop - $(PM_ASYNC_PORT) $(PM_RUNS)/async/vllm' EXIT; \
	bash scripts/paper-mini-stage.sh $(PM_RUNS)/async async-rl $(PM_RUNS)/async/iter-$(PM_ITERS)/ckpt/config.json -- \
	  $(PM_ASYNC) ASYNC=1 STALENESS=$(PM_STALENESS) ITERS=$(PM_ITERS) VLLM_KEEP=1 rl; \
	bash scripts/paper-mini-stage.sh $(PM_RUNS)/async async-eval $(PM_RUNS)/async/iter-$(PM_ITERS)/eval.json -- \
	  $(PM_ASYNC) K=$(PM_ITERS) rl-eval-start
	@$(PY) scripts/paper_mini_async.py $(PM_RUNS)
