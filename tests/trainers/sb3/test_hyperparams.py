"""SB3 hyperparameters as users write them: `algo.defaults: zoo`, `algo.normalize`, schedules and
`policy_kwargs` by name, through the installed console script."""

from __future__ import annotations

import importlib.util
import json
import types
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from tests.helpers import rlcrate, run_dir_of, tiny_manifest

needs_zoo = pytest.mark.skipif(
    importlib.util.find_spec("rl_zoo3") is None, reason="rl-zoo3 is not installed (the zoo extra)"
)


def _zoo_entry(file: str, key: str) -> tuple[dict, str]:
    """The entry as rl-zoo3 itself reads it (its own yaml load and eval), and its source label."""
    import importlib.metadata

    spec = importlib.util.find_spec("rl_zoo3")
    assert spec is not None and spec.submodule_search_locations
    path = Path(list(spec.submodule_search_locations)[0], "hyperparams", f"{file}.yml")
    entry = yaml.safe_load(path.read_text())[key]
    version = importlib.metadata.version("rl_zoo3")
    return entry, f"rl-zoo3 {version} {file}.yml {key}"


def _zoo_eval(text: str) -> Any:
    """rl-zoo3 evals these strings with torch.nn in scope; class names stand in for classes."""
    names = {n: n for n in ("ReLU", "Tanh", "ELU", "LeakyReLU", "SiLU", "GELU")}
    return eval(text, {"dict": dict, "nn": types.SimpleNamespace(**names)})  # noqa: S307


def _expected(entry: dict) -> dict[str, object]:
    """Manifest path -> value, applying rl-zoo3's own rules (exp_manager.py) to the entry."""
    out: dict[str, object] = {}
    for key, value in entry.items():
        if key == "n_envs":
            out["parallel.envs"] = value
        elif key == "n_timesteps":
            out["train.timesteps"] = int(value)
        elif key == "policy":
            out["algo.policy"] = value
        elif key == "normalize":
            kw = _zoo_eval(value) if isinstance(value, str) else {}
            out["algo.normalize"] = {
                "obs": kw.get("norm_obs", True),
                "reward": kw.get("norm_reward", True),
                "clip_obs": 10.0,
                "clip_reward": 10.0,
                "epsilon": 1e-8,
            }
        elif isinstance(value, str) and value.startswith("lin_"):  # SimpleLinearSchedule
            out[f"algo.params.{key}"] = {
                "schedule": "linear",
                "start": float(value.split("_")[1]),
                "end": 0.0,
            }
        elif key == "policy_kwargs":
            out["algo.params.policy_kwargs"] = _zoo_eval(value)
        else:
            out[f"algo.params.{key}"] = value
    return out


def _shown(stdout: str) -> dict[str, tuple[object, str]]:
    """`validate --show` lines: path -> (value, source)."""
    out = {}
    for line in stdout.splitlines():
        if ": " in line and "  # " in line and line.startswith(("algo.", "parallel.", "train.")):
            left, source = line.rsplit("  # ", 1)
            path, value = left.split(": ", 1)
            out[path] = (json.loads(value), source.strip())
    return out


