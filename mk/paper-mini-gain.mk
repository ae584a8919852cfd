# make paper-mini-gain (issue 41): the RFT -> DAPO gain on SmolLM2-135M-Instruct, measured with enough power to see
# it. Included from the Makefile; docs/training.md "paper-mini-gain" gives the design and the measured run.
#
#   1. synth        toolz off-by-one and operator-flip tasks, located (make synth-tasks-gain: 56 tasks of 35
#                   functions, cached in .cache/synth), and the located family of every kind (make synth-tasks-located)
#   2. split        BEFORE any training: the family cut by function into a held-out split of PG_HELDOUT_N tasks, DAPO's
#                   pool (PG_POOL_N) and the demonstrations' tasks (scripts/paper_mini_gain_split.py), topped up with
#                   located tasks of other functions (toolz has too few flip mutants for three parts): no function in
#                   two parts, the held-out kinds are the pool's. RUN/split.json: paths, sha256, seed, per-kind counts
#   3. rft-demos    gold patches acted out by the agent loop on the demonstration tasks, graded, resolved kept
#   4. rft          swerl rft --rerender --save-optimizer (the AdamW moments, for DAPO's optimizer start)
#   5. probe-data   the probe's fixed trajectories: gold-steps on the held-out tasks (resolved) and 8 demonstrations
#   6. probe-rft    the forward-only probe of the RFT checkpoint (scripts/paper_mini_probe.py; about a minute)
#   7. base-eval    the base model: PG_BASE_K samples per held-out task (seeds EVAL_SEED = PG_SEED, so they pair
#                   with the first PG_BASE_K samples of every other eval)
#   8. rft-eval     the RFT checkpoint: PG_K samples per held-out task (32 x 4 = 128 episodes)
#   then, in RUN/dapo-s<PG_DAPO_SEED>/ (make paper-mini-gain-dapo; the layout is make rl's):
#   9. rollouts-k   the active pool (make rl ACTIVE_POOL=1): the pool tasks neither always nor never solved so far,
#                   G = PG_G samples each, graded
#  10. calibrate    once per run, on the first seed's iteration-0 batch: one DAPO update per optimizer start of
#                   PG_CANDIDATES, probed (scripts/dapo_calibrate.py); the pre-registered rule picks one
#                   (RUN/calibration/choice.json), every DAPO update of the run uses its flags, and the chosen
#                   candidate's update is iteration 0's (the same command rl-update runs, so it is not run twice)
#  11. dapo-k       the update: whole groups per step, sampler logprobs as pi_old when the logged gap allows
#  12. probe-k      the probe of checkpoint k (no sampled eval between iterations)
#  13. eval-last    the last checkpoint on the held-out split, PG_K samples per task, the RFT eval's seeds
#  14. the table    scripts/paper_mini_gain_table.py RUN -> RUN/table.md, RUN/table.json, RUN/curve.png
# Resumable: a stage whose output exists is skipped (scripts/paper-mini-stage.sh; wall times in */times/).
# The second DAPO seed, from the same RFT checkpoint and evals: make paper-mini-gain-dapo PG_DAPO_SEED=1, then
# make paper-mini-gain-table.

PG_RUNS ?= runs/paper-mini-gain
PG_SEED ?= 0
PG_DAPO_SEED ?= $(PG_SEED)
PG_DAPO_DIR = $(PG_RUNS)/dapo-s$(PG_DAPO_SEED)
PG_TASKS ?= $(SYNTH_GAIN)/train.jsonl
PG_DEMO_EXTRA ?= .cache/synth/$(SYNTH_LIB)-located/train.jsonl .cache/synth/$(SYNTH_LIB)-located/heldout.jsonl
PG_HELDOUT_N ?= 32
PG_POOL_N ?= 12
PG_DEMO_N ?= 50
PG_K ?= 4
PG_BASE_K ?= 2
PG_G ?= 8
PG_ITERS ?= 3
# 4 whole groups of 8 per optimizer step
PG_BATCH ?= 32
PG_DAPO_LR ?= 5e-5
# A binary reward (the best-measured setting, docs/training.md): no step penalty inside the 6-turn budget
PG_L_THR ?= 6
PG_T_MAX ?= 12
PG_CANDIDATES ?= eps=1e-8,carried-v
PG_PORT ?= 8016
# The probe's fixed trajectories: gold edits on the first PG_GOLD_N held-out tasks, the frame of the first PG_FRAME_N
# demonstrations (a forward pass is ~7 s of CPU per trajectory here: 24 of them keep a probe near 2 minutes)
PG_GOLD_N ?= 16
PG_FRAME_N ?= 8

