"""What a Slurm job runs on its compute node: one unit, as a child process, through submitit.

Preemption and requeue: Slurm sends SIGTERM to every process of the job (`scontrol requeue`,
preemption, `scancel`); the unit checkpoints on it and exits, and a requeued job starts this
again, which resumes from that checkpoint. Near the time limit Slurm sends submitit's signal
(SIGUSR2) instead: `checkpoint()` asks the unit to checkpoint (SIGTERM), waits for it, and hands
submitit this same callable, which requeues the job.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from runner.executors import unit_command
from runner.executors.apptainer import FAILED, apptainer_said, exec_command
from runner.record.rundir import UnitRef
from runner.record.status import read_status, write_status

CHECKPOINT_WAIT_S = 80.0  # submitit signals 90 s before the limit


def _ignore_usr2() -> None:
    """Only the job's own Python takes submitit's signal; the unit hears SIGTERM from it."""
    signal.signal(signal.SIGUSR2, signal.SIG_IGN)


def command(
    run_dir: Path, unit: UnitRef, jobs: list[str], python: str | None, image: str | None, gpus: int
) -> list[str]:
    """The unit's command line; in `image` (a .sif), the image's own Python runs it, with the
    run directory bound at the same path."""
    cmd = unit_command(run_dir, unit, jobs, {unit.variant: python})
    if image:
        binds = [(run_dir, str(run_dir), False)]
        return exec_command(image, ["python3", *cmd[1:]], binds=binds, pwd=str(run_dir), gpus=gpus)
    return cmd


def _apptainer_failed(unit_dir: Path, image: str) -> None:
    """Apptainer could not start the unit (it never said it was running): the unit fails with
    what Apptainer said, as its log has it, rather than with the job's end alone."""
    if read_status(unit_dir).state not in ("pending", "interrupted"):
        return
    try:
        said = apptainer_said((unit_dir / "unit.log").read_text(errors="replace")[-20_000:])
    except OSError:
        said = ""
    host = os.uname().nodename
    write_status(
        unit_dir,
        "failed",
        finished=time.time(),
        error=f"Apptainer could not start {image} on {host}: {said or 'see unit.log'}",
    )


class UnitJob:
    """Picklable by reference: the compute node imports rlcrate from the same install."""

    def __init__(
        self,
        run_dir: str,
        variant: str,
        seed: int,
        jobs: list[str],
        python: str | None = None,
        image: str | None = None,
        gpus: int = 0,
    ):
        self.run_dir, self.variant, self.seed, self.jobs = run_dir, variant, seed, jobs
        self.python, self.image, self.gpus = python, image, gpus
        self._proc: subprocess.Popen[bytes] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_proc": None}

    def __call__(self) -> int:
        run_dir, unit = Path(self.run_dir), UnitRef(self.variant, self.seed)
        unit_dir = unit.dir(run_dir)
        unit_dir.mkdir(parents=True, exist_ok=True)
        cmd = command(run_dir, unit, self.jobs, self.python, self.image, self.gpus)
        with open(unit_dir / "unit.log", "ab") as log:
            log.write(f"[slurm job {os.environ.get('SLURM_JOB_ID')}] {' '.join(cmd)}\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_ignore_usr2,
            )
        while self._proc.poll() is None:  # poll, never wait: the signal handler may interrupt
            time.sleep(0.5)
        if self.image and self._proc.returncode == FAILED:
            _apptainer_failed(unit_dir, self.image)
        return self._proc.returncode

    def checkpoint(self) -> Any:
        """submitit's hook on its signal: the unit saves a checkpoint, then the job requeues."""
        import submitit

        proc = self._proc
        if proc is not None and proc.returncode is None:
            os.kill(proc.pid, signal.SIGTERM)
            unit_dir = UnitRef(self.variant, self.seed).dir(Path(self.run_dir))
            deadline = time.monotonic() + CHECKPOINT_WAIT_S
            while time.monotonic() < deadline:
                if read_status(unit_dir).state != "running":
                    break
                time.sleep(0.5)
        fresh = UnitJob(
            self.run_dir, self.variant, self.seed, self.jobs, self.python, self.image, self.gpus
        )
        return submitit.helpers.DelayedSubmission(fresh)
