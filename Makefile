# rlcrate developer targets. `make quickstart` and `make test` work from a clean clone.
PY     ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# The CPU build of torch: this pin keeps pip from pulling a multi-GB CUDA build.
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.installed
APT_PACKAGES := godot3-server buildah podman debootstrap uidmap tini

.PHONY: venv system-deps quickstart test test-fast lint type all clean

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
test: export RLCRATE_ENGINE ?= buildah
test: venv system-deps
	$(BIN)/pytest -q

test-fast: venv
	$(BIN)/pytest -q -m "not slow"

lint: venv
	$(BIN)/ruff check runner tests
	$(BIN)/ruff format --check runner tests

type: venv
	$(BIN)/mypy

all: lint type test

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache

-include images/images.mk
