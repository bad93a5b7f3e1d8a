"""Where backends, trainers and executors come from: entry points, found by name.

Each kind has an entry-point group (GROUPS); an entry `name = "package.module:Class"` (or a
module, for a trainer) names the plugin. rlcrate's own plugins are declared in its pyproject.toml
under the same groups, and a package adds one by `pip install` alone:

    [project.entry-points."rlcrate.backends"]
    my_sim = "my_package.backend:MySim"

A manifest then says `env: {backend: my_sim, ...}`. OWN holds rlcrate's own entries (the same as its
pyproject.toml, which tests/registry/test_plugins.py checks), so a source tree that pip has not
installed still finds them, and their names answer without reading the installed distributions
(0.05-0.25 s); a plugin's module is imported only when something asks for it.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from dataclasses import dataclass
from functools import cache
from typing import Any

from runner.errors import SettingError, UserInputError, did_you_mean

GROUPS = {
    "backend": "rlcrate.backends",
    "trainer": "rlcrate.trainers",
    "executor": "rlcrate.executors",
}
OWN: dict[str, dict[str, str]] = {
    "backend": {
        "godot": "runner.backends.godot:Godot",
        "envpool": "runner.backends.envpool:EnvPool",
        "gymnasium": "runner.backends.gymnasium:Gymnasium",
        "isaaclab": "runner.backends.isaaclab:IsaacLab",
        "brax": "runner.backends.brax:Brax",
        "playground": "runner.backends.playground:Playground",
    },
    "trainer": {
        "sb3": "runner.trainers.sb3:SB3",
        "brax_ppo": "runner.trainers.brax_ppo:BraxPPO",
        "rsl_rl_ppo": "runner.trainers.rsl_rl_ppo:RslRlPPO",
    },
    "executor": {
        "local": "runner.executors.local:Local",
        "ray": "runner.executors.ray:Ray",
        "slurm": "runner.executors.slurm:Slurm",
    },
}
RLCRATE = "rlcrate"  # the distribution that declares OWN
HERE = "this process"  # the "package" of a plugin added by `register`
# Plugins added at run time, in this process only (`register`), by kind: name -> target. An
# installed package adds one to every process through its entry point instead.
_REGISTERED: dict[str, dict[str, str]] = {kind: {} for kind in GROUPS}


@dataclass(frozen=True)
class Plugin:
    name: str
    target: str  # "package.module" or "package.module:attribute"
    package: str  # the distribution that declares it, for messages and `doctor`

    @property
    def module(self) -> str:
        return self.target.partition(":")[0].strip()


def own(kind: str) -> dict[str, Plugin]:
    return {n: Plugin(n, t, RLCRATE) for n, t in OWN[kind].items()}


@cache
def installed(kind: str) -> dict[str, Plugin]:
    """name -> plugin for every entry point of `kind` (a key of GROUPS), rlcrate's own first;
    the first distribution to declare a name keeps it."""
    from importlib.metadata import entry_points

    found = own(kind)
    for ep in entry_points(group=GROUPS[kind]):
        package = ep.dist.name if ep.dist is not None else "an unnamed distribution"
        found.setdefault(ep.name, Plugin(ep.name, ep.value.strip(), package))
    return found


def register(kind: str, name: str, target: str) -> None:
    """Add a plugin (`module:Class`) of `kind` at run time, in this process only; it is found
    before any other of that name."""
    _REGISTERED[kind][name] = target


def unregister(kind: str, name: str) -> None:
    """Take back what `register` added (tests)."""
    _REGISTERED[kind].pop(name, None)


def find(kind: str, name: str) -> Plugin | None:
    """The plugin `name` of `kind`: one this process registered, else rlcrate's own (without
    reading the installed packages), else an installed package's."""
    if name in _REGISTERED[kind]:
        return Plugin(name, _REGISTERED[kind][name], HERE)
    return own(kind).get(name) or installed(kind).get(name)


def first_names(kind: str) -> list[str]:
    """The names of `kind` known without reading the installed packages: this process's, then
    rlcrate's own (`names` adds the installed packages' after them)."""
    return [*_REGISTERED[kind], *(n for n in OWN[kind] if n not in _REGISTERED[kind])]


def names(kind: str) -> list[str]:
    """Every name of `kind`: those this process registered, rlcrate's own, the installed
    packages'."""
    return [*_REGISTERED[kind], *(n for n in installed(kind) if n not in _REGISTERED[kind])]


