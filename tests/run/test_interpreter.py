"""Per-unit interpreter: a unit runs with the Python its backend names, recorded in
resolved.yaml, provenance.json and the unit's status.json.

The second interpreter is a real Python 3.12 venv (cached in .cache/venv312) with rlcrate's
source on its path and only the light packages a unit imports first; this machine has no torch
wheel for Python 3.12, so its unit gets as far as seeding torch and fails there, in 3.12 (the
unit's own record says so).
"""

from __future__ import annotations

import glob
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from runner.backends import python_env_var
from tests.helpers import ROOT, rlcrate, run_dir_of, tiny_manifest

VENV = ROOT / ".cache" / "venv312"
LIGHT = ("pyyaml", "pydantic", "numpy")  # what a unit imports before its trainer's packages


def _python312() -> str | None:
    candidates = [shutil.which("python3.12"), *sorted(glob.glob(
        str(Path.home() / ".pyenv/versions/3.12*/bin/python3.12")))]  # fmt: skip
    for c in filter(None, candidates):
        ok = subprocess.run([c, "--version"], capture_output=True, text=True)
        if ok.returncode == 0 and ok.stdout.startswith("Python 3.12"):
            return c
    return None


@pytest.fixture(scope="module")
def venv312() -> Path:
    python = VENV / "bin" / "python"
    ready = VENV / ".ready"
    if not ready.exists():
        base = _python312()
        if base is None:
            pytest.skip("needs a python3.12 to make the second venv")
        shutil.rmtree(VENV, ignore_errors=True)
        subprocess.run([base, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *LIGHT], check=True)
        site = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        (Path(site) / "rlcrate-source.pth").write_text(f"{ROOT}\n")
        ready.touch()
    return python


@pytest.mark.slow
@pytest.mark.gymnasium
def test_unit_runs_with_the_interpreter_its_backend_names(venv312, write_manifest, tmp_path):
    path = write_manifest(tiny_manifest())
    var = python_env_var("gymnasium")
    res = rlcrate("run", str(path), "--out", str(tmp_path), env_extra={var: str(venv312)})
    # The pre-run construction already runs in the unit's interpreter: the 3.12 venv has no torch
    # (the runner's own venv has it), so the run is refused before any run directory exists.
    assert res.returncode == 2, res.stderr
    assert "No module named 'torch'" in res.stderr
    assert not list(tmp_path.glob("*/*/resolved.yaml"))


@pytest.mark.slow
@pytest.mark.ray
def test_ray_tasks_start_units_with_that_interpreter(
    venv312,
    ray_cluster,
    write_manifest,
    tmp_path,
):
    path = write_manifest(tiny_manifest())
    res = rlcrate(
        "run", str(path), "--out", str(tmp_path), "--executor", "ray", "--ray-address",
        ray_cluster, env_extra={python_env_var("gymnasium"): str(venv312)},
    )  # fmt: skip
    # With Ray too, the pre-run checks use the unit's interpreter (no torch in the 3.12 venv).
    assert res.returncode == 2, res.stderr
    assert "No module named 'torch'" in res.stderr


@pytest.mark.slow
@pytest.mark.gymnasium
def test_default_interpreter_is_the_runners_own(write_manifest, tmp_path):
    path = write_manifest(tiny_manifest(train__timesteps=64, eval__episodes=1))
    res = rlcrate("run", str(path), "--out", str(tmp_path), "--jobs", "train")
    assert res.returncode == 0, res.stderr
    run_dir = run_dir_of(tmp_path, "tiny")
    assert (
        yaml.safe_load((run_dir / "resolved.yaml").read_text())["variants"]["default"][
            "interpreter"
        ]
        is None
    )
    status = json.loads((run_dir / "units/default/seed-0/status.json").read_text())
    assert status["python"]["executable"] == sys.executable


def test_a_bad_interpreter_is_one_sentence_and_exit_2(write_manifest, tmp_path):
    path = write_manifest(tiny_manifest())
    var = python_env_var("gymnasium")
    res = rlcrate("run", str(path), "--out", str(tmp_path), env_extra={var: str(tmp_path / "nope")})
    assert res.returncode == 2
    assert f"{var}: {tmp_path / 'nope'} is not an executable file" in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "tiny").exists()
