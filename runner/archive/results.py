"""The numbers `reproduce` compares, and what it refuses to compare.

An archive's checksums say its files are the ones written into it, not that they agree: a
forger can raise summary.json's means and recompute every checksum. So the archived eval files
must agree with their own episodes, and summary.json with them, or the archive is refused before
anything reruns; the verdict itself is computed from the episodes only. On the other side, a
rerun whose units did not all finish (a full disk, a crash) is not a rerun that differs: it gives
no verdict at all.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from runner.errors import RunnerError, UserInputError
from runner.manifest.resolved import ResolvedRun
from runner.record.eval import EvalRecord, checked_eval
from runner.record.provenance import Provenance, checked_provenance, provenance_problem
from runner.record.rundir import UnitRef
from runner.record.status import read_status
from runner.record.summary import checked_summary


class RerunFailed(RunnerError):
    """The rerun could not run to the end, so there is nothing to compare. Exit status 1."""


def _close(a: Any, b: float) -> bool:
    return isinstance(a, (int, float)) and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def archived_eval(v: Any, key: str) -> EvalRecord | None:
    """units/<variant>/seed-<n>/eval.json of the archive, checked; None when not archived."""
    name = f"units/{key}/eval.json"
    if name not in v.files:
        return None
    try:
        ev = checked_eval(v.json(name), f"{v.path}:{name}")
    except ValueError:
        ev = None
    if ev is None:
        raise UserInputError(
            f"{v.path}: refused, {name} is damaged or its mean disagrees with its own "
            "episodes (altered?); nothing was rerun"
        )
    return ev


def _summary_disagrees(
    raw: Any, source: str, res: ResolvedRun, means: dict[str, float]
) -> str | None:
    """Where summary.json's eval figures differ from the eval files' (`means`: key -> mean)."""
    summary = checked_summary(raw, source)
    if summary is None:
        return "summary.json is not a run's summary"
    for name in res.variants:
        var = summary.variants.get(name)
        if var is None:
            return f"summary.json has no eval figures for variant {name}"
        per_seed = var.eval.per_seed_mean
        for seed, got in per_seed.items():
            want = means.get(f"{name}/seed-{seed}")
            if want is None or not _close(got, want):
                return f"{name}/seed-{seed}: summary {got}, its eval.json episodes give {want}"
        for seed, unit in var.units.items():
            want = means.get(f"{name}/seed-{seed}")
            if unit.eval_mean is not None and (want is None or not _close(unit.eval_mean, want)):
                return (
                    f"{name}/seed-{seed}: summary {unit.eval_mean}, its eval.json episodes give "
                    f"{want}"
                )
        if per_seed:
            from runner.report import stats

            want = stats.mean_std([means[f"{name}/seed-{s}"] for s in per_seed])[0]
            if not _close(var.eval.mean, want):
                return f"{name}: summary mean {var.eval.mean}, its seeds' episodes give {want}"
    return None


def check_archived_results(v: Any, res: ResolvedRun) -> None:
    """Refuse an archive whose eval files or summary.json disagree (module docstring)."""
    means = {}
    for name in res.variants:
        for seed in res.seeds:
            ev = archived_eval(v, f"{name}/seed-{seed}")
            if ev is not None:
                means[f"{name}/seed-{seed}"] = ev.mean
    if "summary.json" not in v.files:
        return
    try:
        summary = v.json("summary.json")
    except ValueError:
        summary = None
    why = _summary_disagrees(summary, f"{v.path}:summary.json", res, means)
    if why:
        raise UserInputError(
            f"{v.path}: refused, its summary.json disagrees with its eval files ({why}; "
            "altered?); nothing was rerun"
        )


def archived_provenance(v: Any) -> Provenance:
    """The archive's provenance.json through its model (an archive without one: an empty
    record); one that does not fit it (a string where a determinism check belongs) is refused:
    the verdict's level is read from it."""
    try:
        raw = v.json("provenance.json")
    except ValueError:  # not JSON, not UTF-8
        raw = "not JSON"
    if raw is None:
        return Provenance()
    source = f"{v.path}:provenance.json"
    prov = checked_provenance(raw, source)
    if prov is None:
        raise UserInputError(
            f"{v.path}: refused, its provenance.json is damaged "
            f"({provenance_problem(raw, source)}); "
            "nothing was rerun"
        )
    return prov


def rerun_problem(run_dir: Path, res: ResolvedRun, seeds: list[int]) -> str | None:
    """Why the rerun in `run_dir` cannot be compared (a unit not done, with its error), or None."""
    for name in res.variants:
        for seed in seeds:
            status = read_status(UnitRef(name, seed).dir(run_dir))
            if status.state != "done":
                error = status.error or "no error recorded"
                return f"{name}/seed-{seed} is {status.state}: {error}"
    return None
