"""`rlcrate image build`: build arguments, labels and the engine's build command line."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from runner import __version__
from runner.errors import RunnerError, UserInputError
from runner.images.engine import detect_engine, resolve_target


def source_root() -> Path:
    """The checkout holding the Dockerfiles (images are built from source, not from a wheel)."""
    root = Path(__file__).resolve().parents[2]  # runner/images/build.py -> the checkout
    if not (root / "Dockerfile.cpu").is_file():
        raise UserInputError(
            f"building images needs an rlcrate source checkout; no Dockerfile.cpu in {root}"
        )
    return root


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
