# rlcrate developer targets. `make quickstart` and `make test` work from a clean clone.
PY     ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# The CPU build of torch: this pin keeps pip from pulling a multi-GB CUDA build.
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.installed
# Godot 4 (the godot backend's engine) is not a Debian 12 package: `make godot4` installs it from
# images/godot/godot4.lock (patchelf points it at the libraries it comes with).
# godot3-server, godot3: Godot 3, for Godot 3 projects (legacy), headless and drawing;
# xvfb, xauth: a virtual display, for eval.video's Godot frames;
# libosmesa6: MuJoCo's software OpenGL (MUJOCO_GL=osmesa), for its envs' eval.video.
# libegl1, libegl-mesa0: EGL without a display (MUJOCO_GL=egl, Mesa's llvmpipe here), as the GPU
# check's video step draws on a GPU machine (tests/gpu/test_gpu_check.py runs its --dry path).
# x11-xserver-utils: xsetroot, which paints a test's Xvfb screen
# (tests/backends/godot/test_godot_screen.py).
# chromium: the docs tests load the built site in it (headless) and take screenshots.
# docker.io, docker-registry: the image tests start a Docker Engine and a registry of their own.
APT_PACKAGES := patchelf godot3-server godot3 xvfb xauth libosmesa6 libegl1 libegl-mesa0 x11-xserver-utils buildah podman debootstrap uidmap tini \
                slurm-wlm munge chromium docker.io docker-registry

.PHONY: venv system-deps godot4 apptainer quickstart test test-images test-fast test-latest test-gpu-env lint type \
        all clean \
        gpu-env gpu-wheels docs schema

# Dev and CI install the exact versions the CPU image locks (hashes and torch's +cpu local
# version stripped: pip takes no hashes in a constraints file, and TORCH pins torch).
CONSTRAINTS := $(VENV)/constraints.txt
# No bytecode from pip, which compiles every module of every package one file at a time (over
# half of the install's time here). COMPILE then compiles the venv on every core at once: where
# PYTHONDONTWRITEBYTECODE is set (as on CI's machine) Python writes no bytecode at import, and
# each process of the suite compiled SciPy, MLflow, Ray, gymnasium again (import mlflow: 5.1 s
# of CPU from source, 2.0 from bytecode; scipy.stats 2.2 against 0.95). It fails only on files
# that do not compile on this Python (torch ships one for 3.12), which pip's own compile skips
# too, so its exit status is not the build's.
NO_COMPILE := --no-compile
COMPILE = $(1)/bin/python -m compileall -qq -j 0 \
    "$$($(1)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" || true

$(STAMP): pyproject.toml images/cpu/requirements.lock
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	sed -e '/^ *--hash/d' -e '/^ *#/d' -e 's/ *\\$$//' -e '/^torch==/d' -e '/^$$/d' \
	    images/cpu/requirements.lock > $(CONSTRAINTS)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q $(NO_COMPILE) $(TORCH)
	$(BIN)/pip install -q $(NO_COMPILE) -c $(CONSTRAINTS) -e '.[all,dev,track,docs]' $(TORCH)
	# rl-zoo3 for `algo.defaults: zoo`: only its hyperparams/*.yml are read (see the zoo extra)
	$(BIN)/pip install -q $(NO_COMPILE) --no-deps -c $(CONSTRAINTS) rl-zoo3
	$(call COMPILE,$(VENV))
	touch $@

venv: $(STAMP)

# System packages the tests use (real headless Godot, buildah for image builds). Needs root/sudo.
system-deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

# Godot 4.6 from Debian's packages (images/godot/install.sh): /opt/rlcrate/godot-<version> and
# /usr/local/bin/godot4 as root, else ~/.local/share/rlcrate and ~/.local/bin; a no-op once done.
godot4: system-deps
	images/godot/install.sh

# Apptainer 1.4 from Debian's packages (images/apptainer/install.sh), the same way: for the .sif
# tests (`make test-images`). /opt/rlcrate/apptainer-<version> and /usr/local/bin/apptainer as
# root, else ~/.local/share/rlcrate and ~/.local/bin; a no-op once done.
apptainer: system-deps
	images/apptainer/install.sh

