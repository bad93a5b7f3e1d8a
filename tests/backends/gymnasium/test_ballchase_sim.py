"""The BallChase surrogate (gymnasium `rlcrate/BallChaseSim-v0`) against the Godot game.

The surrogate repeats the game's arithmetic in the game's precision and its random stream, so
the same seed and the same actions give the same episode. What differs is how observations and
rewards travel: Godot sends step observations and rewards as fixed-point numbers truncated to
1e-6, and reset/final observations printed to 6 decimals; the surrogate returns the float32 it
computed. TOL covers that, and nothing else: the states themselves agree exactly, so an
arithmetic difference (order, precision, a random draw) shows as a divergence that grows.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import cast

import numpy as np
import pytest
import yaml

from runner.backends import get_backend
from runner.backends.gymnasium import godot_random
from runner.backends.gymnasium.ballchase import ENV_ID
from runner.backends.gymnasium.ballchase_vec import BallChaseVecEnv
from runner.checks import calibrate
from runner.manifest.schema import EnvSpec, ParallelSpec
from tests.helpers import env_spec, rlcrate, run_dir_of

SIM = ENV_ID
TOL = 2e-6  # Godot's wire: 1e-6 truncation (steps) or rounding (reset/final), plus float32
godot, gymnasium = get_backend("godot"), get_backend("gymnasium")
needs_godot = pytest.mark.skipif(godot.available() is not None, reason=f"{godot.available()}")


def sim_spec(**kwargs) -> EnvSpec:
    return env_spec(backend="gymnasium", id=SIM, kwargs=kwargs)


def sim_venv(n: int, seed: int, action_repeat: int = 1, **kwargs) -> BallChaseVecEnv:
    spec = env_spec(backend="gymnasium", id=SIM, kwargs=kwargs, action_repeat=action_repeat)
    return cast(
        BallChaseVecEnv,
        gymnasium.make_vec_env(spec, ParallelSpec(envs=n), seed=seed, log_dir=None),
    )


@pytest.mark.parametrize("kind", ["discrete", "continuous"])
@pytest.mark.parametrize("physics", ["faithful", "alt"])
def test_spaces_are_the_games(kind, physics):
    game = godot.spaces(env_spec(backend="godot", id="ballchase", kwargs={"action_space": kind}))
    assert game is not None
    sim = gymnasium.spaces(sim_spec(action_space=kind, physics=physics))
    venv = sim_venv(2, 0, action_space=kind, physics=physics)
    assert sim == game == (venv.observation_space, venv.action_space)
    assert gymnasium.action_kind(sim_spec(action_space=kind)) == godot.action_kind(
        env_spec(backend="godot", id="ballchase", kwargs={"action_space": kind})
    )


@pytest.mark.parametrize(
    "kwargs, field, words",
    [
        ({"fault": "crash:3"}, "fault", "'fault' is not an argument of rlcrate/BallChaseSim-v0"),
        ({"physics": "bullet"}, "physics", "expected one of faithful, alt, got 'bullet'"),
        ({"drag": -1}, "drag", "expected a positive number, got -1"),
        ({"episode_steps": 0}, "episode_steps", "expected a positive integer, got 0"),
        ({"action_repeat": 2}, "action_repeat", "takes env.action_repeat"),
    ],
)
def test_bad_kwargs_name_the_field(kwargs, field, words):
    [problem] = gymnasium.check_env(sim_spec(**kwargs))
    assert problem.path == ("env", "kwargs", field) and words in problem.message


def test_validate_points_at_the_kwarg(tmp_path):
    env = {"backend": "gymnasium", "id": SIM, "kwargs": {"physics": "bullet"}}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"rlcrate": 1, "name": "bad", "env": env, "seeds": [0]}))
    out = rlcrate("validate", str(path))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "env.kwargs.physics: expected one of faithful, alt, got 'bullet'" in out.stderr


def test_episodes_restart_and_seeds_decide():
    a, b, c = sim_venv(3, 7, episode_steps=5), sim_venv(3, 7, episode_steps=5), sim_venv(3, 8)
    oa, ob, oc = a.reset(), b.reset(), c.reset()
    assert np.array_equal(oa, ob) and not np.allclose(oa, oc)
    for t in range(5):
        obs, rew, done, infos = a.step(np.full(3, 3))  # east, into the wall
        assert done.all() == (t == 4)
    assert all(i["TimeLimit.truncated"] for i in infos)
    x, v = 200.0, 0.0
    for _ in range(5):  # the game's motion under full thrust east, in float64
        v = v * (1 - 2 / 60) + 1500 / 60
        x += v / 60
    assert np.allclose([i["terminal_observation"][6] for i in infos], (x - 15) / 370)
    assert isinstance(obs, np.ndarray)
    assert np.allclose(obs[:, 4:], [0, 0, 0.5, 0.5, 0.5, 0.5])  # the new episode's start
    a.seed(7)
    assert np.array_equal(a.reset(), oa)


def test_godot_random_numbers():
    """Values printed by godot3-server 3.2.3 (RandomNumberGenerator, seed = 42): randi() twice,
    then, reseeded, randf() twice (each randf takes two draws)."""
    state, first = godot_random._pcg_next(godot_random.pcg_seed(np.array([42], dtype=np.uint64)))
    assert [int(first[0]), int(godot_random._pcg_next(state)[1][0])] == [492690617, 1919685028]
    state, a = godot_random.randf(godot_random.pcg_seed(np.array([42], dtype=np.uint64)))
    assert [f"{a[0]:.12f}", f"{godot_random.randf(state)[1][0]:.12f}"] == [
        "0.118370190263",
        "0.659032404423",
    ]


def _chase(obs: np.ndarray, continuous: bool) -> np.ndarray:
    """Towards the ball, with some noise: many catches, so many random respawns are compared."""
    rel = obs[:, :2] + np.random.default_rng(len(obs)).normal(0, 0.05, (len(obs), 2))
    if continuous:
        return np.clip(rel * 4, -1, 1).astype(np.float32)
    angle = np.arctan2(rel[:, 0], -rel[:, 1])  # 0 = north, clockwise, as the game's 1..8
    return (np.round(angle / (np.pi / 4)).astype(int) % 8) + 1


@needs_godot
@pytest.mark.slow
@pytest.mark.godot
@pytest.mark.parametrize("kind, repeat, steps", [("discrete", 1, 1000), ("continuous", 3, 400)])
def test_tracks_godot_step_by_step(kind, repeat, steps):
    n, seed, kwargs = 4, 11, {"action_space": kind, "episode_steps": 300}
    spec = env_spec(backend="godot", id="ballchase", kwargs=kwargs, action_repeat=repeat)
    game = godot.make_vec_env(spec, ParallelSpec(envs=n), seed=seed, log_dir=None)
    sim = sim_venv(n, seed, action_repeat=repeat, **kwargs)
    try:
        g_obs, s_obs = cast(np.ndarray, game.reset()), cast(np.ndarray, sim.reset())
        assert np.abs(g_obs - s_obs).max() <= TOL
        caught = 0
        for t in range(steps):
            actions = _chase(g_obs, kind == "continuous")
            g_step, s_step = game.step(actions), sim.step(actions)
            g_obs, s_obs = cast(np.ndarray, g_step[0]), cast(np.ndarray, s_step[0])
            (g_rew, g_done, g_info), (s_rew, s_done, s_info) = g_step[1:], s_step[1:]
            assert np.abs(g_obs - s_obs).max() <= TOL, t
            assert np.abs(g_rew - s_rew).max() <= TOL, t
            assert np.array_equal(g_done, s_done), t
            caught += int((g_rew > 0.5).sum())
            for i in np.flatnonzero(g_done):
                gi, si = g_info[i]["terminal_observation"], s_info[i]["terminal_observation"]
                assert np.abs(gi - si).max() <= TOL, t
        assert caught >= 10, caught  # each catch respawns the ball from the random stream
        assert game.env_method("get_catches") == sim.env_method("get_catches")
        balls = np.array(game.env_method("get_ball_position"))
        assert np.abs(balls - np.array(sim.env_method("get_ball_position"))).max() < 1e-3
    finally:
        game.close()


def test_calibration_flags_the_alt_physics(tmp_path):
    faithful = calibrate.rollout(sim_spec(), seed=0)
    again = calibrate.rollout(sim_spec(), seed=1)
    alt = calibrate.rollout(sim_spec(physics="alt"), seed=0)
    assert calibrate.compare(faithful, again) == []
    found = calibrate.compare(faithful, alt)
    assert {4, 5} <= {m.dim for m in found}, found  # the agent's velocity: faster, less drag
    text = calibrate.warning(found, ("surrogate", "alt"))
    assert text and "dim 4 std: surrogate" in text and "more than 1.5x" in text
    with pytest.raises(ValueError, match="observation shapes differ"):
        calibrate.compare(faithful, faithful[:, :4])


def test_calibration_command_line(tmp_path, capsys):
    files = []
    for name, kwargs in (("a", {}), ("b", {"physics": "alt"})):
        env = {"backend": "gymnasium", "id": SIM, "kwargs": kwargs}
        files.append(tmp_path / f"{name}.yaml")
        files[-1].write_text(yaml.safe_dump({"rlcrate": 1, "name": name, "env": env}))
    run = [sys.executable, "-m", "runner.checks.calibrate", "--steps", "300", *map(str, files)]
    out = subprocess.run(run, capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "observation scales of gymnasium:rlcrate/BallChaseSim-v0 and " in out.stdout
    assert calibrate.main(["--steps", "300", str(files[0]), str(files[0])]) == 0
    assert "agree within 1.5x in every dimension" in capsys.readouterr().out
    files[1].write_text("rlcrate: 1\nname: b\nenv: {backend: gymnasium, id: rlcrate/Nope}\n")
    assert calibrate.main([str(files[0]), str(files[1])]) == 2
    assert "'rlcrate/Nope' is not an id" in capsys.readouterr().err


@needs_godot
@pytest.mark.slow
@pytest.mark.godot
def test_calibration_against_godot():
    game = calibrate.rollout(env_spec(backend="godot", id="ballchase"), seed=0)
    assert calibrate.compare(game, calibrate.rollout(sim_spec(), seed=3)) == []
    alt = calibrate.compare(game, calibrate.rollout(sim_spec(physics="alt")))
    assert {4, 5} <= {m.dim for m in alt}, alt


@pytest.mark.slow
def test_ppo_trains_on_the_surrogate(tmp_path):
    """A real `rlcrate run` (slow: about 20 s of training, minutes on a shared 2-core machine):
    PPO on 16 surrogate envs, evaluated in the surrogate."""
    manifest = {
        "rlcrate": 1,
        "name": "sim",
        "env": {"backend": "gymnasium", "id": SIM},
        "parallel": {"envs": 16},
        "algo": {
            "name": "PPO",
            "params": {"n_steps": 64, "batch_size": 256, "learning_rate": 1e-3},
        },
        "train": {"timesteps": 20000},
        "eval": {"episodes": 16, "deterministic": True},
        "seeds": [0],
    }
    path = tmp_path / "sim.yaml"
    path.write_text(yaml.safe_dump(manifest))
    out = rlcrate("run", str(path), "--out", str(tmp_path / "runs"), "--jobs", "train,eval")
    assert out.returncode == 0, out.stdout + out.stderr
    unit = run_dir_of(tmp_path / "runs", "sim") / "units/default/seed-0"
    assert (unit / "model.zip").is_file()
    returns = [e["return"] for e in json.loads((unit / "eval.json").read_text())["episodes"]]
    # random play scores 0.26 a mean (48 episodes); this run 1.17: above random by over 2 SE
    assert np.mean(returns) > 0.8, returns
