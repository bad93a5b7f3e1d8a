"""A run's provenance.json: what ran, where and with what; one model, read and written here.

The runner writes it when the run directory is made (`runner.provenance.collect` gathers the
facts), adds each unit's state when the units end, and the tracking upload adds where each unit
is tracked. Fields this model does not name are the backends' external programs, by their own
names (`programs` lists them), and are kept as written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from runner.record.rundir import checked, problem, read_json, write_json_atomic
from runner.record.versioned import Format, Versioned, stamped

PROVENANCE_FILE = "provenance.json"


class ExecutorRecord(BaseModel):
    name: str
    settings: dict[str, Any] = Field(default_factory=dict)


class DeterminismCheck(BaseModel):
    """A `check-determinism` result for one backend on one machine (`runner.provenance.
    determinism`): what the determinism.json cache keeps and provenance.json copies."""

    model_config = ConfigDict(extra="allow")  # the check's own figures (steps, seconds, ...)

    result: Literal["bitwise", "diverged", "exact", "approximate"]
    env: str | None = None
    algo: str | None = None
    trainer: str | None = Field(None, description="--resume: the trainer killed and resumed.")
    differ: list[str] | None = Field(None, description="--resume: what differed.")
    checked: str | None = Field(None, description="When, as ISO 8601 (UTC).")


UNKNOWN_TRAINER = "unknown"  # a --resume verdict from before verdicts named their trainer


def from_unversioned(data: dict[str, Any]) -> dict[str, Any]:
    """Format 0 -> 1: the same fields, but `resume_checked`, whose verdicts were per backend
    (backend -> result) before they were kept per backend and trainer: an older verdict is
    kept under the trainer `unknown` (the check did not record which one it killed). A record
    already keyed by trainer (written before records were versioned, after that change) keeps
    its keys."""
    checked = data.get("resume_checked")
    if isinstance(checked, dict):
        data = {
            **data,
            "resume_checked": {
                b: {UNKNOWN_TRAINER: v} if isinstance(v, dict) and "result" in v else v
                for b, v in checked.items()
            },
        }
    return stamped(data)


class Provenance(Versioned):
    """provenance.json."""

    model_config = ConfigDict(extra="allow")  # the backends' programs (listed in `programs`)
    FORMAT = Format(PROVENANCE_FILE, 1, (from_unversioned,))

    rlcrate: str | None = None
    argv: list[str] = Field(default_factory=list)
    cwd: str | None = None
    manifest: str | None = None
    git: dict[str, Any] | None = None
    rlcrate_source_git: dict[str, Any] | None = None
    python: dict[str, Any] = Field(default_factory=dict)
    unit_interpreters: dict[str, str | None] = Field(default_factory=dict)
    platform: dict[str, Any] = Field(default_factory=dict)
    host: str | None = None
    cpu: dict[str, Any] = Field(default_factory=dict)
    gpu: dict[str, Any] = Field(default_factory=dict)
    torch: str | None = None
    cuda: str | None = None
    programs: list[str] = Field(default_factory=list)
    image: dict[str, str | None] = Field(default_factory=dict)
    packages: dict[str, str] = Field(default_factory=dict)
    determinism: dict[str, DeterminismCheck] = Field(
        default_factory=dict, description="Per backend: check-determinism's result here."
    )
    # per backend: `exact` (a stopped unit resumes bit-identical) or `approximate: why`
    resume: dict[str, str] = Field(default_factory=dict)
    resume_checked: dict[str, dict[str, DeterminismCheck]] = Field(
        default_factory=dict,
        description="Backend -> trainer -> a `check-determinism --resume` verdict recorded on "
        "this machine for a trainer of this run (`unknown`: one from before verdicts named "
        "their trainer).",
    )
    started: float | None = None
    started_iso: str | None = None
    finished: float | None = None
    units: dict[str, dict[str, Any]] = Field(default_factory=dict)
    command_line: dict[str, Any] | None = None
    executor: ExecutorRecord | None = None
    lineage: dict[str, Any] = Field(default_factory=dict)
    started_with: dict[str, str] | None = None


def checked_provenance(data: Any, source: str) -> Provenance | None:
    """provenance.json's content (read from `source`) as the model, or None when it does not fit
    it."""
    return checked(Provenance, data, source)


def provenance_problem(data: Any, source: str) -> str | None:
    """Why provenance.json's content does not fit the model (`field: what`), or None."""
    return problem(Provenance, data, source)


def read_provenance(run_dir: Path) -> Provenance | None:
    """The run's provenance.json, or None when it is missing or damaged."""
    path = run_dir / PROVENANCE_FILE
    return checked_provenance(read_json(path), str(path))


def write_provenance(run_dir: Path, prov: Provenance) -> None:
    write_json_atomic(run_dir / PROVENANCE_FILE, prov.as_written())


def update_provenance(run_dir: Path, **fields: Any) -> bool:
    """Set `fields` (the model's own) in the run's provenance.json, checked as every reader
    checks it; False (nothing written) when it is missing or damaged: what is there is kept
    rather than replaced."""
    prov = read_provenance(run_dir)
    if prov is None:
        return False
    unknown = sorted(set(fields) - set(Provenance.model_fields))
    if unknown:  # a backend's programs are recorded when the run is made, not updated
        raise TypeError(f"provenance.json has no field {unknown[0]!r}")
    data = prov.model_dump(exclude={"format", "written_by"})
    write_provenance(run_dir, Provenance.model_validate({**data, **fields}))
    return True
