"""Build, list and run the versioned images with docker, podman or buildah.

The images themselves are defined by `Dockerfile.<variant>` and `images/<variant>/` in a source
checkout; this module only assembles engine command lines (pure functions, tested without an
engine) and runs them. Nothing heavy is imported here.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner import __version__
from runner.errors import RunnerError, UserInputError

VARIANTS = ("cpu", "cuda")
ENGINES = ("docker", "podman", "buildah")
ENGINE_ENV = "RLCRATE_ENGINE"
LABEL_VARIANT = "io.rlcrate.variant"
LABEL_LOCK = "io.rlcrate.lock.sha256"
LABEL_MIN_DRIVER = "io.rlcrate.cuda.min-driver"
ENTRYPOINT = ["/usr/bin/tini", "--", "/usr/local/bin/rlcrate-entrypoint"]
IN_DIR, OUT_DIR = "/in", "/out"


@dataclass
class ImageInfo:
    ref: str
    id: str
    digest: str | None = None
    size: int | None = None
    labels: dict[str, str] = field(default_factory=dict)


def source_root() -> Path:
    """The checkout holding the Dockerfiles (images are built from source, not from a wheel)."""
    root = Path(__file__).resolve().parents[1]
    if not (root / "Dockerfile.cpu").is_file():
        raise UserInputError(
            f"building images needs an rlcrate source checkout; no Dockerfile.cpu in {root}"
        )
    return root


def default_tag(variant: str) -> str:
    return f"rlcrate-{variant}:{__version__}"


def resolve_target(target: str) -> tuple[str, str]:
    """`cpu`, `cuda` or a full tag `rlcrate-<variant>:<version>` -> (variant, tag)."""
    if target in VARIANTS:
        return target, default_tag(target)
    name = target.rsplit("/", 1)[-1].split(":", 1)[0].split("@", 1)[0]
    variant = name.removeprefix("rlcrate-")
    if variant not in VARIANTS or name == variant:
        raise UserInputError(
            f"unknown image {target!r}; expected cpu, cuda or a tag "
            f"rlcrate-cpu:<version> / rlcrate-cuda:<version>"
        )
    return variant, target


def detect_engine(engine: str | None = None) -> str:
    """The engine asked for (argument, else $RLCRATE_ENGINE), else the first installed one."""
    wanted = engine or os.environ.get(ENGINE_ENV)
    if wanted:
        if wanted not in ENGINES:
            raise UserInputError(
                f"unknown container engine {wanted!r}; expected one of {', '.join(ENGINES)}"
            )
        if shutil.which(wanted) is None:
            raise UserInputError(f"container engine {wanted!r} is not installed on this machine")
        return wanted
    for name in ENGINES:
        if shutil.which(name):
            return name
    raise UserInputError("no container engine found; install docker, podman or buildah")


def _git(root: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def metadata_args(root: Path) -> dict[str, str]:
    """Per-build labels: version, git revision and source, and `created` from SOURCE_DATE_EPOCH
    (else the last commit's time), so two builds of one commit carry identical labels."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH") or _git(root, "log", "-1", "--format=%ct") or "0"
    if not epoch.isdigit():
        raise UserInputError(f"SOURCE_DATE_EPOCH must be whole seconds, got {epoch!r}")
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(epoch)))
    return {
        "VERSION": __version__,
        "REVISION": _git(root, "rev-parse", "HEAD") or "unknown",
        "SOURCE": _git(root, "remote", "get-url", "origin") or "unknown",
        "SOURCE_DATE_EPOCH": epoch,
        "CREATED": created,
    }


def base_args(base: str) -> dict[str, str]:
    """`name@sha256:...` -> the three build arguments that pin and label the base image."""
    name, sep, digest = base.partition("@")
    if not sep or not digest.startswith("sha256:") or len(digest) != 71:
        raise UserInputError(f"base image {base!r} must be pinned by digest: NAME@sha256:<64 hex>")
    return {"BASE_IMAGE": base, "BASE_NAME": name, "BASE_DIGEST": digest}


def build_command(
    engine: str,
    variant: str,
    tag: str,
    *,
    root: Path,
    build_args: dict[str, str],
    volumes: Sequence[str] = (),
) -> list[str]:
    dockerfile = root / f"Dockerfile.{variant}"
    if engine == "docker":
        if volumes:
            raise UserInputError(
                "docker build cannot mount volumes; use podman or buildah, "
                "or pass the settings as build arguments"
            )
        cmd = ["docker", "build", "-f", str(dockerfile)]
    else:
        isolation = os.environ.get("BUILDAH_ISOLATION", "chroot" if engine == "buildah" else "")
        cmd = [
            engine,
            "bud" if engine == "buildah" else "build",
            "-f",
            str(dockerfile),
            "--layers",
            "--force-rm",  # no working containers left behind by a failed step
            "--format",
            "docker",
            "--ignorefile",
            f"{dockerfile}.dockerignore",
        ]
        cmd += ["--isolation", isolation] if isolation else []
        cmd += ["--timestamp", build_args.get("SOURCE_DATE_EPOCH", "0")]
        for vol in volumes:
            cmd += ["--volume", vol]
    for key, value in build_args.items():
        cmd += ["--build-arg", f"{key}={value}"]
    return [*cmd, "-t", tag, str(root)]


