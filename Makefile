# Two commands do all set-up on a fresh clone:  `make demo`  and  `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# Test workers (pytest-xdist): one per CPU, at most 4 (each holds the models, ~1 GB, and
# its own PostgreSQL); `make test TEST_WORKERS=0` runs in one process.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ "$$n" -gt 4 ] && n=4; echo $$n)

.PHONY: demo test test-all lint bench install-check clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, pinned, so sentence-transformers cannot pull the CUDA build.
	$(PY) -m pip install -q -c constraints.txt "torch==2.13.0"
	$(PY) -m pip install -q -c constraints.txt -e ".[dev]"
	# Build the local embedder's ONNX file once (user cache dir) so the first query is fast.
	$(PY) -c "from agentzero_store import LocalEmbedder; LocalEmbedder(backend='onnx').embed(['warm up'])"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) scripts/demo.py

# Tests run in parallel workers (--dist loadgroup, set in pyproject.toml); the slowest
# are listed, so the suite's cost stays in view.
test: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --durations=20

test-all: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --durations=20 -m "slow or not slow"

lint: $(STAMP)
	$(VENV)/bin/ruff check agentzero_store rag tests scripts benchmarks
	$(VENV)/bin/mypy
	# The layer contracts in pyproject.toml (docs/architecture.md): a wrong import fails.
	$(VENV)/bin/lint-imports

# `pip install .` into a fresh venv, then the installed agentzero from another directory:
# init, append, hybrid recall, and an MCP session (scripts/install-check).
install-check:
	PYTHON=$(PYTHON) bash scripts/install-check

bench: $(STAMP)
	$(PY) benchmarks/run.py --quick

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
