"""Ray executor: one Ray task per unit, on any node; no disk shared with the driver is needed.

The driver ships each unit's resolved config and existing files (checkpoints, for `--resume`)
with the task; the task runs the unit in a temporary directory on its node and returns every file
of the unit directory, which the driver unpacks into the run directory where `rlcrate run` was
started. A task whose worker process or node dies is retried on another node (`RETRIES` times),
then its unit is marked failed with Ray's reason. `address` is a Ray cluster address (default:
RAY_ADDRESS, else a local cluster started for the run).
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import field_validator

from runner.errors import BackendUnavailable, UserInputError
from runner.executors.base import Executor, ExecutorSettings, Plan, Tick, option
from runner.executors.needs import Needs
from runner.executors.shipping import pack, unpack
from runner.record.rundir import UnitRef, write_text_atomic
from runner.record.status import recorded_status, write_status

RETRIES = int(os.environ.get("RLCRATE_RAY_RETRIES", "3"))
CONNECT_TIMEOUT_S = 3.0  # a cluster answers in ms; the clusters guide promises 3 s per step
STOP_GRACE_S = 90.0


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of HOST:PORT or ray://HOST:PORT; None for `auto` and `local`; ValueError
    naming what was expected otherwise."""
    if address in ("auto", "local"):
        return None
    scheme, sep, rest = address.partition("://")
    hostport = rest if sep else address
    host, _, port = hostport.rpartition(":")
    host = host.strip("[]")  # [::1]:6379
    ok = (not sep or scheme == "ray") and host and " " not in host and "/" not in host
    if not ok or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(
            f"{address!r}: expected HOST:PORT or ray://HOST:PORT (port 1-65535), auto or local"
        )
    return host, int(port)


class RaySettings(ExecutorSettings):
    address: str | None = option(
        "--ray-address", "Ray cluster address (default: RAY_ADDRESS, else a local cluster)."
    )

    @field_validator("address")
    @classmethod
    def _address(cls, v: str | None) -> str | None:
        if v is not None:
            _host_port(v)  # its syntax, before any connection is tried
        return v


def _require_ray() -> None:
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise BackendUnavailable("the ray executor needs Ray (pip install 'rlcrate[ray]')")


def check_address(address: str | None) -> None:
    """Before a run directory is made: Ray is installed, and the cluster's address (the option,
    else RAY_ADDRESS) is well formed and answers."""
    _require_ray()
    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        _check_reachable(address)


def _check_reachable(address: str) -> None:
    """A clear error within seconds, where ray.init would retry for a minute or more."""
    try:
        where = _host_port(address)
    except ValueError as exc:
        raise UserInputError(f"--ray-address {exc}") from None
    if where is None:
        return
    host, port = where
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise UserInputError(
            f"--ray-address {address}: no Ray cluster answers there ({exc.strerror or exc}); "
            "start one with `ray start --head` or check the address"
        ) from None
    if not address.startswith("ray://"):  # Ray Client's server speaks another protocol
        _ask_gcs(address, host, port)


def _ask_gcs(address: str, host: str, port: int) -> None:
    """Ask the cluster's GCS for its id, bounded: where something else listens (a proxy, another
    service), ray.init retries in C++ for 20 s and logs a line a second."""
    import grpc
    from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    with grpc.insecure_channel(target) as channel:
        stub = gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel)
        request = gcs_service_pb2.GetClusterIdRequest()  # type: ignore[attr-defined]
        try:
            stub.GetClusterId(request, timeout=CONNECT_TIMEOUT_S, metadata=_token_metadata())
        except grpc.RpcError as exc:
            code = exc.code()  # type: ignore[attr-defined]
            if code == grpc.StatusCode.UNAUTHENTICATED:  # ray.init would retry for 20 s
                raise UserInputError(token_hint(address)) from None
            why = exc.details() or code.name  # type: ignore[attr-defined]
            raise UserInputError(
                f"--ray-address {address}: no Ray cluster answers there ({why}); start one with "
                "`ray start --head` or check the address (the head's GCS port, 6379 by default)"
            ) from None


def _connect(address: str | None) -> bool:
    """Connect (or start a local cluster); True when this call did, so it also shuts down."""
    try:
        import ray
    except ImportError:
        raise BackendUnavailable(
            "the ray executor needs Ray (pip install 'rlcrate[ray]')"
        ) from None
    if ray.is_initialized():
        return False
    if address:
        _check_reachable(address)
    # Ray's notice that token authentication is on is for Ray's own CLI users, not ours
    logging.getLogger("ray._private.authentication").setLevel(logging.ERROR)
    try:
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.WARNING,  # not "Connecting to existing Ray cluster at ..."
            runtime_env={"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}},
        )
    except (ConnectionError, TimeoutError) as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserInputError(
            f"--ray-address {address}: cannot join the Ray cluster ({msg})"
        ) from None
    except Exception as exc:
        if not _auth_refused(exc):
            raise
        raise UserInputError(token_hint(address)) from None
    return True


def _token_metadata() -> list[tuple[str, str]]:
    """The token ray.init would send (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token),
    as gRPC metadata; none where this Ray has no token authentication."""
    try:
        from ray._raylet import AuthenticationTokenLoader  # type: ignore[attr-defined]

        headers = AuthenticationTokenLoader.instance().get_token_for_http_header()
    except (ImportError, AttributeError, RuntimeError):
        return []
    return [(k.lower(), v) for k, v in (headers or {}).items()]


