"""Exact resume: a unit killed with SIGKILL and resumed ends bit-identical to the same
unit run without a stop: final parameters, TensorBoard scalars per step, eval.json.

One run holds the units compared (PPO, PPO with `normalize`, SAC on Pendulum, each on a
DummyVecEnv of 2 envs; PPO on the BallChase surrogate's vectorised env), so the three runs below
cost three runner processes, not twelve; the uninterrupted one runs beside the killed one. Each
unit kills itself (`RLCRATE_KILL_AT_STEP`, a fraction of its budget drawn from a fixed seed:
0.657, steps 672, 672, 262 and 672) after a checkpoint and mid-rollout, with no chance to save
anything. Brax's adapter state: tests/backends/brax/test_brax.py.
"""

from __future__ import annotations

import hashlib
import json
import random
import signal
import zipfile
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from runner.record.datafiles import torch_load
from runner.record.provenance import DeterminismCheck
from runner.trainers.kill import KILL_ENV
from tests.helpers import checkout_env, rlcrate, run_dir_of, start_run, tiny_manifest

SAC = {
    "env.id": "Pendulum-v1",
    "env.kwargs": {"max_episode_steps": 50},  # episodes (and their logs) every 100 steps
    "algo.name": "SAC",
    "algo.params": {"learning_starts": 50, "batch_size": 32, "buffer_size": 5000},
    "train.timesteps": 400,
    "train.checkpoint_every": 100,
}


PPO = {"algo.name": "PPO", "algo.params": {"n_steps": 64, "batch_size": 64, "n_epochs": 2}}


def _manifest() -> dict:
    return tiny_manifest(
        algo={"name": "PPO"},
        parallel={"envs": 2, "workers": 1},  # gymnasium's default mode (dummy); Brax has none
        train__timesteps=1024,
        train__checkpoint_every=256,
        # log_interval 3: the resumed segment logs at the unit's multiples of 3 rollouts
        matrix=[
            PPO,
            # and evaluations during training, under training's statistics: each seeded by its
            # number, so the resumed unit's are the unstopped one's
            {
                **PPO,
                "algo.normalize": {"obs": True, "reward": True},
                "train.log_interval": 3,
                "eval.every": 256,
                "eval.every_episodes": 2,
            },
            SAC,
            {**PPO, "env.id": "rlcrate/BallChaseSim-v0"},  # its state: arrays, not a replay
        ],
    )


def params_hash(unit: Path) -> str:
    """SHA-256 over every tensor of the final model (policy, optimizers, SAC's entropy), read
    through torch's restricted unpickler."""
    h = hashlib.sha256()
    with zipfile.ZipFile(unit / "model.zip") as z:
        for name in sorted(n for n in z.namelist() if n.endswith(".pth")):
            with z.open(name) as f:
                _hash_tree(h, name, torch_load(f))
    return h.hexdigest()


def _hash_tree(h, key: str, value) -> None:
    if isinstance(value, dict):
        for k in sorted(value, key=str):
            _hash_tree(h, f"{key}.{k}", value[k])
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _hash_tree(h, f"{key}.{i}", v)
    else:
        h.update(key.encode())
        h.update(
            value.detach().numpy().tobytes() if hasattr(value, "numpy") else repr(value).encode()
        )


def scalars(unit: Path) -> dict[tuple[str, int], float]:
    """(tag, step) -> value over every segment's TensorBoard file (wall-clock `time/` tags
    left out); a step written by two segments (before a kill, and again after the resume)
    must have one value."""
    out: dict[tuple[str, int], float] = {}
    for folder in sorted({p.parent for p in (unit / "tb").rglob("events.out.tfevents.*")}):
        acc = EventAccumulator(str(folder)).Reload()
        for tag in acc.Tags()["scalars"]:
            for e in [] if tag.startswith("time/") else acc.Scalars(tag):
                assert out.setdefault((tag, e.step), e.value) == e.value, (folder, tag, e.step)
    return out


