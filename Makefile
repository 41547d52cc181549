# Two entry points, each doing all of its own set-up on a fresh machine:
#   make book   build the book (executes every chapter on CPU)  -> _build/html
#   make test   unit tests, notebooks under nbval, browser test of the built site
VENV   ?= .venv
PY     := $(VENV)/bin/python
# The CPU wheel lies on disk on our machines; on a GPU box use e.g. TORCH="torch"
TORCH  ?= torch==2.13.0
# Offline corpora (Multi30k, Tatoeba); online users can point this elsewhere or download
export TRANSFORMER_DATA ?= $(abspath ../shared/data)
export PYTHONUNBUFFERED = 1

.PHONY: setup test test-unit test-book book browser demo clean
setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $@

test: setup
	$(PY) -m pytest tests

demo: setup
	$(PY) -m transformer demo

clean:
	rm -rf _build .pytest_cache
