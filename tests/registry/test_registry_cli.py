"""What the registries now answer, as users meet it through the console script: a trainer's
cross-field limit and a backend's parallel limit at `validate`, install hints that offer only an
image that has the backend, and `check-determinism`'s bad inputs (exit 2, one line)."""

from __future__ import annotations

import os
import sys

import yaml

from runner.backends.base import Traits
from runner.checks import installed
from tests.helpers import ROOT, rlcrate


def _one_line(proc, status: int = 2) -> str:
    assert proc.returncode == status, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def _example(name: str, tmp_path, **parallel) -> str:
    data = yaml.safe_load((ROOT / "manifests" / name).read_text())
    data["parallel"] = {**data.get("parallel", {}), **parallel}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def test_brax_batch_that_does_not_split_over_the_envs_fails_validate(tmp_path):
    path = _example("brax-tiny.yaml", tmp_path, envs=24)
    line = _one_line(rlcrate("validate", path))
    assert line.startswith(f"error: {path}:") and "parallel.envs:" in line
    assert "(16 x 4 = 64)" in line and "parallel.envs (24)" in line
    assert rlcrate("validate", str(ROOT / "manifests/brax-tiny.yaml")).returncode == 0


def test_isaaclab_workers_fail_validate_even_where_isaaclab_is_not_installed(tmp_path):
    path = _example("isaaclab-cartpole-tiny.yaml", tmp_path, workers=4)
    line = _one_line(rlcrate("validate", path))
    assert "parallel.workers: Isaac Lab steps every env in one simulation" in line


def test_install_hints_offer_only_an_image_that_has_the_backend(monkeypatch):
    monkeypatch.setattr(installed, "missing_packages", lambda backend: [backend])
    isaac = installed.local_run_problem({"isaaclab"}) or ""
    assert "--image cuda" in isaac and "--image cpu" not in isaac  # the CPU image has no Isaac Lab
    assert "make gpu-env" in isaac and installed.image_hint("isaaclab").endswith("(--image cuda)")
    assert "--image cpu" in (installed.local_run_problem({"brax"}) or "")  # both images have Brax
    assert "--image cpu" in (installed.local_run_problem({"envpool"}) or "")
    # no image at all: no image offered
    monkeypatch.setattr(installed.get_backend("godot"), "TRAITS", Traits("godot_rl", "godot", ()))
    assert "--image" not in (installed.local_run_problem({"godot"}) or "--image")


def test_check_determinism_refuses_a_negative_seed():
    line = _one_line(
        rlcrate("check-determinism", str(ROOT / "manifests/quickstart.yaml"), "--seed", "-1")
    )
    assert line == "error: --seed: expected a master seed of 0 or more, got -1"


def test_check_determinism_on_a_backend_that_is_not_installed():
    # Isaac Lab's own Python 3.12 environment is not built on this machine
    if installed.get_backend("isaaclab").available() is None:
        import pytest

        pytest.skip("Isaac Lab is installed here")
    line = _one_line(
        rlcrate("check-determinism", str(ROOT / "manifests/isaaclab-cartpole-tiny.yaml"))
    )
    assert "isaaclab" in line and "make gpu-env" in line


def test_check_determinism_with_a_broken_backend_install_is_one_line(tmp_path):
    """RLCRATE_PYTHON_BRAX names a Python whose brax package is garbage."""
    import shutil

    import pytest

    from runner.backends import brax

    real = brax._package_dir()
    if real is None:
        pytest.skip("a copy of Brax's package is damaged here: Brax is not installed")
    site = tmp_path / "lib" / "python3.11" / "site-packages"  # laid out as a venv is
    shutil.copytree(real, site / "brax", ignore=shutil.ignore_patterns("__pycache__"))
    (site / "brax" / "__init__.py").write_text("def (:\n")  # readable sources, garbage package
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    python.write_text(f'#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    proc = rlcrate(
        "check-determinism",
        str(ROOT / "manifests/brax-tiny.yaml"),
        env_extra={"RLCRATE_PYTHON_BRAX": str(python), "PATH": os.environ["PATH"]},
    )
    line = _one_line(proc)
    assert "RLCRATE_PYTHON_BRAX" in line and "cannot import brax" in line and "SyntaxError" in line
