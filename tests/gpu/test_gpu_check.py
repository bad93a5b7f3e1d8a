"""The GPU check (tests/gpu/check_gpu.sh) as it runs on a machine lent without a package index,
here on the CPU: `make gpu-wheels` builds the wheelhouse within its limit; a fresh Python with only
torch and JAX (this environment's own, standing in for the machine's) installs it as the check
does (`pip install --no-index --no-deps --target`), and the check's --dry path runs every step
there at tiny sizes.

The wheelhouse is for the lent machine's Python 3.12: `make test-gpu-env` runs this in the GPU
environment (Python 3.12, torch 2.11, JAX); elsewhere it skips.
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.helpers import ROOT

PYTHON = "3.12"  # the lent machine's (make gpu-wheels: GPU_WHEELS_PY)
LIMIT = 60 * 2**20

_spec = importlib.util.spec_from_file_location("wheelhouse", ROOT / "tests/gpu/wheelhouse.py")
assert _spec is not None and _spec.loader is not None
wheelhouse = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wheelhouse)


def test_the_wheel_is_stale_when_the_trees_package_differs(tmp_path):
    """The check installs rlcrate's wheel only where the tree beside it holds the same package:
    a module changed or added since `make gpu-wheels` is named (caches and logs are not)."""
    (tmp_path / "runner").mkdir()
    (tmp_path / "runner" / "a.py").write_text("A = 1\n")
    wheel = tmp_path / "rlcrate-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        digest = wheelhouse.record_hash(b"A = 1\n")
        z.writestr("rlcrate-0.dist-info/RECORD", f"runner/a.py,sha256={digest},6\n")
    assert wheelhouse.stale(wheel, tmp_path) == ""
    (tmp_path / "runner" / "MUJOCO_LOG.TXT").write_text("a warning")
    assert wheelhouse.stale(wheel, tmp_path) == ""
    (tmp_path / "runner" / "b.py").write_text("")
    assert wheelhouse.stale(wheel, tmp_path) == "runner/b.py is not in the wheel"
    (tmp_path / "runner" / "b.py").unlink()
    (tmp_path / "runner" / "a.py").write_text("A = 2\n")
    assert wheelhouse.stale(wheel, tmp_path) == "runner/a.py is not the wheel's"


def _closure(*roots: str) -> list[md.Distribution]:
    """The installed distributions `roots` need, theirs included (no extras)."""
    todo, seen = list(roots), {}
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue  # a dependency for another platform or Python
        seen[name] = dist
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return list(seen.values())


def _machine(dest: Path) -> Path:
    """A fresh venv of this Python with only torch and JAX and what they need: this
    environment's own, linked in (nothing downloaded). No pip, as in a Python uv made: the check
    runs the wheel of pip that ensurepip bundles. Its python3."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    site = dest / "lib" / f"python{PYTHON}" / "site-packages"
    for dist in _closure("torch", "jax", "jaxlib"):
        base = Path(str(dist.locate_file("")))
        for top in {f.parts[0] for f in dist.files or [] if f.parts[0] != ".."}:
            if not (site / top).exists():
                (site / top).symlink_to(base / top)
    return dest / "bin" / "python3"


@pytest.mark.slow
@pytest.mark.wheelhouse
@pytest.mark.skipif(
    f"{sys.version_info[0]}.{sys.version_info[1]}" != PYTHON,
    reason=f"the wheelhouse is for the lent machine's Python {PYTHON}: make test-gpu-env runs "
    "this in the GPU environment",
)
def test_the_check_runs_from_its_wheelhouse_in_a_python_with_only_torch_and_jax(tmp_path):
    """Slow (a few minutes): every step of the --dry path, from the wheels alone."""
    wheels = tmp_path / "wheels"
    # neither this environment's path (its test tools) nor its venv reaches the processes below
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    made = subprocess.run(
        ["make", "-s", "gpu-wheels", f"GPU_WHEELS={wheels}", f"GPU_WHEELS_PY={PYTHON}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    meta = json.loads((wheels / "wheelhouse.json").read_text())
    on_disk = {p.name: p.stat().st_size for p in wheels.glob("*.whl")}
    assert meta["wheels"] == on_disk and meta["python"] == PYTHON
    assert sum(p.stat().st_size for p in wheels.iterdir()) <= LIMIT, meta["total_bytes"]
    assert any(n.startswith("rlcrate-") for n in on_disk)
    assert not any(n.startswith(("torch-", "jax-", "numpy-")) for n in on_disk), on_disk
    assert any("Isaac Sim" in why for why in meta["left_out"].values())

    python = _machine(tmp_path / "machine")
    bare = subprocess.run([python, "-c", "import torch, jax, pydantic"], capture_output=True)
    assert b"No module named 'pydantic'" in bare.stderr, bare.stderr  # only torch and JAX

    env.update(PATH=f"{python.parent}{os.pathsep}{env['PATH']}", MUJOCO_GL="egl",
               RLCRATE_CACHE_DIR=str(tmp_path / "cache"))  # fmt: skip
    out = tmp_path / "gpu-check.json"
    cmd = [str(ROOT / "tests/gpu/check_gpu.sh"), "--wheels", str(wheels), str(out), "--dry"]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    got = json.loads(out.read_text())
    _check_dry_result(got, on_disk)


def _check_dry_result(got: dict, wheels: dict[str, int]) -> None:
    assert got["dry"] is True and got["from"].startswith("wheelhouse")
    assert "ensurepip" in got["wheels"]["pip"], got["wheels"]  # the fresh Python has no pip
    assert any(n.startswith("rlcrate-") for n in got["wheels"]["installed"]), got["wheels"]
    assert len(got["wheels"]["installed"]) + len(got["wheels"]["machine_has"]) == len(wheels)
    # torch brings typing-extensions at the lock's version: the machine's own copy stays in use
    assert "typing-extensions" in got["wheels"]["machine_has"], got["wheels"]
    host = got["host"]
    assert host["cuda_available"] is False, host
    assert host["torch"].split("+")[0] == md.version("torch").split("+")[0], host
    for algo in ("PPO", "SAC"):
        cpu = got["sb3"][algo]["cpu"]
        assert cpu["state"] == "done" and cpu["train_steps_per_s"] > 0, cpu
        assert got["sb3"][algo]["cuda"] == {"skipped": "--dry: no GPU"}
    assert got["determinism"]["rc"] == 0 and "bitwise" in got["determinism"]["verdict"], got
    assert got["reproduce"]["run"]["state"] == "done", got["reproduce"]
    assert got["reproduce"]["rc"] == 0 and "identical" in got["reproduce"]["verdict"], got
    assert got["resume"]["rc"] == 0 and "exact" in got["resume"]["verdict"], got["resume"]
    (clip,) = got["video"]["clips"]
    assert clip["frames"] > 0 and clip["file"].endswith(".gif"), got["video"]
    assert "error" not in got["video"]["gl"], got["video"]  # the GL that drew, by name
    assert "brax" in got["brax"]["skipped"], got["brax"]
    for step in ("isaaclab", "rsl_rl", "scaling"):
        assert "do not travel" in got[step]["skipped"], got[step]