def build(
    target: str,
    *,
    engine: str | None = None,
    base: str | None = None,
    build_args: dict[str, str] | None = None,
    volumes: Sequence[str] = (),
) -> str:
    """Build `cpu`, `cuda` or a full tag; returns the tag. Output streams to the terminal."""
    variant, tag = resolve_target(target)
    engine = detect_engine(engine)
    root = source_root()
    args = metadata_args(root) | (base_args(base) if base else {}) | dict(build_args or {})
    cmd = build_command(engine, variant, tag, root=root, build_args=args, volumes=list(volumes))
    code = subprocess.call(cmd)
    if code != 0:
        raise RunnerError(
            f"{engine} build of {tag} failed with exit status {code}; see its output above"
        )
    return tag


def _json(cmd: list[str], *, lines: bool = False) -> Any:
    """An engine's JSON answer (one document, or one per line), or None when it says no."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        raise RunnerError(f"{cmd[0]} did not answer: {exc}") from None
    if out.returncode != 0:
        if re.search(r"no such|not known|not found|unable to find", out.stderr, re.IGNORECASE):
            return None
        first = (out.stderr.strip().splitlines() or [f"exit status {out.returncode}"])[0]
        raise RunnerError(f"{cmd[0]} failed: {first}")
    if lines:
        return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    return json.loads(out.stdout or "null")


def inspect(engine: str, ref: str) -> ImageInfo | None:
    """Labels, id and digest of a local image, or None when the engine does not have it."""
    if engine == "buildah":
        data = _json(["buildah", "inspect", "--type", "image", ref])
        if not isinstance(data, dict):
            return None
        config = (data.get("Docker") or {}).get("config") or data.get("OCIv1", {}).get("config")
        return ImageInfo(
            ref,
            data.get("FromImageID", ""),
            data.get("FromImageDigest"),
            None,
            dict((config or {}).get("Labels") or {}),
        )
    data = _json([engine, "image", "inspect", ref])
    if not isinstance(data, list) or not data:
        return None
    item = data[0]
    labels = item.get("Labels") or (item.get("Config") or {}).get("Labels") or {}
    repo_digests = item.get("RepoDigests") or []
    digest = item.get("Digest") or (repo_digests[0].partition("@")[2] if repo_digests else None)
    return ImageInfo(ref, item.get("Id", ""), digest, item.get("Size"), dict(labels))


def list_images(engine: str | None = None) -> list[ImageInfo]:
    """Local images named rlcrate-<variant>, with their labels."""
    engine = detect_engine(engine)
    if engine == "docker":
        rows = _json(["docker", "images", "--format", "{{json .}}"], lines=True) or []
        refs = [f"{r['Repository']}:{r['Tag']}" for r in rows]
    else:
        rows = (
            _json(
                [engine, "images", "--json"]
                if engine == "buildah"
                else [engine, "images", "--format", "json"]
            )
            or []
        )
        refs = [n for r in rows for n in (r.get("names") or r.get("Names") or [])]
    wanted = [r for r in refs if r.rsplit("/", 1)[-1].startswith(("rlcrate-cpu:", "rlcrate-cuda:"))]
    return [info for ref in sorted(set(wanted)) if (info := inspect(engine, ref))]


def host_driver_version() -> str | None:
    """The NVIDIA driver version `nvidia-smi` reports on this host, or None without one."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stdout.split()
    return lines[0] if out.returncode == 0 and lines else None


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.strip().split(".") if p.isdigit())


def check_driver(image: ImageInfo, host: str | None) -> None:
    """Refuse, in one sentence, a CUDA image whose minimum driver this host does not meet."""
    needed = image.labels.get(LABEL_MIN_DRIVER)
    if not needed:
        return
    if host is None:
        raise UserInputError(
            f"{image.ref} needs an NVIDIA GPU with driver >= {needed}, but "
            f"nvidia-smi found none on this host"
        )
    if _version_tuple(host) < _version_tuple(needed):
        raise UserInputError(
            f"{image.ref} needs NVIDIA driver >= {needed}, this host has "
            f"{host}; upgrade the driver or use --image cpu"
        )


def _buildah_children(pid: int) -> list[int]:
    """The command `buildah run` started: descendants of `pid` whose parent is a buildah process
    (chroot isolation has no PID namespace, and buildah kills its own helpers on a signal)."""
    procs: dict[int, tuple[int, str]] = {}
    for name in os.listdir("/proc"):
        try:
            text = Path("/proc", name, "stat").read_text() if name.isdigit() else ""
        except OSError:  # gone meanwhile
            continue
        if text:
            comm = text[text.index("(") + 1 : text.rindex(")")]
            procs[int(name)] = (int(text[text.rindex(")") + 2 :].split()[1]), comm)
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for child, (ppid, comm) in procs.items():
            if ppid != parent:
                continue
            if "buildah" not in comm and "buildah" in procs[parent][1]:
                found.append(child)
            else:
                todo.append(child)
    return found