@needs_zoo
@pytest.mark.parametrize(
    ("algo", "file", "env_id", "what"),
    [
        ("PPO", "ppo", "Acrobot-v1", "normalize"),
        ("PPO", "ppo", "CartPole-v1", "schedules"),
        ("PPO", "ppo", "HalfCheetah-v4", "policy_kwargs with activation_fn and net_arch pi/vf"),
        ("A2C", "a2c", "Pendulum-v1", "normalize, lin_ schedule and policy_kwargs"),
    ],
)
def test_zoo_defaults_resolve_to_the_zoo_yml(algo, file, env_id, what, write_manifest, tmp_path):
    m = {"rlcrate": 1, "name": "zoo", "env": {"backend": "gymnasium", "id": env_id}}
    m["algo"] = {"name": algo, "defaults": "zoo"}
    # cwd: MuJoCo writes its warnings (a newer MuJoCo's, compiling HalfCheetah) to
    # ./MUJOCO_LOG.TXT; one once landed at the top of the repository this way
    out = rlcrate("validate", str(write_manifest(m)), "--show", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    shown = _shown(out.stdout)
    entry, source = _zoo_entry(file, env_id)
    expected = _expected(entry)
    assert expected, f"{env_id}: empty zoo entry"
    for path, value in expected.items():
        assert path in shown, f"{path} ({what}) not shown:\n{out.stdout}"
        assert shown[path] == (value, source), path
    # nothing else claims to come from the zoo
    from_zoo = {p for p, (_, s) in shown.items() if s == source}
    assert from_zoo == set(expected)


@needs_zoo
def test_manifest_values_override_the_zoo(write_manifest):
    m = {"rlcrate": 1, "name": "zoo", "env": {"backend": "gymnasium", "id": "Acrobot-v1"}}
    m["algo"] = {"name": "PPO", "defaults": "zoo", "params": {"n_steps": 32}, "normalize": False}
    m["parallel"] = {"envs": 2}
    out = rlcrate("validate", str(write_manifest(m)), "--show")
    assert out.returncode == 0, out.stderr
    shown = _shown(out.stdout)
    _, zoo = _zoo_entry("ppo", "Acrobot-v1")
    # the manifest's value, and the zoo's it replaced, with both sources
    assert shown["algo.params.n_steps"] == (32, f"manifest, over {zoo}: 256")
    assert shown["algo.normalize"] == (None, f"manifest, over {zoo}: {{}}")  # zoo: on, defaults
    assert shown["parallel.envs"] == (2, f"manifest, over {zoo}: 16")
    assert shown["algo.params.gae_lambda"] == (0.94, zoo)  # the zoo's, where the manifest is silent
    assert shown["algo.device"] == ("cpu", "rlcrate default")


def test_plain_validate_says_what_needs_deep_and_imports_no_torch(write_manifest, tmp_path):
    path = write_manifest(
        tiny_manifest(
            algo__params={
                "n_steps": 64,
                "learning_rate": "lin_3e-4",
                "policy_kwargs": {"activation_fn": "Tanh", "net_arch": {"pi": [8], "vf": [8]}},
            },
            algo__normalize=True,
        )
    )
    out = rlcrate("validate", str(path))
    assert out.returncode == 0, out.stderr
    assert "needs `rlcrate validate --deep`" in out.stdout
    probe = (
        "import sys; from runner.checks.load import load_manifest; "
        f"load_manifest({str(path)!r}); print('torch' in sys.modules)"
    )
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert res.stdout.strip() == "False", res.stderr


def _stats(path: Path) -> dict:
    """A unit's normalization statistics: arrays read without pickles, as rlcrate reads them."""
    with np.load(path, allow_pickle=False) as z:
        return {name: z[name] for name in z.files}


def _normalized(**over) -> dict:
    return tiny_manifest(
        algo__params={
            "n_steps": 64,
            "batch_size": 64,
            "n_epochs": 2,
            "learning_rate": "lin_1e-3",
            "clip_range": {"schedule": "linear", "start": 0.3, "end": 0.1},
            "policy_kwargs": {"activation_fn": "ReLU", "net_arch": {"pi": [16], "vf": [16]}},
        },
        algo__normalize={"obs": True, "reward": True, "clip_obs": 5.0},
        **over,
    )


@pytest.mark.slow
@pytest.mark.gymnasium
def test_normalized_run_saves_statistics_and_evaluates_frozen(write_manifest, tmp_path):
    """Real PPO on CartPole with VecNormalize, schedules and policy_kwargs by name."""
    from stable_baselines3 import PPO

    path = write_manifest(_normalized(train__checkpoint_every=256))
    out = rlcrate("run", str(path), "--out", str(tmp_path / "runs"), report=True)
    assert out.returncode == 0, out.stdout + out.stderr
    run = run_dir_of(tmp_path / "runs", "tiny")
    unit = run / "units/default/seed-0"
    stats = _stats(unit / "vecnormalize.npz")
    # every env step and the first reset went into the statistics (2 envs)
    assert float(stats["obs.count"]) == pytest.approx(1e-4 + 2 + 512, abs=1e-9)
    assert stats["obs.mean"].shape == (4,) and set(stats) == {
        f"{w}.{p}" for w in ("obs", "ret") for p in ("mean", "var", "count")
    }
    # checkpoints at rollout boundaries below the budget (the final model holds the last one)
    assert not (unit / "checkpoints/step-512.zip").exists()
    assert (unit / "checkpoints/step-256.zip").is_file()
    saved = _stats(unit / "checkpoints/step-256.vecnormalize.npz")
    assert float(saved["obs.count"]) == pytest.approx(1e-4 + 2 + 256, abs=1e-9)
    # evaluation: rewards as the env gives them (CartPole: 1 a step, so return == length)
    episodes = json.loads((unit / "eval.json").read_text())["episodes"]
    assert all(e["return"] == e["length"] for e in episodes), episodes
    # what was applied: the schedules and the activation, in the model and in resolved.yaml
    model = PPO.load(unit / "model.zip", device="cpu")
    assert model.lr_schedule(1.0) == pytest.approx(1e-3) and model.lr_schedule(0.5) == 5e-4
    clip_range = model.clip_range
    assert callable(clip_range)  # a schedule, once the model is set up
    assert clip_range(0.0) == pytest.approx(0.1) and clip_range(1.0) == 0.3
    assert type(model.policy.mlp_extractor.policy_net[1]).__name__ == "ReLU"
    res = yaml.safe_load((run / "resolved.yaml").read_text())
    algo = res["variants"]["default"]["config"]["algo"]
    assert algo["params"]["learning_rate"] == {"schedule": "linear", "start": 0.001, "end": 0.0}
    assert res["sources"]["algo.normalize"] == "manifest"
    assert "- VecNormalize (obs and reward; clip_obs 5.0" in (run / "report.md").read_text()
    # the archive carries the statistics (and --no-models leaves them out with the model)
    for flags, present in (([], True), (["--no-models"], False)):
        tar = tmp_path / f"a{len(flags)}.tar.gz"
        assert rlcrate("archive", str(run), "-o", str(tar), *flags).returncode == 0
        import tarfile

        with tarfile.open(tar) as t:
            names = t.getnames()
        assert any(n.endswith("seed-0/vecnormalize.npz") for n in names) is present
    # an archive with the model but without its statistics is refused, checksums or not
    from tests.archive_tools import altered

    def drop(files: dict) -> None:
        del files["units/default/seed-0/vecnormalize.npz"]

    forged = altered(tmp_path / "a0.tar.gz", tmp_path / "forged.tar.gz", drop, sums=True)
    refused = rlcrate("reproduce", str(forged), "--out", str(tmp_path / "re"))
    assert refused.returncode == 2 and "vecnormalize.npz is missing" in refused.stderr
    assert not (tmp_path / "re").exists()
    # re-evaluating from the saved files gives the same returns: the statistics reload exactly
    (unit / "eval.json").unlink()
    again = rlcrate("eval", str(path), "--resume", str(run))
    assert again.returncode == 0, again.stderr
    assert json.loads((unit / "eval.json").read_text())["episodes"] == episodes


@pytest.mark.slow
@pytest.mark.gymnasium
def test_resumed_normalized_unit_continues_its_statistics(write_manifest, tmp_path):
    """A unit stopped after its step-256 checkpoint continues that checkpoint's statistics
    (a fresh VecNormalize would forget 256 steps of them)."""
    from runner.record.status import write_status

    path = write_manifest(_normalized(train__checkpoint_every=256))
    out = rlcrate("run", str(path), "--out", str(tmp_path / "runs"))
    assert out.returncode == 0, out.stderr
    run = run_dir_of(tmp_path / "runs", "tiny")
    unit = run / "units/default/seed-0"
    uninterrupted = _stats(unit / "vecnormalize.npz")
    # what a SIGKILL right after the first checkpoint leaves
    for name in ("model.zip", "vecnormalize.npz", "train.json", "eval.json"):
        (unit / name).unlink()
    write_status(unit, "interrupted")
    res = rlcrate("run", str(run / "manifest.yaml"), "--resume", str(run))
    assert res.returncode == 0, res.stderr
    status = json.loads((unit / "status.json").read_text())
    assert status["state"] == "done" and status["resumed_from"] == 256
    # 256 steps to the checkpoint + 256 after it + the first reset (2 envs): the resume
    # replays the envs' episodes instead of resetting them (exact resume), so the statistics
    # are the uninterrupted unit's, to the bit
    stats = _stats(unit / "vecnormalize.npz")
    assert float(stats["obs.count"]) == pytest.approx(1e-4 + 2 + 256 + 256, abs=1e-9)
    assert all(np.array_equal(stats[k], uninterrupted[k]) for k in uninterrupted)
    with zipfile.ZipFile(unit / "model.zip") as z:
        assert "policy.pth" in z.namelist()
