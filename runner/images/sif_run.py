"""`rlcrate run MANIFEST --image FILE.sif`: the same run inside the .sif, under Apptainer, as
`run.run_in_image` runs it inside an engine's image: the manifest's folder read-only at /in, the
output folder at /out, the caller's own uid (Apptainer's way), the image and its digest in the
environment for provenance.

Before anything is made, a container is started once (`true`): an Apptainer that cannot make
its namespaces (no unprivileged user namespaces and no setuid install; a plain chroot, where it
cannot make / private) is one line, exit 2, naming what it said. Ctrl-C and SIGTERM reach the
runner inside through Apptainer (its init passes them on); if this process dies, Apptainer is
told to stop (SIGTERM), and its container dies with it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from runner.errors import RunnerError, UserInputError
from runner.executors.apptainer import FAILED, apptainer_said, exec_command
from runner.images.engine import IN_DIR, OUT_DIR
from runner.images.run import call_engine
from runner.images.sif import INSTALL, SifImage, apptainer_binary
from runner.record.command import ask

PREFLIGHT_TIMEOUT_S = 300.0  # without root or squashfuse, Apptainer unpacks the .sif first


def run_command(
    apptainer: str, sif: SifImage, *, manifest: Path, out_dir: Path, rlcrate_args: list[str]
) -> list[str]:
    inner = ["rlcrate", "run", f"{IN_DIR}/{manifest.name}", "--out", OUT_DIR, "--image", "local"]
    env = {"RLCRATE_IMAGE": str(sif.path), "RLCRATE_IMAGE_DIGEST": sif.digest}
    if source := sif.record().get("source"):
        env["RLCRATE_IMAGE_SOURCE"] = source
    binds = [(manifest.parent, IN_DIR, True), (out_dir, OUT_DIR, False)]
    return exec_command(
        sif.path,
        [*inner, *rlcrate_args],
        binds=binds,
        pwd=OUT_DIR,  # the image's own folders are read-only
        env=env,
        apptainer=apptainer,
    )


def preflight(apptainer: str, sif: SifImage) -> None:
    """Start the .sif once (`true`), so that an Apptainer that cannot is refused before any
    file is written."""
    cmd = exec_command(sif.path, ["true"], binds=[], pwd="/", apptainer=apptainer)
    try:
        out = ask(cmd, PREFLIGHT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RunnerError(
            f"Apptainer did not start {sif.path} within {PREFLIGHT_TIMEOUT_S:g} s; it was stopped"
        ) from None
    except OSError as exc:
        raise RunnerError(f"{apptainer} could not be started: {exc.strerror or exc}") from None
    if out.returncode == 0:
        return
    why = apptainer_said(out.stderr or out.stdout) or f"exit status {out.returncode}"
    raise UserInputError(
        f"Apptainer cannot start {sif.path} here ({why}): it needs unprivileged user namespaces "
        "or a setuid install, and a mount namespace of its own (not a plain chroot)"
    )


def run_in_sif(manifest: Path, sif: SifImage, out_dir: Path, rlcrate_args: list[str]) -> int:
    """Returns the exit status of the runner inside."""
    apptainer = apptainer_binary(f"--image {sif.path} needs Apptainer; {INSTALL}")
    preflight(apptainer, sif)
    manifest, out_dir = manifest.resolve(), out_dir.resolve()
    made = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)  # created by the caller, so owned by them
    cmd = run_command(apptainer, sif, manifest=manifest, out_dir=out_dir, rlcrate_args=rlcrate_args)
    code = call_engine(cmd)
    if code == FAILED:
        if made and not any(out_dir.iterdir()):
            out_dir.rmdir()
        raise RunnerError(f"Apptainer could not run {sif.path} (exit {code}; its message above)")
    return code
