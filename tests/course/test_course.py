"""The course exercises: every manifest validates as shipped, Atari preprocessing on both
backends, its validation errors, and the rollout profile (the Godot one lives in
tests/course/test_course_godot.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from runner.manifest.schema import Manifest
from tests.helpers import ROOT, env_spec, rlcrate, tiny_manifest

COURSE = [
    "pong-envpool-vs-subproc.yaml",
    "ballchase-parallel.yaml",
    "ballchase-batch-scaling.yaml",
    "ballchase-scaling.yaml",
    "ballchase-scaling-processes.yaml",
    "ballchase-ppo-vs-sac.yaml",
    "ballchase-profile.yaml",
]


@pytest.mark.parametrize("name", COURSE)
def test_course_manifest_validates_through_the_console_script(name: str):
    proc = rlcrate("validate", str(ROOT / "manifests" / name))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def laptop_command(name: str) -> list[str]:
    """The laptop-size command a manifest's header gives (after "Laptop size"), as arguments."""
    import shlex

    header = []
    for line in (ROOT / "manifests" / name).read_text().splitlines():
        if not line.startswith("#"):
            break
        header.append(line[1:].strip())
    start = next(i for i, line in enumerate(header) if "Laptop size" in line)
    words = ""
    for line in header[start + 1 :]:
        if words or line.startswith("rlcrate "):
            words += " " + line.removesuffix("\\")
            if not line.endswith("\\"):
                break
    assert words, f"{name}: no command after 'Laptop size'"
    return shlex.split(words)


def _options(args: list[str]) -> tuple[list[str], str | None, set[str]]:
    """(--set values, --seeds, the flags) of a command's arguments after the manifest."""
    sets, seeds, flags, rest = [], None, set(), list(args)
    while rest:
        word = rest.pop(0)
        if word in ("-s", "--set"):
            sets.append(rest.pop(0))
        elif word == "--seeds":
            seeds = rest.pop(0)
        elif word == "--jobs":
            flags.add(f"--jobs {rest.pop(0)}")
        else:
            flags.add(word)
    return sets, seeds, flags


@pytest.mark.parametrize("name", COURSE)
def test_every_laptop_size_command_works_and_reaches_its_levels(name: str):
    """The header's laptop-size command is a command (no hand edits, `-s` accepted with the
    matrix: Pong's parallel.envs=4), valid as the full manifest is, and a smaller training
    budget comes with its own reward levels, and with --no-expect where the manifest claims."""
    from runner.checks.load import load_manifest
    from runner.manifest.overrides import build

    words = laptop_command(name)
    assert words[:3] in (["rlcrate", "run", f"manifests/{name}"],
                         ["rlcrate", "bench", f"manifests/{name}"]), words  # fmt: skip
    sets, seeds, flags = _options(words[3:])
    assert flags <= {"--no-expect", "--jobs train,eval"}, flags
    full = yaml.safe_load((ROOT / "manifests" / name).read_text())
    small = load_manifest(ROOT / "manifests" / name, overrides=build(sets, seeds))
    if words[1] == "run":
        assert small.train.timesteps < full["train"]["timesteps"]
        if full.get("eval", {}).get("reward_levels"):
            assert any(s.startswith("eval.reward_levels=") for s in sets), sets
            assert small.eval.reward_levels != full["eval"]["reward_levels"]
        assert ("--no-expect" in flags) == bool(full.get("expect")), flags
    else:
        assert small.bench.steps < full["bench"]["steps"]


