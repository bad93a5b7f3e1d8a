"""The backend registry and the per-backend env-id checks."""

from __future__ import annotations

import pytest

from runner.backends import BACKENDS, get_backend
from runner.errors import UserInputError
from runner.manifest.schema import EnvSpec


def test_unknown_backend_lists_valid_ones():
    with pytest.raises(UserInputError, match="Valid backends: gymnasium, envpool, godot"):
        get_backend("mujoco")


@pytest.mark.parametrize("name", list(BACKENDS))
def test_every_backend_module_has_the_contract(name):
    module = get_backend(name)
    for fn in ("available", "env_ids", "check_env", "spaces", "make_vec_env"):
        assert callable(getattr(module, fn)), f"{name}.{fn}"


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


def test_unported_backends_say_so():
    for name in ("isaaclab", "brax"):
        module = get_backend(name)
        assert module.available()  # a reason, never None, in this version
        with pytest.raises(Exception, match="not implemented in this version"):
            module.make_vec_env(
                EnvSpec(backend=name, id="x"), n_envs=1, workers=1, mode="dummy", seed=0
            )