PG_STAGE = bash scripts/paper-mini-stage.sh $(PG_RUNS)
PG_PM = make --no-print-directory PM_RUNS=$(PG_RUNS) PM_SEED=$(PG_SEED)
PG_RL = make --no-print-directory POLICY=vllm-server STAGE=1 G=$(PG_G) EVAL_SAMPLES=$(PG_K) \
	MAX_TURNS=$(PM_MAX_TURNS) MAX_NEW_TOKENS=$(PM_MAX_NEW_TOKENS) CONTEXT=$(PM_CONTEXT) CONCURRENCY=$(PM_CONCURRENCY) \
	L_THR=$(PG_L_THR) T_MAX=$(PG_T_MAX) EPS_HIGH=$(PM_EPS_HIGH) BATCH=$(PG_BATCH) LR=$(PG_DAPO_LR) \
	SEED=$(PG_DAPO_SEED) EVAL_SEED=$(PG_SEED) VLLM_PORT=$(PG_PORT) VLLM_STATE=$(PG_RUNS)/vllm \
	TASKS=$(PG_RUNS)/pool.jsonl POOL=$(PG_RUNS)/pool.jsonl EVAL_TASKS=$(PG_RUNS)/heldout.jsonl \
	COLLECT_ARGS='-c $(PM_COLLECT_CONFIG) $(PM_COLLECT_ARGS)' GRADE_ARGS='$(PM_GRADE_ARGS)'
# The flags every update of the run shares (rl-update's, which the calibration's candidates also get)
PG_UPDATE_FLAGS = --group-size $(PG_G) --t-max $(PG_T_MAX) --l-thr $(PG_L_THR) --eps-high $(PM_EPS_HIGH) \
	--batch-size $(PG_BATCH) --max-seq-len $(PM_CONTEXT) --seed $(PG_DAPO_SEED) $(PM_DAPO_ARGS)
PG_PROBE = $(PY) scripts/paper_mini_probe.py --ref $(PG_RUNS)/rft/ckpt --tokenizer $(PG_RUNS)/rft/base-marked \
	--gold $(PG_RUNS)/probe/gold.jsonl --frame $(PG_RUNS)/probe/frame.jsonl --ref-cache $(PG_RUNS)/probe/ref-logprobs.json
# The calibration's decision; a seed's directory keeps the one its updates used (DIR/choice.json). Another rule on
# the recorded candidates: scripts/dapo_calibrate.py --rechoose OLD NEW, then PG_CHOICE=NEW (docs/training.md)
PG_CHOICE ?= $(PG_RUNS)/calibration/choice.json
PG_STOP = bash scripts/rl-vllm.sh stop - $(PG_PORT) $(PG_RUNS)/vllm

.PHONY: paper-mini-gain paper-mini-gain-dapo paper-mini-gain-probe-data paper-mini-gain-table paper-mini-gain-stop

