"""A trial judged: the objective's metric read per seed from its units' results (the numbers
summary.json reports for each unit), `stat` over the seeds, told to the study; the best trial
and best.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.manifest.parse import read_yaml
from runner.manifest.resolved import ResolvedVariant
from runner.record.summary import UnitSummary
from runner.record.tune import TrialRecord

if TYPE_CHECKING:
    from runner.tune.session import Study

# The objective's metric -> the field of a unit in summary.json that holds it
UNIT_FIELD = {
    "eval.mean_reward": "eval_mean",
    "train.steps_per_s": "train_steps_per_s",
    "train.wall_time_s": "wall_time_s",
}


def per_seed(unit: UnitSummary, metric: str) -> float | None:
    """The metric of one unit, when it is done (None otherwise)."""
    value = getattr(unit, UNIT_FIELD[metric])
    return value if unit.state == "done" and value is not None else None


def how(s: Study) -> str:
    return f"{s.spec.objective.stat} of {s.spec.objective.metric}"


def judge(s: Study, trial: TrialRecord, variant: ResolvedVariant) -> None:
    """Read the trial's units, set its per-seed values and objective, and tell the study."""
    from runner.report.summary import summarize_variant
    from runner.tune.agree import objective

    if trial.pruned_at is None:  # a request written before the runner was stopped
        trial.pruned_at = _requested(s, trial)
    if trial.pruned_at is not None:
        _pruned(s, trial)
        return
    summary = summarize_variant(
        s.run_dir, trial.variant, variant.overrides, s.res.seeds, variant.config, {}
    )
    metric = s.spec.objective.metric
    trial.per_seed = {str(seed): per_seed(summary.units[str(seed)], metric) for seed in s.res.seeds}
    missing = [seed for seed, v in trial.per_seed.items() if v is None]
    if missing:
        unit = summary.units[missing[0]]
        why = f"{unit.state}" + (f": {unit.error}" if unit.error else "")
        fail(s, trial, f"no {metric} for seed(s) {', '.join(missing)} (seed {missing[0]}: {why})")
        return
    values = [v for v in trial.per_seed.values() if v is not None]
    trial.objective = objective(s.spec.objective.stat, values)
    trial.state = "complete"
    trial.error = None
    _tell(s, trial.number, trial.objective)
    s.record.best = b.number if (b := best(s)) else None


def _requested(s: Study, trial: TrialRecord) -> int | None:
    from runner.record.evals import prune_requested
    from runner.record.rundir import UnitRef

    for seed in s.res.seeds:
        request = prune_requested(UnitRef(trial.variant, seed).dir(s.run_dir))
        if request is not None:
            return request.step
    return None


def _pruned(s: Study, trial: TrialRecord) -> None:
    """A trial its pruner stopped: its objective is the value it was stopped on (what Optuna
    records for a pruned trial: its last report), its per-seed values the seeds' there."""
    import optuna

    from runner.record.evals import read_evals
    from runner.record.rundir import UnitRef

    step = trial.pruned_at
    per_seed = {}
    for seed in s.res.seeds:
        evals = read_evals(UnitRef(trial.variant, seed).dir(s.run_dir))
        per_seed[str(seed)] = next((e.mean for e in evals if e.step == step), None)
    trial.per_seed = per_seed
    trial.objective = trial.intermediate.get(str(step))
    trial.state, trial.error = "pruned", None
    _tell(s, trial.number, state=optuna.trial.TrialState.PRUNED)


def fail(s: Study, trial: TrialRecord, error: str) -> None:
    import optuna

    trial.state, trial.error, trial.objective = "failed", error, None
    _tell(s, trial.number, state=optuna.trial.TrialState.FAIL)


def _tell(s: Study, number: int, value: float | None = None, **state: Any) -> None:
    try:
        s.study.tell(number, value, skip_if_finished=True, **state)
    except RuntimeError as exc:
        # Optuna's GridSampler asks the study to stop once its grid is covered, which Optuna
        # allows only inside optimize(); the trial is stored before it asks, and the loop stops
        # at the grid's size on its own
        if "Study.stop" not in str(exc):
            raise


def best(s: Study) -> TrialRecord | None:
    """The complete trial with the best objective (the lower number on a tie)."""
    done = [t for t in s.record.trials if t.state == "complete" and t.objective is not None]
    if not done:
        return None
    sign = 1.0 if s.spec.objective.direction == "maximize" else -1.0
    return max(done, key=lambda t: (sign * (t.objective or 0.0), -t.number))


def line(s: Study, trial: TrialRecord) -> str:
    """One line per trial as it ends."""
    params = ", ".join(f"{p}={_short(v)}" for p, v in trial.params.items())
    if trial.state == "pruned":
        value = f"{trial.objective:.6g}" if trial.objective is not None else "?"
        return f"{trial.variant}: pruned at step {trial.pruned_at} ({how(s)} = {value}); {params}"
    if trial.state != "complete":
        return f"{trial.variant}: failed ({trial.error}); {params}"
    seeds = ", ".join(f"{v:.4g}" for v in trial.per_seed.values() if v is not None)
    mark = " (best so far)" if s.record.best == trial.number else ""
    return f"{trial.variant}: {how(s)} = {trial.objective:.6g}{mark} [seeds: {seeds}]; {params}"


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def write_best(s: Study, trial: TrialRecord) -> Path:
    """best.yaml from the run's manifest.yaml with the command line's --set and --seeds applied
    (what the study ran), the best trial's values set."""
    from runner.manifest.overrides import apply

    data, _ = read_yaml(s.run_dir / "manifest.yaml")
    data = apply(data, s.run_opts.overrides)
    from runner.tune.best import write_best

    return write_best(s.run_dir, data, trial, how(s))
