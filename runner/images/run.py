"""`rlcrate run --image`: the CUDA driver preflight, the engine's run command line, and running
it with SIGTERM (and Ctrl-C under buildah) forwarded to the runner inside."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

from runner.errors import RunnerError, UserInputError
from runner.images.engine import (
    ENTRYPOINT,
    IN_DIR,
    LABEL_MIN_DRIVER,
    LABEL_VARIANT,
    OUT_DIR,
    ImageInfo,
    detect_engine,
    image_ref,
    inspect,
)


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


def _die_with_parent() -> None:
    """In the engine client (between fork and exec): SIGTERM when the runner that started it
    dies, even by SIGKILL, so that the client stops its container (docker and podman pass the
    signal on; `--rm` removes it) instead of leaving it running unattended."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def call_engine(cmd: list[str], *, buildah: bool = False) -> int:
    """Run an engine command in a session of its own; SIGTERM and SIGINT (Ctrl-C reaches only
    this process) are passed on once to the runner inside, which stops cleanly: through the
    docker or podman client, which proxies signals to its container, or straight to the command
    `buildah run` started. The client is told to stop if this process dies."""
    proc = subprocess.Popen(
        cmd,
        start_new_session=True,
        preexec_fn=None if buildah or sys.platform != "linux" else _die_with_parent,  # noqa: PLW1509
    )
    if threading.current_thread() is not threading.main_thread():
        return proc.wait()

    def forward(signum: int, _frame: object) -> None:
        targets = _buildah_children(proc.pid) if buildah else [proc.pid]
        for pid in targets:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    caught = (signal.SIGTERM, signal.SIGINT)
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
    # `--image local`: inside, the units run right there, whatever the manifest's `image:` says
    inner = ["rlcrate", "run", f"{IN_DIR}/{manifest.name}", "--out", OUT_DIR, "--image", "local"]
    inner += rlcrate_args
    cmd = _run_options(engine, uid=uid, gid=gid, cuda=cuda, tty=tty)
    for vol in mounts:
        cmd += ["--volume", vol]
    for key, value in env.items():
        cmd += ["--env", f"{key}={value}"]
    if engine == "buildah":
        return [*cmd, container or "CONTAINER", "--", *ENTRYPOINT, *inner]
    return [*cmd, image.ref, *inner]


def _run_options(engine: str, *, uid: int, gid: int, cuda: bool, tty: bool) -> list[str]:
    """`<engine> run` with its user, isolation and GPU options, before mounts and environment."""
    if engine == "buildah":
        if cuda:
            raise UserInputError(
                "buildah cannot give a container GPUs; run the cuda image with "
                "docker or podman (NVIDIA container toolkit)"
            )
        return [
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
    cmd = [engine, "run", "--rm", "--shm-size", "2g", *(["-t"] if tty else [])]
    if engine == "podman" and uid != 0:
        cmd += ["--userns", "keep-id"]  # rootless: map the caller's uid in, not root
    else:
        cmd += ["--user", f"{uid}:{gid}"]
    if cuda:
        cmd += gpu_options(engine)
    return cmd


CDI_DIRS = (Path("/etc/cdi"), Path("/var/run/cdi"))  # where the toolkit writes its CDI spec
TOOLKIT = ("nvidia-ctk", "nvidia-container-runtime-hook", "nvidia-container-toolkit")


def _cdi_spec() -> Path | None:
    for folder in CDI_DIRS:
        for spec in sorted(folder.glob("nvidia*.yaml")) + sorted(folder.glob("nvidia*.json")):
            return spec
    return None


def gpu_options(engine: str) -> list[str]:
    """The NVIDIA Container Toolkit's documented GPU options for `engine`, chosen by what this host
    has: a CDI spec (`nvidia-ctk cdi generate`) gives `--device nvidia.com/gpu=all` (podman's
    way, and docker's from 25 on); docker with the toolkit's runtime hook gives `--gpus all`."""
    spec = _cdi_spec()
    if engine == "podman":
        if spec is None:
            raise UserInputError(
                "podman gives a container GPUs through a CDI spec, and this host has none in "
                f"{' or '.join(map(str, CDI_DIRS))}; install the NVIDIA Container Toolkit and run "
                "`nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`, or use --image cpu"
            )
        return ["--device", "nvidia.com/gpu=all"]
    if any(shutil.which(name) for name in TOOLKIT):
        return ["--gpus", "all"]
    if spec is not None:
        return ["--device", "nvidia.com/gpu=all"]
    raise UserInputError(
        "the cuda image needs the NVIDIA Container Toolkit, which this host lacks (no "
        f"{', '.join(TOOLKIT[:2])}, no CDI spec in {' or '.join(map(str, CDI_DIRS))}); install "
        "it, or use --image cpu"
    )


def run_in_image(
    manifest: Path, image: str, out_dir: Path, rlcrate_args: list[str], engine: str | None = None
) -> int:
    """`rlcrate run MANIFEST --image cpu|cuda|TAG`: the same run, inside the image. Returns the
    exit status of the runner inside."""
    variant, ref = image_ref(image)
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
        return call_engine(
            run_command(
                engine, info, manifest=manifest, out_dir=out_dir, rlcrate_args=rlcrate_args, tty=tty
            )
        )
    made = subprocess.run(["buildah", "from", "--pull=never", ref], capture_output=True, text=True)
    if made.returncode != 0:
        raise RunnerError(f"buildah could not start {ref}: {made.stderr.strip()}")
    container = made.stdout.strip().splitlines()[-1]
    try:
        return call_engine(
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
