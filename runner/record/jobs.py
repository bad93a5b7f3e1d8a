"""An executor's job ids, one per unit (the Slurm executor's `slurm/jobs.json`): what it
submitted for a run, so `status`, `cancel` and a resume find the jobs again. One typed model,
written here alone (`write_jobs`) and read through `read_jobs`; the executor names the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field

from runner.errors import RunFileError
from runner.record.rundir import problem, read_json, read_record, write_json_atomic
from runner.record.versioned import Format, Versioned


def from_unversioned(data: dict[str, Any]) -> dict[str, Any]:
    """Format 0 -> 1: the file was the mapping itself; it is now `jobs`."""
    return {"format": 1, "written_by": None, "jobs": data}


class JobsRecord(Versioned):
    """jobs.json."""

    model_config = ConfigDict(extra="forbid", strict=True)
    FORMAT = Format("jobs.json", 1, (from_unversioned,))

    jobs: dict[str, str] = Field(
        default_factory=dict, description="Unit (variant/seed-N) -> the id of its job."
    )


def write_jobs(path: Path, jobs: dict[str, str]) -> None:
    write_json_atomic(path, JobsRecord(jobs=jobs).as_written())


def read_jobs_record(path: Path) -> JobsRecord | None:
    """The record at `path`; None when there is none; RunFileError, one line naming the file,
    when it is damaged."""
    if not path.exists():
        return None
    found = read_record(JobsRecord, path)
    if found is None:
        why = problem(JobsRecord, read_json(path), str(path))
        raise RunFileError(f"{path}: damaged (expected unit -> job id; {why})")
    return found


def read_jobs(path: Path) -> dict[str, str]:
    """{unit key: job id} ({} when there is no file); damaged: as `read_jobs_record`."""
    found = read_jobs_record(path)
    return found.jobs if found is not None else {}
