# The synchronous RL loop of the paper as make targets (included from the Makefile).
#
#   make rl-iter K=0            one iteration: checkpoint k -> collect G samples per task | grade -> dapo -> ckpt k+1 -> eval
#   make rl-status              per iteration: rollout reward and resolve rate, steps; eval pass@1 of each checkpoint
#   make rl ITERS=5             iterations 0..ITERS-1, resumable: a finished step's output is skipped
#   make rl STAGE=2 ...         stage-2 settings (context, T_max, eps_high, batch, task pool)
#   make rl-stage2-pool         the stage-2 pool: drop tasks solved >= 2/3 over the run history and never solved
#   make rl ACTIVE_POOL=1 G=8   the active pool: iteration k collects only the POOL tasks neither always nor never
#                               solved in iterations < k (unseen ones stay; iter-k/pool.jsonl, scripts/active_pool.py)
#   make rl ASYNC=1 STALENESS=K POLICY=vllm-server
#                               the asynchronous loop (scripts/rl-async.sh): collection runs continuously against the
#                               server while `swerl dapo --follow` trains on groups at most K optimizer steps stale
#                               and pushes each checkpoint into the server in place; ITERS updates of one pool's
#                               worth of groups each. STALENESS=0 is the paper's synchronous loop (the targets
#                               below, unchanged: its updates are today's, bit for bit)
#
# Layout: $(RUNS)/iter-k/{ckpt/ (checkpoint k; iteration 0 uses MODEL), graded.jsonl, dapo.json, metrics.jsonl,
# eval-graded.jsonl, eval.json (the eval of checkpoint k, iteration 0's included)}. Every output is written under a temporary name and renamed when complete, so an
# interrupted iteration leaves complete outputs or none, and `make rl` picks up where it stopped.

# vLLM's CPU attention needs head_dim 32: the vllm-server loop starts from the vLLM-shaped tiny model.
MODEL ?= $(if $(filter vllm-server,$(POLICY)),.cache/tiny-model-vllm,.cache/tiny-model)
RUNS ?= runs
STAGE ?= 1
TASKS ?= examples/toy-tasks.jsonl
EVAL_TASKS ?= $(TASKS)
G ?= 10
PROBLEMS ?=
ITERS ?= 1
K ?= 0
START ?= 0
POLICY ?= hf
CONCURRENCY ?= 4
EVAL ?= 1
EVAL_SAMPLES ?= 1
NPROC ?= 1
MAX_NEW_TOKENS ?= 4096
SEED ?= 0
# The eval's seeds (EVAL_SEED*100000 + 99000 + sample): one value for every checkpoint compared, so their episodes pair
EVAL_SEED ?= $(SEED)
VLLM_PORT ?= 8011
VLLM_ARGS ?=
VLLM_SLEEP ?= 0
VLLM_STATE ?= $(RUNS)/vllm
VLLM_KEEP ?= 0
COLLECT_ARGS ?=
GRADE_ARGS ?=
DAPO_ARGS ?=
EVAL_ARGS ?=
ASYNC ?= 0
ACTIVE_POOL ?= 0
STALENESS ?= 1
GROUPS_PER_UPDATE ?=
LOSS ?= tis

# Stage settings (paper Table 3). Override any of them on the command line.
ifeq ($(STAGE),2)
T_MAX ?= 80
EPS_HIGH ?= 0.26
BATCH ?= 256
CONTEXT ?= 131072
POOL ?= $(RUNS)/stage2-pool.jsonl
else
T_MAX ?= 40
EPS_HIGH ?= 0.3
BATCH ?= 128
CONTEXT ?= 65536
POOL ?= $(TASKS)
endif
L_THR ?= 10
LR ?= 1e-6
MAX_TURNS ?= $(T_MAX)

# One process by default; NPROC > 1 runs the update under torchrun (every rank reads graded.jsonl).
DAPO_LAUNCH = $(if $(filter 1,$(NPROC)),$(SWERL),$(VENV)/bin/torchrun --nproc_per_node $(NPROC) -m swerl_cli)
ITER_DIR = $(RUNS)/iter-$(K)
NEXT = $(shell echo $$(( $(K) + 1 )))
NEXT_DIR = $(RUNS)/iter-$(NEXT)
CKPT = $(if $(filter 0,$(K)),$(MODEL),$(ITER_DIR)/ckpt)
VLLM_URL = http://127.0.0.1:$(VLLM_PORT)
# ACTIVE_POOL=1: the tasks iteration k samples, written from POOL and the graded rollouts of iterations < k
ITER_POOL = $(if $(filter 1,$(ACTIVE_POOL)),$(ITER_DIR)/pool.jsonl,$(POOL))
active_pool = $(if $(filter 1,$(ACTIVE_POOL)),$(PY) scripts/active_pool.py $(POOL) $(ITER_DIR)/pool.jsonl \
  $$(for j in $$(seq 0 $$(( $(K) - 1 ))); do f=$(RUNS)/iter-$$j/graded.jsonl; if [ -s $$f ]; then echo $$f; fi; done),true)