AUTH_SIGNS = ("InvalidAuthToken", "Token authentication is enabled", "UNAUTHENTICATED")


def _auth_refused(exc: BaseException) -> bool:
    from ray.exceptions import AuthenticationError

    return isinstance(exc, AuthenticationError) or any(s in str(exc) for s in AUTH_SIGNS)


def token_hint(address: str | None) -> str:
    """What to do when a Ray cluster refuses this client's token (or its lack of one)."""
    where = f"at {address}" if address else "started for this run"
    return (
        f"the Ray cluster {where} refused this client's authentication token: set RAY_AUTH_TOKEN "
        "(or RAY_AUTH_TOKEN_PATH) to that cluster's token (`ray get-auth-token` on its head "
        "node prints it); a ~/.ray/auth_token left by another cluster also causes this"
    )


def _board() -> Any:
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from runner.executors.ray_task import Board

    here = ray.get_runtime_context().get_node_id()
    actor = ray.remote(num_cpus=0, max_restarts=3)(Board)
    return actor.options(
        scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False)  # soft may stray
    ).remote()


def _submit(
    run_dir: Path, units: list[UnitRef], jobs: list[str], pythons: Mapping, needs, board
) -> dict:
    """A task per unit. A unit's interpreter travels only when its backend names one: the
    driver's own may not exist on a worker, whose own then runs it."""
    import ray

    from runner.executors.ray_task import run_shipped

    task = ray.remote(max_retries=RETRIES, retry_exceptions=False)(run_shipped)
    resolved_text = (run_dir / "resolved.yaml").read_text(encoding="utf-8")
    refs = {}
    for u in units:
        n: Needs = needs[u]
        files = pack(u.dir(run_dir))
        opts = task.options(num_cpus=n.cpus, num_gpus=n.gpus)
        python = pythons.get(u.variant)
        python = None if python == sys.executable else python
        refs[opts.remote(resolved_text, u.variant, u.seed, jobs, files, board, python)] = u
    return refs


def _show_live(run_dir: Path, board: Any, units: dict[str, UnitRef], finished: set) -> dict:
    import ray

    try:
        files, starts = ray.get(board.take.remote(), timeout=30)
    except ray.exceptions.RayError:  # the board was lost with its node: results still arrive
        return {}
    for key, named in files.items():
        if key in units and key not in finished:
            for name, text in named.items():
                write_text_atomic(units[key].dir(run_dir) / name, text, durable=False)
    return starts


def _collect(run_dir: Path, unit: UnitRef, ref: Any, attempts: int) -> int:
    import ray

    unit_dir = unit.dir(run_dir)
    try:
        out = ray.get(ref)
    except ray.exceptions.RayError as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        write_status(
            unit_dir,
            "failed",
            error=f"lost on Ray after {attempts} attempt(s): {type(exc).__name__}: {reason}",
            finished=time.time(),
        )
        return 1
    unpack(out["files"], unit_dir)
    came_back = recorded_status(unit_dir)  # none: the unit's own record did not come back
    state = came_back.state if came_back is not None else "failed"
    write_status(unit_dir, state, node=out["node"], attempts=attempts)
    return int(out["rc"])


def _wait(run_dir: Path, refs: dict, board: Any, on_tick: Tick, deadline: float | None) -> dict:
    import ray

    keyed = {u.key: u for u in refs.values()}
    finished: set[str] = set()
    results: dict[UnitRef, int] = {}
    while refs and (deadline is None or time.monotonic() < deadline):
        done, _ = ray.wait(list(refs), num_returns=len(refs), timeout=0.5)
        starts = _show_live(run_dir, board, keyed, finished)
        for ref in done:
            unit = refs.pop(ref)
            finished.add(unit.key)
            results[unit] = _collect(run_dir, unit, ref, max(1, starts.get(unit.key, 0)))
        on_tick()
    return results


def launch(plan: Plan, settings: RaySettings, on_tick: Tick) -> dict[UnitRef, int]:
    import ray

    run_dir = plan.run_dir
    started_here = _connect(settings.address or os.environ.get("RAY_ADDRESS"))
    try:
        board = _board()
        refs = _submit(run_dir, plan.units, plan.jobs, plan.pythons, plan.needs, board)
        try:
            return _wait(run_dir, refs, board, on_tick, None)
        except KeyboardInterrupt:
            # running units checkpoint and send their files back; queued ones never start
            ray.get(board.request_stop.remote())
            _wait(run_dir, refs, board, lambda: None, time.monotonic() + STOP_GRACE_S)
            for ref in refs:
                ray.cancel(ref, force=True)
            raise
    finally:
        if started_here:
            ray.shutdown()


class Ray(Executor[RaySettings]):
    """A Ray task per unit, on any node of the cluster; no shared disk needed."""

    Settings = RaySettings
    runs_here = False
    live_files = False  # a node sends a unit's files back when it ends

    def launch(self, plan: Plan, settings: RaySettings, on_tick: Tick) -> dict[UnitRef, int]:
        return launch(plan, settings, on_tick)

    def check_reachable(self, settings: RaySettings) -> None:
        """The address is well formed and a cluster answers there (`check_address`)."""
        check_address(settings.address)