paper-mini-gain:  ## RFT -> DAPO on SmolLM2 with a pre-registered 32-task split, paired 128-episode evals, a learning curve
	@test -e $(PM_MODEL)/config.json || { echo "paper-mini-gain: $(PM_MODEL) missing: run make real-model" >&2; exit 1; }
	@mkdir -p $(PG_RUNS)
	@set -e; trap '$(PG_STOP)' EXIT; \
	$(PG_STAGE) synth $(PG_TASKS) -- make --no-print-directory synth-tasks-gain; \
	$(PG_STAGE) synth-located $(lastword $(PG_DEMO_EXTRA)) -- make --no-print-directory synth-tasks-located; \
	$(PG_STAGE) split $(PG_RUNS)/split.json -- $(PY) scripts/paper_mini_gain_split.py $(PG_TASKS) $(PG_SEED) $(PG_RUNS) \
	  --heldout $(PG_HELDOUT_N) --pool $(PG_POOL_N) --demos $(PG_DEMO_N) $(foreach f,$(PG_DEMO_EXTRA),--demo-extra $(f)); \
	test -s $(PG_RUNS)/paper-mini-gain.json || printf '%s\n' '{"model": "$(PM_MODEL)", "tasks": "$(PG_TASKS)", "seed": $(PG_SEED), "heldout": $(PG_HELDOUT_N), "pool": $(PG_POOL_N), "demos": $(PG_DEMO_N), "k": $(PG_K), "base_k": $(PG_BASE_K), "g": $(PG_G), "iters": $(PG_ITERS), "batch": $(PG_BATCH), "dapo_lr": $(PG_DAPO_LR), "l_thr": $(PG_L_THR), "t_max": $(PG_T_MAX), "eps_high": $(PM_EPS_HIGH), "candidates": "$(PG_CANDIDATES)", "max_turns": $(PM_MAX_TURNS), "max_new_tokens": $(PM_MAX_NEW_TOKENS), "context": $(PM_CONTEXT), "rft_lr": $(PM_RFT_LR), "rft_epochs": $(PM_RFT_EPOCHS), "rft_batch": $(PM_RFT_BATCH), "grade_timeout_s": $(PM_GRADE_TIMEOUT), "dapo_args": "$(PM_DAPO_ARGS)", "collect_config": "$(PM_COLLECT_CONFIG)"}' \
	  > $(PG_RUNS)/paper-mini-gain.json; \
	$(PG_STAGE) rft-demos $(PG_RUNS)/rft/demos.jsonl -- $(PG_PM) paper-mini-demos PM_DEMO_SRC=$(PG_RUNS)/demo-tasks.jsonl \
	  PM_DEMO_N=$(PG_DEMO_N); \
	$(PG_STAGE) rft $(PG_RUNS)/rft/rft.json -- $(PG_PM) paper-mini-rft PM_RFT_ARGS=--save-optimizer; \
	$(PG_STAGE) rft-weights $(PG_RUNS)/rft/weights/config.json -- bash -c 'mkdir -p $(PG_RUNS)/rft/.weights && \
	  for f in $(PG_RUNS)/rft/ckpt/*; do [ "$${f##*/}" = optimizer_state ] || ln -sfn ../ckpt/$${f##*/} $(PG_RUNS)/rft/.weights/; done \
	  && rm -rf $(PG_RUNS)/rft/weights && mv $(PG_RUNS)/rft/.weights $(PG_RUNS)/rft/weights'; \
	$(PG_STAGE) probe-data $(PG_RUNS)/probe/frame.jsonl -- make --no-print-directory paper-mini-gain-probe-data PG_RUNS=$(PG_RUNS); \
	$(PG_STAGE) probe-rft $(PG_RUNS)/rft/probe.json -- $(PG_PROBE) --model $(PG_RUNS)/rft/ckpt --label RFT \
	  -o $(PG_RUNS)/rft/probe.json; \
	$(PG_STAGE) base-eval $(PG_RUNS)/base/iter-0/eval.json -- $(PG_RL) RUNS=$(PG_RUNS)/base MODEL=$(PM_MODEL) \
	  EVAL_SAMPLES=$(PG_BASE_K) K=0 rl-eval-start; \
	$(PG_STAGE) rft-eval $(PG_RUNS)/rft-eval/iter-0/eval.json -- $(PG_RL) RUNS=$(PG_RUNS)/rft-eval \
	  MODEL=$(PG_RUNS)/rft/weights K=0 rl-eval-start; \
	make --no-print-directory paper-mini-gain-dapo PG_RUNS=$(PG_RUNS) PG_KEEP_SERVER=1
	@$(MAKE) --no-print-directory paper-mini-gain-table PG_RUNS=$(PG_RUNS)

