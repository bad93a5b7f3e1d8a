"""One GPU environment: the lock Dockerfile.cuda installs is the lock `make gpu-env` builds the
environment from, in which CI runs the Isaac Lab and Brax tests and the fast suite (on the CPU).

The checks that need no environment run everywhere; the package-set comparison runs where the
GPU environment has been built (`make gpu-env`; CI builds it before `make test-gpu-env`).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys

import pytest

from runner.backends import get_backend, isaaclab
from runner.backends.base import gpu_env_python
from tests.helpers import ROOT, rlcrate

LOCK = ROOT / "images" / "cuda" / "requirements.lock"


def _pins(text: str) -> dict[str, str]:
    return {
        n.lower().replace("_", "-"): v
        for n, v in re.findall(r"^([A-Za-z0-9_.\-]+)==(\S+)", text, re.M)
    }


def _make_var(name: str) -> str:
    m = re.search(rf"^{name}\s*:?=\s*(\S+)", (ROOT / "Makefile").read_text(), re.M)
    assert m, f"Makefile has no {name}"
    return m.group(1)


def _dockerfile_args() -> dict[str, str]:
    text = (ROOT / "Dockerfile.cuda").read_text()
    return dict(re.findall(r"^ARG (\w+)=(\S+)$", text, re.M))


def test_the_image_installs_the_lock_ci_tests():
    """Dockerfile.cuda copies and installs (hashes required) exactly the file `make gpu-env`
    builds from, at the sha256 the checkout's lock has; a different lock, an unhashed install or
    a second requirements file in either fails here."""
    docker = (ROOT / "Dockerfile.cuda").read_text()
    assert _make_var("GPU_LOCK") == "images/cuda/requirements.lock"
    assert "COPY images/cuda/requirements.lock /opt/rlcrate/requirements.lock" in docker
    assert _dockerfile_args()["LOCK_SHA256"] == hashlib.sha256(LOCK.read_bytes()).hexdigest()
    installs = re.findall(r"pip install[^&]*", re.sub(r"\\\n", " ", docker))
    dep_installs = [i for i in installs if " -r " in i]
    assert dep_installs and all("--require-hashes" in i for i in dep_installs)
    files = {re.findall(r" -r (\S+)", i)[0] for i in dep_installs}
    # the lock itself, and its own build-backend blocks (setuptools, wheel) installed first
    assert files == {"/opt/rlcrate/requirements.lock", "/opt/rlcrate/build-backend.txt"}
    recipe = (ROOT / "Makefile").read_text()
    gpu = recipe[recipe.index("$(GPU_STAMP):") : recipe.index("gpu-env: $(GPU_STAMP)")]
    locked = [ln for ln in gpu.splitlines() if "-r " in ln or "--require-hashes" in ln]
    assert any("--require-hashes" in ln for ln in locked)
    assert "-r $(GPU_LOCK)" in gpu and "images/check-lock.sh cuda" in gpu


def test_the_one_sdist_is_built_from_its_hash():
    """The lock's only sdist-only package is the one the image builds from source, and lock.sh
    keeps it (hashed) in the lock rather than leaving it out."""
    assert _dockerfile_args()["SDIST_ONLY"] == "antlr4-python3-runtime"
    assert "antlr4-python3-runtime" in _pins(LOCK.read_text())
    assert "--no-binary antlr4-python3-runtime" in (ROOT / "images" / "lock.sh").read_text()
    cpu = (ROOT / "Dockerfile.cpu").read_text()
    assert "ARG SDIST_ONLY=:none:" in cpu  # the same shape, nothing to build


def test_gpu_lock_runs_both_gpu_backends():
    """The lock avoids the versions that break the GPU backends, hydra-core 0.11 (isaaclab_tasks
    does not import) and jax 0.12 (Brax 0.14.2's PPO does not run), and has RSL-RL and JAX's CUDA
    plugin at the same JAX."""
    pins = _pins(LOCK.read_text())
    assert tuple(int(x) for x in pins["hydra-core"].split(".")[:2]) >= (1, 3)
    assert pins["jax"] == pins["jaxlib"] == pins["jax-cuda13-plugin"] == "0.9.2"
    assert pins["brax"] == "0.14.2" and "rsl-rl-lib" in pins and pins["isaaclab"] == "3.0.0"
    assert not (ROOT / "images" / "isaaclab").exists()


def test_brax_runs_in_the_runners_own_environment():
    """The CPU lock, and so `make venv`, CI and the CPU image, carries Brax and the JAX its PPO
    runs on: no third environment."""
    pins = _pins((ROOT / "images" / "cpu" / "requirements.lock").read_text())
    assert pins["brax"] == "0.14.2" and pins["jax"] == pins["jaxlib"] == "0.9.2"
    assert get_backend("brax").available() is None and get_backend("brax").interpreter() is None
    assert "brax-env" not in (ROOT / "Makefile").read_text()


def test_lock_check_is_one_line(tmp_path):
    """A lock that no longer matches its recorded sha256 fails images/check-lock.sh (which
    `make gpu-env` runs first) in one line."""
    tree = tmp_path / "repo"
    (tree / "images" / "cuda").mkdir(parents=True)
    (tree / "images" / "check-lock.sh").write_bytes((ROOT / "images/check-lock.sh").read_bytes())
    (tree / "images" / "check-lock.sh").chmod(0o755)
    (tree / "images" / "cuda" / "versions.toml").write_bytes(
        (ROOT / "images/cuda/versions.toml").read_bytes()
    )
    (tree / "images" / "cuda" / "requirements.lock").write_bytes(LOCK.read_bytes())
    ok = subprocess.run(
        [str(tree / "images" / "check-lock.sh"), "cuda"], capture_output=True, text=True
    )
    assert ok.returncode == 0, ok.stderr
    with (tree / "images" / "cuda" / "requirements.lock").open("a") as f:
        f.write("six==1.16.0\n")
    bad = subprocess.run(
        [str(tree / "images" / "check-lock.sh"), "cuda"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "does not match the sha256" in bad.stderr and "make lock-cuda" in bad.stderr


@pytest.mark.skipif(
    isaaclab._in_isaaclab_python(), reason="runs where the runner's Python lacks Isaac Lab"
)
def test_missing_gpu_env_is_one_line_naming_the_target(write_manifest, tmp_path):
    manifest = {
        "rlcrate": 1,
        "name": "il-missing",
        "env": {"backend": "isaaclab", "id": "Isaac-Cartpole-Direct"},
        "seeds": [0],
    }
    env = {"RLCRATE_GPU_ENV": str(tmp_path / "no-gpu-env"), "RLCRATE_PYTHON_ISAACLAB": ""}
    runs = tmp_path / "runs"
    out = rlcrate("run", str(write_manifest(manifest)), "--out", str(runs), env_extra=env)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "make gpu-env" in out.stderr and "no-gpu-env" in out.stderr
    assert not runs.exists()


def test_doctor_shows_one_gpu_environment():
    out = rlcrate("doctor", timeout=300)
    assert out.returncode == 0, out.stderr
    # one row whose first cell is "GPU environment" (other rows' details may name it too)
    first_cells = [ln.strip("│┃ ").split("│")[0].strip() for ln in out.stdout.splitlines()]
    assert first_cells.count("GPU environment") == 1, out.stdout
    assert "brax-env" not in out.stdout and "isaaclab-env" not in out.stdout
    # the row names the lock it was built from, or says to build it (again)
    expected = "requirements.lock" if gpu_env_python().is_file() else "make gpu-env"
    assert expected in out.stdout


DISTS = (
    "import importlib.metadata as m, json; "
    "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"
)


@pytest.mark.skipif(
    not gpu_env_python().is_file() and not isaaclab._in_isaaclab_python(),
    reason="the GPU environment is not built here (make gpu-env)",
)
def test_gpu_env_holds_exactly_the_lock():
    """Every locked package at its locked version, and nothing else but rlcrate itself: the
    environment CI tests in is the image's package set (pip and the test tools live outside it)."""
    python = sys.executable if isaaclab._in_isaaclab_python() else str(gpu_env_python())
    out = subprocess.run(
        [python, "-I", "-c", DISTS], capture_output=True, text=True, check=True, timeout=300
    )
    have = {n.lower().replace("_", "-"): v for n, v in json.loads(out.stdout).items()}
    want = _pins(LOCK.read_text())
    wrong = {n: (v, have.get(n)) for n, v in want.items() if have.get(n) != v}
    assert not wrong, f"locked (want, have) that differ: {wrong}"
    extra = set(have) - set(want) - {"rlcrate", "pip"}
    assert not extra, f"installed but not in the lock: {sorted(extra)}"
