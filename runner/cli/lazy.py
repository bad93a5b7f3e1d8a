"""The root command group, which imports a command's module only when that command runs.

`rlcrate --help` lists every command from `Lazy` entries (name, module, the one line its help
shows), so it imports none of them: `run`'s options alone are built from every executor's settings
(pydantic, the manifest schema, the plugins' entry points). `rlcrate run ...` imports
`runner.cli.running` and nothing of `image` or `archive`. A test checks each entry's line against
its command's own help, so the listing cannot drift from the commands.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

import typer
from typer.core import TyperCommand

from runner.cli.exit import Group

if TYPE_CHECKING:  # the click this Typer carries (annotations only: older Typers use click's)
    from typer import _click as click


@dataclass(frozen=True)
class Lazy:
    module: str  # a module with a Typer `app`: the command by this name, or the group itself
    help: str  # what `rlcrate --help` shows for it: the first paragraph of its help
    group: bool = False  # the whole app is the command (`image build`, `plugin check`, ...)


@cache
def load(name: str, entry: Lazy) -> click.Command:
    """The click command `name` as Typer makes it from `entry.module`'s app."""
    app = importlib.import_module(entry.module).app
    if entry.group:
        return typer.main.get_group(app)
    command = typer.main.get_group(app).commands.get(name)
    if command is None:
        raise LookupError(f"{entry.module} defines no command {name!r}")
    return command


class LazyGroup(Group):
    """A `Group` whose commands are the `commands_table`'s, each loaded on first use. Until
    then each stands in `commands` as a command with only its help line, which is what the help
    listing and Typer's "did you mean" read."""

    commands_table: dict[str, Lazy] = {}
    _listing = False

    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        for name, entry in self.commands_table.items():
            self.commands[name] = TyperCommand(name, help=entry.help, short_help=entry.help)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = self.commands_table.get(cmd_name)
        if entry is None or self._listing:  # the help's list of commands: nothing imported
            return super().get_command(ctx, cmd_name)
        return load(cmd_name, entry)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False
