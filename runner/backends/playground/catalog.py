"""What the playground backend knows of the installed MuJoCo Playground without importing it
(importing it takes 10-15 s: JAX, MJX, every env module).

- Where it is: the runner's own Python, else the GPU environment's (`make gpu-env`), whose
  Python then runs the units.
- Its env ids and each one's family, read from the registries' source (`_envs` in
  `mujoco_playground/_src/<family>/__init__.py`), as the brax backend reads Brax's.
- Whether an env's assets are in the package: the DeepMind Control Suite's are; locomotion and
  manipulation envs load MuJoCo Menagerie's robots, which Playground clones with git from
  GitHub into the package's `external_deps/` the first time one is loaded (a download, which
  a machine without that network access cannot make: it would fail or hang in a unit).
- Every env's default configuration and its published Brax PPO hyperparameters: asked once of
  the units' Python (`registry`, a subprocess) and kept in rlcrate's cache per install.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

from runner.backends.base import GPU_ENV_HINT, gpu_env_python
from runner.errors import BackendUnavailable

INSTALL = (
    f"install rlcrate's playground extra (pip install 'rlcrate[playground]'), or {GPU_ENV_HINT}, "
    "or set RLCRATE_PYTHON_PLAYGROUND to a Python that has playground==0.2.0 and rlcrate"
)
FAMILIES = ("dm_control_suite", "locomotion", "manipulation")
# The families whose envs load MuJoCo Menagerie's robots (Playground's `load` clones it first)
MENAGERIE_FAMILIES = ("locomotion", "manipulation")
MENAGERIE_DIR = "external_deps/mujoco_menagerie"  # under the package (mjx_env.MENAGERIE_PATH)
MENAGERIE_REPO = "github.com/deepmind/mujoco_menagerie"
ROOT = Path(__file__).resolve().parents[3]  # runner/backends/playground/catalog.py -> checkout
PYTHON_VAR = "RLCRATE_PYTHON_PLAYGROUND"


def _own() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("mujoco_playground", "jax"))


def _site_package(python: Path) -> Path | None:
    lib = python.absolute().parent.parent / "lib"
    return next(iter(sorted(lib.glob("python3*/site-packages/mujoco_playground"))), None)


def interpreter() -> str | None:
    """None when the runner's own Python has Playground, else the GPU environment's Python when
    it has it (the units run there), else None (`available` says what is missing)."""
    if _own():
        return None
    python = gpu_env_python()
    return str(python) if python.is_file() and _site_package(python) else None


def units_python() -> str | None:
    """The Python the units run with when it is not the runner's own: RLCRATE_PYTHON_PLAYGROUND
    (which `runner.backends.unit_interpreter` honours for every backend), else `interpreter()`."""
    return os.environ.get(PYTHON_VAR) or interpreter()


@cache
def package_dir() -> Path | None:
    """mujoco_playground's package folder, in the Python the units run with; None: not there."""
    if _own() and not os.environ.get(PYTHON_VAR):
        spec = importlib.util.find_spec("mujoco_playground")
        places = list(spec.submodule_search_locations or []) if spec is not None else []
        return Path(places[0]) if places else None
    python = units_python()
    return _site_package(Path(python)) if python else None


def available() -> str | None:
    if package_dir() is None:
        return f"MuJoCo Playground is not installed for rlcrate ({INSTALL})"
    return None


def require() -> Path:
    root = package_dir()
    if root is None:
        raise BackendUnavailable(str(available()))
    return root


@cache
def families() -> dict[str, str]:
    """Env id -> its family, from the keys of each family's `_envs` registry in the source."""
    root, out = require(), {}
    for family in FAMILIES:
        path = root / "_src" / family / "__init__.py"
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError) as exc:
            raise BackendUnavailable(f"{path}: Playground's {family} registry: {exc}") from None
        for node in tree.body:
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)):
                continue
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id == "_envs":
                keys = [k.value for k in node.value.keys if isinstance(k, ast.Constant)]
                out.update(dict.fromkeys(map(str, keys), family))
    if not out:
        raise BackendUnavailable(f"{root}: Playground's env registries (_envs) were not found")
    return out


def menagerie() -> Path:
    return require() / MENAGERIE_DIR


@cache
def menagerie_commit() -> str:
    """The Menagerie commit Playground checks out (MENAGERIE_COMMIT_SHA in its mjx_env.py)."""
    path = require() / "_src" / "mjx_env.py"
    with contextlib.suppress(OSError, SyntaxError):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)):
                continue
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id == "MENAGERIE_COMMIT_SHA":
                return str(node.value.value)
    return "the one its mjx_env.py names"


def missing_asset(env_id: str) -> str | None:
    """What `env_id` needs that is not in the installed package (one clause naming the asset
    and where Playground would download it into), or None when it has everything."""
    family = families().get(env_id)
    if family not in MENAGERIE_FAMILIES or menagerie().is_dir():
        return None
    return (
        f"MuJoCo Menagerie's robot models, which are not in the installed package: Playground "
        f"downloads them (git clone of {MENAGERIE_REPO}) into {menagerie()} when a {family} env "
        "is first loaded"
    )


# The registry, asked of the units' Python (a subprocess), cached in rlcrate's cache per install


@cache
def registry() -> dict[str, Any]:
    """`runner.backends.playground.registry`'s answer: every env's family and flattened default
    configuration, and the Brax PPO config Playground publishes for it. In a process that has
    imported Playground already (a unit), read there; else from the cache, or asked once."""
    from runner.backends.playground import registry as reader

    if "mujoco_playground" in sys.modules:
        return reader.registry()
    root = require()
    python = units_python() or sys.executable
    stamp = f"{reader.FORMAT}:{os.path.realpath(python)}:{root}:{_install_stamp(root)}"
    path = _cache_file(stamp)
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and data.get("format") == reader.FORMAT:
            return data
    data = _ask(python, reader.MARKER)
    with contextlib.suppress(OSError):  # a cache that cannot be written only costs speed
        from runner.record.rundir import write_text_atomic

        write_text_atomic(path, json.dumps(data), durable=False)
    return data


def _cache_file(stamp: str) -> Path:
    from runner.record.cache import cache_dir

    return cache_dir() / f"playground-{hashlib.sha256(stamp.encode()).hexdigest()[:16]}.json"


def _install_stamp(root: Path) -> int:
    """Changes when the package is reinstalled (its folder and registry files are rewritten)."""
    paths = [root, root / "_src" / "registry.py", *(root / "_src" / f for f in FAMILIES)]
    return max((p.stat().st_mtime_ns for p in paths if p.exists()), default=0)


def _ask(python: str, marker: str) -> dict[str, Any]:
    cmd = [python, "-m", "runner.backends.playground.registry"]
    env = {
        **os.environ,
        "JAX_PLATFORMS": "cpu",  # reading configs needs no accelerator
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BackendUnavailable(f"{python} could not read Playground's registry ({exc})") from None
    for line in out.stdout.splitlines()[::-1]:
        if line.startswith(marker):
            return dict(json.loads(line[len(marker) :]))
    last = (out.stderr.strip().splitlines() or ["no output"])[-1]
    raise BackendUnavailable(f"{python} could not read Playground's registry: {last} ({INSTALL})")
