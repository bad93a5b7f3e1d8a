"""`rlcrate plugin check NAME`: a backend, trainer or executor against its contract."""

from __future__ import annotations

from typing import Annotated

import typer

app = typer.Typer(
    name="plugin", help="Check a backend, trainer or executor plugin.", no_args_is_help=True
)


@app.command("check")
def check_cmd(
    name: Annotated[str, typer.Argument(help="The plugin's name (its entry point's).")],
    kind: Annotated[
        str | None,
        typer.Option(
            "--kind", help="backend, trainer or executor (default: every kind of that name)."
        ),
    ] = None,
) -> None:
    """Run the conformance checks the plugin NAME must pass (those rlcrate's own pass in its
    tests); exit status 1 when one fails."""
    from rich.markup import escape
    from rich.table import Table

    from runner.cli.plugin_check import CHECKS, FAILED, OK, check
    from runner.cli.run import console
    from runner.errors import UserInputError

    if kind is not None and kind not in CHECKS:
        raise UserInputError(f"--kind: expected one of {', '.join(CHECKS)}, got {kind!r}")
    out, failed = console(), False
    for what, rows in check(name, kind).items():
        table = Table(title=f"{what} {name}")
        for col in ("check", "result", "detail"):
            table.add_column(col)
        for check_name, result, detail in rows:
            colour = "green" if result == OK else "red" if result == FAILED else "yellow"
            table.add_row(escape(check_name), f"[{colour}]{result}[/]", escape(detail))
            failed = failed or result == FAILED
        out.print(table)
    raise typer.Exit(1 if failed else 0)
