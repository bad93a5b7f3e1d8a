"""A resumed study's sampler, in the state an uninterrupted session's would be in.

A seeded sampler's next values depend on its seed, the study's history and how many draws it
has made. A resumed session replays the study in memory with the first session's sampler and
seed: the trials asked batch by batch (`tune.parallel` at a time, as the loop asks them), each
draw checked against the journal's, then told what the journal says they were told
(intermediate values included). The sampler has then drawn exactly what the first session's had,
and the rest of the study draws what an uninterrupted one would (tune.json's `replays: exact`).
When a draw differs from the journal's (a journal written by another Optuna, or a study resumed
by an older rlcrate, which reseeded), the study goes on with a sampler seeded past the trials
drawn, and tune.json says its draws are not those of an uninterrupted study.
"""

from __future__ import annotations

import optuna

from runner.manifest import Manifest
from runner.manifest.tune import TuneSpec
from runner.tune import study as optuna_side


def _ask(memory: optuna.Study, spec: TuneSpec, manifest: Manifest) -> optuna.Trial:
    if isinstance(spec.space, str):  # a named space: the trainer's sampler asks, as in the loop
        from runner.trainers import search_spaces

        trial = memory.ask()
        search_spaces(manifest).sample_space(manifest, spec.space, trial)
        return trial
    return memory.ask(fixed_distributions=optuna_side.distributions(spec))


def _tell(memory: optuna.Study, trial: optuna.Trial, done: optuna.trial.FrozenTrial) -> None:
    state = optuna.trial.TrialState
    for step, value in sorted(done.intermediate_values.items()):
        trial.report(value, step)
    try:
        if done.state == state.COMPLETE:
            memory.tell(trial, done.values[0] if done.values else None)
        else:
            memory.tell(trial, state=done.state)
    except RuntimeError as exc:  # the grid sampler's Study.stop (runner.tune.judge._tell)
        if "Study.stop" not in str(exc):
            raise


def replayed(
    spec: TuneSpec, seed: int, manifest: Manifest, journal: list[optuna.trial.FrozenTrial]
) -> tuple[optuna.samplers.BaseSampler, str | None]:
    """(the sampler to go on with, None) when the journal replays exactly from `seed`; else
    (a fresh sampler seeded past the trials drawn, why the journal does not replay)."""
    fresh = optuna_side.sampler(spec, seed)
    if not journal:
        return fresh, None
    memory = optuna.create_study(
        sampler=fresh, pruner=optuna.pruners.NopPruner(), direction=spec.objective.direction
    )
    trials = sorted(journal, key=lambda t: t.number)
    for start in range(0, len(trials), spec.parallel):
        batch = trials[start : start + spec.parallel]
        asked = []
        for done in batch:
            trial = _ask(memory, spec, manifest)
            if trial.number != done.number or trial.params != done.params:
                why = (
                    f"trial {done.number} drew {trial.params} replayed from seed {seed}, the "
                    f"journal holds {done.params}"
                )
                return optuna_side.sampler(spec, seed + len(trials)), why
            asked.append(trial)
        for trial, done in zip(asked, batch, strict=True):
            if done.state.is_finished():
                _tell(memory, trial, done)
    return fresh, None
