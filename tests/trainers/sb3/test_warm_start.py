"""Warm starts (`train.init_from`): a unit starts from a finished unit of another run.

Real SB3 training on CartPole and on the BallChase surrogate, through the console script: the
child starts from exactly the parent's policy and statistics (a zero-shot child replays the
parent's evaluation), the lineage is pinned, bad parents are one line and exit 2 before any
unit, and an archive carries the parent so `reproduce` reruns from it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from runner.record.rundir import file_sha256
from tests.helpers import rlcrate, run_dir_of, tiny_manifest

# slow: every test trains a parent (or several runs) with real SB3, or starts Godot
pytestmark = [pytest.mark.gymnasium, pytest.mark.slow]

NORMALIZED = {"obs": True, "reward": False}


@pytest.fixture(scope="module")
def parent(tmp_path_factory) -> Path:
    """A finished CartPole run of two seeds, PPO with observation normalization."""
    tmp = tmp_path_factory.mktemp("parent")
    m = tiny_manifest(name="parent", seeds=[0, 1], algo__normalize=NORMALIZED)
    (tmp / "parent.yaml").write_text(yaml.safe_dump(m))
    out = rlcrate("run", str(tmp / "parent.yaml"), "--out", str(tmp / "runs"))
    assert out.returncode == 0, out.stderr
    return run_dir_of(tmp / "runs", "parent")


def child(parent: Path, **over) -> dict:
    given = {
        "name": "child",
        "seeds": [0, 1],
        "algo__normalize": NORMALIZED,
        "train__init_from": {"run": str(parent)},
    }
    return tiny_manifest(**{**given, **over})


def _returns(unit: Path) -> list[float]:
    return [e["return"] for e in json.loads((unit / "eval.json").read_text())["episodes"]]


def _obs_count(unit: Path) -> float:
    with np.load(unit / "vecnormalize.npz", allow_pickle=False) as z:
        return float(z["obs.count"])


def test_zero_shot_replays_the_parent_and_the_lineage_is_pinned(parent, write_manifest, tmp_path):
    # timesteps 0: the parent's policy and statistics, evaluated as they are, on the same env
    # and eval seeds: the same returns, episode by episode
    out = rlcrate(
        "run",
        str(write_manifest(child(parent, train__timesteps=0))),
        "--out",
        str(tmp_path),
        report=True,
    )
    assert out.returncode == 0, out.stderr
    run = run_dir_of(tmp_path, "child")
    for seed in (0, 1):
        mine, theirs = run / f"units/default/seed-{seed}", parent / f"units/default/seed-{seed}"
        assert _returns(mine) == _returns(theirs)
        assert _obs_count(mine) == _obs_count(theirs)
    res = yaml.safe_load((run / "resolved.yaml").read_text())
    pinned = res["variants"]["default"]["parent"]
    assert pinned["run"] == str(parent) and pinned["variant"] == "default"
    assert pinned["manifest_sha256"] == file_sha256(parent / "manifest.yaml")
    unit = pinned["units"]["1"]
    assert unit["seed"] == 1
    assert unit["model_sha256"] == file_sha256(parent / "units/default/seed-1/model.zip")
    assert unit["stats_sha256"] == file_sha256(parent / "units/default/seed-1/vecnormalize.npz")
    prov = json.loads((run / "provenance.json").read_text())
    assert prov["lineage"]["default"] == pinned
    report = (run / "report.md").read_text()
    assert f"from run `{parent.name}`" in report and "0←0, 1←1" in report and "zero-shot" in report


def test_fine_tuning_continues_the_statistics(parent, write_manifest, tmp_path):
    # one seed, taken from parent seed 1 (not its own); normalization statistics go on counting
    m = child(parent, seeds=[0], train__init_from={"run": str(parent.parent), "seed": 1})
    out = rlcrate("run", str(write_manifest(m)), "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    mine = run_dir_of(tmp_path, "child") / "units/default/seed-0"
    theirs = parent / "units/default/seed-1"
    steps = json.loads((mine / "status.json").read_text())["timesteps_done"]
    assert steps == 512
    # the parent's count, plus what this unit saw: its steps and the first reset (2 envs)
    assert _obs_count(mine) == pytest.approx(_obs_count(theirs) + steps + 2, abs=1)
    # a folder of runs resolved to the newest finished run in it
    res = yaml.safe_load((mine.parents[2] / "resolved.yaml").read_text())
    assert res["variants"]["default"]["parent"]["run"] == str(parent)


def _refused(out, *words: str) -> str:
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("error:")]
    assert out.returncode == 2, out.stderr
    assert len(errors) == 1 and "Traceback" not in out.stderr, out.stderr
    assert "train" in errors[0] and all(w in errors[0] for w in words), errors[0]
    return errors[0]


def _copy(parent: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy" / parent.name
    shutil.copytree(parent, copy)
    return copy


@pytest.mark.parametrize(
    "case",
    [
        "missing",
        "unfinished",
        "damaged",
        "spaces",
        "normalization",
        "algorithm",
        "network",
        "own-loop",
    ],
)
def test_bad_parents_are_one_line_before_any_unit(case, parent, write_manifest, tmp_path):
    m = child(parent)
    words: tuple[str, ...] = ()
    if case == "missing":
        m["train"]["init_from"]["run"] = str(tmp_path / "nowhere")
        words = ("init_from.run", "no finished run")
    elif case in ("unfinished", "damaged"):
        copy = _copy(parent, tmp_path)
        unit = copy / "units/default/seed-1"
        if case == "unfinished":
            status = json.loads((unit / "status.json").read_text())
            (unit / "status.json").write_text(json.dumps({**status, "state": "interrupted"}))
            words = ("seed-1", "interrupted, not done", "--resume")
        else:
            data = (unit / "model.zip").read_bytes()
            (unit / "model.zip").write_bytes(data[: len(data) // 2])
            words = ("model.zip is damaged",)
        m["train"]["init_from"]["run"] = str(copy)
    elif case == "spaces":
        m["env"] = {"backend": "gymnasium", "id": "rlcrate/BallChaseSim-v0"}
        words = ("spaces", "Discrete(9)", "Discrete(2)")
    elif case == "normalization":
        del m["algo"]["normalize"]
        words = ("normalized", "turns it off")
    elif case == "algorithm":
        m["algo"]["name"], m["algo"]["params"] = "A2C", {"n_steps": 8}
        words = ("parent trained PPO", "A2C")
    elif case == "network":  # only a model built from the parent's file can tell
        m["algo"]["params"]["policy_kwargs"] = {"net_arch": [32]}
        words = ("network does not fit", "policy_kwargs")
    else:
        m["env"] = {"backend": "brax", "id": "inverted_pendulum"}
        m["algo"] = {"name": "brax_ppo"}
        m["parallel"] = {"envs": 8}
        words = ("brax_ppo trainer cannot start from another run",)
    if case in ("missing", "damaged"):  # `run` refuses before any unit, leaving nothing
        out = rlcrate("run", str(write_manifest(m)), "--out", str(tmp_path / "runs"))
        assert not (tmp_path / "runs").exists(), "a refused run leaves no run directory"
    else:  # `validate` finds the rest (--deep: loads the parent into this variant's model)
        deep = ["--deep"] if case == "network" else []
        out = rlcrate("validate", *deep, str(write_manifest(m)))
    _refused(out, *words)


def test_zero_steps_need_a_parent(write_manifest):
    out = rlcrate("validate", str(write_manifest(tiny_manifest(train__timesteps=0))))
    _refused(out, "0 only with init_from")


@pytest.mark.godot
def test_zero_shot_in_godot_replays_the_surrogate(write_manifest, tmp_path):
    """Sim to Godot: a policy trained on the BallChase surrogate, evaluated in the real game with
    the same eval seed, plays the same episodes (the surrogate replays the game's arenas and
    arithmetic), so the zero-shot returns are the surrogate's, but for the game sending each
    step's reward truncated to 1e-6 (at most 500 x 2e-6 over an episode)."""
    env = {"backend": "gymnasium", "id": "rlcrate/BallChaseSim-v0"}
    m = tiny_manifest(
        name="sim", env=env, parallel={"envs": 8}, train__timesteps=2048, eval__episodes=2
    )
    out = rlcrate("run", str(write_manifest(m, "sim.yaml")), "--out", str(tmp_path / "runs"))
    assert out.returncode == 0, out.stderr
    kid = {**m, "name": "game", "env": {"backend": "godot", "id": "ballchase"}}
    kid["train"] = {"timesteps": 0, "init_from": {"run": str(tmp_path / "runs/sim")}}
    out = rlcrate("run", str(write_manifest(kid, "game.yaml")), "--out", str(tmp_path / "runs"))
    assert out.returncode == 0, out.stderr
    sim = _returns(run_dir_of(tmp_path / "runs", "sim") / "units/default/seed-0")
    game = _returns(run_dir_of(tmp_path / "runs", "game") / "units/default/seed-0")
    assert game == pytest.approx(sim, abs=500 * 2e-6)
    assert len(set(sim)) == 2, "two different episodes (the env goes on between them)"


