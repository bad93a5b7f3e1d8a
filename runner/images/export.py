"""`rlcrate image export`: a built image as a file, for clusters without a container daemon.

`oci-archive`: an OCI image archive written by the engine at hand (buildah push, podman save;
docker save, whose archive is an OCI image layout from Docker 25 on). `sif`: that archive turned
into a Singularity image file by `apptainer build` (or `singularity build`), through a definition
file that adds the image's digest and tag to its labels (`images.sif`); where Apptainer is
installed. The archive and Apptainer's work files go in a folder beside the output, removed
after. Command lines are pure functions, tested without an engine.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from runner.errors import RunnerError, UserInputError
from runner.images import sif

FORMATS = ("oci-archive", "sif")
NO_APPTAINER = (
    "--format sif needs Apptainer (or Singularity), which is not installed here; export "
    "--format oci-archive and run `apptainer build IMAGE.sif oci-archive://ARCHIVE` where it is, "
    f"or {sif.INSTALL}"
)


def oci_archive_command(engine: str, tag: str, output: Path) -> list[str]:
    if engine == "buildah":
        return ["buildah", "push", "--quiet", tag, f"oci-archive:{output}:{tag}"]
    if engine == "podman":
        return ["podman", "save", "--quiet", "--format", "oci-archive", "-o", str(output), tag]
    return ["docker", "save", "-o", str(output), tag]


def _run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, env=env)
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
    apptainer = sif.apptainer_binary(NO_APPTAINER) if fmt == "sif" else None
    variant, tag = resolve_target(target)
    engine = detect_engine(engine)
    info = inspect(engine, tag)
    if info is None:
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
            with tempfile.TemporaryDirectory(dir=output.parent, prefix=".rlcrate-sif-") as tmp:
                archive, recipe = Path(tmp) / "image.oci.tar", Path(tmp) / "image.def"
                _run(oci_archive_command(engine, tag, archive))
                recipe.write_text(sif.definition(archive, info))
                # its unpacked image and squashfs beside the output, not in a small /tmp
                env = {**os.environ, "APPTAINER_TMPDIR": tmp}
                _run(sif.build_command(apptainer, recipe, partial), env)
        partial.replace(output)  # never a half-written export under the final name
    finally:
        partial.unlink(missing_ok=True)
    return output