# The policy flags collect gets for checkpoint $(1): `hf` loads it in-process (CPU path); `vllm-server` uses one
# vLLM OpenAI server for the whole run (scripts/rl-vllm.sh): started once, and after each update the new checkpoint
# is loaded into it in place, its prefix cache reset and a probe checked (its logprobs must equal the trainer's for
# the new checkpoint, or the loop stops). VLLM_SLEEP=1 puts it to sleep during the update (GPU colocated).
ifeq ($(POLICY),vllm-server)
export PY
export VLLM_ARGS
export VLLM_CONCURRENCY := $(CONCURRENCY)
export VLLM_CONTEXT := $(CONTEXT)
policy_flags = --policy openai --model swerl-policy --policy-version $(1) --base-url $(VLLM_URL)/v1
serve = bash scripts/rl-vllm.sh ensure $(1) $(VLLM_PORT) $(VLLM_STATE)
refresh = bash scripts/rl-vllm.sh reload $(1) $(VLLM_PORT) $(VLLM_STATE)
unserve = $(if $(filter 1,$(VLLM_SLEEP)),bash scripts/rl-vllm.sh sleep - $(VLLM_PORT) $(VLLM_STATE),true)
stop_server = $(if $(filter 1,$(VLLM_KEEP)),true,bash scripts/rl-vllm.sh stop - $(VLLM_PORT) $(VLLM_STATE))
else
policy_flags = --policy $(POLICY) --model $(1)
serve = true
refresh = true
unserve = true
stop_server = true
endif

.PHONY: rl rl-iter rl-eval-start rl-collect rl-update rl-eval rl-stage2-pool rl-status rl-stop

RL_ASYNC = $(and $(filter 1,$(ASYNC)),$(filter-out 0,$(STALENESS)))

rl:  ## RL loop: ITERS iterations from START (resumable; ASYNC=1 STALENESS=K: asynchronous; see mk/rl.mk)
ifneq ($(RL_ASYNC),)
	@test "$(POLICY)" = vllm-server || { echo "rl: ASYNC=1 pushes weights into a running server: use POLICY=vllm-server" >&2; exit 2; }
	@set -e; trap '$(stop_server)' EXIT; \
	  RUNS=$(RUNS) MODEL=$(MODEL) POOL=$(POOL) ITERS=$(ITERS) STALENESS=$(STALENESS) G=$(G) SEED=$(SEED) \
	  GROUPS_PER_UPDATE=$(GROUPS_PER_UPDATE) MAX_TURNS=$(MAX_TURNS) CONTEXT=$(CONTEXT) T_MAX=$(T_MAX) L_THR=$(L_THR) \
	  MAX_NEW_TOKENS=$(MAX_NEW_TOKENS) CONCURRENCY=$(CONCURRENCY) EPS_HIGH=$(EPS_HIGH) BATCH=$(BATCH) LR=$(LR) \
	  VLLM_PORT=$(VLLM_PORT) VLLM_STATE=$(VLLM_STATE) SWERL=$(SWERL) PY=$(PY) COLLECT_ARGS='$(COLLECT_ARGS)' \
	  GRADE_ARGS='$(GRADE_ARGS)' DAPO_ARGS='$(DAPO_ARGS)' LOSS=$(LOSS) bash scripts/rl-async.sh
else
	@set -e; trap '$(stop_server)' EXIT; \
	  for k in $$(seq $(START) $$(( $(START) + $(ITERS) - 1 ))); do $(MAKE) --no-print-directory rl-iter K=$$k; done
endif

rl-stop:  ## stop the vLLM server of POLICY=vllm-server (make rl stops it unless VLLM_KEEP=1; rl-iter leaves it up)
	@bash scripts/rl-vllm.sh stop - $(VLLM_PORT) $(VLLM_STATE)

rl-iter: rl-eval-start rl-collect rl-update rl-eval  ## one RL iteration K: collect | grade -> dapo -> eval of checkpoint K+1

# 1. Rollouts of checkpoint k, graded: collect G samples per task | grade -> iter-k/graded.jsonl
rl-collect: rl-eval-start
	@mkdir -p $(ITER_DIR)
	@if [ -s $(ITER_DIR)/graded.jsonl ]; then echo "rl: $(ITER_DIR)/graded.jsonl exists, skipping rollouts"; else \
	  set -eo pipefail; test -e $(CKPT)/config.json || { echo "rl: checkpoint $(CKPT) missing" >&2; exit 1; }; \
	  $(call serve,$(CKPT)); $(active_pool); \
	  if [ -n "$(PROBLEMS)" ]; then shuf -n $(PROBLEMS) --random-source=<(yes $(SEED)-$(K)) $(ITER_POOL); else cat $(ITER_POOL); fi \
	  | $(SWERL) collect $(call policy_flags,$(CKPT)) --samples $(G) --run iter-$(K) --max-turns $(MAX_TURNS) \
	      --max-context-tokens $(CONTEXT) --max-new-tokens $(MAX_NEW_TOKENS) --concurrency $(CONCURRENCY) \
	      --seed $$(( $(SEED) * 100000 + $(K) * 1000 )) $(COLLECT_ARGS) \
	  | $(SWERL) grade --workers $(CONCURRENCY) $(GRADE_ARGS) > $(ITER_DIR)/.graded.jsonl.tmp; \
	  mv $(ITER_DIR)/.graded.jsonl.tmp $(ITER_DIR)/graded.jsonl; fi

