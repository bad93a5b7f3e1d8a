"""Tests import the checkout under test: a subprocess started with a cleared environment (as
tests/reliability/test_bad_inputs.py starts the console script) still imports this checkout's
`runner`, not whichever checkout the venv's editable install points to."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import PLUGINS, ROOT, checkout_env

WHERE = "import runner, sys; sys.stdout.write(runner.__file__)"


def _runner_file(env: dict[str, str]) -> str:
    # run from / so the working directory cannot supply the checkout
    out = subprocess.run(
        [sys.executable, "-c", WHERE], env=env, cwd="/", capture_output=True, text=True, check=True
    )
    return out.stdout


def test_cleared_environment_imports_this_checkout():
    env = checkout_env({"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    assert _runner_file(env) == str(ROOT / "runner" / "__init__.py")


def test_pythonpath_of_another_checkout_comes_after_this_one(tmp_path):
    other = tmp_path / "other-checkout"
    (other / "runner").mkdir(parents=True)
    (other / "runner" / "__init__.py").write_text("raise SystemExit('the wrong checkout')\n")
    env = checkout_env({"PATH": "/usr/bin:/bin", "PYTHONPATH": str(other)})
    assert _runner_file(env) == str(ROOT / "runner" / "__init__.py")
    assert env["PYTHONPATH"].split(":")[1:] == [str(PLUGINS), str(other)]  # the test plugins


def test_no_stray_mujoco_log_in_the_repository():
    tracked = subprocess.run(
        ["git", "ls-files", "MUJOCO_LOG.TXT"], cwd=ROOT, capture_output=True, text=True
    )
    assert tracked.returncode == 0 and tracked.stdout == ""
    ignored = subprocess.run(["git", "check-ignore", "-q", "MUJOCO_LOG.TXT"], cwd=ROOT)
    assert ignored.returncode == 0
