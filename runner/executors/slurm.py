"""Slurm executor: one batch job per unit, submitted through submitit.

The run directory must be on storage the compute nodes see (a cluster's home or scratch), as is
usual on Slurm clusters; submitit's files and the jobs' logs go to RUN_DIR/slurm/. The job ids
are kept in RUN_DIR/slurm/jobs.json, so `rlcrate status RUN_DIR` can follow a detached run and
`--resume` attaches to units whose jobs are still queued or running instead of submitting again.
Job states come from squeue and `scontrol show job` (no accounting database needed).
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from runner.errors import BackendUnavailable, UserInputError
from runner.executors.base import Executor, Held, Holdings, Plan, Tick
from runner.executors.needs import Needs
from runner.executors.slurm_profile import SlurmSettings
from runner.record.jobs import read_jobs as read_job_ids
from runner.record.jobs import write_jobs
from runner.record.rundir import UnitRef
from runner.record.status import read_status, write_status

TERMINAL = ("done", "failed")
POLL_S = 2.0
ACTIVE = {
    "PENDING",
    "RUNNING",
    "CONFIGURING",
    "COMPLETING",
    "REQUEUED",
    "REQUEUE_HOLD",
    "REQUEUE_FED",
    "RESIZING",
    "SUSPENDED",
    "STOPPED",
    "SIGNALING",
    "STAGE_OUT",
}


def require_slurm() -> None:
    missing = [c for c in ("sbatch", "squeue", "scontrol") if shutil.which(c) is None]
    if missing:
        raise BackendUnavailable(
            f"the slurm executor needs Slurm's commands on PATH ({', '.join(missing)} not "
            "found); run rlcrate on a Slurm login node"
        )
    try:
        import submitit  # noqa: F401
    except ImportError:
        raise BackendUnavailable(
            "the slurm executor needs submitit (pip install 'rlcrate[slurm]')"
        ) from None


def jobs_file(run_dir: Path) -> Path:
    return run_dir / "slurm" / "jobs.json"


def read_jobs(run_dir: Path) -> dict[str, str]:
    """{unit key: Slurm job id} of the jobs submitted for this run ({} when none were); a
    damaged file is one line naming it (RunFileError)."""
    return read_job_ids(jobs_file(run_dir))


def _executor(run_dir: Path, s: SlurmSettings, unit: UnitRef, need: Needs) -> Any:
    import submitit

    ex = submitit.SlurmExecutor(folder=run_dir / "slurm", max_num_timeout=100, python=s.python)
    params: dict[str, Any] = {
        "job_name": f"rlcrate-{run_dir.parent.name}-{unit.variant}-s{unit.seed}",
        "time": s.minutes,  # submitit counts minutes (and signals before the limit)
        "cpus_per_task": need.cpus,
        "partition": s.partition,
        "account": s.account,
        "setup": s.setup or None,
        "stderr_to_stdout": True,
        "additional_parameters": {"requeue": True, **s.sbatch},
    }
    if need.gpus:
        params["gpus_per_node"] = need.gpus
    ex.update_parameters(**{k: v for k, v in params.items() if v is not None})
    return ex


def _sbatch_error(exc: Exception) -> str:
    text = str(exc)
    lines = [ln.strip() for ln in text.splitlines() if "error" in ln.lower() and ln.strip()]
    picked = [ln for ln in lines if ln.startswith("sbatch:")] or lines or [text.strip()]
    return " ".join(picked[-2:])[:400]


def submit(plan: Plan, s: SlurmSettings) -> dict[str, str]:
    """Submit a job per unit (attaching to live ones); returns {unit key: job id}."""
    import submitit

    from runner.executors.slurm_job import UnitJob

    run_dir, jobs, pythons, needs = plan.run_dir, plan.jobs, plan.pythons, plan.needs
    known = read_jobs(run_dir)
    live = slurm_states(list(known.values()))
    ids: dict[str, str] = {}
    for u in plan.units:
        if live.get(known.get(u.key, ""), "") in ACTIVE:
            ids[u.key] = known[u.key]
            continue
        need = needs[u]
        own = pythons.get(u.variant)  # a backend's own interpreter, else the profile's python
        fn = UnitJob(
            str(run_dir.resolve()),
            u.variant,
            u.seed,
            jobs,
            own if own and own != sys.executable else (s.python or sys.executable),
            s.image,
            need.gpus,
        )
        try:
            with contextlib.redirect_stderr(io.StringIO()):  # submitit echoes sbatch's errors
                job = _executor(run_dir, s, u, need).submit(fn)
        except (submitit.core.utils.FailedJobError, subprocess.SubprocessError, OSError) as exc:
            scancel(list(ids.values()))
            why = _sbatch_error(exc)
            raise UserInputError(f"sbatch refused the job for {u.key}: {why}") from None
        ids[u.key] = str(job.job_id)
        write_status(u.dir(run_dir), "pending", slurm_job=ids[u.key])
    write_jobs(jobs_file(run_dir), {**known, **ids})
    return ids


def slurm_states(job_ids: list[str]) -> dict[str, str]:
    """{job id: Slurm state} for jobs Slurm still knows about (squeue, then scontrol)."""
    if not job_ids:
        return {}
    out = subprocess.run(
        ["squeue", "-h", "-o", "%i %T", "-j", ",".join(job_ids)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    states = dict(line.split()[:2] for line in out.stdout.splitlines() if len(line.split()) >= 2)
    for jid in job_ids:
        if jid not in states:
            shown = subprocess.run(
                ["scontrol", "-o", "show", "job", jid], capture_output=True, text=True, timeout=60
            )
            m = re.search(r"\bJobState=(\S+)", shown.stdout)
            if m:
                states[jid] = m.group(1)
    return states


def scancel(job_ids: list[str]) -> None:
    if job_ids:
        subprocess.run(["scancel", *job_ids], capture_output=True, timeout=60)


def reconcile(run_dir: Path, ids: dict[str, str], units: dict[str, UnitRef]) -> dict[UnitRef, int]:
    """Units whose jobs ended: their exit (0 done, 1 otherwise), failing those the job left
    unfinished (cancelled, timed out, node failure) with Slurm's reason."""
    states = slurm_states(list(ids.values()))
    ended: dict[UnitRef, int] = {}
    for key, jid in ids.items():
        state = states.get(jid, "UNKNOWN")
        if state in ACTIVE:
            continue
        unit = units[key]
        status = read_status(unit.dir(run_dir))
        if status.state == "done":
            ended[unit] = 0
            continue
        if status.state != "failed":
            write_status(
                unit.dir(run_dir),
                "failed",
                finished=time.time(),
                error=f"Slurm job {jid} ended {state} before the unit finished",
            )
        ended[unit] = 1
    return ended


