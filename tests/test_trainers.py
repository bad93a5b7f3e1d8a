"""The trainer seam: which trainer a manifest's algorithm resolves to, and the contract."""

from __future__ import annotations

import inspect

import pytest

from runner.backends import brax
from runner.errors import BackendUnavailable
from runner.trainers import OWN_LOOPS, TRAINERS, get_trainer, trainer_for
from runner.trainers.base import Trainer
from runner.trainers.sb3.algos import ALGOS, check

# brax_ppo's params are checked against `ppo.train` in Brax's Python (the runner's own here).
needs_brax = pytest.mark.skipif(brax.available() is not None, reason=f"brax: {brax.available()}")

HOOKS = [n for n, v in vars(Trainer).items() if inspect.isfunction(v) and not n.startswith("_")]


def test_every_sb3_algorithm_is_trained_by_sb3():
    assert {trainer_for(a) for a in ALGOS} == {"sb3"}


@needs_brax
def test_own_loops_resolve_to_their_trainer_and_backend_only():
    assert trainer_for("brax_ppo") == "brax_ppo"
    assert check("brax_ppo", {}, None, backend="brax") is None
    field, msg = check("brax_ppo", {}, None, backend="gymnasium")
    assert field == "name" and "brax_ppo runs only on the brax backend" in msg
    assert check("PPO", {}, "Box", backend="brax") is None  # SB3 through the VecEnv adapter
    assert set(OWN_LOOPS) & set(ALGOS) == set()


@needs_brax
def test_own_loop_params_are_checked_against_its_function():
    field, msg = check("brax_ppo", {"unroll_lenght": 5}, None, backend="brax")
    assert field == "params.unroll_lenght" and "did you mean 'unroll_length'" in msg
    field, msg = check("brax_ppo", {"num_envs": 5}, None, backend="brax")
    assert field == "params.num_envs" and "set by the runner" in msg
    assert check("brax_ppo", {"network": {}, "entropy_cost": 0.01}, None, backend="brax") is None


def test_a_trainer_not_in_this_version_says_so():
    with pytest.raises(BackendUnavailable, match="the nope trainer is not part of this version"):
        get_trainer("nope")


@pytest.mark.parametrize("name", list(TRAINERS))
def test_trainer_has_the_contract(name):
    trainer = get_trainer(name)
    assert set(HOOKS) == {"train", "evaluate", "bench"}
    for hook in HOOKS:
        want = list(inspect.signature(getattr(Trainer, hook)).parameters)[1:]
        assert list(inspect.signature(getattr(trainer, hook)).parameters) == want, hook