quickstart: venv
	$(BIN)/rlcrate run manifests/quickstart.yaml

# Two workers (pytest-xdist), a module (or modules sharing a Ray cluster or the image store) at a
# time: much of the suite waits on Slurm, Ray, Godot and image builds rather than computing.
# Everything but the image tests, which have a target of their own (below).
TEST_WORKERS ?= 2
XDIST := -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder
# The whole suite with three workers (the waits of one test overlap the work of two others);
# `make test-latest` uses the same. From fresh clones on the 2-core VM: two workers 1279 s, three
# 1071 s (153% of the two cores busy), four 1357 s (every test slower, and more CPU spent: 2099 s
# against 1648 s). The image and GPU-environment stages keep two (their builds and compiles fill
# both cores).
SUITE_WORKERS ?= 3
SUITE_XDIST := -n $(SUITE_WORKERS) --dist loadscope --no-loadscope-reorder
# Brax's tests that train or compile its programs run once, in the GPU environment's stage
# (test-gpu-env, on the CPU: the same Brax and JAX versions, with JAX's CUDA plugin); here Brax's
# checks and the adapter's state run with the CPU lock's.
BRAX_TESTS := tests/backends/brax/test_brax.py
# MuJoCo Playground's trainings, determinism check and state round trip compile its MJX programs
# (about four minutes on one worker): likewise once, in the GPU environment's stage.
PLAYGROUND_TESTS := tests/backends/playground/test_playground.py
PLAYGROUND_ONCE := test_brax_ppo_and_sb3_adapter_on_a_playground_env \
    test_check_determinism_on_the_cpu_is_bitwise_through_the_adapter \
    test_the_adapters_playground_state_round_trips_as_data_and_steps_on_the_same
ONCE_IN_GPU_ENV := --deselect $(BRAX_TESTS)::test_brax_ppo_twice_and_sb3_adapter_in_one_run \
    --deselect $(BRAX_TESTS)::test_bench_measures_brax_points_in_brax_python \
    --deselect $(BRAX_TESTS)::test_brax_ppo_evaluation_drawn_by_brax_scores_what_it_scores_headless \
    $(foreach t,$(PLAYGROUND_ONCE),--deselect $(PLAYGROUND_TESTS)::$(t))
test: export RLCRATE_ENGINE ?= buildah
test: venv system-deps godot4
	$(BIN)/pytest -q $(SUITE_XDIST) -m "not image" \
	    --durations=20 $(ONCE_IN_GPU_ENV)

# The image tests (marker `image`): the CPU image built with buildah from a debootstrapped base
# (twice: the second build, without cache, must give the same digest) and with docker (BuildKit)
# through the tests' own dockerd and registry, and run through both; and exported as a .sif, run
# by Apptainer here and under the tests' Slurm. Three cold builds of a 3 GB
# image do not fit beside the rest in `make test`'s time, so CI runs them as a stage of their own.
test-images: export RLCRATE_ENGINE ?= buildah
test-images: venv system-deps apptainer
	$(BIN)/pytest -q $(XDIST) -m image --durations=10

# The edit-test loop: every test but the `slow` ones (real trainings of more than a few seconds,
# clusters, image builds, Godot games), on two workers (`make test` has three), in the same
# groups as `make test`.
FAST_ONLY := -q -p no:cacheprovider -m "not slow"
FAST := $(FAST_ONLY) $(XDIST)
test-fast: venv
	$(BIN)/pytest $(FAST)