@pytest.mark.slow  # three runner processes train four units each
@pytest.mark.gymnasium
def test_killed_units_resume_bit_identical(write_manifest, tmp_path):
    draw = random.Random(35)
    kill = round(draw.uniform(0.3, 0.95), 3)
    path = write_manifest(_manifest())
    full = start_run(path, tmp_path / "full", env_extra=checkout_env())
    killed = rlcrate(
        "run", str(path), "--out", str(tmp_path / "k"), env_extra={KILL_ENV: str(kill)}
    )
    assert killed.returncode == 1, killed.stderr
    assert full.wait(timeout=300) == 0, full.stderr and full.stderr.read()
    run = run_dir_of(tmp_path / "k", "tiny")
    last = rlcrate("run", str(run / "manifest.yaml"), "--resume", str(run))
    assert last.returncode == 0, last.stderr
    ref = run_dir_of(tmp_path / "full", "tiny")
    units = sorted((ref / "units").glob("*/seed-0"))
    assert len(units) == len(_manifest()["matrix"])
    for a in units:
        b = run / a.relative_to(ref)
        status = json.loads((b / "status.json").read_text())
        budget = status["timesteps_done"]
        # resumed from the newest checkpoint before the kill point
        every = 256 if budget == 1024 else 100
        assert status["resumes"] == [int(kill * budget) // every * every]
        assert status["resume"] == "exact"
        assert params_hash(a) == params_hash(b), a.parent.name
        sa, sb = scalars(a), scalars(b)
        assert len(sa) > 20 and sa == sb, a.parent.name
        ea, eb = (json.loads((u / "eval.json").read_text()) for u in (a, b))
        assert ea["episodes"] == eb["episodes"] and ea["mean"] == eb["mean"]
        if "normalize" in a.parent.name:
            va, vb = ((u / "evals.json").read_text() for u in (a, b))
            assert va == vb and len(json.loads(va)["evaluations"]) == 4, va
        # the state is data: JSON and arrays, pinned by the checkpoint's record
        ckpts = sorted((b / "checkpoints").glob("step-*.json"))
        names = {n for c in ckpts if ".state" not in c.name
                 for n in json.loads(c.read_text())["files"]}  # fmt: skip
        assert any(n.endswith(".state.npz") for n in names)
        assert any(n.endswith(".state.json") for n in names)


@pytest.mark.gymnasium
def test_sigterm_stops_at_the_next_rollout_boundary_and_resumes_exactly(tmp_path, monkeypatch):
    """A stop the unit hears (the executor's SIGTERM: Ctrl-C, Slurm's signal before the time
    limit, then its requeue) waits for the next rollout boundary and checkpoints there with its
    state: the resumed unit ends bit-identical. In this process, through the unit's own handler."""
    from runner.manifest.schema import Manifest
    from runner.record.seeding import derive, seed_everything
    from runner.run.unit import _sigterm
    from runner.trainers import get_trainer
    from runner.trainers.base import STOP
    from runner.trainers.kill import KILL_SIGNAL_ENV

    cfg = Manifest.model_validate(tiny_manifest(train__timesteps=1024))  # no periodic checkpoint
    seeds = derive(0)

    def train(unit: Path) -> list[int]:
        seed_everything(seeds, torch_threads=1, with_torch=True)
        return get_trainer("sb3").train(cfg, unit, seeds).resumes

    train(tmp_path / "full")
    monkeypatch.setenv(KILL_ENV, "0.41")  # step 420, in the rollout from 384 to 512
    monkeypatch.setenv(KILL_SIGNAL_ENV, "TERM")
    old = signal.signal(signal.SIGTERM, _sigterm)
    try:
        with pytest.raises(KeyboardInterrupt):
            train(tmp_path / "stopped")
    finally:
        signal.signal(signal.SIGTERM, old)
        STOP.clear()
    names = sorted(p.name for p in (tmp_path / "stopped/checkpoints").iterdir())
    assert names == ["step-512.json", "step-512.state.json", "step-512.state.npz", "step-512.zip"]
    # a state of another unit (here: another seed) is refused before anything is applied
    from runner.errors import RunFileError
    from runner.trainers.sb3.state import read_state, state_files

    ckpt = tmp_path / "stopped/checkpoints/step-512.zip"
    identity = json.loads(state_files(ckpt)[0].read_text())["identity"]
    with pytest.raises(RunFileError, match="of another unit .its seed differ"):
        read_state(ckpt, {**identity, "seed": identity["seed"] + 1})
    monkeypatch.delenv(KILL_ENV)
    assert train(tmp_path / "stopped") == [512]
    a, b = tmp_path / "full", tmp_path / "stopped"
    assert params_hash(a) == params_hash(b)
    assert scalars(a) == scalars(b)


@pytest.mark.slow  # three training processes
@pytest.mark.gymnasium
def test_check_determinism_resume_says_exact_and_is_remembered(
    write_manifest, tmp_path, monkeypatch
):
    """`rlcrate check-determinism --resume`: trained, killed after a checkpoint (at the step
    asked, by SIGKILL), resumed, in fresh processes; exact for CartPole (its command line is
    test_cli's to check). The verdict is remembered for this environment, backend and trainer,
    and later runs' provenance carries it; one that found a difference would lower the declared
    level. A trainer that cannot be killed, or is not: tests/run/test_check_resume.py."""
    from io import StringIO

    from rich.console import Console

    from runner import provenance
    from runner.provenance.determinism import resume_level
    from runner.run.check_resume import check_resume

    monkeypatch.setenv("RLCRATE_CACHE_DIR", str(tmp_path / "cache"))
    out = StringIO()
    path = write_manifest(tiny_manifest())
    assert check_resume(path, 512, 0, Console(file=out, width=200)) == 0, out.getvalue()
    assert "exact: final parameters and TensorBoard scalars identical" in out.getvalue()
    (entry,) = json.loads((tmp_path / "cache/determinism.json").read_text()).values()
    checked = entry["resume"]["gymnasium"]["sb3"]
    assert checked["result"] == "exact" and checked["differ"] == []
    assert checked["steps"] == 512 and checked["resumed_from"], checked
    # killed by SIGKILL at its first step at or past the one asked (2 envs a step)
    asked = int(checked["killed_at"] * 512)
    assert asked <= checked["killed_at_step"] < asked + 2, checked
    assert checked["resumed_from"][-1] <= checked["killed_at_step"]
    assert f"killed at step {checked['killed_at_step']}, resumed from step" in out.getvalue()
    assert "gymnasium" not in entry  # check-determinism's own verdicts are kept apart
    prov = provenance.collect(["rlcrate"], path, {"gymnasium"}, {}, {"gymnasium": {"sb3"}})
    assert prov["resume_checked"]["gymnasium"]["sb3"] == checked
    assert prov["resume"]["gymnasium"] == "exact"
    differed = DeterminismCheck.model_validate(
        {**checked, "result": "approximate", "differ": ["params"]}
    )
    assert resume_level("gymnasium", checked=differed) == (
        "approximate: check-determinism --resume found params differ (on CartPole-v1)"
    )


def test_what_a_checkpoint_cannot_hold_makes_the_level_approximate():
    """Dict observations (and with them SB3's Dict replay buffer) are not saved: the unit's
    recorded level says so, not `exact`; a plain ReplayBuffer is."""
    from stable_baselines3 import PPO, SAC
    from stable_baselines3.common.envs import SimpleMultiObsEnv

    from runner.manifest.schema import Manifest
    from runner.record.seeding import derive
    from runner.trainers.sb3.exact import Exact

    cfg = Manifest.model_validate(tiny_manifest())
    dict_obs = Exact(cfg, derive(0))
    assert dict_obs.level() == "exact"  # gymnasium's CartPole: replayable
    dict_obs.check_model(PPO("MultiInputPolicy", SimpleMultiObsEnv(), n_steps=16, batch_size=16))
    assert dict_obs.level().startswith("approximate: Dict observations")
    plain = Exact(cfg, derive(0))
    plain.check_model(SAC("MlpPolicy", "Pendulum-v1", buffer_size=100))
    assert plain.level() == "exact"