def _call(cmd: list[str], *, buildah: bool = False) -> int:
    """Run an engine command; SIGTERM (and SIGINT, for buildah) reach the runner inside, which
    stops cleanly, instead of killing the engine client and orphaning the run."""
    proc = subprocess.Popen(cmd, start_new_session=buildah)
    if threading.current_thread() is not threading.main_thread():
        return proc.wait()

    def forward(signum: int, _frame: object) -> None:
        targets = _buildah_children(proc.pid) if buildah else [proc.pid]
        for pid in targets:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    # Without buildah, Ctrl-C already reaches the engine client (same process group).
    caught = (signal.SIGTERM, signal.SIGINT) if buildah else (signal.SIGTERM,)
    old = {sig: signal.signal(sig, forward) for sig in caught}
    try:
        return proc.wait()
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def run_command(
    engine: str,
    image: ImageInfo,
    *,
    manifest: Path,
    out_dir: Path,
    rlcrate_args: list[str],
    container: str | None = None,
    tty: bool = False,
) -> list[str]:
    """The engine command that runs `rlcrate run` in the image: the manifest's folder mounted
    read-only at /in (so files it names beside it resolve), the output folder read-write at /out,
    the caller's uid so the files are theirs, GPUs for CUDA images."""
    uid, gid = os.getuid(), os.getgid()
    cuda = image.labels.get(LABEL_VARIANT) == "cuda" or LABEL_MIN_DRIVER in image.labels
    mounts = [f"{manifest.parent}:{IN_DIR}:ro", f"{out_dir}:{OUT_DIR}"]
    env = {"RLCRATE_IMAGE": image.ref, "RLCRATE_IMAGE_DIGEST": image.digest or image.id}
    inner = ["rlcrate", "run", f"{IN_DIR}/{manifest.name}", "--out", OUT_DIR, *rlcrate_args]
    if engine == "buildah":
        if cuda:
            raise UserInputError(
                "buildah cannot give a container GPUs; run the cuda image with "
                "docker or podman (NVIDIA container toolkit)"
            )
        cmd = [
            "buildah",
            "run",
            "--isolation",
            os.environ.get("BUILDAH_ISOLATION", "chroot"),
            "--user",
            f"{uid}:{gid}",
            "--workingdir",
            "/work",
            "--env",
            "TINI_SUBREAPER=1",  # no PID namespace here: tini reaps as a subreaper, not PID 1
        ]
    else:
        cmd = [engine, "run", "--rm", "--shm-size", "2g", *(["-t"] if tty else [])]
        if engine == "podman" and uid != 0:
            cmd += ["--userns", "keep-id"]  # rootless: map the caller's uid in, not root
        else:
            cmd += ["--user", f"{uid}:{gid}"]
        if cuda:
            cmd += ["--gpus", "all"] if engine == "docker" else ["--device", "nvidia.com/gpu=all"]
    for vol in mounts:
        cmd += ["--volume", vol]
    for key, value in env.items():
        cmd += ["--env", f"{key}={value}"]
    if engine == "buildah":
        return [*cmd, container or "CONTAINER", "--", *ENTRYPOINT, *inner]
    return [*cmd, image.ref, *inner]


def run_in_image(
    manifest: Path, image: str, out_dir: Path, rlcrate_args: list[str], engine: str | None = None
) -> int:
    """`rlcrate run MANIFEST --image cpu|cuda|TAG`: the same run, inside the image. Returns the
    exit status of the runner inside."""
    variant, ref = resolve_target(image) if image in VARIANTS else ("", image)
    engine = detect_engine(engine)
    info = inspect(engine, ref)
    if info is None:
        hint = f"rlcrate image build {variant}" if variant else "build or pull it"
        raise UserInputError(f"image {ref} is not in {engine}'s local images; {hint} first")
    if info.labels.get(LABEL_MIN_DRIVER):
        check_driver(info, host_driver_version())
    manifest, out_dir = manifest.resolve(), out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)  # created by the caller, so owned by them
    tty = sys.stdout.isatty()
    if engine != "buildah":
        return _call(
            run_command(
                engine, info, manifest=manifest, out_dir=out_dir, rlcrate_args=rlcrate_args, tty=tty
            )
        )
    made = subprocess.run(["buildah", "from", "--pull=never", ref], capture_output=True, text=True)
    if made.returncode != 0:
        raise RunnerError(f"buildah could not start {ref}: {made.stderr.strip()}")
    container = made.stdout.strip().splitlines()[-1]
    try:
        return _call(
            run_command(
                engine,
                info,
                manifest=manifest,
                out_dir=out_dir,
                rlcrate_args=rlcrate_args,
                container=container,
            ),
            buildah=True,
        )
    finally:
        subprocess.run(["buildah", "rm", container], capture_output=True)
