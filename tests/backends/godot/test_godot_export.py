"""`rlcrate godot export` and exported games through the console script: what the export refuses
(one line, exit 2, nothing replaced), and a real export with three agents in its scene validated,
trained and evaluated at its own size (two processes, six envs); asking for another count is one
line at parallel.envs. The game's own processes are checked in
tests/backends/godot/test_godot.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from runner.backends import godot
from tests.backends.godot.test_godot import HAVE_GODOT
from tests.helpers import ROOT, rlcrate, run_dir_of, tiny_manifest

pytestmark = [
    pytest.mark.godot,
    pytest.mark.skipif(not HAVE_GODOT, reason="needs Godot 4 (make godot4) and godot-rl"),
]


def _one_line(res, *words: str) -> str:
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


def test_what_an_export_refuses_is_one_line_and_replaces_nothing(tmp_path):
    old = Path(shutil.copytree(ROOT / "tests/games/ballchase3", tmp_path / "old"))
    _one_line(rlcrate("godot", "export", str(old), "-o", str(tmp_path / "g")), "Godot 3 project")
    project = Path(shutil.copytree(godot.GAMES_DIR / "ballchase", tmp_path / "mine"))
    out = tmp_path / "game.x86_64"
    _one_line(
        rlcrate("godot", "export", str(project), "--instances", "4", "-o", str(out)),
        "--instances sets the arena count of a bundled game",
    )
    _one_line(
        rlcrate("godot", "export", str(project), "--preset", "Web", "-o", str(out)),
        "--preset Web",
        "has no preset of that name",
        "Linux",
    )
    (project / "export_presets.cfg").write_text('[preset.0]\n\nname="Web"\nplatform="Web"\n')
    _one_line(rlcrate("godot", "export", str(project), "-o", str(out)), "has no Linux preset")
    missing = {"RLCRATE_GODOT_TEMPLATE": str(tmp_path / "no-template")}
    _one_line(
        rlcrate("godot", "export", "ballchase", "-o", str(out), env_extra=missing),
        "RLCRATE_GODOT_TEMPLATE",
        "is not a file",
    )
    out.write_text("mine")
    _one_line(rlcrate("godot", "export", "ballchase", "-o", str(out)), "exists (--force")
    assert out.read_text() == "mine"
    assert not list(tmp_path.glob(".rlcrate-export-*"))  # no half-written export left


@pytest.mark.slow
def test_an_exported_game_validates_trains_and_evaluates_at_its_own_size(
    exported_ballchase, tmp_path
):
    env = {"backend": "godot", "id": str(exported_ballchase), "kwargs": {"episode_steps": 50}}
    m = tiny_manifest(
        name="exported",
        env=env,
        parallel={"envs": 6, "workers": 2},
        algo__params={"n_steps": 32, "batch_size": 96, "n_epochs": 1},
        train__timesteps=192,
        eval__episodes=3,
    )
    # an exported game takes no --instances and no episode_steps of the bundled one: its
    # kwargs go to it as launch arguments, which this game reads
    path = tmp_path / "exported.yaml"
    path.write_text(yaml.safe_dump(m, sort_keys=False))
    res = rlcrate("validate", "--deep", str(path))
    assert res.returncode == 0, res.stdout + res.stderr
    res = rlcrate("run", str(path), "--out", str(tmp_path / "runs"))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    unit = run_dir_of(tmp_path / "runs", "exported") / "units/default/seed-0"
    episodes = json.loads((unit / "eval.json").read_text())["episodes"]
    assert len(episodes) == 3 and all(e["length"] == 50 for e in episodes)
    m["parallel"] = {"envs": 4, "workers": 2}
    path.write_text(yaml.safe_dump(m, sort_keys=False))
    line = _one_line(rlcrate("validate", "--deep", str(path)), "parallel.envs:", "runs 3 agents")
    assert "set parallel.envs to parallel.workers x 3" in line and "exported.yaml:" in line