def unknown(kind: str, name: str) -> str:
    """One sentence for a name no plugin of `kind` has, with a suggestion."""
    known = names(kind)
    hint = did_you_mean(name, known)
    return (
        f"no {kind} named {name!r} is installed{hint} ({kind}s: {', '.join(known)}; a package "
        f"adds one with an entry point in the group {GROUPS[kind]})"
    )


# How long a plugin's module may take to import (RLCRATE_PLUGIN_IMPORT_TIMEOUT, seconds): a
# module that blocks at import (waits on a socket, reads stdin) would hang doctor, plugin check
# and validate; one that imports torch or JAX takes seconds.
IMPORT_S = 120.0
_HUNG: dict[str, str] = {}  # modules whose import did not end, in this process


def import_s() -> float:
    value = os.environ.get("RLCRATE_PLUGIN_IMPORT_TIMEOUT")
    if value is None:
        return IMPORT_S
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0.5 <= seconds <= 3600:
        raise SettingError(
            f"RLCRATE_PLUGIN_IMPORT_TIMEOUT={value!r}: expected seconds between 0.5 and 3600"
        )
    return seconds


def _import(module: str, trusted: bool) -> Any:
    """The module, imported in this process. Another package's is imported in a thread that
    may take `import_s()` at most (TimeoutError after, the thread left behind as a daemon:
    this process reports the plugin broken and goes on); `sys.exit` at import is SystemExit."""
    if module in _HUNG:  # its import still holds the module's lock: asking again would hang
        raise TimeoutError(_HUNG[module])
    if trusted or module in sys.modules:
        return importlib.import_module(module)
    found: list[Any] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            found.append(importlib.import_module(module))
        except BaseException as exc:  # SystemExit too: it would end only this thread
            failed.append(exc)

    thread = threading.Thread(target=run, name=f"rlcrate-import-{module}", daemon=True)
    thread.start()
    thread.join(import_s())
    if thread.is_alive():
        _HUNG[module] = f"its import did not finish within {import_s():g} s (blocked?)"
        raise TimeoutError(_HUNG[module])
    if failed:
        raise failed[0]
    return found[0]


def _why(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r}) while being imported"
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def load(kind: str, plugin: Plugin) -> Any:
    """The plugin's module (or its attribute, for `module:attribute`); one line naming the
    package when it cannot be imported: an error, `sys.exit` or an import that does not end."""
    module, _, attr = plugin.target.partition(":")
    try:
        loaded: Any = _import(module.strip(), trusted=plugin.package == RLCRATE)
        for part in filter(None, attr.strip().split(".")):
            loaded = getattr(loaded, part)
    except (Exception, SystemExit) as exc:  # a broken plugin is the user's install
        if isinstance(exc, SettingError):
            raise
        raise UserInputError(
            f"the {kind} {plugin.name!r} of the package {plugin.package} (entry point "
            f"{GROUPS[kind]}) cannot be imported: {plugin.target}: {_why(exc)}"
        ) from None
    return loaded


# Broken plugins that a look over every plugin of a kind met and left out, in this process
# (`env_models`: every backend's options, to name a manifest's problems): one line each, shown
# beside what the look was for (`left_out`), never in its place.
_LEFT_OUT: dict[str, None] = {}


def leave_out(why: str) -> None:
    """Note a broken plugin left out of a look over every plugin (its `load` error's text)."""
    _LEFT_OUT.setdefault(why, None)


def left_out() -> list[str]:
    """The broken plugins left out so far in this process, one line each."""
    return list(_LEFT_OUT)


def not_a(kind: str, plugin: Plugin, base: str) -> UserInputError:
    """The entry point names something other than the class a plugin of `kind` is (a
    function, a module): one line."""
    return UserInputError(
        f"the {kind} {plugin.name!r} of the package {plugin.package} ({plugin.target}) is not a "
        f"subclass of {base}"
    )


_LACKS_SAID: set[tuple[str, str, str]] = set()


def lacks(kind: str, name: str, ability: str, instead: str) -> None:
    """Say once per process, on stderr, that the plugin `name` of `kind` cannot `ability`, and
    what the caller does `instead` (an optional ability a plugin does not declare: the caller's
    default holds, and is never silent)."""
    if (kind, name, ability) in _LACKS_SAID:
        return
    _LACKS_SAID.add((kind, name, ability))
    print(f"warning: the {name} {kind} cannot {ability}: {instead}", file=sys.stderr, flush=True)
