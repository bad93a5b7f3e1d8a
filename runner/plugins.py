"""Plugins other packages install: entry points in the group `rlcrate.trainers`, each
`name = module` (the module implements the kind's protocol). Executors come from outside through
RLCRATE_EXECUTORS (`runner.executors`); backends are still a list in the manifest's schema.

A package adds a trainer by `pip install` alone, with this in its pyproject.toml:

    [project.entry-points."rlcrate.trainers"]
    my_loop = "my_package.my_loop"

and a manifest uses it with `algo.trainer: my_loop`. The installed distributions are read once
per process and only when a name is not one of rlcrate's own (reading them costs 0.05-0.25 s);
a plugin's module is imported only when a run asks for it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from types import ModuleType

from runner.errors import UserInputError

GROUPS = {"trainer": "rlcrate.trainers"}


@dataclass(frozen=True)
class Plugin:
    name: str
    module: str
    package: str  # the distribution that declares it, for messages and `doctor`


@cache
def installed(kind: str) -> dict[str, Plugin]:
    """name -> plugin for every entry point of `kind` (a key of GROUPS); the first
    distribution to declare a name keeps it."""
    from importlib.metadata import entry_points

    found: dict[str, Plugin] = {}
    for ep in entry_points(group=GROUPS[kind]):
        package = ep.dist.name if ep.dist is not None else "an unnamed distribution"
        found.setdefault(ep.name, Plugin(ep.name, ep.value.partition(":")[0].strip(), package))
    return found


def load(kind: str, plugin: Plugin) -> ModuleType:
    """The plugin's module; one line naming the package when it cannot be imported."""
    try:
        return importlib.import_module(plugin.module)
    except Exception as exc:  # a broken plugin is the user's install, never a traceback
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UserInputError(
            f"the {kind} {plugin.name!r} of the package {plugin.package} (entry point "
            f"{GROUPS[kind]}) cannot be imported: {plugin.module}: {first}"
        ) from None
