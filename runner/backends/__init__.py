"""Backend registry: name -> module, imported only when asked for.

Each backend module implements the `Backend` protocol (`base.py`). The names are the manifest's
`env.backend` values (`BACKEND_NAMES`, one list); backend `x` lives in `runner.backends.x`.
"""

from __future__ import annotations

import importlib
import os
import shutil
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Final, cast

from runner.backends.base import python_problem
from runner.errors import UserInputError
from runner.manifest.schema import BACKEND_NAMES, Manifest

if TYPE_CHECKING:
    from runner.backends.base import Backend

BACKENDS: Final[dict[str, str]] = {name: f"runner.backends.{name}" for name in BACKEND_NAMES}


def register(name: str, module: str) -> None:
    """Add a backend at run time (tests' toy backend); a shipped one is a name in `BackendName`
    (runner.manifest.schema), its module `runner.backends.<name>`."""
    cast("dict[str, str]", BACKENDS)[name] = module
    get_backend.cache_clear()


@cache
def get_backend(name: str) -> Backend:
    if name not in BACKENDS:
        raise UserInputError(f"Unknown backend '{name}'. Valid backends: {', '.join(BACKENDS)}.")
    return cast("Backend", importlib.import_module(BACKENDS[name]))


def anchor_paths(manifest: Manifest, base: Path) -> Manifest:
    """A relative env.id that names a file (a game project, for a backend whose ids may be
    paths) means relative to the manifest's folder, not the shell's."""
    env_id = manifest.env.id
    if not get_backend(manifest.env.backend).TRAITS.ids_are_paths:
        return manifest
    if "/" in env_id or env_id.startswith("."):
        candidate = base / env_id
        if not Path(env_id).is_absolute() and candidate.exists():
            env = manifest.env.model_copy(update={"id": str(candidate.resolve())})
            return manifest.model_copy(update={"env": env})
    return manifest


def python_env_var(name: str) -> str:
    return f"RLCRATE_PYTHON_{name.upper()}"


def unit_interpreter(name: str) -> str | None:
    """The Python that runs units of backend `name`: RLCRATE_PYTHON_<NAME> when set, else the
    backend's own `interpreter()`; None: the runner's own. Checked to be an executable file."""
    var = python_env_var(name)
    python = os.environ.get(var) or get_backend(name).interpreter()
    if python is None:
        return None
    path = shutil.which(python) or python
    source = var if os.environ.get(var) else f"the {name} backend's interpreter"
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        problem: str | None = "is not an executable file"
    else:
        problem = python_problem(os.path.abspath(path))  # hung or broken: seconds, not minutes
    if problem:
        raise UserInputError(
            f"{source}: {python} {problem} (expected the Python that runs {name} units)"
        )
    return os.path.abspath(path)


if TYPE_CHECKING:  # mypy checks every registered module against the protocol
    from runner.backends import brax, envpool, godot, gymnasium, isaaclab

    _CONFORMING: tuple[Backend, ...] = (brax, envpool, godot, gymnasium, isaaclab)
