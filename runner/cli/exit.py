"""Where errors become text and exit codes, for every command: `exit_status`, and the Typer
group that runs each command under it (so Typer's test runner sees what a shell sees)."""

from __future__ import annotations

import errno
import importlib

import typer
from typer.core import TyperGroup

from runner.errors import ManifestError, RunnerError

# The click Typer carries (Typer 0.29 vendors its own; older ones use the click package).
click = importlib.import_module(typer.BadParameter.__module__)


# What each status means, for every command; the docs' exit-status page is made from this table
# (tests/project/test_docs.py checks it covers every status the error types and `run` use).
STATUSES: dict[int, str] = {
    0: "success (`reproduce`: the verdict holds; `check-determinism`: bitwise)",
    1: "a unit failed, or the machine failed the run (a full disk; `--image`: the container engine "
    "could not start the image, its own 125/126/127); `reproduce`: the rerun differs or its "
    "`expect:` claims fail, or the rerun could not run to the end (no verdict); "
    "`check-determinism`: the attempts diverged; `status`: a unit failed",
    2: "bad input: manifest, arguments, an unknown command or option, a damaged run directory, a "
    "run in use by another runner, a run directory not finished, an output (`-o`) inside a run "
    "directory, not a regular file, on a read-only file system or (`export` without `--force`) "
    "already there, a file of the run that is a link or not a regular file (`archive`), a "
    "study's records that disagree (`tune --resume`), an archive refused (`reproduce`), a "
    "backend not installed here or a plugin that cannot be imported",
    3: "`run`: every unit finished but an `expect:` claim does not hold (one `expect not met:` "
    "line per claim on stderr; `--no-expect` reports without failing)",
    130: "interrupted (Ctrl-C, SIGTERM)",
}


def exit_status(exc: BaseException) -> int:
    """The one place an error becomes text on stderr and an exit status: a sentence per problem,
    never a traceback. 0 success, 1 a unit failed or the machine failed us, 2 bad input (usage,
    manifest, files), 130 interrupted."""
    if isinstance(exc, typer.Exit):
        return int(exc.exit_code)
    if isinstance(exc, (KeyboardInterrupt, typer.Abort)):
        typer.echo("interrupted", err=True)
        return 130
    if isinstance(exc, click.UsageError):
        ctx = exc.ctx
        where = f"{ctx.command_path}: " if ctx is not None else ""
        if isinstance(exc, click.NoArgsIsHelpError):  # the help was shown; say why it was
            what = "a command" if ctx is None or ctx.parent is None else "arguments"
            typer.echo(f"error: {where}expected {what}", err=True)
        else:
            hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
            typer.echo(f"error: {where}{exc.format_message()}{hint}", err=True)
        return 2
    if isinstance(exc, click.ClickException):
        typer.echo(f"error: {exc.format_message()}", err=True)
        return exc.exit_code
    if isinstance(exc, ManifestError):
        for line in exc.problems:
            typer.echo(f"error: {line}", err=True)
        for broken in _left_out(exc):
            typer.echo(f"error: {broken}; the checks above left it out", err=True)
        return exc.exit_code
    if isinstance(exc, RunnerError):
        typer.echo(f"error: {exc}", err=True)
        return exc.exit_code
    if isinstance(exc, OSError):
        full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
        name = f"{exc.filename}: " if exc.filename else ""
        typer.echo(
            f"error: {'out of disk space: ' if full else ''}{name}{exc.strerror or exc}", err=True
        )
        return 1
    raise exc


def _left_out(exc: ManifestError) -> list[str]:
    """The broken plugins that checking the manifest met and left out, but none of its problems
    names (a manifest naming a broken backend has that problem at `env.backend`)."""
    from runner import plugins

    said = " ".join(p.message for p in exc.problems)
    return [line for line in plugins.left_out() if line not in said]


class Group(TyperGroup):
    """Runs every command (image subcommands included) under `exit_status`, so Typer's test
    runner sees the same messages and exit codes as a shell."""

    def invoke(self, ctx):  # type: ignore[no-untyped-def]
        try:
            return super().invoke(ctx)
        except (RunnerError, KeyboardInterrupt, OSError) as exc:
            raise typer.Exit(exit_status(exc)) from None
