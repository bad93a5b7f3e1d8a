# rlcrate developer targets. `make quickstart` and `make test` work from a clean clone.
PY     ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# The CPU build of torch: this pin keeps pip from pulling a multi-GB CUDA build.
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.installed
APT_PACKAGES := godot3-server buildah podman debootstrap uidmap tini slurm-wlm munge

.PHONY: venv system-deps quickstart test test-fast test-latest test-isaaclab lint type all clean \
        brax-env isaaclab-env isaaclab-lock

# Dev and CI install the exact versions the CPU image locks (hashes and torch's +cpu local
# version stripped: pip takes no hashes in a constraints file, and TORCH pins torch).
CONSTRAINTS := $(VENV)/constraints.txt

$(STAMP): pyproject.toml images/cpu/requirements.lock
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	sed -e '/^ *--hash/d' -e '/^ *#/d' -e 's/ *\\$$//' -e '/^torch==/d' -e '/^$$/d' \
	    images/cpu/requirements.lock > $(CONSTRAINTS)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q $(TORCH)
	$(BIN)/pip install -q -c $(CONSTRAINTS) -e '.[all,dev]' $(TORCH)
	touch $@

venv: $(STAMP)

# System packages the tests use (real headless Godot, buildah for image builds). Needs root/sudo.
system-deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

quickstart: venv
	$(BIN)/rlcrate run manifests/quickstart.yaml

# The image tests build with buildah from a debootstrapped base (no Docker daemon needed).
# Two workers (pytest-xdist), a module (or modules sharing a Ray cluster or the image store) at a
# time: much of the suite waits on Slurm, Ray, Godot and image builds rather than computing.
TEST_WORKERS ?= 2
test: export RLCRATE_ENGINE ?= buildah
test: venv system-deps brax-env
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder --durations=20

test-fast: venv
	$(BIN)/pytest -q -m "not slow"

# The fast tests again, in a second venv with the newest versions pyproject.toml's ranges allow
# (no constraints; torch stays at the CPU pin, as the newest default build is the multi-GB CUDA
# one), so an upstream release that breaks rlcrate fails CI rather than a user's install.
LATEST ?= .venv-latest
test-latest:
	test -x $(LATEST)/bin/python || $(PY) -m venv $(LATEST)
	$(LATEST)/bin/pip install -q --upgrade pip
	$(LATEST)/bin/pip install -q --upgrade --upgrade-strategy eager $(TORCH) -e '.[all,dev]'
	$(LATEST)/bin/pip list --format=freeze > $(LATEST)/versions.txt
	$(LATEST)/bin/pytest -q -m "not slow" -p no:cacheprovider

# Brax's venv, where `backend: brax` units run: Brax 0.14.2's PPO needs jax 0.9, which neither
# image lock has (the CPU lock has no JAX, the CUDA lock jax 0.12). Same Python and the CPU lock's
# pins otherwise (numpy left to the resolver, which picks the lock's 2.4.6 today).
BRAX_ENV   := .cache/brax-env
BRAX_STAMP := $(BRAX_ENV)/.installed

$(BRAX_STAMP): pyproject.toml images/cpu/requirements.lock | $(STAMP)
	test -x $(BRAX_ENV)/bin/python || $(PY) -m venv $(BRAX_ENV)
	sed -e '/^numpy==/d' $(CONSTRAINTS) > $(BRAX_ENV)/constraints.txt
	$(BRAX_ENV)/bin/pip install -q $(TORCH)
	$(BRAX_ENV)/bin/pip install -q -c $(BRAX_ENV)/constraints.txt -e '.[train,jax]' $(TORCH)
	touch $@

brax-env: $(BRAX_STAMP)

# Isaac Lab's own Python 3.12 environment, where `backend: isaaclab` units run (Isaac Lab 3.0.0
# needs Python 3.12 and torch 2.11.0; about 7.5 GB, a few minutes from a warm package cache).
# Installed exactly from the lock (hashes checked), with rlcrate itself from this checkout
# (editable, no dependencies: the lock has them). Rebuilt only when the lock changes.
# The first working Python 3.12 (a pyenv shim named python3.12 may not be one).
ISAACLAB_PYTHON ?= $(shell for p in python3.12 $(HOME)/.pyenv/versions/3.12*/bin/python3.12; do \
    $$p --version >/dev/null 2>&1 && { echo $$p; break; }; done)
ISAACLAB_ENV    := .cache/isaaclab-env
ISAACLAB_STAMP  := $(ISAACLAB_ENV)/.installed
UV_BIN          := $(BIN)/uv

$(ISAACLAB_STAMP): images/isaaclab/requirements.lock pyproject.toml | $(STAMP)
	test -x $(ISAACLAB_ENV)/bin/python || $(UV_BIN) venv -q -p $(ISAACLAB_PYTHON) $(ISAACLAB_ENV)
	$(UV_BIN) pip install -q --python $(ISAACLAB_ENV)/bin/python --require-hashes \
	    -r images/isaaclab/requirements.lock
	$(UV_BIN) pip install -q --python $(ISAACLAB_ENV)/bin/python --no-deps -e .
	touch $@

isaaclab-env: $(ISAACLAB_STAMP)

# Regenerate the Isaac Lab lock (for Linux x86_64, glibc >= 2.35 as Isaac Lab's wheels need).
isaaclab-lock: venv
	$(UV_BIN) pip compile -q images/isaaclab/requirements.in --python $(ISAACLAB_PYTHON) \
	    --python-platform x86_64-manylinux_2_35 --generate-hashes --no-header \
	    -o images/isaaclab/requirements.lock

# A tiny Isaac-Cartpole-Direct train + eval through `rlcrate run` in that environment (CPU,
# Newton; minutes: the first run compiles Warp kernels, cached in ~/.cache/warp).
test-isaaclab: venv isaaclab-env
	$(BIN)/pytest -q -m isaaclab --run-isaaclab

lint: venv
	$(BIN)/ruff check runner tests
	$(BIN)/ruff format --check runner tests

type: venv
	$(BIN)/mypy

all: lint type test

clean:
	rm -rf $(VENV) $(LATEST) .pytest_cache .ruff_cache .mypy_cache

-include images/images.mk