def test_pongs_laptop_size_through_the_console_script():
    """`-s parallel.envs=4` was refused (the matrix varied parallel.workers): the documented
    shrink is a command that runs as written."""
    words = laptop_command("pong-envpool-vs-subproc.yaml")
    proc = rlcrate("validate", *words[2:], cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 variant(s) x 1 seed(s)" in proc.stdout


def test_batch_scaling_ties_envs_and_batch_size_with_envs_only_controls():
    m = yaml.safe_load((ROOT / "manifests" / "ballchase-batch-scaling.yaml").read_text())
    pairs = [(v["parallel.envs"], v["algo.params.batch_size"]) for v in m["matrix"]]
    base_envs, base_batch = pairs[0]
    for envs, batch in pairs[1:]:
        k = envs // base_envs
        assert (envs, base_batch) in pairs, f"no envs-only control for {envs} envs"
        assert batch in (base_batch, base_batch * k)
    assert any(b != base_batch for _, b in pairs)


@pytest.mark.parametrize(
    ("over", "where", "expect"),
    [
        (
            {"env": {"backend": "gymnasium", "id": "CartPole-v1", "atari": {}}},
            "env.atari",
            "Atari games only",
        ),
        (
            {
                "env": {
                    "backend": "gymnasium",
                    "id": "ALE/Pong-v5",
                    "atari": {},
                    "kwargs": {"frameskip": 4},
                }
            },
            "env.kwargs.frameskip",
            "env.atari sets this already",
        ),
        (
            {
                "env": {
                    "backend": "envpool",
                    "id": "Pong-v5",
                    "atari": {},
                    "kwargs": {"stack_num": 1},
                }
            },
            "env.kwargs.stack_num",
            "env.atari sets this already",
        ),
        (
            {"env": {"backend": "gymnasium", "id": "ALE/Pong-v5", "atari": {"frame_skip": 0}}},
            "env.atari.frame_skip",
            "greater than or equal to 1",
        ),
        (
            {"env": {"backend": "gymnasium", "id": "ALE/Pong-v5", "atari": {"grayscale": True}}},
            "env.atari.grayscale",
            "unknown key",
        ),
    ],
)
def test_atari_problems_name_file_line_and_field(write_manifest, over, where, expect):
    data = tiny_manifest(algo={"name": "PPO", "policy": "CnnPolicy"})
    data.update(over)
    path = write_manifest(data)
    proc = rlcrate("validate", str(path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if where + ":" in ln]
    assert lines and expect in lines[0] and str(path) in lines[0], proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


def _pong(backend: str, envs: int = 2) -> tuple[Manifest, dict]:
    env_id = "ALE/Pong-v5" if backend == "gymnasium" else "Pong-v5"
    data = tiny_manifest(
        env={"backend": backend, "id": env_id, "atari": {}},
        parallel={
            "envs": envs,
            "workers": envs if backend == "gymnasium" else 1,
            "mode": "subproc" if backend == "gymnasium" else None,  # EnvPool: its own threads
        },
    )
    return Manifest.model_validate(data), data


@pytest.mark.gymnasium
@pytest.mark.envpool
def test_both_backends_give_the_same_preprocessed_pong():
    from runner.trainers.sb3.common import make_env

    shapes = {}
    for backend in ("gymnasium", "envpool"):
        cfg, _ = _pong(backend)
        venv = make_env(cfg, seed=0)
        try:
            obs = venv.reset()
            assert obs.dtype == np.uint8
            rewards = []
            for _ in range(300):
                obs, rew, _, _ = venv.step(np.array([venv.action_space.sample()] * 2))
                rewards.append(rew)
            # clipped rewards; Pong scores points within 300 steps of random play
            assert set(np.unique(np.concatenate(rewards))) <= {-1.0, 0.0, 1.0}
            assert np.concatenate(rewards).min() == -1.0
            shapes[backend] = obs.shape
        finally:
            venv.close()
    # SB3 stacks channels last, EnvPool first; SB3's CnnPolicy transposes the former
    assert shapes == {"gymnasium": (2, 84, 84, 4), "envpool": (2, 4, 84, 84)}


def test_envpool_settings_mirror_the_sb3_wrapper_point_for_point():
    from runner.backends.atari import ENVPOOL_OWNED, envpool_kwargs

    spec = env_spec(
        backend="envpool",
        id="Pong-v5",
        atari={"frame_skip": 3, "noop_max": 7, "clip_reward": False},
    )
    kw = envpool_kwargs(spec.atari)
    assert set(kw) == set(ENVPOOL_OWNED)
    assert (kw["frame_skip"], kw["noop_max"], kw["reward_clip"]) == (3, 7, False)
    assert kw["max_episode_steps"] == 108_000 // 3 and kw["stack_num"] == 4


@pytest.mark.gymnasium
def test_profile_parts_add_up_and_name_a_bottleneck(tmp_path: Path):
    from rich.console import Console

    from runner.run.bench import run as bench

    data = tiny_manifest(
        name="tiny-profile",
        parallel={"envs": 2, "workers": 1, "mode": "dummy"},
        algo={"name": "PPO", "params": {"n_steps": 32, "batch_size": 32, "n_epochs": 1}},
        bench={
            "steps": 256,
            "warmup": 64,
            "repeats": 2,
            "train": False,
            "profile": True,
            "inference": False,
            "cold_start": False,
        },  # inference and cold start: test_bench
    )
    console = Console(record=True, width=200)
    bench.run_bench(Manifest.model_validate(data), tmp_path, console=console)
    point = json.loads((tmp_path / "bench.json").read_text())["points"][0]
    prof = point["profile"]
    assert set(prof["share"]) == {"env", "inference", "update", "other"}
    assert sum(prof["share"].values()) == pytest.approx(1.0, abs=1e-6)
    assert all(v > 0 for v in prof["seconds_per_step"].values())
    assert len(prof["overhead_ratios"]) == 2
    png = tmp_path / "plots" / "profile.png"
    assert png.is_file() and png.stat().st_size > 10_000
    text = console.export_text()
    assert "rollout profile" in text and "the bottleneck is" in text
    assert "profile overhead" in text
