"""`reproduce` of a study's archive (a run made by `rlcrate tune`): the study is not searched
again; its best complete trial (or its `--trials N` best) is rerun on the archived seeds, as a
run whose variants are those trials under their own names, and compared unit by unit.

The archived manifest resolves to one placeholder variant, where the study's resolved.yaml holds
its trials: what must agree is everything but the variants, and each trial's variant must be the
manifest with that trial's values (checked here before anything runs).
"""

from __future__ import annotations

from typing import Any

from runner.archive.results import archived_eval
from runner.archive.verify import Verified
from runner.errors import UserInputError
from runner.manifest import ResolvedRun
from runner.record.rundir import checked
from runner.record.tune import TUNE_FILE, TuneRecord
from runner.tune.agree import STATUS_FIELD, UnitMetric, record_disagrees


def study_of(v: Verified, res: ResolvedRun) -> TuneRecord | None:
    """The archive's tune.json (None: not a study's run); a damaged one, or one that disagrees
    with the archived units and resolved.yaml (`tune.agree`: as summary.json is checked against
    the eval files), is refused: the trial rerun is the one the units' figures pick."""
    if TUNE_FILE not in v.files:
        return None
    try:
        record = checked(TuneRecord, v.json(TUNE_FILE), f"{v.path}:{TUNE_FILE}")
    except ValueError:  # not JSON, not UTF-8
        record = None
    if record is None:
        raise UserInputError(f"{v.path}: refused, its {TUNE_FILE} is damaged; nothing was rerun")
    why = record_disagrees(record, res, _archived_metric(v, record.study.metric))
    if why is not None:
        raise UserInputError(
            f"{v.path}: refused, its {TUNE_FILE} disagrees with its units and resolved.yaml "
            f"({why}; altered?); nothing was rerun"
        )
    return record


def _archived_metric(v: Verified, metric: str) -> UnitMetric:
    """A unit's metric from the archive's own files (its eval.json's episodes, its status)."""
    from runner.record.status import UnitStatus

    def of(variant: str, seed: int) -> float | None:
        unit = f"units/{variant}/seed-{seed}"
        try:
            status = checked(
                UnitStatus, v.json(f"{unit}/status.json"), f"{v.path}:{unit}/status.json"
            )
        except ValueError:
            status = None
        if status is None or status.state != "done":
            return None
        if metric == "eval.mean_reward":
            ev = archived_eval(v, f"{variant}/seed-{seed}")
            return ev.mean if ev else None
        value = getattr(status, STATUS_FIELD[metric])
        return float(value) if value is not None else None

    return of


def pick_trials(v: Verified, record: TuneRecord, res: ResolvedRun, n: int | None) -> list[str]:
    """The variants of the `n` (default 1) best complete trials, best first."""
    sign = 1.0 if record.study.direction == "maximize" else -1.0
    done = [
        t
        for t in record.trials
        if t.state == "complete" and t.objective is not None and t.variant in res.variants
    ]
    done.sort(key=lambda t: (-sign * (t.objective or 0.0), t.number))
    if not done:
        raise UserInputError(f"{v.path}: the study has no complete trial to rerun")
    k = n or 1
    if k > len(done):
        raise UserInputError(
            f"--trials: the study has {len(done)} complete trial(s), fewer than {k}"
        )
    return [t.variant for t in done[:k]]


def only(res: ResolvedRun, variants: list[str]) -> ResolvedRun:
    return res.model_copy(update={"variants": {k: res.variants[k] for k in variants}})


def same_study(res: ResolvedRun, rerun: ResolvedRun) -> bool:
    """The archived study's run and its manifest resolved here agree but for the variants."""

    def shape(r: ResolvedRun) -> ResolvedRun:
        return r.without_interpreters().model_copy(update={"variants": {}, "sources": {}})

    return shape(res) == shape(rerun)


def as_matrix(res: ResolvedRun, variants: list[str]) -> list[dict[str, Any]]:
    """The chosen trials as a list matrix, each entry named as its trial (`variant:`)."""
    return [{"variant": name, **res.variants[name].overrides} for name in variants]
