"""`rlcrate export`: trained units written as ONNX through the console script, then loaded with
onnxruntime here and compared with the trained model on observations of the env itself: SB3's
layout on CartPole, a normalized Pendulum (its statistics folded in), and godot-rl's plugin
layout on a BallChase unit trained in real headless Godot."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.backends.godot.test_godot import HAVE_GODOT
from tests.helpers import one_error_line, rlcrate, run_dir_of, tiny_manifest

onnxruntime = pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.slow  # trains the units it exports


def _trained(tmp_path: Path, name: str, **over) -> Path:
    manifest = tmp_path / f"{name}.yaml"
    manifest.write_text(yaml.safe_dump(tiny_manifest(name=name, **over), sort_keys=False))
    res = rlcrate("run", str(manifest), "--out", str(tmp_path / "runs"))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return run_dir_of(tmp_path / "runs", name)


def _export(run: Path, out: Path, *extra: str) -> dict:
    res = rlcrate("export", str(run), "-o", str(out), *extra)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "actions agreeing 100%" in res.stdout
    assert res.stderr == "" and len(res.stdout.splitlines()) == 1, res.stdout + res.stderr
    return json.loads(out.with_name(out.name + ".json").read_text())


def _observations(env_id: str, n: int = 200) -> np.ndarray:
    """Observations of real episodes (random actions), not the exporter's own samples."""
    import gymnasium as gym

    env = gym.make(env_id)
    obs, _ = env.reset(seed=123)
    seen = []
    for _ in range(n):
        seen.append(obs)
        obs, _, done, cut, _ = env.step(env.action_space.sample())
        if done or cut:
            obs, _ = env.reset()
    return np.asarray(seen, dtype=np.float32)


def _model(run: Path, algo: str):
    from stable_baselines3 import PPO

    assert algo == "PPO"
    return PPO.load(run / "units/default/seed-0/model.zip", device="cpu")  # our own file


@pytest.fixture(scope="module")
def cartpole(tmp_path_factory) -> Path:
    # batch_size 128: the whole rollout of 2 envs x 64 steps, which the export's rebuild on one
    # env does not divide (SB3's advice on it, printed around export's one line, once)
    params = {"n_steps": 64, "batch_size": 128, "n_epochs": 2}
    return _trained(tmp_path_factory.mktemp("cart"), "cart", algo__params=params)


def test_cartpole_both_layouts_give_the_models_actions(tmp_path, cartpole):
    run = cartpole
    obs = _observations("CartPole-v1")
    want, _ = _model(run, "PPO").predict(obs, deterministic=True)

    record = _export(run, tmp_path / "cart.onnx")
    assert record["layout"] == "sb3" and record["normalization"] is None
    # checked on the unit's first evaluation episode, replayed: eval.json's first, step for step
    first = json.loads((run / "units/default/seed-0/eval.json").read_text())["episodes"][0]
    assert record["check"]["episode_observations"] == first["length"]
    assert record["check"]["largest_action_difference"] == 0.0
    session = onnxruntime.InferenceSession(str(tmp_path / "cart.onnx"))
    assert [i.name for i in session.get_inputs()] == ["obs"]
    got = session.run(None, {"obs": obs})[0]
    assert np.array_equal(got, want)

    _export(run, tmp_path / "cart-godot.onnx", "--layout", "godot-rl")
    session = onnxruntime.InferenceSession(str(tmp_path / "cart-godot.onnx"))
    assert [i.name for i in session.get_inputs()] == ["obs", "state_ins"]
    assert [o.name for o in session.get_outputs()] == ["output", "state_outs"]
    logits, state = session.run(None, {"obs": obs, "state_ins": np.zeros(len(obs), np.float32)})
    assert logits.shape == (len(obs), 2) and np.array_equal(np.argmax(logits, axis=1), want)
    assert np.array_equal(state, np.zeros(len(obs), np.float32))