# 2. The DAPO update: iter-k/graded.jsonl + checkpoint k -> iter-(k+1)/ckpt (swerl dapo writes it atomically)
rl-update: rl-collect
	@if [ -e $(NEXT_DIR)/ckpt/config.json ]; then echo "rl: $(NEXT_DIR)/ckpt exists, skipping update"; else \
	  set -eo pipefail; $(unserve); mkdir -p $(NEXT_DIR); \
	  $(DAPO_LAUNCH) dapo --model $(CKPT) --output $(NEXT_DIR)/ckpt --metrics $(ITER_DIR)/metrics.jsonl \
	    --group-size $(G) --t-max $(T_MAX) --l-thr $(L_THR) --eps-high $(EPS_HIGH) --batch-size $(BATCH) \
	    --lr $(LR) --max-seq-len $(CONTEXT) --seed $(SEED) $(DAPO_ARGS) $(ITER_DIR)/graded.jsonl \
	    > $(ITER_DIR)/.dapo.json.tmp; \
	  mv $(ITER_DIR)/.dapo.json.tmp $(ITER_DIR)/dapo.json; \
	  $(call refresh,$(NEXT_DIR)/ckpt); \
	  $(if $(filter 0,$(K)),,rm -rf $(ITER_DIR)/ckpt/optimizer_state;) fi

# 3. Held-out evaluation of checkpoint k+1 (EVAL=0 skips it). Checkpoint k's own eval is made first when it is
# missing, so iteration 0 evaluates the starting MODEL: every checkpoint of a run is evaluated once, with the same
# seeds (SEED*100000 + 99000 + sample; rollouts use SEED*100000 + K*1000 + sample), and iter-k/eval.json always
# holds checkpoint k's.
# $(call eval_ckpt,CHECKPOINT,DIR,K)
define eval_ckpt
	@if [ "$(EVAL)" = "0" ] || [ -s $(2)/eval.json ]; then true; else \
	  set -eo pipefail; test -e $(1)/config.json || { echo "rl: checkpoint $(1) missing" >&2; exit 1; }; \
	  mkdir -p $(2); $(call serve,$(1)); \
	  $(SWERL) collect $(call policy_flags,$(1)) --samples $(EVAL_SAMPLES) --run eval-$(3) \
	      --max-turns $(MAX_TURNS) --max-context-tokens $(CONTEXT) --max-new-tokens $(MAX_NEW_TOKENS) \
	      --concurrency $(CONCURRENCY) --seed $$(( $(EVAL_SEED) * 100000 + 99000 )) $(COLLECT_ARGS) $(EVAL_TASKS) \
	  | $(SWERL) grade --workers $(CONCURRENCY) $(GRADE_ARGS) > $(2)/.eval-graded.jsonl.tmp; \
	  mv $(2)/.eval-graded.jsonl.tmp $(2)/eval-graded.jsonl; \
	  $(SWERL) eval --json $(EVAL_ARGS) $(2)/eval-graded.jsonl > $(2)/.eval.json.tmp; \
	  mv $(2)/.eval.json.tmp $(2)/eval.json; fi
endef

rl-eval-start:
	$(call eval_ckpt,$(CKPT),$(ITER_DIR),$(K))

rl-eval: rl-update
	$(call eval_ckpt,$(NEXT_DIR)/ckpt,$(NEXT_DIR),$(NEXT))

# Solve rates are taken per task over the whole history (every iteration's rollouts count as one group), then one
# record per surviving task is turned back into its task record.
rl-stage2-pool:  ## stage-2 task pool: drop tasks solved >= 2/3 over all iterations and tasks never solved
	@set -eo pipefail; cat $(RUNS)/iter-*/graded.jsonl \
	  | $(PY) -c 'import json,sys; [print(json.dumps({**json.loads(l), "run": "history"})) for l in sys.stdin if l.strip()]' \
	  | $(SWERL) filter --solve-rate 0.000001:0.66666 --per-task 1 \
	  | $(PY) -c 'import json,sys; [print(json.dumps(json.loads(l)["task"])) for l in sys.stdin if l.strip()]' \
	  > $(RUNS)/.stage2-pool.jsonl.tmp
	@mv $(RUNS)/.stage2-pool.jsonl.tmp $(RUNS)/stage2-pool.jsonl
	@echo "rl: $$(wc -l < $(RUNS)/stage2-pool.jsonl) tasks in $(RUNS)/stage2-pool.jsonl"

rl-status:  ## per iteration: rollout reward, resolve rate, steps, kept samples; eval pass@1 of each checkpoint
	@$(PY) scripts/rl_status.py $(RUNS)
