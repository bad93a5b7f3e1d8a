"""The Godot course exercises run as shipped (at laptop-or-smaller budgets), and the Godot
rollout profile splits the socket wait with the engine's own reported tick time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.backends.godot.test_godot import HAVE_GODOT
from tests.helpers import ROOT, rlcrate, run_dir_of

pytestmark = [
    pytest.mark.godot,
    pytest.mark.slow,  # starts Godot and trains
    pytest.mark.skipif(not HAVE_GODOT, reason="needs Godot 4 (make godot4) and godot-rl"),
]


def shrunk(name: str, tmp_path: Path, **over) -> Path:
    """The shipped manifest with smaller budgets (dotted keys), next to the original's game."""
    data = yaml.safe_load((ROOT / "manifests" / name).read_text())
    for key, value in over.items():
        node = data
        *head, last = key.split(".")
        for part in head:
            node = node.setdefault(part, {})
        node[last] = value
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_profile_splits_the_socket_wait_with_the_engine_tick(tmp_path: Path):
    path = shrunk(
        "ballchase-profile.yaml",
        tmp_path,
        **{
            "bench.steps": 1024,
            "bench.warmup": 256,
            "bench.repeats": 2,
            "bench.inference": False,  # the profile splits inference out; test_bench measures it
            "bench.cold_start": False,
            "matrix": {"parallel.workers": [1, 2]},
            "parallel.envs": 8,
            "algo.params": {"n_steps": 32, "batch_size": 128, "n_epochs": 1},
        },
    )
    proc = rlcrate("bench", str(path), "--out", str(tmp_path / "runs"), timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = run_dir_of(tmp_path / "runs", "ballchase-profile")
    bench = json.loads((run / "bench.json").read_text())
    for point in bench["points"]:
        prof = point["profile"]
        assert prof["engine_reported"]
        assert set(prof["share"]) == {
            "encode",
            "send",
            "engine_tick",
            "engine_codec",
            "wait_other",
            "decode",
            "inference",
            "update",
            "other",
        }
        assert sum(prof["share"].values()) == pytest.approx(1.0, abs=1e-6)
        assert prof["seconds_per_step"]["engine_tick"] > 0
        assert prof["seconds_per_step"]["engine_codec"] > 0
    assert (run / "plots" / "profile.png").stat().st_size > 10_000
    assert proc.stdout.count("the bottleneck is") == 2


def test_ppo_and_sac_train_on_continuous_ballchase_from_one_seed(tmp_path: Path):
    path = shrunk(
        "ballchase-ppo-vs-sac.yaml",
        tmp_path,
        **{
            # one PPO rollout (64 x 8 envs) and 256 SAC updates after its random start: both
            # algorithms train on the continuous game from the same seed (one seed: the manifest's
            # pairing over seeds is the report's, tested in test_report and test_stats)
            "train.timesteps": 512,
            "eval.episodes": 2,
            "seeds": [0],
            "env.kwargs": {"action_space": "continuous", "episode_steps": 100},
            # the manifest's bench job still runs, a pass over each point: the bench's numbers
            # are test_scaling_curve_over_instances_benches's and test_bench's to check
            "bench.steps": 256,
            "bench.warmup": 64,
            "bench.repeats": 1,
            "bench.cold_start": False,
        },
    )
    data = yaml.safe_load(path.read_text())
    data["matrix"][0]["algo.params"].update(n_steps=64, n_epochs=1)
    data["matrix"][1]["algo.params"].update(learning_starts=256, batch_size=64)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    proc = rlcrate("run", str(path), "--out", str(tmp_path / "runs"), timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads(
        (run_dir_of(tmp_path / "runs", "ballchase-ppo-vs-sac") / "summary.json").read_text()
    )
    assert "SAC" in json.dumps(summary) and "PPO" in json.dumps(summary)
    bench = json.loads(
        (run_dir_of(tmp_path / "runs", "ballchase-ppo-vs-sac") / "bench.json").read_text()
    )
    assert [p["variant"] for p in bench["points"]] == ["PPO", "SAC"]


def test_scaling_curve_over_instances_benches(tmp_path: Path):
    path = shrunk(
        "ballchase-scaling.yaml",
        tmp_path,
        **{
            "bench.steps": 512,
            "bench.warmup": 128,
            "bench.repeats": 1,
            "bench.inference": False,  # scaling of env-only and training; test_bench: the rest
            "bench.cold_start": False,
            "bench.sweep": {"parallel.envs": [1, 4]},
            "algo.params": {"n_steps": 32, "batch_size": 32, "n_epochs": 1},
        },
    )
    proc = rlcrate("bench", str(path), "--out", str(tmp_path / "runs"), timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bench = json.loads(
        (run_dir_of(tmp_path / "runs", "ballchase-scaling") / "bench.json").read_text()
    )
    assert [p["envs"] for p in bench["points"]] == [1, 4]