# DAPO from the RFT checkpoint with seed PG_DAPO_SEED (the rollouts' and the trainer's; the evals keep PG_SEED's).
# Iteration 0's update is the calibration's chosen candidate when the calibration ran on this directory's batch.
paper-mini-gain-dapo:  ## the DAPO half of paper-mini-gain for one seed (PG_DAPO_SEED), then the last checkpoint's eval
	@test -s $(PG_RUNS)/rft-eval/iter-0/eval.json || { echo "paper-mini-gain-dapo: run make paper-mini-gain first" >&2; exit 1; }
	@set -e; D=$(PG_DAPO_DIR); S="bash scripts/paper-mini-stage.sh $$D"; \
	$(if $(PG_KEEP_SERVER),,trap '$(PG_STOP)' EXIT;) mkdir -p $$D/iter-0; \
	for f in eval-graded.jsonl eval.json; do test -s $$D/iter-0/$$f || cp $(PG_RUNS)/rft-eval/iter-0/$$f $$D/iter-0/$$f; done; \
	for k in $$(seq 0 $$(( $(PG_ITERS) - 1 ))); do n=$$(( k + 1 )); \
	  $$S rollouts-$$k $$D/iter-$$k/graded.jsonl -- $(PG_RL) RUNS=$$D MODEL=$(PG_RUNS)/rft/weights ACTIVE_POOL=1 \
	    EVAL=0 K=$$k rl-collect; \
	  if [ $$k = 0 ]; then \
	    $(PG_STAGE) calibrate $(PG_CHOICE) -- $(PY) scripts/dapo_calibrate.py --model $(PG_RUNS)/rft/weights \
	      --init-from $(PG_RUNS)/rft/ckpt --tokenizer $(PG_RUNS)/rft/base-marked --graded $$D/iter-0/graded.jsonl \
	      --gold $(PG_RUNS)/probe/gold.jsonl --frame $(PG_RUNS)/probe/frame.jsonl --out $(PG_RUNS)/calibration \
	      --ref-cache $(PG_RUNS)/probe/ref-logprobs.json --lr $(PG_DAPO_LR) --candidates $(PG_CANDIDATES) \
	      --choice $(PG_CHOICE) -- $(PG_UPDATE_FLAGS); \
	    $(PY) scripts/paper_mini_gain_adopt.py $(PG_CHOICE) $$D; \
	    test -s $$D/choice.json || cp $(PG_CHOICE) $$D/choice.json; \
	  fi; \
	  flags=$$($(PY) -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["flags"]))' $$D/choice.json); \
	  $$S dapo-$$k $$D/iter-$$k/dapo.json -- $(PG_RL) RUNS=$$D MODEL=$(PG_RUNS)/rft/weights EVAL=0 K=$$k \
	    DAPO_ARGS="$(PM_DAPO_ARGS) $$flags" rl-update; \
	  $$S probe-$$n $$D/iter-$$n/probe.json -- $(PG_PROBE) --model $$D/iter-$$n/ckpt --label DAPO-$$n \
	    -o $$D/iter-$$n/probe.json; \
	done; \
	$$S eval-last $$D/iter-$(PG_ITERS)/eval.json -- $(PG_RL) RUNS=$$D K=$(PG_ITERS) rl-eval-start

# The probe's fixed trajectories: the first PG_GOLD_N held-out tasks' gold patches acted out by the agent loop
# (gold-steps, the demonstrations' policy), graded, resolved kept; the first PG_FRAME_N demonstrations (their frame).
paper-mini-gain-probe-data:
	@set -eo pipefail; mkdir -p $(PG_RUNS)/probe; head -n $(PG_GOLD_N) $(PG_RUNS)/heldout.jsonl \
	  | $(SWERL) collect --policy gold-steps --run probe-gold $(PM_SCAFFOLD) --concurrency $(PM_CONCURRENCY) - \
	  | $(SWERL) grade --workers $(PM_CONCURRENCY) $(PM_GRADE_ARGS) \
	  | $(SWERL) filter --resolved - > $(PG_RUNS)/probe/.gold.jsonl.tmp; \
	mv $(PG_RUNS)/probe/.gold.jsonl.tmp $(PG_RUNS)/probe/gold.jsonl; \
	head -n $(PG_FRAME_N) $(PG_RUNS)/rft/demos.jsonl > $(PG_RUNS)/probe/.frame.jsonl.tmp; \
	mv $(PG_RUNS)/probe/.frame.jsonl.tmp $(PG_RUNS)/probe/frame.jsonl

paper-mini-gain-table:  ## the table, paired statistics and learning curve of a paper-mini-gain run: RUN/table.md, RUN/curve.png
	@$(PY) scripts/paper_mini_gain_table.py $(PG_RUNS)

paper-mini-gain-stop:  ## stop paper-mini-gain's vLLM server (the target stops it when it ends)
	@$(PG_STOP)
