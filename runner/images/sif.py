"""A .sif: an rlcrate image as one file, for Apptainer (clusters without a container daemon).

`export --format sif` builds one from the engine's OCI archive through a definition file
(`definition`) whose labels add, to the image's own (its lock hash among them), the digest and
tag of the image it came from. `check` reads a .sif's labels (`apptainer inspect`: nothing is
started) and refuses, in one line, a file that is not an rlcrate image or whose lock is not the
one this rlcrate pins for the manifest's image; the .sif's own digest (SHA-256 of the file) is
what provenance records, remembered per file (path, size, times) in rlcrate's cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from runner import __version__
from runner.errors import RunnerError, UserInputError
from runner.images.engine import (
    LABEL_DIGEST,
    LABEL_LOCK,
    LABEL_REF,
    LABEL_VARIANT,
    PINNED_LOCK,
    ImageInfo,
    resolve_target,
)
from runner.record.command import ask

SUFFIX = ".sif"
DIGESTS_FILE = "sif-digests.json"  # in rlcrate's cache: each .sif's SHA-256, by path and times
INSPECT_TIMEOUT_S = 120.0
INSTALL = (
    "install Apptainer >= 1.2 (a cluster: `module load apptainer`; Debian: rlcrate's "
    "images/apptainer/install.sh)"
)


@dataclass(frozen=True)
class SifImage:
    path: Path
    labels: dict[str, str]
    digest: str  # sha256:<the file's SHA-256>

    @property
    def variant(self) -> str:
        return self.labels[LABEL_VARIANT]

    def record(self) -> dict[str, str | None]:
        """What provenance.json records of it (`image`)."""
        return {
            "tag": str(self.path),
            "digest": self.digest,
            "source": self.labels.get(LABEL_DIGEST),
        }


def is_sif(image: str | None) -> bool:
    return bool(image) and str(image).endswith(SUFFIX)


def apptainer_binary(needed: str) -> str:
    """apptainer (else singularity) on PATH; `needed`: what says so when neither is there."""
    for name in ("apptainer", "singularity"):
        if shutil.which(name):
            return name
    raise UserInputError(needed)


def definition(archive: Path, image: ImageInfo) -> str:
    """The definition file that builds the .sif from `archive` (the image's OCI archive): its
    labels, plus where it came from (the image's digest and tag) and its lock hash again, so a
    .sif built some other way from the same archive is told apart."""
    labels = {
        LABEL_DIGEST: image.digest or image.id,
        LABEL_REF: image.ref,
        LABEL_LOCK: image.labels.get(LABEL_LOCK, ""),
    }
    lines = ["Bootstrap: oci-archive", f"From: {archive}", "", "%labels"]
    lines += [f"    {key} {value}" for key, value in labels.items() if value]
    return "\n".join(lines) + "\n"


# gzip, which every Apptainer and kernel reads, at its fastest level: a CPU image's squashfs
# (3.8 GB unpacked) took 40 s of CPU for 1.44 GB, where mksquashfs's default (level 9) took
# 320 s for 1.30 GB (level 6: 117 s, 1.31 GB); reading it back is as fast at any level.
SQUASHFS = "-comp gzip -Xcompression-level 1"


def build_command(apptainer: str, definition_file: Path, output: Path) -> list[str]:
    # --disable-cache: the archive's layers are not kept in the user's Apptainer cache
    return [apptainer, "build", "--force", "--disable-cache", "--mksquashfs-args", SQUASHFS,
            str(output), str(definition_file)]  # fmt: skip


def read_labels(path: Path, apptainer: str | None = None) -> dict[str, str]:
    """A .sif's labels, read by `apptainer inspect` (no container is started)."""
    if not path.is_file():
        raise UserInputError(f"--image {path}: no such file")
    needed = (
        f"--image {path} needs Apptainer (or Singularity), which is not installed here; {INSTALL}"
    )
    cmd = [apptainer or apptainer_binary(needed), "inspect", "--json", "--labels", str(path)]
    try:
        out = ask(cmd, INSPECT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RunnerError(f"`apptainer inspect {path}` did not answer; it was stopped") from None
    except OSError as exc:
        raise RunnerError(f"{cmd[0]} could not be started: {exc.strerror or exc}") from None
    if out.returncode != 0:
        said = (out.stderr or out.stdout).strip().splitlines() or [f"exit {out.returncode}"]
        reason = said[-1].removeprefix("FATAL:").strip()
        raise UserInputError(f"--image {path}: not an image Apptainer can read ({reason})")
    try:
        labels = json.loads(out.stdout)["data"]["attributes"].get("labels") or {}
    except (ValueError, KeyError, TypeError, AttributeError):
        raise UserInputError(f"--image {path}: Apptainer's inspect gave no labels") from None
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def check(path: Path, manifest_image: str | None) -> SifImage:
    """The .sif at `path`, if it is an rlcrate image built from the lock this rlcrate pins for
    the manifest's image (its variant, when the manifest names none): else one line, exit 2."""
    path = path.resolve()
    labels = read_labels(path)
    problem = label_problem(labels, manifest_image)
    if problem:
        raise UserInputError(f"--image {path}: {problem}")
    return SifImage(path, labels, file_digest(path))


def label_problem(labels: dict[str, str], manifest_image: str | None) -> str | None:
    """Why a .sif with these labels cannot run a manifest whose `image:` is `manifest_image`."""
    variant, lock = labels.get(LABEL_VARIANT), labels.get(LABEL_LOCK)
    if variant not in PINNED_LOCK or not lock:
        return (
            f"not an rlcrate image (no {LABEL_VARIANT} and {LABEL_LOCK} labels); make one with "
            "`rlcrate image export cpu --format sif -o FILE.sif`"
        )
    wanted = _manifest_variant(manifest_image) or variant
    if variant != wanted:
        return f"a {variant} image, and the manifest's image is {manifest_image}"
    if lock != PINNED_LOCK[wanted]:
        return (
            f"built from another lock ({LABEL_LOCK} {lock[:12]}) than the {wanted} image rlcrate "
            f"{__version__} pins ({PINNED_LOCK[wanted][:12]}); export it again from `rlcrate "
            f"image build {wanted}`"
        )
    return None


def _manifest_variant(image: str | None) -> str | None:
    """cpu or cuda when the manifest's `image:` names one of them (or a tag of one)."""
    if not image or image == "local" or is_sif(image):
        return None
    try:
        return resolve_target(image)[0]
    except UserInputError:
        return None


def file_digest(path: Path) -> str:
    """sha256:<hex> of the file, remembered for the same path, size, inode and times."""
    from runner.record.cache import cache_dir
    from runner.record.rundir import read_json, write_json_atomic

    st = path.stat()
    key = [st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns]
    known = read_json(cache_dir() / DIGESTS_FILE)
    known = known if isinstance(known, dict) else {}
    seen = known.get(str(path))
    if isinstance(seen, dict) and seen.get("stat") == key and isinstance(seen.get("digest"), str):
        return str(seen["digest"])
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            h.update(block)
    digest = f"sha256:{h.hexdigest()}"
    kept = {p: v for p, v in known.items() if p != str(path) and os.path.exists(p)}
    with contextlib.suppress(OSError):  # an unwritable cache only means hashing again
        write_json_atomic(
            cache_dir() / DIGESTS_FILE,
            {**kept, str(path): {"stat": key, "digest": digest}},
            durable=False,
        )
    return digest


MIN_VERSION = (1, 2)
PROBE_TIMEOUT_S = 30.0


def probe() -> tuple[str | None, str | None]:
    """(what is installed: path and version, or None; why it cannot run a .sif here, or None),
    for `doctor`. Apptainer needs a mount namespace whose root it can make private (as root; a
    plain chroot cannot), and without root a user namespace too (Debian's has no setuid
    starter): util-linux's `unshare` asks the kernel for the same."""
    name = next((n for n in ("apptainer", "singularity") if shutil.which(n)), None)
    if name is None:
        return None, f"not installed: {INSTALL}"
    try:
        said = ask([name, "--version"], PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{shutil.which(name)} does not answer `--version` ({exc})"
    version = said.stdout.strip().rsplit(" ", 1)[-1]
    found = f"{shutil.which(name)} ({said.stdout.strip() or 'no version'})"
    numbers = tuple(int(p) for p in version.split("-")[0].split(".")[:2] if p.isdigit())
    if name == "apptainer" and numbers < MIN_VERSION:
        return found, f"rlcrate needs Apptainer >= {'.'.join(map(str, MIN_VERSION))}"
    user = [] if os.geteuid() == 0 else ["--user"]
    if shutil.which("unshare") is None:
        return found, None  # nothing to ask the kernel with: the run's own start says
    try:
        out = ask(
            ["unshare", *user, "--mount", "--propagation", "private", "true"], PROBE_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return found, f"`unshare` did not answer ({exc})"
    if out.returncode != 0:
        why = (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1]
        need = "a private mount namespace" + (" in a user namespace" if user else "")
        return found, f"cannot make {need} here ({why.removeprefix('unshare: ')})"
    return found, None
