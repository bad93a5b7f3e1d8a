"""`rlcrate image build`: build arguments, labels and the engine's build command line."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from runner import __version__
from runner.checks.installed import last_line
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
    return _answers(["git", "-C", str(root), *args]) or None


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


# The time of every file in every layer podman and buildah build: fixed, not the commit's, so a
# layer built from the same inputs is the same bytes whenever it was built, cached or not.
FILES_EPOCH = 1767225600  # 2026-01-01T00:00:00Z
INPUTS_DIR = "/run/rlcrate-build"  # where the Dockerfiles mount the build inputs


def docker_builder() -> list[str]:
    """docker's BuildKit front end: `docker buildx build --load` where the buildx plugin is
    installed, else `docker build` of a client with BuildKit built in (before Docker 23, with
    DOCKER_BUILDKIT=1). A newer client without buildx has only the legacy builder, which cannot
    run the Dockerfiles' `RUN --mount`."""
    if _answers(["docker", "buildx", "version"]) is not None:
        return ["docker", "buildx", "build", "--load"]
    client = _answers(["docker", "version", "--format", "{{.Client.Version}}"]) or "?"
    major = client.split(".", 1)[0]
    if major.isdigit() and int(major) < 23:
        return ["docker", "build"]
    raise UserInputError(
        f"docker {client} has no buildx plugin, and its legacy builder cannot run the "
        "Dockerfiles' RUN --mount; install docker-buildx, or build with podman or buildah"
    )


def _answers(cmd: list[str]) -> str | None:
    """What `cmd` printed, stripped; None when it could not run or failed."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def build_command(
    engine: str,
    variant: str,
    tag: str,
    *,
    root: Path,
    build_args: dict[str, str],
    volumes: Sequence[str] = (),
    builder: Sequence[str] = ("docker", "build"),
    no_cache: bool = False,
) -> list[str]:
    """The engine's build command line. docker takes no volumes here: `build` turns them into
    an image passed as BUILD_INPUTS (see `inputs_image`)."""
    dockerfile = root / f"Dockerfile.{variant}"
    if engine == "docker":
        if volumes:
            raise UserInputError("docker build mounts no volumes; pass them as BUILD_INPUTS")
        cmd = [*builder, "-f", str(dockerfile)]
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
            "oci",
            "--ignorefile",
            f"{dockerfile}.dockerignore",
        ]
        cmd += ["--isolation", isolation] if isolation else []
        # The same digest from the same commit, cached or not: every file, and the config's and
        # history's times, at one fixed time (the `created` label keeps SOURCE_DATE_EPOCH, the
        # commit's time); OCI's format, as docker's records the build container's id and host.
        cmd += ["--timestamp", str(FILES_EPOCH)]
        for vol in volumes:
            cmd += ["--volume", vol]
    cmd += ["--no-cache"] if no_cache else []
    for key, value in build_args.items():
        cmd += ["--build-arg", f"{key}={value}"]
    return [*cmd, "-t", tag, str(root)]


def inputs_layout(volumes: Sequence[str]) -> dict[str, Path]:
    """`SRC:DST[:ro]` build volumes -> {path under INPUTS_DIR: SRC}, for docker, which mounts
    them from an image of their own (BUILD_INPUTS) rather than from the host."""
    layout = {}
    for vol in volumes:
        src, _, rest = vol.partition(":")
        dst = rest.split(":", 1)[0]
        inside = Path(dst).relative_to(INPUTS_DIR) if dst.startswith(INPUTS_DIR + "/") else None
        if not src or inside is None or ".." in inside.parts:
            raise UserInputError(
                f"--volume {vol!r}: with docker, build volumes must look like "
                f"SRC:{INPUTS_DIR}/NAME[:ro] (the one folder the Dockerfiles mount)"
            )
        if not Path(src).exists():
            raise UserInputError(f"--volume {vol!r}: {src} does not exist")
        layout[str(inside)] = Path(src)
    return layout


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


@contextlib.contextmanager
def inputs_image(builder: Sequence[str], volumes: Sequence[str]) -> Iterator[str | None]:
    """An image holding the build volumes (docker's BUILD_INPUTS), removed afterwards; None
    without volumes."""
    if not volumes:
        yield None
        return
    layout = inputs_layout(volumes)
    tag = f"rlcrate-build-inputs:{os.getpid()}-{int(time.time())}"
    with tempfile.TemporaryDirectory(prefix="rlcrate-build-inputs.") as tmp:
        context = Path(tmp) / "context"
        for inside, src in layout.items():
            dst = context / inside
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dst, copy_function=_link_or_copy)
            else:
                _link_or_copy(str(src), str(dst))
        (Path(tmp) / "Dockerfile").write_text("FROM scratch\nCOPY . /\n")
        cmd = [*builder, "-q", "-f", str(Path(tmp) / "Dockerfile"), "-t", tag, str(context)]
        out = subprocess.run(cmd, capture_output=True, text=True, env=_docker_env())
        if out.returncode != 0:
            raise RunnerError(f"docker could not build the build inputs: {last_line(out)}")
    try:
        yield tag
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)


def _docker_env() -> dict[str, str]:
    return {**os.environ, "DOCKER_BUILDKIT": "1"}


def build(
    target: str,
    *,
    engine: str | None = None,
    base: str | None = None,
    build_args: dict[str, str] | None = None,
    volumes: Sequence[str] = (),
    no_cache: bool = False,
) -> str:
    """Build `cpu`, `cuda` or a full tag; returns the tag. Output streams to the terminal."""
    variant, tag = resolve_target(target)
    engine = detect_engine(engine)
    root = source_root()
    args = metadata_args(root) | (base_args(base) if base else {}) | dict(build_args or {})
    args.setdefault("FILES_EPOCH", str(FILES_EPOCH))
    builder = docker_builder() if engine == "docker" else []
    with contextlib.ExitStack() as stack:
        if engine == "docker":
            inputs = stack.enter_context(inputs_image(builder, volumes))
            args |= {"BUILD_INPUTS": inputs} if inputs else {}
            volumes = ()
        cmd = build_command(
            engine,
            variant,
            tag,
            root=root,
            build_args=args,
            volumes=list(volumes),
            builder=builder,
            no_cache=no_cache,
        )
        code = subprocess.call(cmd, env=_docker_env() if engine == "docker" else None)
    if code != 0:
        raise RunnerError(
            f"{engine} build of {tag} failed with exit status {code}; see its output above"
        )
    return tag