def test_a_normalized_model_has_its_statistics_folded_in(tmp_path):
    run = _trained(
        tmp_path,
        "pend",
        env__id="Pendulum-v1",
        algo__normalize={"obs": True, "reward": True},
        train__timesteps=1024,
    )
    record = _export(run, tmp_path / "pend.onnx")
    assert record["normalization"] == "folded into the graph"
    stats = np.load(run / "units/default/seed-0/vecnormalize.npz")  # arrays, no pickle
    mean = next(stats[k] for k in stats.files if k.endswith("mean") and "obs" in k)
    var = next(stats[k] for k in stats.files if k.endswith("var") and "obs" in k)
    obs = _observations("Pendulum-v1")
    want, _ = _model(run, "PPO").predict(
        np.clip((obs - mean) / np.sqrt(var + 1e-8), -10, 10), deterministic=True
    )
    got = onnxruntime.InferenceSession(str(tmp_path / "pend.onnx")).run(None, {"obs": obs})[0]
    assert np.allclose(got, want, atol=1e-5)
    # statistics no running variance can have (an older run's, unpinned): one line, no file
    unit = run / "units/default/seed-0"
    train = json.loads((unit / "train.json").read_text())
    (unit / "train.json").write_text(json.dumps({**train, "files": {}}))
    for bad, says in (
        (-var, "negative values"),
        (var * np.nan, "NaN or infinite values"),
    ):
        arrays = {k: stats[k] for k in stats.files} | {"obs.var": bad}
        np.savez(unit / "vecnormalize.npz", **arrays)
        res = rlcrate("export", str(run), "-o", str(tmp_path / "bad.onnx"))
        one_error_line(res, f"{unit / 'vecnormalize.npz'}: obs.var holds {says}")
        assert not (tmp_path / "bad.onnx").exists()


@pytest.mark.godot
@pytest.mark.skipif(not HAVE_GODOT, reason="needs Godot 4 (make godot4) and godot-rl")
def test_a_godot_unit_exports_in_the_plugins_layout(tmp_path):
    run = _trained(
        tmp_path,
        "chase",
        env={"backend": "godot", "id": "ballchase", "pacing": "unpaced", "timeout": 60},
        parallel={"envs": 4, "workers": 1},
        train__timesteps=512,
        eval__episodes=1,
    )
    record = _export(run, tmp_path / "chase.onnx")  # the godot backend's default layout
    assert record["layout"] == "godot-rl" and record["unit"]["env"] == "godot:ballchase"
    session = onnxruntime.InferenceSession(str(tmp_path / "chase.onnx"))
    (obs_in, _), (out, _) = session.get_inputs(), session.get_outputs()
    width = obs_in.shape[1]
    assert record["observation_shape"] == [width] and out.name == "output"
    got = session.run(None, {"obs": np.zeros((3, width), np.float32),
                             "state_ins": np.zeros(3, np.float32)})[0]  # fmt: skip
    assert got.shape[0] == 3 and np.all(np.isfinite(got))


def test_bad_input_is_one_line_and_writes_nothing(tmp_path, cartpole):
    run = tmp_path / "run"
    shutil.copytree(cartpole, run)  # its model.zip goes below
    out = tmp_path / "x.onnx"
    cases = [
        ([str(tmp_path), "-o", str(out)], "not a run directory"),
        ([str(run), "-o", str(out), "--variant", "nope"], "--variant nope"),
        ([str(run), "-o", str(out), "--seed", "7"], "--seed 7"),
        ([str(run), "-o", str(out), "--format", "tflite"], "expected onnx"),
        ([str(run), "-o", str(out), "--layout", "unity"], "--layout unity"),
        ([str(run), "-o", str(tmp_path)], "is a directory"),
    ]
    (run / "units/default/seed-0/model.zip").rename(tmp_path / "model.zip")
    cases.append(([str(run), "-o", str(out)], "has not finished training"))
    for args, words in cases:
        res = rlcrate("export", *args)
        lines = [ln for ln in (res.stdout + res.stderr).splitlines() if ln.strip()]
        assert res.returncode == 2, (args, res.stdout, res.stderr)
        assert len(lines) == 1 and words in lines[0], (args, lines)
    assert not out.exists() and not list(tmp_path.glob(".*.partial"))
