"""Reading a run directory back: status.json, eval.json, TensorBoard curves, summary, bench.

A run that is partial, failed or still going loads as far as its files go; unreadable files are
recorded as problems on the unit they belong to.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.errors import UserInputError
from runner.record.bench import BENCH_FILE, BenchRecord, read_bench
from runner.record.eval import EvalRecord, checked_eval
from runner.record.status import STATUS_FILE, UnitStatus, recorded_status
from runner.record.summary import SUMMARY_FILE, RunSummary, checked_summary
from runner.record.versioned import NewerFormat
from runner.report.summary import train_origin
from runner.report.tb import Curve, read_curve
from runner.trainers.base import EVAL_FILE, TB_DIR

if TYPE_CHECKING:
    from runner.manifest import ResolvedRun


@dataclass
class Unit:
    variant: str
    seed: int
    state: str = "missing"
    error: str | None = None
    eval: EvalRecord | None = None
    curve: Curve | None = None
    problems: list[str] = field(default_factory=list)
    resumes: list[int] = field(default_factory=list)  # checkpoint steps it was continued from

    @property
    def resumed(self) -> bool:
        """Stopped and continued (from a checkpoint, or restarted from scratch)."""
        return bool(self.resumes) or (self.curve is not None and self.curve.segments > 1)


@dataclass
class Run:
    path: Path
    name: str
    run_id: str
    seeds: list[int]
    variants: dict[str, dict[str, Any]]  # name -> overrides, in matrix order
    units: dict[tuple[str, int], Unit]
    manifest: dict[str, Any]
    summary: RunSummary | None
    bench: BenchRecord | None


def _read_json(path: Path, problems: list[str]) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        problems.append(f"{path}: unreadable JSON ({exc})")
        return None
    return data if isinstance(data, dict) else None


def _unit(run_dir: Path, variant: str, seed: int) -> Unit:
    unit = Unit(variant, seed)
    udir = run_dir / "units" / variant / f"seed-{seed}"
    if not udir.is_dir():
        return unit
    raw_status = _read_json(udir / STATUS_FILE, unit.problems)
    status = recorded_status(udir) or UnitStatus(state="pending")
    if raw_status is not None and recorded_status(udir) is None:
        unit.problems.append(f"{udir / STATUS_FILE}: damaged (not a unit's status record)")
    unit.state = status.state if raw_status is not None else "unknown"
    unit.error = status.error
    unit.resumes = list(status.resumes)
    raw = _read_json(udir / EVAL_FILE, unit.problems)
    unit.eval = checked_eval(raw, str(udir / EVAL_FILE))
    if raw is not None and unit.eval is None:
        unit.problems.append(f"{udir / EVAL_FILE}: damaged (its mean disagrees with its episodes)")
    unit.curve, problem = read_curve(udir / TB_DIR, train_origin(status))
    if problem and (udir / TB_DIR).exists():
        unit.problems.append(problem)
    return unit


def load_run(run_dir: Path) -> Run:
    """Everything the report needs from a run directory; raises UserInputError if it is none."""
    run_dir = Path(run_dir)
    markers = ("summary.json", "resolved.yaml", "manifest.yaml", "units", BENCH_FILE)
    if not run_dir.is_dir() or not any((run_dir / m).exists() for m in markers):
        raise UserInputError(
            f"{run_dir} is not a run directory (expected summary.json, resolved.yaml or units/)."
        )
    problems: list[str] = []
    raw = _read_json(run_dir / SUMMARY_FILE, problems)
    summary = checked_summary(raw, str(run_dir / SUMMARY_FILE))
    if raw is not None and summary is None:
        problems.append(f"{run_dir / SUMMARY_FILE}: damaged (not a run's summary)")
    res = _read_resolved(run_dir)
    manifest = res.dump() if res else _read_manifest(run_dir)
    listed = summary.variants if summary else {}
    variants = {k: dict(v.overrides) for k, v in listed.items()}
    if not variants and res:
        variants = {k: dict(v.overrides) for k, v in res.variants.items()}
    units_dir = run_dir / "units"
    for d in sorted(units_dir.iterdir()) if units_dir.is_dir() else []:
        if d.is_dir():
            variants.setdefault(d.name, {})
    found = {int(p.name[5:]) for p in units_dir.glob("*/seed-*") if p.name[5:].isdigit()}
    seeds = [int(s) for s in (summary.seeds if summary else manifest.get("seeds")) or sorted(found)]
    units = {(v, s): _unit(run_dir, v, s) for v in variants for s in seeds}
    return Run(
        path=run_dir,
        name=str(summary.name if summary else manifest.get("name") or run_dir.parent.name),
        run_id=summary.run_id if summary else run_dir.name,
        seeds=seeds,
        variants=variants,
        units=units,
        manifest=manifest,
        summary=summary,
        bench=_bench(run_dir, problems),
    )


def _bench(run_dir: Path, problems: list[str]) -> BenchRecord | None:
    try:
        return read_bench(run_dir, strict=True)
    except NewerFormat:
        raise
    except UserInputError as exc:  # damaged: the report shows the rest
        problems.append(str(exc))
        return None


def _read_resolved(run_dir: Path) -> ResolvedRun | None:
    """The run model; None when resolved.yaml is missing or damaged (the report shows what the
    other files hold)."""
    from runner.manifest import read_resolved

    try:
        return read_resolved(run_dir)
    except NewerFormat:  # a newer rlcrate's run: not to be shown as what it is not
        raise
    except UserInputError:
        return None


def _read_manifest(run_dir: Path) -> dict[str, Any]:
    """The run's own manifest.yaml, as written, when it has no readable resolved.yaml."""
    from runner.errors import ManifestError
    from runner.manifest.parse import read_yaml

    try:
        data, _ = read_yaml(run_dir / "manifest.yaml")
    except ManifestError:
        return {}
    return data if isinstance(data, dict) else {}