def launch(plan: Plan, settings: SlurmSettings, on_tick: Tick) -> dict[UnitRef, int]:
    require_slurm()
    run_dir, units = plan.run_dir, plan.units
    ids = submit(plan, settings)
    if settings.detach:
        return {}
    keyed = {u.key: u for u in units}
    results: dict[UnitRef, int] = {}
    # Ctrl-C: the runner cancels the unfinished units' jobs (`cancel`; they checkpoint on the
    # SIGTERM Slurm sends first)
    while len(results) < len(units):
        left = {k: v for k, v in ids.items() if keyed[k] not in results}
        results.update(reconcile(run_dir, left, keyed))
        on_tick()
        time.sleep(POLL_S)
    return results


def _answers() -> str | None:
    """None when Slurm's controller answers; else why the states shown are as last recorded."""
    if shutil.which("scontrol") is None or shutil.which("squeue") is None:
        return "Slurm's commands are not on PATH here; unit states as last recorded"
    try:
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        ping = None
    if ping is None or ping.returncode != 0:
        return "Slurm did not answer (scontrol ping); unit states as last recorded"
    return None


def _status(run_dir: Path, units: list[UnitRef]) -> Holdings:
    """Each unit's job id and state, of a run submitted to Slurm (nothing for any other run):
    a job Slurm no longer runs has ended, failing a unit it did not finish. Only looks: that
    unit is recorded as failed by the runner (reconcile) on its next `--resume`, not here."""
    found = read_jobs(run_dir)  # damaged: one line naming the file (RunFileError)
    keys = {u.key for u in units}
    ids = {k: str(j) for k, j in found.items() if k in keys}
    if not ids:
        return Holdings()
    note = _answers()
    if note is not None:
        return Holdings({k: Held(j) for k, j in ids.items()}, note=note, requeues=True)
    states = slurm_states(list(ids.values()))
    held = {}
    for key, job in ids.items():
        state = states.get(job, "UNKNOWN")
        gone = state not in ACTIVE
        why = f"Slurm job {job} ended {state} before the unit finished" if gone else ""
        held[key] = Held(f"{job} {state}", ended=gone, why=why)
    return Holdings(held, requeues=True)


def _cancel(run_dir: Path, units: list[UnitRef]) -> None:
    """scancel the jobs of these units (each checkpoints on the SIGTERM Slurm sends first)."""
    ids = read_jobs(run_dir)
    scancel([ids[u.key] for u in units if u.key in ids])


def _started_any(run_dir: Path) -> bool:
    """A job was submitted (slurm/ alone holds only submitit's folder for a job sbatch
    refused)."""
    return jobs_file(run_dir).exists()


class Slurm(Executor[SlurmSettings]):
    """A batch job per unit (submitit); detached runs are followed with `rlcrate status`."""

    Settings = SlurmSettings
    runs_here = False

    def launch(self, plan: Plan, settings: SlurmSettings, on_tick: Tick) -> dict[UnitRef, int]:
        return launch(plan, settings, on_tick)

    def check_reachable(self, settings: SlurmSettings) -> None:
        """Slurm's commands are on PATH (its controller is asked when jobs are submitted)."""
        require_slurm()

    def status(self, run_dir: Path, units: list[UnitRef]) -> Holdings:
        return _status(run_dir, units)

    def cancel(self, run_dir: Path, units: list[UnitRef]) -> None:
        _cancel(run_dir, units)

    def started_any(self, run_dir: Path) -> bool:
        return _started_any(run_dir)
