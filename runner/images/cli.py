"""`rlcrate image build|export|ls`: thin commands over runner.images (added to the root app by
cli.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from runner.errors import UserInputError

app = typer.Typer(
    name="image",
    help="Build, export and list the versioned images.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EngineOpt = Annotated[
    str | None,
    typer.Option(
        "--engine",
        "-e",
        help="docker | podman | buildah (default: $RLCRATE_ENGINE, else the first of them, in "
        "that order, that answers here: docker's daemon up, podman able to start a container).",
    ),
]


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserInputError(f"{what} {item!r} must look like KEY=VALUE")
        out[key] = value
    return out


@app.command("build")
def build_cmd(
    target: Annotated[str, typer.Argument(help="cpu | cuda | a full tag rlcrate-<variant>:<v>.")],
    engine: EngineOpt = None,
    base: Annotated[
        str | None,
        typer.Option(
            "--base",
            help="Base image NAME@sha256:DIGEST instead of the pinned one (a mirror, "
            "an air-gapped copy).",
        ),
    ] = None,
    build_arg: Annotated[
        list[str] | None,
        typer.Option(
            "--build-arg", help="KEY=VALUE passed to the build (PIP_INDEX_URL, PIP_CERT ...)."
        ),
    ] = None,
    volume: Annotated[
        list[str] | None,
        typer.Option(
            "--volume",
            "-v",
            help="SRC:/run/rlcrate-build/NAME[:ro] mounted for the dependency step, e.g. a CA "
            "bundle or a wheel folder; never copied into the image (docker: through an image of "
            "its own, passed as BUILD_INPUTS).",
        ),
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Build every layer afresh (no layer cache).")
    ] = False,
) -> None:
    """Build a versioned image from Dockerfile.<variant> and images/<variant>/."""
    from runner.images.build import build

    tag = build(  # errors reach the root command's one mapping (runner.cli.exit.exit_status)
        target,
        engine=engine,
        base=base,
        build_args=_pairs(build_arg or [], "--build-arg"),
        volumes=volume or [],
        no_cache=no_cache,
    )
    typer.echo(tag)


@app.command("export")
def export_cmd(
    target: Annotated[str, typer.Argument(help="cpu | cuda | a full tag rlcrate-<variant>:<v>.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="oci-archive | sif.")] = "oci-archive",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="File to write.", dir_okay=False)
    ] = None,
    engine: EngineOpt = None,
) -> None:
    """Write a built image as an OCI archive, or a .sif for Apptainer (where installed)."""
    from runner.images.export import export

    typer.echo(export(target, fmt, output, engine))


@app.command("ls")
def ls_cmd(engine: EngineOpt = None) -> None:
    """List the local rlcrate images of one engine with their version, lock hash, size and
    digest."""
    from runner.images.engine import LABEL_LOCK, detect_engine, list_images

    engine = detect_engine(engine)
    found = list_images(engine)
    if not found:
        typer.echo(f"no rlcrate images in {engine}; build one with `rlcrate image build cpu`")
        return
    typer.echo(f"images in {engine} (another engine: --engine or RLCRATE_ENGINE)")
    typer.echo(f"{'IMAGE':32} {'VERSION':9} {'REVISION':10} {'LOCK':14} {'SIZE':>8}  ID")
    for info in found:
        labels = info.labels
        size = f"{info.size / 1e9:.2f} GB" if info.size else "-"
        typer.echo(
            f"{info.ref:32} {labels.get('org.opencontainers.image.version', '-'):9} "
            f"{labels.get('org.opencontainers.image.revision', '-')[:10]:10} "
            f"{labels.get(LABEL_LOCK, '-')[:12]:14} {size:>8}  "
            f"{(info.digest or info.id)[:19]}"
        )
