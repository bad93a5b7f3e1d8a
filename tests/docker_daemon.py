"""A real Docker Engine and a real registry for the tests, started and stopped by them.

`dockerd` (Debian's docker.io) runs on a socket, data root and exec root of its own under the
test's temporary folder, and the Distribution registry (Debian's docker-registry) listens on
127.0.0.1 (an insecure registry that docker accepts on loopback without configuration). The
client the tests use is Debian's: it has BuildKit built in (DOCKER_BUILDKIT=1), where a newer
client without the buildx plugin would have only the legacy builder.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.ray_nodes import free_port

DEBIAN_CLIENT = Path("/usr/bin/docker")


def missing() -> str | None:
    """Why the tests cannot start their own daemon and registry here, or None."""
    for program in ("dockerd", "docker-registry", "containerd"):
        if shutil.which(program) is None:
            return f"{program} is not installed (make test installs docker.io and docker-registry)"
    if not DEBIAN_CLIENT.exists():
        return f"{DEBIAN_CLIENT} (Debian's docker client) is not installed"
    if os.geteuid() != 0:
        return "dockerd needs root"
    return None


@dataclass
class Docker:
    host: str  # DOCKER_HOST
    registry: str  # 127.0.0.1:PORT
    bin: Path  # first on PATH: Debian's docker client

    @property
    def env(self) -> dict[str, str]:
        return {
            "DOCKER_HOST": self.host,
            "PATH": f"{self.bin}{os.pathsep}{os.environ['PATH']}",
            "RLCRATE_ENGINE": "docker",
        }

    def __call__(self, *args: str, check: bool = True, timeout: float = 900) -> str:
        out = subprocess.run(
            [str(DEBIAN_CLIENT), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **self.env, "DOCKER_BUILDKIT": "1"},
        )
        if check and out.returncode != 0:
            raise AssertionError(f"docker {' '.join(args)}: {out.stderr.strip()[-2000:]}")
        return out.stdout.strip()

    def answers(self) -> bool:
        return self("version", "--format", "{{.Server.Version}}", check=False, timeout=10) != ""

    def containers(self) -> list[str]:
        """Every container the daemon has, running or not (`docker ps -a`)."""
        return self("ps", "-aq").split()

    def pushed_digest(self, ref: str) -> str:
        """The registry's digest of `ref` after a push (`RepoDigests`)."""
        digests = json.loads(self("image", "inspect", "--format", "{{json .RepoDigests}}", ref))
        repo = ref.rsplit(":", 1)[0]
        return next(d.partition("@")[2] for d in digests if d.startswith(repo + "@"))


def _wait(what: str, ready, proc: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            raise RuntimeError(f"{what} did not start:\n{tail}")
        time.sleep(0.2)


def _stop(proc: subprocess.Popen, timeout: float = 60) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def started(folder: Path) -> Iterator[Docker]:
    """dockerd and a registry under `folder`; everything stopped and removed at the end."""
    folder.mkdir(parents=True, exist_ok=True)
    sock = folder / "docker.sock"
    bin_dir = folder / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "docker").symlink_to(DEBIAN_CLIENT)
    daemon_log, registry_log = folder / "dockerd.log", folder / "registry.log"
    daemon = subprocess.Popen(
        ["dockerd", "-H", f"unix://{sock}", "--data-root", str(folder / "data"),
         "--exec-root", str(folder / "exec"), "--pidfile", str(folder / "dockerd.pid")],
        stdout=daemon_log.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    port = free_port()
    (folder / "registry.yml").write_text(
        f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {folder / 'registry'}\n"
        f"http:\n  addr: 127.0.0.1:{port}\n"
    )
    registry = subprocess.Popen(
        ["docker-registry", "serve", str(folder / "registry.yml")],
        stdout=registry_log.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    docker = Docker(f"unix://{sock}", f"127.0.0.1:{port}", bin_dir)
    try:
        _wait("dockerd", docker.answers, daemon, daemon_log)
        _wait("docker-registry", lambda: _answers(port), registry, registry_log)
        yield docker
    finally:
        with contextlib.suppress(Exception):
            ids = docker.containers()
            if ids:
                docker("rm", "-f", *ids, check=False)
        _stop(registry)
        _stop(daemon)
        shutil.rmtree(folder, ignore_errors=True)


def _answers(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
        return True
    return False
