"""A command run in a .sif under Apptainer: the one command line both for the unit a Slurm job
runs (`executors.slurm_job`) and for the runner `rlcrate run --image FILE.sif` starts here
(`images.sif_run`).

`--containall`: no home directory, /tmp, environment or process space of the host's inside, only
the folders bound, so the image's own Python and packages are what runs (a host's ~/.local or
PYTHONPATH would otherwise shadow them); its own PID namespace, whose init passes signals on to
the command and dies with Apptainer, taking the command with it. `--no-privs`: root inside has no
capabilities (a unit needs none; and a host whose bounding set lacks one, as some sandboxes' do,
cannot start a root container that asks for all). `--nv`: the host's NVIDIA driver, for GPUs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

APPTAINER = "apptainer"
FAILED = 255  # Apptainer's own exit status when it could not run the command
ANSI = re.compile(r"\x1b\[[0-9;]*m")
SAID = re.compile(r"^(?:FATAL|ERROR)\s*:\s*(.+)$")


def exec_command(
    image: str | Path,
    argv: Sequence[str],
    *,
    binds: Sequence[tuple[Path, str, bool]],
    pwd: str,
    gpus: int = 0,
    env: Mapping[str, str] | None = None,
    apptainer: str = APPTAINER,
) -> list[str]:
    """`apptainer exec` of `argv` in `image`, with `binds` (host path, path inside, read-only)
    and `env` set inside, in `pwd`."""
    cmd = [apptainer, "exec", "--containall", "--no-privs"]
    for host, inside, read_only in binds:
        cmd += ["--bind", f"{host}:{inside}" + (":ro" if read_only else "")]
    for key, value in (env or {}).items():
        cmd += ["--env", f"{key}={value}"]
    if gpus:
        cmd.append("--nv")
    return [*cmd, "--pwd", pwd, str(image), *argv]


def apptainer_said(text: str) -> str:
    """Apptainer's last FATAL or ERROR line, without its prefix and colours ('' for none)."""
    lines = [ANSI.sub("", line).strip() for line in text.splitlines()]
    found = [m.group(1) for line in lines if (m := SAID.match(line))]
    return found[-1] if found else ""
