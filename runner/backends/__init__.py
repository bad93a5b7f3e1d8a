"""Backend registry: name -> a `Backend` (base.py), found by entry point and made when asked for.

The names are the manifest's `env.backend` values: rlcrate's own (declared in its
pyproject.toml, group `rlcrate.backends`) and those installed packages add (`runner.plugins`).
Each backend is a class; its module is imported only when a run, a check or `doctor` needs it.
"""

from __future__ import annotations

import os
import shutil
from functools import cache
from pathlib import Path
from typing import Any

from runner import plugins
from runner.backends.base import Backend, python_problem
from runner.errors import UserInputError
from runner.manifest.schema import Manifest


def names() -> list[str]:
    """Every backend name: rlcrate's own, then the installed packages'."""
    return plugins.names("backend")


@cache
def get_backend(name: str) -> Backend[Any]:
    plugin = plugins.find("backend", name)
    if plugin is None:
        raise UserInputError(plugins.unknown("backend", name))
    cls = plugins.load("backend", plugin)
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise plugins.not_a("backend", plugin, "runner.backends.base.Backend")
    try:
        return cls()
    except TypeError as exc:  # an abstract hook left out
        raise UserInputError(
            f"the backend {name!r} of the package {plugin.package} ({plugin.target}) is "
            f"incomplete: {exc}"
        ) from None


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
