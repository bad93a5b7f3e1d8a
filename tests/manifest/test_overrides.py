"""`--set PATH=VALUE` and `--seeds` through the console script: validated as the file is, a
problem names the override, applied before the matrix expands, recorded in the run, and used by
`--resume` and `reproduce`."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.helpers import rlcrate, run_dir_of, tiny_manifest, toy_manifest


def _one_error(out, *words: str) -> str:
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def test_validate_applies_sets_and_seeds(write_manifest):
    path = write_manifest(tiny_manifest(matrix={"parallel.envs": [2, 4]}))
    out = rlcrate(
        "validate",
        str(path),
        "-s",
        "train.timesteps=1024",
        "--set",
        "seeds=[5, 7]",
        "--set",
        "matrix.parallel.envs=[1, 2, 4]",
    )
    assert out.returncode == 0, out.stderr
    assert "3 variant(s) x 2 seed(s) = 6 units" in out.stdout
    out = rlcrate("validate", str(path), "--num-seeds", "4", "--set", "seeds=[1]")  # it wins
    assert "2 variant(s) x 4 seed(s) = 8 units" in out.stdout, out.stdout + out.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--set", "train.timesteps=abc"], ["error: --set train.timesteps=abc: ", "integer"]),
        (
            ["-s", "algo.parms.n_steps=3"],
            ["--set algo.parms.n_steps=3", "did you mean 'algo.params'"],
        ),
        (["-s", "trian.timesteps=3"], ["'trian.timesteps' does not exist", "did you mean 'train'"]),
        (["-s", "parallel.workers=8"], ["--set parallel.workers=8", "cannot exceed envs"]),
        (["-s", "train.timesteps"], ["--set train.timesteps: expected PATH=VALUE"]),
        (["-s", "env.kwargs={a: [}"], ["--set env.kwargs={a: [}: expected the node content"]),
        (["-s", "train.timesteps.x=1"], ["--set train.timesteps.x=1", "has no field 'x'"]),
        (["-s", "matrix.algo.name=PPO"], ["--set matrix.algo.name=PPO", "valid list (got 'PPO')"]),
        (
            ["-s", "track.mlflow.uri=not a uri"],
            ["--set track.mlflow.uri=not a uri", "expected a URI"],
        ),
        (["--seeds", "0,3,0"], ["--seeds: seed 0 is given more than once"]),
        (["--seeds", "1,-2"], ["--seeds: '-2' is not a seed", "--num-seeds N"]),
        (["--seeds", "a,b"], ["--seeds: 'a' is not a seed; write seeds as 0, 0,2 or 0-4"]),
        (["--seeds", ""], ["--seeds: expected at least one seed, got ''"]),
        (["--num-seeds", "0"], ["--num-seeds: expected a count of seeds from 1 to 10,000"]),
        (["-s", "algo.params.gamma=.inf"], ["--set algo.params.gamma=.inf: expected a finite"]),
        (["-s", "algo.params.gamma=.nan"], ["--set algo.params.gamma=.nan: expected a finite"]),
        (["-s", "env.kwargs={a: 1, a: 2}"], ["env.kwargs={a: 1, a: 2}: a: duplicate key"]),
    ],
)
@pytest.mark.parametrize("command", ["validate", "run"])
def test_bad_override_one_line_exit_2_before_any_run_dir(
    write_manifest, tmp_path, command, args, words
):
    path = write_manifest(tiny_manifest())
    out = rlcrate(
        command, str(path), *args, *(["--out", str(tmp_path / "runs")] if command == "run" else [])
    )
    _one_error(out, *words)
    assert not (tmp_path / "runs").exists()


def test_file_problems_keep_their_line_beside_an_override(write_manifest):
    m = tiny_manifest()
    m["eval"]["episodes"] = 0
    out = rlcrate("validate", str(write_manifest(m)), "-s", "train.timesteps=-1")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert any(line.startswith("error: --set train.timesteps=-1: ") for line in lines), lines
    assert any("m.yaml:" in line and "eval.episodes" in line for line in lines), lines


@pytest.mark.slow  # trains 4 tiny units, then reproduces 2 (toy_climb: the overrides are tested)
@pytest.mark.gymnasium
def test_overridden_matrix_run_is_recorded_resumed_and_reproduced(write_manifest, tmp_path):
    m = toy_manifest(name="tiny", matrix={"algo.params.noise": [0.1, 0.2]}, train__timesteps=128)
    path = write_manifest(m)
    sets = ["-s", "algo.params.step_ms=0.5", "-s", "matrix.algo.params.noise=[0.1, 0.3]"]
    out = rlcrate("run", str(path), "--out", str(tmp_path / "runs"), *sets, "--num-seeds", "2")
    assert out.returncode == 0, out.stdout + out.stderr
    run = run_dir_of(tmp_path / "runs", "tiny")
    res = yaml.safe_load((run / "resolved.yaml").read_text())
    assert sorted(res["variants"]) == ["noise-0.1", "noise-0.3"] and res["seeds"] == [0, 1]
    for v in res["variants"].values():
        assert v["config"]["algo"]["params"]["step_ms"] == 0.5
    rec = res["command_line"]
    assert rec["set"] == ["algo.params.step_ms=0.5", "matrix.algo.params.noise=[0.1, 0.3]"]
    assert rec["seeds"] == [0, 1] and "--num-seeds" in rec["argv"]
    prov = json.loads((run / "provenance.json").read_text())
    assert prov["command_line"] == rec
    assert yaml.safe_load((run / "manifest.yaml").read_text()) == m  # as given
    assert (run / "units/noise-0.3/seed-1/eval.json").is_file()
    # --resume without the overrides uses the recorded ones (nothing left to do)
    again = rlcrate("run", str(run / "manifest.yaml"), "--resume", str(run))
    assert again.returncode == 0, again.stderr
    # reproduce reruns the recorded, overridden manifest
    archive = tmp_path / "a.tar.gz"
    assert rlcrate("archive", str(run), "-o", str(archive), "--no-models").returncode == 0
    rep = rlcrate("reproduce", str(archive), "--out", str(tmp_path / "rerun"), "--seeds", "1")
    assert rep.returncode == 0, rep.stdout + rep.stderr
    assert "verdict: identical (2 unit(s) rerun" in rep.stdout
    rerun = yaml.safe_load((run_dir_of(tmp_path / "rerun", "tiny") / "resolved.yaml").read_text())
    assert sorted(rerun["variants"]) == ["noise-0.1", "noise-0.3"] and rerun["seeds"] == [1]
    assert rerun["variants"]["noise-0.3"]["config"]["algo"]["params"]["step_ms"] == 0.5
