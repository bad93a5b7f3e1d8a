"""Which Godot runs a game here: the engine binaries on PATH (or `RLCRATE_GODOT`), their
versions, an rlcrate install's own files (`images/godot/install.sh`) and the export template.

Godot 4 is the engine: rlcrate's bundled games and godot-rl's projects are Godot 4 projects, found
as users name the binary (`godot4`, `godot`). Godot 3 projects (`config_version=4`) still run
where a Godot 3 is installed (Debian 12's `godot3-server`). `RLCRATE_GODOT` picks the binary for
its own major version; the other one is still looked up on PATH.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from runner.errors import BackendUnavailable

GODOT_ENV_VAR = "RLCRATE_GODOT"
TEMPLATE_ENV_VAR = "RLCRATE_GODOT_TEMPLATE"
# The names each major version's engine goes by on PATH, in the order they are tried.
NAMES: dict[int, tuple[str, ...]] = {
    4: ("godot4", "godot"),
    3: ("godot3-server", "godot3", "godot-server", "godot"),
}
INSTALL = {
    4: (
        "install Godot 4.6 with `make godot4` in the rlcrate checkout (Debian's packages, "
        "images/godot/install.sh) or Godot's own Linux release, and put it on PATH as `godot4` "
        f"or set {GODOT_ENV_VAR}"
    ),
    3: "install Godot 3 headless with `apt-get install godot3-server`",
}


@functools.cache
def probe_version(path: str) -> str | None:
    """The version a binary reports with --version ('4.6.3.stable.debian...'), or None."""
    try:
        out = subprocess.run(
            [path, "--version"],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=20,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"^(\d+\.\d+(\.\d+)?\.\w+\S*)", out.stdout.strip(), re.MULTILINE)
    return m.group(1) if m else None


def major_of(version: str) -> int:
    return int(version.split(".", 1)[0])


def short_version(version: str) -> str:
    """'4.6.3.stable.debian4.6.3+ds-3' -> '4.6.3.stable', the name Godot gives its templates'
    folder (and a Godot 3.2.3's '3.2.3.stable')."""
    m = re.match(r"\d+\.\d+(\.\d+)?\.[a-z]+\d*", version)
    return m.group(0) if m else version


def _override(major: int) -> tuple[str, str] | None:
    value = os.environ.get(GODOT_ENV_VAR)
    if not value:
        return None
    path = shutil.which(value) or value
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise BackendUnavailable(
            f"{GODOT_ENV_VAR}={value} is not an executable file; {INSTALL[major]}"
        )
    version = probe_version(path)
    if version is None:
        raise BackendUnavailable(
            f"{GODOT_ENV_VAR}={value} did not report a Godot version with --version"
        )
    return (path, version) if major_of(version) == major else None


def godot_binary(major: int = 4) -> tuple[str, str]:
    """(path, version) of the Godot `major` engine that runs projects: `RLCRATE_GODOT` when it is
    that version, else the first of `NAMES[major]` on PATH reporting it."""
    chosen = _override(major)
    if chosen:
        return chosen
    for name in NAMES[major]:
        path = shutil.which(name)
        version = probe_version(path) if path else None
        if path and version and major_of(version) == major:
            return path, version
    other = os.environ.get(GODOT_ENV_VAR)
    note = f" ({GODOT_ENV_VAR}={other} is another version)" if other else ""
    raise BackendUnavailable(f"No Godot {major} binary found on PATH{note}; {INSTALL[major]}.")


def install_info(binary: str) -> dict[str, Any] | None:
    """An rlcrate install's description (install.json beside bin/, written by
    images/godot/install.sh) of the engine `binary`, or None for another Godot."""
    home = Path(os.path.realpath(binary)).parent.parent
    try:
        info = json.loads((home / "install.json").read_text())
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and "template" in info else None


def export_template(binary: str, version: str) -> Path:
    """The Linux release export template for the engine `binary`: RLCRATE_GODOT_TEMPLATE, else
    its rlcrate install's, else where Godot's editor keeps them (its data folder)."""
    named = os.environ.get(TEMPLATE_ENV_VAR)
    if named:
        if not Path(named).is_file():
            raise BackendUnavailable(f"{TEMPLATE_ENV_VAR}={named} is not a file")
        return Path(named)
    info = install_info(binary)
    candidates = [Path(info["template"])] if info else []
    data = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    candidates.append(
        data / "godot" / "export_templates" / short_version(version) / "linux_release.x86_64"
    )
    for path in candidates:
        if path.is_file():
            return path
    raise BackendUnavailable(
        f"no Linux export template for Godot {short_version(version)}: looked at "
        f"{', '.join(map(str, candidates))}; `make godot4` installs Debian's "
        f"(godot-template-release), or set {TEMPLATE_ENV_VAR} to one"
    )


def project_major(project: Path) -> int:
    """The Godot major version a project folder is for: config_version 5 is Godot 4's."""
    text = (project / "project.godot").read_text(errors="replace")
    m = re.search(r"^config_version\s*=\s*(\d+)", text, re.MULTILINE)
    return 4 if m and int(m.group(1)) >= 5 else 3


@functools.cache
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_sha256(path: str) -> str:
    """The SHA-256 of a binary (once per process for an unchanged file)."""
    real = os.path.realpath(path)
    st = os.stat(real)
    return _sha256(real, st.st_size, st.st_mtime_ns)