# The fast tests again, in a second venv with the newest versions pyproject.toml's ranges allow
# (no constraints; torch stays at the CPU pin, as the newest default build is the multi-GB CUDA
# one), so an upstream release that breaks rlcrate fails CI rather than a user's install. As many
# workers as `make test`: most of these tests start a console script and wait on it.
LATEST ?= .venv-latest
test-latest:
	test -x $(LATEST)/bin/python || $(PY) -m venv $(LATEST)
	$(LATEST)/bin/pip install -q --upgrade pip
	$(LATEST)/bin/pip install -q $(NO_COMPILE) --upgrade --upgrade-strategy eager $(TORCH) \
	    -e '.[all,dev,docs]'
	$(LATEST)/bin/pip install -q $(NO_COMPILE) --upgrade --no-deps rl-zoo3  # its hyperparams/*.yml, as in venv
	$(call COMPILE,$(LATEST))
	$(LATEST)/bin/pip list --format=freeze > $(LATEST)/versions.txt
	$(LATEST)/bin/pytest $(FAST_ONLY) $(SUITE_XDIST)

# The GPU environment: Python 3.12 with exactly images/cuda/requirements.lock (hashes checked),
# the lock Dockerfile.cuda installs: Isaac Lab 3.0 and RSL-RL, torch 2.11 (its CUDA build, which
# runs on the CPU too), Brax with JAX 0.9 and JAX's CUDA plugins, Stable-Baselines3, EnvPool,
# godot-rl. `backend: isaaclab` units run in it, and `backend: brax` units where the runner's own
# Python lacks Brax. rlcrate itself goes in from this checkout (editable, no dependencies: the lock
# has them). About 9 GB; rebuilt only when the lock changes. Test tools live beside it
# ($(GPU_TOOLS), on PYTHONPATH for `make test-gpu-env` only), so the environment holds exactly the
# lock and rlcrate.
# The first working Python 3.12 (a pyenv shim named python3.12 may not be one).
GPU_PYTHON ?= $(shell for p in python3.12 $(HOME)/.pyenv/versions/3.12*/bin/python3.12; do \
    $$p --version >/dev/null 2>&1 && { echo $$p; break; }; done)
GPU_ENV   := .cache/gpu-env
GPU_TOOLS := .cache/gpu-env-tools
GPU_LOCK  := images/cuda/requirements.lock
GPU_STAMP := $(GPU_ENV)/.installed
UV_BIN    := $(BIN)/uv

$(GPU_STAMP): $(GPU_LOCK) pyproject.toml | $(STAMP)
	@images/check-lock.sh cuda
	@test -n "$(GPU_PYTHON)" || { echo "make gpu-env: no working python3.12 found (Isaac Lab 3.0 needs Python 3.12)" >&2; exit 2; }
	test -x $(GPU_ENV)/bin/python || $(UV_BIN) venv -q -p $(GPU_PYTHON) $(GPU_ENV)
	@# The build backend first, from the lock (hashes checked), so that the one sdist in the lock
	@# (antlr4-python3-runtime) is built with it rather than with an unhashed download.
	images/lock-select.sh $(GPU_LOCK) setuptools wheel > $(GPU_ENV)/build-backend.txt
	$(UV_BIN) pip install -q --python $(GPU_ENV)/bin/python --require-hashes --no-deps \
	    -r $(GPU_ENV)/build-backend.txt
	$(UV_BIN) pip install -q --python $(GPU_ENV)/bin/python --require-hashes --no-deps \
	    --no-build-isolation -r $(GPU_LOCK)
	$(UV_BIN) pip install -q --python $(GPU_ENV)/bin/python --no-deps --no-build-isolation -e .
	rm -rf $(GPU_TOOLS)
	$(UV_BIN) pip install -q --python $(GPU_ENV)/bin/python --target $(GPU_TOOLS) \
	    'pytest>=8' 'pytest-xdist>=3.8'
	sha256sum $(GPU_LOCK) > $@

gpu-env: $(GPU_STAMP)

# The GPU check's wheelhouse (tests/gpu/wheelhouse.py): every wheel tests/gpu/check_gpu.sh needs
# on a machine lent without a package index (Python 3.12 with its own torch and JAX) beyond what
# it has, at the CUDA lock's pins and hashes, and rlcrate's own wheel built from this checkout;
# at most 60 MiB, to travel beside the working tree. What it leaves out, and why: its
# wheelhouse.json (and `make gpu-wheels` prints it). Rebuilt every time (seconds, from pip's cache).
GPU_WHEELS    ?= .cache/gpu-wheels
GPU_WHEELS_PY ?= 3.12
gpu-wheels: venv
	$(BIN)/python tests/gpu/wheelhouse.py build --python $(GPU_WHEELS_PY) --out $(GPU_WHEELS)

