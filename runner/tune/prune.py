"""The pruner fed while a batch of trials trains: a thread of the study's loop reads each
trial's units' evaluations during training (their evals.json), and at every step that all of
the trial's seeds have reported, tells Optuna the objective's stat over them (`trial.report`)
and asks its pruner (`trial.should_prune`). A trial to stop gets a prune request in each of its
units (`runner.record.evals`), which stop training at their next check; the loop then tells the
study the trial was pruned. The units run through any executor: all this goes through the run
directory's files.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.record.evals import read_evals, request_prune
from runner.record.rundir import UnitRef
from runner.record.tune import TrialRecord

if TYPE_CHECKING:
    from runner.tune.session import Study

POLL_S = 0.5


@dataclass
class Watched:
    record: TrialRecord
    trial: Any  # optuna.Trial
    reported: set[int] = field(default_factory=set)


class Watch:
    """Report and prune the batch's trials while their units run (a context manager)."""

    def __init__(self, s: Study, trials: list[TrialRecord]) -> None:
        import optuna

        self.s = s
        # the Trial of each number, and the steps it reported before (a trial cut mid-way and
        # run again): FrozenTrial's _trial_id is the id Optuna's own ask() builds a Trial from
        frozen = {t.number: t for t in s.study.get_trials(deepcopy=False)}
        self.watched = [
            Watched(
                t,
                optuna.trial.Trial(s.study, frozen[t.number]._trial_id),
                set(frozen[t.number].intermediate_values),
            )
            for t in trials
        ]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="rlcrate-pruner", daemon=True)

    def __enter__(self) -> Watch:
        if self.s.spec.pruner.name != "none":
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.thread.is_alive():
            self.stop.set()
            self.thread.join()
        self.sweep(prune=False)  # the steps reported after the last look, for later trials

    def _loop(self) -> None:
        while not self.stop.wait(POLL_S):
            self.sweep(prune=True)

    def sweep(self, *, prune: bool) -> None:
        for w in self.watched:
            if w.record.pruned_at is None:
                self._report(w, prune)

    def _report(self, w: Watched, prune: bool) -> None:
        from runner.tune.agree import objective

        for step, values in _complete_steps(self.s, w.record.variant):
            if step in w.reported:
                continue
            value = objective(self.s.spec.objective.stat, values)
            w.trial.report(value, step)
            w.reported.add(step)
            w.record.intermediate[str(step)] = value
            if prune and w.trial.should_prune():
                w.record.pruned_at = step
                reason = f"{self.s.spec.pruner.name} pruner at step {step} ({value:.6g})"
                for seed in self.s.res.seeds:
                    request_prune(_unit_dir(self.s, w.record.variant, seed), step, reason)
                return


def _unit_dir(s: Study, variant: str, seed: int) -> Path:
    return UnitRef(variant, seed).dir(s.run_dir)


def _complete_steps(s: Study, variant: str) -> list[tuple[int, list[float]]]:
    """(step, each seed's mean return there) for the steps every seed has evaluated, in order."""
    by_seed = [
        {e.step: e.mean for e in read_evals(_unit_dir(s, variant, seed))} for seed in s.res.seeds
    ]
    steps = set.intersection(*(set(d) for d in by_seed)) if by_seed else set()
    return [(step, [d[step] for d in by_seed]) for step in sorted(steps)]
