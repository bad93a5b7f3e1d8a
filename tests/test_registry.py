"""The backend registry and the `Backend` contract, tested the same way over every backend."""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from runner.backends import BACKENDS, get_backend
from runner.backends.base import BITWISE, STATISTICAL, Backend, Traits
from runner.errors import FieldError, UserInputError
from runner.manifest.schema import BACKEND_NAMES, EnvSpec, ParallelSpec

HOOKS = [n for n, v in vars(Backend).items() if inspect.isfunction(v) and not n.startswith("_")]
# A cheap env per backend for the runtime checks (others use their first id).
CHEAP = {
    "gymnasium": "CartPole-v1",
    "envpool": "CartPole-v1",
    "godot": "ballchase",
    "brax": "fast",  # Brax's own test env: no physics to trace (its observation size resets it)
    "isaaclab": "Isaac-Cartpole-Direct",  # runs on a CPU with a local stand-in for its asset
}
# Making envs starts processes for these (seconds), so that part of the conformance is slow.
SLOW_TO_MAKE = {"godot"}


def test_unknown_backend_lists_valid_ones():
    with pytest.raises(UserInputError, match="Valid backends: godot, envpool, gymnasium"):
        get_backend("mujoco")


def test_one_list_of_backend_names():
    assert tuple(BACKENDS) == BACKEND_NAMES


def test_the_contract_names_every_hook():
    assert set(HOOKS) == {
        "available", "env_ids", "check_env", "spaces", "action_kind", "check_parallel",
        "make_vec_env", "versions", "processes", "nondeterminism", "env_files", "step_split",
        "doctor_rows", "interpreter",
    }  # fmt: skip


@pytest.mark.parametrize("name", list(BACKENDS))
def test_backend_declares_its_traits(name):
    traits = get_backend(name).TRAITS
    assert isinstance(traits, Traits) and traits.module and traits.extra
    assert traits.determinism in (BITWISE, STATISTICAL)
    assert set(traits.images) <= {"cpu", "cuda"}


@pytest.mark.parametrize("name", list(BACKENDS))
def test_backend_has_every_hook_with_its_signature(name):
    module = get_backend(name)
    for hook in HOOKS:
        fn = getattr(module, hook, None)
        assert callable(fn), f"{name}.{hook} is missing"
        want = list(inspect.signature(getattr(Backend, hook)).parameters.values())[1:]  # self
        got = list(inspect.signature(fn).parameters.values())
        assert [(p.name, p.kind) for p in got] == [(p.name, p.kind) for p in want], (
            f"{name}.{hook}{inspect.signature(fn)} differs from the contract"
        )


@pytest.mark.parametrize("name", list(BACKENDS))
def test_backend_reports_itself(name):
    """What doctor and provenance ask of every backend, usable or not."""
    module = get_backend(name)
    reason = module.available()
    assert reason is None or (isinstance(reason, str) and reason and "\n" not in reason)
    programs = module.versions()
    assert isinstance(programs, dict)
    for program, info in programs.items():
        assert isinstance(program, str) and ("error" in info or {"path", "version"} <= set(info))
    python = module.interpreter()
    assert python is None or (os.path.isfile(python) and os.access(python, os.X_OK))


def _usable(name: str):
    module = get_backend(name)
    reason = module.available()
    if reason:
        pytest.skip(f"{name}: {reason}")
    return module, EnvSpec(backend=name, id=CHEAP.get(name) or module.env_ids()[0])


@pytest.mark.parametrize("name", list(BACKENDS))
def test_backend_checks_without_making_envs(name):
    module, env = _usable(name)
    ids = module.env_ids()
    assert ids and all(isinstance(i, str) for i in ids)
    module.check_env(env)
    with pytest.raises(FieldError) as bad:
        module.check_env(EnvSpec(backend=name, id="NoSuchEnv-v0"))
    assert bad.value.path == ("env", "id")
    assert module.check_parallel(ParallelSpec()) is None  # one env, one worker: always fine
    kind = module.action_kind(env)
    spaces = module.spaces(env)
    if spaces is not None:
        assert kind in (None, type(spaces[1]).__name__)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.slow)
        if n in SLOW_TO_MAKE
        # in-process only in the GPU environment (make test-gpu-env); Warp compiles its kernels
        else pytest.param(n, marks=[pytest.mark.slow, pytest.mark.isaaclab])
        if n == "isaaclab"
        else n
        for n in BACKENDS
    ],
)
def test_backend_makes_a_vec_env_that_steps(name, tmp_path: Path):
    module, env = _usable(name)
    own = module.interpreter()
    if own is not None and os.path.abspath(own) != os.path.abspath(sys.executable):
        pytest.skip(f"{name} makes its envs in its own Python ({own}); tests/test_{name}.py "
                    "covers it through `rlcrate run`")  # fmt: skip
    parallel = ParallelSpec(envs=2, workers=1)
    venv = module.make_vec_env(env, parallel, seed=3, log_dir=tmp_path)
    try:
        assert venv.num_envs == 2
        obs = venv.reset()
        assert obs.shape[0] == 2 and venv.observation_space.contains(obs[0].astype(obs.dtype))
        venv.action_space.seed(0)
        actions = np.stack([venv.action_space.sample() for _ in range(2)])
        obs, rewards, dones, infos = venv.step(actions)
        assert obs.shape[0] == rewards.shape[0] == dones.shape[0] == len(infos) == 2
        # the caller owns what step returns, as with SB3's own VecEnvs (a view of an engine's
        # buffer, JAX's or torch's, is read-only or changes under it)
        assert all(isinstance(a, np.ndarray) and a.flags.writeable for a in (obs, rewards, dones))
        spaces = module.spaces(env)
        if spaces is not None:
            assert spaces[1] == venv.action_space
    finally:
        venv.close()


@pytest.mark.parametrize(
    "backend,good,bad,suggest",
    [
        ("gymnasium", "CartPole-v1", "CartPole-v9", "CartPole-v1"),
        ("envpool", "Pong-v5", "Pong-v4", "Pong-v5"),
    ],
)
def test_env_id_check_suggests(backend, good, bad, suggest):
    module = get_backend(backend)
    module.check_env(EnvSpec(backend=backend, id=good))
    with pytest.raises(UserInputError, match=f"Did you mean '{suggest}'"):
        module.check_env(EnvSpec(backend=backend, id=bad))
