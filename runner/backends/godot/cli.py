"""`rlcrate godot export`: the godot backend's own command (a thin one over `export`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    name="godot",
    help="Godot games: export a Godot 4 project as a headless game binary.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.command("export")
def export_cmd(
    project: Annotated[
        str,
        typer.Argument(help="A Godot 4 project folder, or a bundled game's id (ballchase)."),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="The game binary to write (GAME.x86_64); GAME.pck and, "
            "where the template needs them, GAME.x86_64.libs/ go beside it.",
        ),
    ],
    instances: Annotated[
        int | None,
        typer.Option(
            "--instances",
            help="A bundled game's arenas in its scene (the course's duplicated env roots): the "
            "agents each process of the exported game runs. Default: the scene's own (1).",
        ),
    ] = None,
    preset: Annotated[
        str | None,
        typer.Option(
            "--preset", help="The project's export preset (default: its first Linux one)."
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace GAME, GAME.pck and GAME.libs if they exist.")
    ] = False,
) -> None:
    """Export a Godot 4 project (or a bundled game) as a headless game binary with the installed
    Linux export template, as godot-rl's course does before training: the game then runs with
    `env.id: GAME.x86_64` and `parallel: {envs: W x N, workers: W}` for N agents in its scene,
    and godot-rl's own launcher runs it too."""
    from runner.backends.godot import GAMES_DIR
    from runner.backends.godot.export import export_game

    done = export_game(
        project, out, games_dir=GAMES_DIR, instances=instances, preset=preset, force=force
    )
    if done.wrote_preset:
        typer.echo(f"wrote a Linux export preset to {Path(project) / 'export_presets.cfg'}")
    beside = f", {done.libs.name}/" if done.libs else ""
    typer.echo(
        f"exported {done.binary} ({done.pck.name}{beside}) with Godot {done.godot}'s template "
        f"{done.template}, preset {done.preset!r}, in {done.seconds:.1f} s"
    )
