# Synthesized tasks (`swerl tasks synth`, docs/tasks.md) from a real library and from the bundled examples
# (included from the Makefile).
#
#   make synth-lib        the library's sdist from PyPI, once, sha256-checked, unpacked in .cache/synth/src/ (setup)
#   make synth-tasks      .cache/synth/toolz/{train,heldout}.jsonl: validated tasks, split by function
#   make synth-tasks-located  .cache/synth/toolz-located/: only mutants whose statement's traceback shows the bug's
#                         line (`--located`): the family paper-mini trains and evaluates on
#   make synth-examples   .cache/synth/examples/<repo>/{train,heldout}.jsonl from examples/repos/*/base
#
# toolz 1.2.0 (BSD-3-Clause, pure Python, no dependencies): its sdist ships its pytest suite (192 tests, about a
# second). Outputs are written when complete and a finished target is not redone; SYNTH_ARGS adds flags.

SYNTH_LIB := toolz
SYNTH_LIB_VERSION := 1.2.0
SYNTH_LIB_SHA256 := 9667a038e9d6ecba37995e26cb2f59ec6420b6ad8dd9677de59db9b956b08490
SYNTH_SRC := .cache/synth/src/$(SYNTH_LIB)-$(SYNTH_LIB_VERSION)
SYNTH_OUT ?= .cache/synth/$(SYNTH_LIB)
SYNTH_MAX_TASKS ?= 80
SYNTH_WORKERS ?= 2
SYNTH_SEED ?= 0
SYNTH_ARGS ?=
# The library's own modules (not its import-hook shim `tlz`, its Python-2 compatibility module or its table of
# builtin signatures).
SYNTH_FILES := toolz/itertoolz.py toolz/functoolz.py toolz/dicttoolz.py toolz/recipes.py toolz/utils.py \
	toolz/sandbox/core.py toolz/sandbox/parallel.py
# Its tests but test_tlz.py: importing `tlz` installs an import hook, which the grading guard (docs/grading.md)
# flags in every run, the unpatched one included, so no task that runs it could be graded.
SYNTH_TEST_CMD := python3 -m pytest -rA --tb=short -p no:cacheprovider --color=no --junitxml=/tmp/swerl-junit.xml \
	-o junit_family=xunit1 --ignore=toolz/tests/test_tlz.py toolz

.PHONY: synth-lib synth-tasks synth-tasks-located synth-pool-flip synth-examples synth-tasks-gain

synth-lib:  ## the toolz sdist (with its tests) from PyPI into .cache/synth/src/, for `make synth-tasks`
	@bash scripts/synth-lib.sh $(SYNTH_LIB) $(SYNTH_LIB_VERSION) $(SYNTH_LIB_SHA256) $(SYNTH_SRC)

synth-tasks: $(SYNTH_OUT)/train.jsonl  ## validated toolz tasks, split by function: .cache/synth/toolz/{train,heldout}.jsonl

$(SYNTH_OUT)/train.jsonl: | venv
	@test -f $(SYNTH_SRC)/PKG-INFO || $(MAKE) --no-print-directory synth-lib
	@test -f $(SYNTH_SRC)/PKG-INFO || { echo "make synth-tasks: $(SYNTH_SRC) is missing (see above)" >&2; exit 1; }
	$(SWERL) tasks synth $(SYNTH_SRC) --name $(SYNTH_LIB) -o $(SYNTH_OUT) --max-tasks $(SYNTH_MAX_TASKS) \
	  --workers $(SYNTH_WORKERS) --seed $(SYNTH_SEED) $(foreach f,$(SYNTH_FILES),--files $(f)) \
	  --test-cmd "$(SYNTH_TEST_CMD)" $(SYNTH_ARGS)

# A function gets up to 6 tries (default 3): fewer mutants pass the located rule, this keeps the yield near 2/3 of
# the functions (66 tasks from 98 functions, 50 train / 16 held-out, in about 11 minutes here).
synth-tasks-located:  ## toolz tasks whose statement's traceback shows the bug's line (paper-mini): .cache/synth/toolz-located/
	@$(MAKE) --no-print-directory synth-tasks SYNTH_OUT=.cache/synth/$(SYNTH_LIB)-located SYNTH_ARGS="--located --tries 6 $(SYNTH_ARGS)"

# paper-mini's best-measured DAPO pool (docs/training.md, "binary reward"): off-by-one and operator-flip mutants
# (the bugs the RFT checkpoint fixes on unseen code) of every toolz function, then the ones whose function is not
# held out and which are not a paper-mini task already (scripts/paper_mini_pool.py). About 7 minutes here (388 s).
SYNTH_FLIP_POOL := .cache/synth/$(SYNTH_LIB)-flip-pool.jsonl
synth-pool-flip: synth-tasks-located  ## DAPO pool for paper-mini's binary-reward run: .cache/synth/toolz-flip-pool.jsonl
	@$(MAKE) --no-print-directory synth-tasks SYNTH_OUT=.cache/synth/$(SYNTH_LIB)-flip SYNTH_SEED=2 SYNTH_MAX_TASKS=40 \
	  SYNTH_ARGS="--located --tries 12 --per-function 3 --mutators off_by_one,op_flip --holdout 0"
	@test -s $(SYNTH_FLIP_POOL) || $(PY) scripts/paper_mini_pool.py .cache/synth/$(SYNTH_LIB)-flip/train.jsonl \
	  .cache/synth/$(SYNTH_LIB)-located $(SYNTH_FLIP_POOL)

synth-examples: | venv  ## tasks synthesized from each bundled example repository: .cache/synth/examples/<repo>/
	@for d in examples/repos/*/base; do n=$$(basename $$(dirname $$d)); \
	  test -f .cache/synth/examples/$$n/train.jsonl && continue; \
	  echo "synth: $$n" >&2; \
	  $(SWERL) tasks synth $$d --name ex-$$n -o .cache/synth/examples/$$n --workers $(SYNTH_WORKERS) --per-function 2 \
	    --seed $(SYNTH_SEED) --holdout 0.34 $(SYNTH_ARGS) || exit 1; done

# paper-mini-gain's task family (issue 41): only the RL pool's bug kinds (off-by-one and operator flips), located,
# up to 3 mutants per function and no held-out cut here: scripts/paper_mini_gain_split.py cuts it by function into
# the pre-registered held-out split, the RFT demonstrations and the DAPO pool, before any training.
SYNTH_GAIN := .cache/synth/$(SYNTH_LIB)-gain
synth-tasks-gain:  ## toolz off-by-one and operator-flip tasks for make paper-mini-gain: .cache/synth/toolz-gain/
	@$(MAKE) --no-print-directory synth-tasks SYNTH_OUT=$(SYNTH_GAIN) SYNTH_SEED=3 SYNTH_MAX_TASKS=120 \
	  SYNTH_ARGS="--located --tries 12 --per-function 3 --mutators off_by_one,op_flip --holdout 0"