def test_calibration_warns_across_a_scale_mismatch(write_manifest, tmp_path):
    """A surrogate-trained parent, and children on the game's physics and on other physics:
    only the second crosses an observation-scale mismatch, and is warned (not refused)."""
    env = {"backend": "gymnasium", "id": "rlcrate/BallChaseSim-v0"}
    m = tiny_manifest(name="sim", env=env, parallel={"envs": 4}, train__timesteps=256)
    out = rlcrate("run", str(write_manifest(m, "sim.yaml")), "--out", str(tmp_path / "runs"))
    assert out.returncode == 0, out.stderr
    init = {"run": str(tmp_path / "runs/sim")}
    for physics, warned in (("faithful", False), ("alt", True)):
        kid = {**m, "env": {**env, "kwargs": {"physics": physics}}}
        kid["train"] = {"timesteps": 0, "init_from": init}
        out = rlcrate("validate", "--deep", str(write_manifest(kid, f"{physics}.yaml")))
        assert out.returncode == 0, out.stderr
        warnings = [ln for ln in out.stderr.splitlines() if "observation scales" in ln]
        assert len(warnings) == int(warned), out.stderr
    assert "warm start from" in warnings[0] and "dim 4" in warnings[0]


def test_archive_carries_the_parent_and_reproduce_reruns_from_it(parent, write_manifest, tmp_path):
    copy = _copy(parent, tmp_path)
    m = child(copy, seeds=[1], train__timesteps=128)
    out = rlcrate("run", str(write_manifest(m)), "--out", str(tmp_path / "runs"))
    assert out.returncode == 0, out.stderr
    run = run_dir_of(tmp_path / "runs", "child")
    model = copy / "units/default/seed-1/model.zip"
    # a parent changed since the run started: refused, saying how to include it
    saved = model.read_bytes()
    model.write_bytes(saved + b"\0")
    out = rlcrate("archive", str(run), "-o", str(tmp_path / "a.tar.gz"))
    assert out.returncode == 2 and "restore the parent run" in out.stderr, out.stderr
    assert not (tmp_path / "a.tar.gz").exists()
    model.write_bytes(saved)
    out = rlcrate("archive", str(run), "-o", str(tmp_path / "a.tar.gz"))
    assert out.returncode == 0, out.stderr
    shutil.rmtree(copy)  # the parent is gone from this machine: the archive's copy stands in
    out = rlcrate("reproduce", str(tmp_path / "a.tar.gz"), "--out", str(tmp_path / "again"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "verdict: identical" in out.stdout
    rerun = run_dir_of(tmp_path / "again", "child")
    pinned = yaml.safe_load((rerun / "resolved.yaml").read_text())["variants"]["default"]
    assert pinned["parent"]["units"]["1"]["model_sha256"] == file_sha256(
        parent / "units/default/seed-1/model.zip"
    )
    assert Path(pinned["parent"]["run"]).is_relative_to(tmp_path / "again" / "parents")
