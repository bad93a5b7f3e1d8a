"""A real two-node Ray cluster on this host for the tests: a head (127.0.0.1) and a worker node
(127.0.0.2), each its own `ray start --block` process, stopped by killing exactly their process
trees (never `ray stop`, which would take every Ray on the machine with it)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.helpers import children_of


def ray_exe() -> str | None:
    ray = Path(sys.executable).with_name("ray")
    return str(ray) if ray.exists() else shutil.which("ray")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The tests' clusters and drivers do not use token authentication unless a test asks for it:
# with the mode unset, Ray reads a token from ~/.ray/auth_token (another user's made four Ray
# tests fail with InvalidAuthToken) and `ray start` may write one there. "disabled" reads and
# writes nothing under HOME and prints no notice.
ISOLATION = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
TOKEN_VARS = ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


def isolated_env(base: dict[str, str] | None = None, **extra: str) -> dict[str, str]:
    """`base` (os.environ by default) with Ray's settings of the tests, then `extra`."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in TOKEN_VARS}
    return {**env, **ISOLATION, **extra}


class Node:
    def __init__(
        self,
        args: list[str],
        tmp: Path,
        name: str,
        temp_dir: str | None = None,
        env: dict[str, str] | None = None,
    ):
        self.log = open(tmp / f"{name}.log", "wb")  # noqa: SIM115 - closed in kill()
        self.temp_dir = temp_dir
        env = {**isolated_env(), **(env or {})}
        self.proc = subprocess.Popen(
            [ray_exe() or "ray", "start", "--block", "--disable-usage-stats", *args],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )

    def kill(self) -> None:
        """SIGKILL the node's whole process tree, as a machine that vanishes would."""
        pids = [self.proc.pid, *children_of(self.proc.pid)]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait()
        self.log.close()
        if self.temp_dir:
            shutil.rmtree(self.temp_dir, ignore_errors=True)


def own_ports() -> list[str]:
    """Every port a node listens on, chosen free here: Ray's fixed defaults (the dashboard agent's
    52365, the client server's 10001) would collide with another node or cluster on this host."""
    names = [
        "node-manager-port",
        "object-manager-port",
        "dashboard-agent-listen-port",
        "dashboard-agent-grpc-port",
        "runtime-env-agent-port",
        "metrics-export-port",
    ]
    return [f"--{name}={free_port()}" for name in names]


def _wait_nodes(
    address: str, n: int, nodes: list[Node], timeout: float = 600, env: dict | None = None
) -> None:
    code = (
        "import ray,sys; ray.init(address=sys.argv[1], log_to_driver=False); "
        "print(sum(1 for x in ray.nodes() if x['Alive']))"
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(node.proc.poll() is not None for node in nodes):
            raise RuntimeError(f"a node of the Ray cluster at {address} exited")
        try:
            out = subprocess.run(
                [sys.executable, "-c", code, address],
                capture_output=True,
                text=True,
                timeout=120,
                env=isolated_env(**(env or {})),
            )
        except subprocess.TimeoutExpired:  # a loaded machine: ask again until the deadline
            continue
        if out.returncode == 0 and out.stdout.strip().splitlines()[-1] == str(n):
            return
        time.sleep(1)
    raise RuntimeError(f"the Ray cluster at {address} never had {n} nodes alive")


def start_head(tmp: Path, cpus: int, env: dict[str, str] | None = None) -> tuple[str, Node]:
    """A one-node cluster (a head only) on ports of its own, `env` (e.g. a token) added to the
    tests' Ray settings; stop it with `node.kill()`."""
    address, head = _head(tmp, cpus, env)
    try:
        _wait_nodes(address, 1, [head], env=env)
    except Exception:
        head.kill()
        raise
    return address, head


def _head(tmp: Path, cpus: int, env: dict[str, str] | None = None) -> tuple[str, Node]:
    port = free_port()
    # Ray's sockets live under its temp dir and a Unix socket path holds at most 107 bytes:
    # pytest's (deeper under xdist) is too long, so a short one of the node's own
    temp_dir = tempfile.mkdtemp(prefix="rlcrate-ray-", dir="/tmp")
    head = Node(
        [
            "--head",
            f"--port={port}",
            f"--num-cpus={cpus}",
            "--node-ip-address=127.0.0.1",
            "--include-dashboard=false",
            f"--temp-dir={temp_dir}",
            f"--ray-client-server-port={free_port()}",
            *own_ports(),
        ],
        tmp,
        "head",
        temp_dir,
        env,
    )
    return f"127.0.0.1:{port}", head


STARTUP_TIMEOUT = "timed out during startup"  # Ray's own words for a node it gave up on


def start(tmp: Path, head_cpus: int, worker_cpus: int) -> tuple[str, Node, Node]:
    address, head = _head(tmp, head_cpus)
    for attempt in (1, 2):
        worker = Node(
            [
                f"--address={address}",
                f"--num-cpus={worker_cpus}",
                "--node-ip-address=127.0.0.2",
                *own_ports(),
            ],
            tmp,
            "worker",
        )
        try:
            _wait_nodes(address, 2, [head, worker])
            return address, head, worker
        except Exception as exc:
            worker.kill()
            log = (tmp / "worker.log").read_text(errors="replace")
            # a loaded machine (CI's two cores, every worker starting processes): Ray gives up
            # on a raylet that starts slowly; its head is fine, so the worker starts once more
            if attempt == 1 and head.proc.poll() is None and STARTUP_TIMEOUT in log:
                continue
            head.kill()
            tails = "".join(
                f"\n--- {name}.log (last lines) ---\n"
                + "\n".join((tmp / f"{name}.log").read_text(errors="replace").splitlines()[-15:])
                for name in ("head", "worker")
            )
            raise RuntimeError(f"{exc}{tails}") from None
    raise AssertionError("unreachable: the second attempt returns or raises")
