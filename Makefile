# Two entry points, each doing all of its own set-up on a fresh machine:
#   make book   build the book (executes every chapter on CPU)  -> _build/html
#   make test   unit tests, notebooks under nbval, browser test of the built site
VENV   ?= .venv
PY     := $(VENV)/bin/python
# The CPU wheel lies on disk on our machines; on a GPU box use e.g. TORCH="torch"
TORCH  ?= torch==2.13.0
export PYTHONUNBUFFERED = 1

.PHONY: mutate setup test test-unit test-book node-test node-setup test-colab book browser jemalloc demo clean train-small train-tiny clean-cache gpu-data gpu-wheels
# Book builds and book tests run torch on one thread: on small shared CPUs the default
# thread count thrashes (the Results page, "Training beside other work", has the figures).
# The book build trains its cached model in a kernel: under jemalloc (when installed) its
# memory grows far less (transformer/tools/host_memory.py; `python -m transformer` does this itself).
# Recursive (=) and $(shell): looked up when a recipe runs, after `make setup` installed
# jemalloc, so that the first build on a fresh machine runs under it as the second does.
JEMALLOC = $(firstword $(shell ls /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/aarch64-linux-gnu/libjemalloc.so.2 2>/dev/null))
BOOK_ENV = OMP_NUM_THREADS=1 $(if $(JEMALLOC),LD_PRELOAD=$(JEMALLOC) MALLOC_CONF=background_thread:true)

setup: $(VENV)/.installed browser jemalloc

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $@

# One pytest run: unit tests, every chapter under nbval (quick mode), the tests marked
# `browser` (tests/conftest.py marks every test that uses the built site: it builds the site
# in quick mode and checks it in headless Chromium), and chapter 1 rehearsed on Colab's
# Python and torch (tests/test_colab.py: its environment is built once into
# .cache/colab-venv, a few minutes, then the chapter takes seconds).
# It passes however it is started: in the foreground, as a background job, under nohup or
# with no terminal (a test that needs Ctrl-C sets it up itself: tests/state_guard.py).
test: setup node-test
	BOOK_QUICK=1 $(PY) -m pytest tests book --nbval-lax --nbval-current-env

# Every test that needs no built site (no book build).
test-unit: setup node-test
	$(PY) -m pytest tests -m "not browser"

# The page's code (book/_ext/static): its unit tests under Node's own runner and ESLint,
# with the versions package-lock.json pins (npm ci); no book build needed.
node-test: node-setup
	node --test tests/js/
	npx --no-install eslint book/_ext/static tests/js

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

node-setup: node_modules/.installed

# Mutation testing (not part of `make test`: an hour or more for every target): the planted
# bugs each module's targeted tests catch, mutmut for the package and Stryker for the page,
# the targets and their tests in pyproject.toml's [tool.mutation]; one target:
#   make mutate TARGETS=transformer/schedule.py LABEL=before
# It merges its counts into book/results/mutation.json (the Results page shows them).
TARGETS ?=
LABEL   ?= after
mutate: setup node-setup
	$(PY) -c "import mutmut" 2>/dev/null || $(PY) -m pip install -q "mutmut==3.8.1"
	OMP_NUM_THREADS=1 $(PY) -m benchmarks.quality.mutation $(TARGETS) --label $(LABEL) \
	  --record book/results/mutation.json

test-book: setup
	BOOK_QUICK=1 $(PY) -m pytest book tests/test_site_*.py --nbval-lax --nbval-current-env

# A learner's first run on Colab, every chapter (`make test` rehearses chapter 1): each
# chapter's own install cell in a fresh environment of Colab's Python (3.13) holding only
# what Colab preinstalls, at Colab's versions of torch, numpy and plotly, then the
# chapter, in quick mode (tests/test_colab.py; -rP prints the versions each ran on).
test-colab: setup
	COLAB_CHAPTERS=all BOOK_QUICK=1 OMP_NUM_THREADS=1 $(PY) -m pytest -rP tests/test_colab.py

# Executes every chapter (execute_notebooks: force) and fails on any warning or cell error.
# `clean` first: Sphinx would otherwise skip unchanged chapters and keep their old outputs.
# MathJax comes from `npm pack mathjax` (cached in .cache/mathjax, see book/_ext).
book: setup
	$(VENV)/bin/jupyter-book clean .
	$(BOOK_ENV) $(VENV)/bin/jupyter-book build . -W --keep-going
	@echo "open _build/html/index.html"

