"""`rlcrate image export`: a built image as a file, for clusters without a container daemon.

`oci-archive`: an OCI image archive written by the engine at hand (buildah push, podman save;
docker save, whose archive is an OCI image layout from Docker 25 on). `sif`: the OCI archive
turned into a Singularity image file by `apptainer build` (or `singularity build`), only where
Apptainer is installed. Command lines are pure functions, tested without an engine.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from runner.errors import RunnerError, UserInputError

FORMATS = ("oci-archive", "sif")


def oci_archive_command(engine: str, tag: str, output: Path) -> list[str]:
    if engine == "buildah":
        return ["buildah", "push", "--quiet", tag, f"oci-archive:{output}:{tag}"]
    if engine == "podman":
        return ["podman", "save", "--quiet", "--format", "oci-archive", "-o", str(output), tag]
    return ["docker", "save", "-o", str(output), tag]


def sif_command(apptainer: str, archive: Path, output: Path) -> list[str]:
    return [apptainer, "build", "--force", str(output), f"oci-archive://{archive}"]


def _apptainer() -> str:
    for name in ("apptainer", "singularity"):
        if shutil.which(name):
            return name
    raise UserInputError(
        "--format sif needs Apptainer (or Singularity), which is not installed here; export "
        "--format oci-archive and run `apptainer build IMAGE.sif oci-archive://ARCHIVE` where "
        "it is"
    )


def _run(cmd: list[str]) -> None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as exc:
        raise RunnerError(f"{cmd[0]} could not start: {exc}") from None
    if out.returncode:
        lines = (out.stderr or out.stdout).strip().splitlines() or [f"exit {out.returncode}"]
        raise RunnerError(f"{cmd[0]} failed: {lines[-1]}")


def export(target: str, fmt: str, output: Path | None, engine: str | None) -> Path:
    """Write the image `target` (cpu, cuda or a tag) as `fmt`; returns the file written."""
    from runner.images.engine import detect_engine, inspect, resolve_target

    if fmt not in FORMATS:
        raise UserInputError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    apptainer = _apptainer() if fmt == "sif" else None
    variant, tag = resolve_target(target)
    engine = detect_engine(engine)
    if inspect(engine, tag) is None:
        raise UserInputError(
            f"{engine} has no image {tag}; build it with `rlcrate image build {variant}`"
        )
    suffix = ".sif" if fmt == "sif" else ".oci.tar"
    output = (output or Path(tag.rsplit("/", 1)[-1].replace(":", "-") + suffix)).resolve()
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(f".{output.name}.partial")
    partial.unlink(missing_ok=True)
    try:
        if apptainer is None:
            _run(oci_archive_command(engine, tag, partial))
        else:
            with tempfile.TemporaryDirectory(dir=output.parent) as tmp:
                archive = Path(tmp) / "image.oci.tar"
                _run(oci_archive_command(engine, tag, archive))
                _run(sif_command(apptainer, archive, partial))
        partial.replace(output)  # never a half-written export under the final name
    finally:
        partial.unlink(missing_ok=True)
    return output