# What differs in the GPU environment, on this CPU: Isaac Lab's tests (a tiny Isaac-Cartpole-Direct
# train + eval through `rlcrate run`; the first run compiles Warp kernels, cached in .cache/warp),
# the Brax tests (JAX's compiles cached in .cache/jax, shared with `make test`), the environment's
# own checks, and a smoke subset of the fast suite in its Python and package set (every backend's
# conformance tests, the trainers, the CLI). The rest of the fast suite tests rlcrate's own code,
# which `make test` and `make test-latest` already run.
# Brax's and MuJoCo Playground's tests that compile (training, bench, brax_ppo's evaluation drawn
# for eval.video, Playground's determinism check) run here only (see ONCE_IN_GPU_ENV).
# The order is the workers' (each takes the next file once two or fewer of its tests are left;
# tests/conftest.py puts Brax's first): one worker starts with Brax's tests (about 195 s), the
# other with RSL-RL's (about 255 s), whose first Isaac Lab task compiles Warp's kernels (about two
# minutes from a fresh clone, cached in .cache/warp); the first free worker then takes the other
# Isaac Lab module (about 125 s), with the kernels compiled, and the conformance tests fill the
# rest: about 325 s a worker. (Both Isaac Lab modules behind the conformance tests on one worker
# made the stage 426 s.) The GPU check's test (tests/gpu/test_gpu_check.py: the wheelhouse built,
# installed into a fresh venv, the check's --dry path run there; 140-250 s on a shared 2-core
# machine with Python 3.11 standing in, not yet timed in this stage) comes next after RSL-RL's,
# so that Brax's worker takes it while the other goes on to the second Isaac Lab module.
GPU_ENV_TESTS := tests/trainers/rsl_rl_ppo/test_isaaclab_rsl_rl.py tests/gpu/test_gpu_check.py \
                 tests/backends/isaaclab/test_isaaclab.py \
                 tests/backends/isaaclab/test_isaaclab_picks.py tests/backends/brax/test_brax.py \
                 $(PLAYGROUND_TESTS) \
                 tests/registry/test_registry.py tests/cli/test_cli.py tests/images/test_gpu_env.py \
                 tests/trainers/test_trainers.py
test-gpu-env: venv gpu-env
	PYTHONPATH=$(GPU_TOOLS) $(GPU_ENV)/bin/python -m pytest -q -p no:cacheprovider $(XDIST) \
	    -m "isaaclab or brax or wheelhouse or not slow" --run-isaaclab $(GPU_ENV_TESTS)

# The documentation site (mkdocs.yml), into build/site; --strict: a broken link or a missing page
# fails. The reference pages are generated from the code by docs/_hooks/reference.py.
docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The manifest's JSON Schema in the repository (editors read it): rlcrate's own backends' and
# trainers' options (`rlcrate schema` prints every installed backend's and trainer's).
schema: venv
	$(BIN)/python -c 'import json; from runner.manifest import json_schema; from runner.plugins import OWN; print(json.dumps(json_schema(list(OWN["backend"]), list(OWN["trainer"])), indent=2))' > runner/manifest/manifest.schema.json

# CI's first stage (`make lint type`, .ci/run), before the long ones: ruff's lint and format
# check, and mypy over runner/ and tests/ with --check-untyped-defs (pyproject.toml's
# [tool.mypy]: the tests' functions carry no annotations, so only that flag reads them).
lint: venv
	$(BIN)/ruff check runner tests
	$(BIN)/ruff format --check runner tests

type: venv
	$(BIN)/mypy

all: lint type test

clean:
	rm -rf $(VENV) $(LATEST) .pytest_cache .ruff_cache .mypy_cache

-include images/images.mk
