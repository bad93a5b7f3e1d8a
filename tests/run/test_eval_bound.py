"""Every evaluation episode is bounded: an env without a time limit of its
own (stock CliffWalking-v1, where an under-trained deterministic policy walks into a wall
forever) is cut at `eval.max_episode_steps`, else rlcrate's default, and eval.json says which
bound applied and how many episodes reached it. The logic in process; one real run through the
console script."""

from __future__ import annotations

import json

import numpy as np
import pytest

from runner.manifest import Manifest
from runner.manifest.schema import DEFAULT_EVAL_EPISODE_STEPS
from runner.trainers.base import episode_bound
from tests.helpers import rlcrate, run_dir_of, tiny_manifest

pytestmark = pytest.mark.gymnasium


@pytest.mark.parametrize(
    ("env", "given", "want"),
    [
        ("CliffWalking-v1", None,
         (DEFAULT_EVAL_EPISODE_STEPS, "rlcrate's default for an env without a time limit", True)),
        ("CliffWalking-v1", 50, (50, "eval.max_episode_steps", True)),
        ("CartPole-v1", None, (500, "the env's own time limit", False)),
        ("CartPole-v1", 100, (100, "eval.max_episode_steps", True)),
        ("CartPole-v1", 10_000, (500, "the env's own time limit", False)),
    ],
)  # fmt: skip
def test_the_bound_is_the_envs_own_else_the_manifests_else_the_default(env, given, want):
    cfg = Manifest.model_validate(tiny_manifest(env__id=env, eval__max_episode_steps=given))
    assert episode_bound(cfg) == want


def test_an_episode_that_never_ends_is_cut_as_a_time_limit_cuts_it():
    import gymnasium as gym
    from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

    from runner.trainers.sb3.episode_cap import EpisodeCap

    venv = VecMonitor(EpisodeCap(DummyVecEnv([lambda: gym.make("CliffWalking-v1")]), 7))
    venv.reset()
    for step in range(1, 15):  # action 0 (up) from the start: against the wall, forever
        _, _, dones, infos = venv.step(np.array([0]))
        assert bool(dones[0]) == (step % 7 == 0), step
    assert infos[0]["TimeLimit.truncated"] and infos[0]["episode"]["l"] == 7
    assert "terminal_observation" in infos[0]


@pytest.mark.slow
def test_eval_of_an_env_without_a_time_limit_ends_and_says_its_bound(write_manifest, tmp_path):
    m = tiny_manifest(name="cliff", env__id="CliffWalking-v1", train__timesteps=128,
                      eval__episodes=2, eval__max_episode_steps=40)  # fmt: skip
    res = rlcrate("run", str(write_manifest(m)), "--out", str(tmp_path / "runs"), timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    ev = json.loads((run_dir_of(tmp_path / "runs", "cliff") / "units/default/seed-0/eval.json")
                    .read_text())  # fmt: skip
    limit = ev["episode_limit"]
    assert limit["steps"] == 40 and limit["source"] == "eval.max_episode_steps"
    lengths = [e["length"] for e in ev["episodes"]]
    assert max(lengths) <= 40 and limit["reached"] == lengths.count(40)
