"""A real single-node Slurm cluster for the tests: munged, slurmctld and slurmd started as root
with their own slurm.conf under a temporary directory, torn down afterwards.

`start(tmp)` returns the environment (SLURM_CONF) that Slurm's commands need, or raises
`Unavailable` with the reason the daemons could not start (the tests then skip with it).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

NODE = "rlnode"
PARTITION = "debug"


class Unavailable(Exception):
    pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _node_line() -> str:
    cpus = os.cpu_count() or 1
    mem_kb = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
    return (
        f"NodeName={NODE} NodeHostname={socket.gethostname()} NodeAddr=127.0.0.1 "
        f"CPUs={cpus} RealMemory={mem_kb // 1024 - 512} State=UNKNOWN"
    )


def write_conf(tmp: Path) -> Path:
    for sub in ("state", "spool"):
        (tmp / sub).mkdir(parents=True, exist_ok=True)
    conf = tmp / "slurm.conf"
    conf.write_text(
        "\n".join(
            [
                "ClusterName=rlcrate-test",
                f"SlurmctldHost={socket.gethostname()}(127.0.0.1)",
                "SlurmUser=root",
                "SlurmdUser=root",
                f"SlurmctldPort={_free_port()}",
                f"SlurmdPort={_free_port()}",
                f"StateSaveLocation={tmp}/state",
                f"SlurmdSpoolDir={tmp}/spool",
                f"SlurmctldPidFile={tmp}/slurmctld.pid",
                f"SlurmdPidFile={tmp}/slurmd.pid",
                f"SlurmctldLogFile={tmp}/slurmctld.log",
                f"SlurmdLogFile={tmp}/slurmd.log",
                "AuthType=auth/munge",
                # a requeued job waits out its credential's lifetime (default 120 s) before it
                # starts again; the requeue tests need not wait two minutes each
                "AuthInfo=cred_expire=5",
                "ProctrackType=proctrack/linuxproc",
                "TaskPlugin=task/none",
                "SelectType=select/cons_tres",
                "SelectTypeParameters=CR_Core",
                "SchedulerType=sched/backfill",
                # a requeued job becomes eligible some seconds later, with no event to schedule
                # it on: the periodic pass starts it (every 60 s by default)
                "SchedulerParameters=sched_interval=2",
                "AccountingStorageType=accounting_storage/none",
                "JobAcctGatherType=jobacct_gather/none",
                "MpiDefault=none",
                "ReturnToService=2",
                "JobRequeue=1",
                "MinJobAge=3600",
                # SIGTERM to SIGKILL (Slurm's default is 30 s): the time a unit has to checkpoint
                # and record its stop; 5 s was too little on a loaded machine. submitit's own
                # process ignores SIGTERM, so a cancelled job takes this long to end.
                "KillWait=15",
                _node_line(),
                f"PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
                "",
            ]
        )
    )
    return conf


def _munge_running() -> bool:
    if not shutil.which("munge"):
        return False
    enc = subprocess.run(["munge", "-n"], capture_output=True, timeout=10)
    if enc.returncode:
        return False
    return subprocess.run(["unmunge"], input=enc.stdout, capture_output=True).returncode == 0


MUNGE_PID = Path("/run/munge/munged.pid")


def _start_munge(tmp: Path) -> None:
    """Start munged unless one answers already; remember that we did, so stop() ends it."""
    if _munge_running():
        return
    Path("/run/munge").mkdir(parents=True, exist_ok=True)
    shutil.chown("/run/munge", "munge", "munge")
    subprocess.run(
        ["runuser", "-u", "munge", "--", "/usr/sbin/munged"], check=True, capture_output=True
    )
    for _ in range(50):
        if _munge_running():
            (tmp / "munged.pid").write_text(MUNGE_PID.read_text())
            return
        time.sleep(0.1)
    raise Unavailable("munged started but does not answer")


def _wait_idle(env: dict[str, str], tmp: Path) -> None:
    for _ in range(120):
        out = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True, env=env
        )
        if out.stdout.strip() == "idle":
            return
        time.sleep(0.5)
    logs = (tmp / "slurmctld.log").read_text(errors="replace")[-800:]
    raise Unavailable(f"the Slurm node never became idle (sinfo: {out.stdout.strip()!r}): {logs}")


def start(tmp: Path) -> dict[str, str]:
    if os.geteuid() != 0:
        raise Unavailable("starting Slurm daemons needs root")
    missing = [c for c in ("munged", "slurmctld", "slurmd", "sbatch") if not shutil.which(c)]
    if missing:
        raise Unavailable(f"not installed: {', '.join(missing)} (apt-get install slurm-wlm munge)")
    tmp.mkdir(parents=True, exist_ok=True)
    _start_munge(tmp)
    conf = write_conf(tmp)
    env = {**os.environ, "SLURM_CONF": str(conf)}
    for daemon in (["slurmctld", "-c", "-f", str(conf)], ["slurmd", "-N", NODE, "-f", str(conf)]):
        got = subprocess.run(daemon, capture_output=True, text=True, env=env, timeout=60)
        if got.returncode:
            stop(tmp, env)
            raise Unavailable(f"{daemon[0]} did not start: {got.stderr.strip()[-300:]}")
    try:
        _wait_idle(env, tmp)
    except Unavailable:
        stop(tmp, env)
        raise
    return env


def stop(tmp: Path, env: dict[str, str]) -> None:
    """Cancel every job, then stop the daemons by their pid files (never by name); munged only
    if start() started it."""
    subprocess.run(["scancel", "--full", "-u", "root"], capture_output=True, env=env)
    for name in ("slurmd", "slurmctld", "munged"):
        pid_file = tmp / f"{name}.pid"
        try:
            pid = int(pid_file.read_text().strip())
        except (OSError, ValueError):
            continue
        try:
            os.kill(pid, 15)
        except ProcessLookupError:
            continue
        for _ in range(100):
            if not Path(f"/proc/{pid}").exists():
                break
            time.sleep(0.1)
