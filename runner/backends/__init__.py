"""Backend registry: name -> module, imported only when asked for.

Each backend module implements the `Backend` protocol (`base.py`). The names are the manifest's
`env.backend` values (`BACKEND_NAMES`, one list); backend `x` lives in `runner.backends.x`.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING, Final, cast

from runner.errors import UserInputError
from runner.manifest.schema import BACKEND_NAMES

if TYPE_CHECKING:
    from runner.backends.base import Backend

BACKENDS: Final[dict[str, str]] = {name: f"runner.backends.{name}" for name in BACKEND_NAMES}


@cache
def get_backend(name: str) -> Backend:
    if name not in BACKENDS:
        raise UserInputError(f"Unknown backend '{name}'. Valid backends: {', '.join(BACKENDS)}.")
    return cast("Backend", importlib.import_module(BACKENDS[name]))


if TYPE_CHECKING:  # mypy checks every registered module against the protocol
    from runner.backends import brax, envpool, godot, gymnasium, isaaclab

    _CONFORMING: tuple[Backend, ...] = (brax, envpool, godot, gymnasium, isaaclab)