# The browser test drives Debian's Chromium through Playwright (no `playwright install`).
browser:
	@test -x /usr/bin/chromium || { test "$$(id -u)" = 0 && \
	  apt-get update -qq && apt-get install -y -qq chromium; } || \
	  echo "warning: no /usr/bin/chromium; the tests marked browser will be skipped"

# Debian's jemalloc, which `python -m transformer` loads for flat host memory in training.
jemalloc:
	@test -e /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 -o -e /usr/lib/aarch64-linux-gnu/libjemalloc.so.2 || \
	  { test "$$(id -u)" = 0 && apt-get install -y -qq libjemalloc2 >/dev/null 2>&1 || \
	    { apt-get update -qq && apt-get install -y -qq libjemalloc2; }; } || \
	  echo "warning: no libjemalloc2; training runs with glibc malloc (memory grows)"

demo: setup
	$(PY) -m transformer demo

clean:
	rm -rf _build .pytest_cache

# The README's CPU result: the recipe `small` (transformer/training/recipes.py: the small
# preset on Multi30k en->de, a time budget set in the recipe), then sacrebleu on the test split with
# beam 4 (and greedy for comparison).
SMALL_RUN ?= runs/small
train-small: setup
	$(PY) -m transformer train --recipe small --out $(SMALL_RUN)
	$(PY) -m transformer evaluate $(SMALL_RUN)/average.pt --corpus multi30k-en-de --split test --beam 4
	$(PY) -m transformer evaluate $(SMALL_RUN)/average.pt --corpus multi30k-en-de --split test --beam 1

# The 30-minute recipe (README, "Result on a CPU"): the recipe `tiny`, whose settings
# (transformer/training/recipes.py) were chosen on the valid split; test scored once,
# with beam 4 and length penalty 1.0 (and greedy for comparison).
TINY_RUN ?= runs/tiny
train-tiny: setup
	$(PY) -m transformer train --recipe tiny --out $(TINY_RUN)
	$(PY) -m transformer evaluate $(TINY_RUN)/average.pt --corpus multi30k-en-de --split test --beam 4 --alpha 1.0
	$(PY) -m transformer evaluate $(TINY_RUN)/average.pt --corpus multi30k-en-de --split test --beam 1

# The book's trained model is cached by a key of its configuration, the package source
# and the data (transformer/training/cache.py); this forces a retrain.
clean-cache:
	rm -rf $${TRANSFORMER_CACHE:-$$HOME/.cache/transformer/runs}

# A GPU machine without network: fetch Multi30k and Tatoeba into .gpu_data/ (git-ignored)
# with the commit they run at (run this right before copying the checkout there, with
# the folder); benchmarks/gpu/check.sh, train.sh and table3.sh read the corpora from there
# (a machine with network needs neither this nor gpu-wheels: benchmarks/README.md).
# MIRROR=folder takes Multi30k from a local copy (checked by hash) instead of its host.
gpu-data: setup
	$(PY) -m transformer fetch multi30k-en-de --data-root .gpu_data \
	  $(if $(MIRROR),--url $(abspath $(MIRROR))/multi30k-en-de)
	$(PY) -m transformer fetch tatoeba-en-de --data-root .gpu_data
	echo "$$(git rev-parse --short HEAD)$$(test -z "$$(git status --porcelain)" || echo +changes)" \
	  > .gpu_data/COMMIT

# Wheels of what a GPU machine without network lacks to run the chapters (benchmarks/gpu/
# train.sh step 3): nbclient with a python3 kernel (ipykernel) and plotly, with their
# requirements, for its python3 (GPU_PYTHON). GPU_HAS: the requirements its
# image already has, dropped (a second copy would shadow its own).
GPU_PYTHON ?= 3.12
GPU_WHEELS := nbclient nbformat ipykernel plotly
GPU_HAS    := attrs narwhals packaging psutil pygments python_dateutil six typing_extensions
gpu-wheels:
	python3 -m pip download -q --only-binary=:all: --python-version $(GPU_PYTHON) \
	  --implementation cp $(foreach p,manylinux_2_28 manylinux_2_27 manylinux_2_17 \
	  manylinux2014 manylinux1,--platform $(p)_x86_64) -d .gpu_data/wheels $(GPU_WHEELS)
	cd .gpu_data/wheels && rm -f $(foreach p,$(GPU_HAS),$(p)-*.whl)
	du -sh .gpu_data/wheels
