"""The logic of `runner.tune` in process, no study run: a trial's objective over its seeds, the
journal's repair (a write cut off by a kill, damage the runner did not make, Optuna's leftover
lock) and tune.json checked against the journal (real Optuna trials). `rlcrate tune` itself is
tests/tune/test_tune.py's."""

from __future__ import annotations

import json

import pytest

from runner.errors import RunFileError
from runner.record.tune import TUNE_FILE, StudyRecord, TrialRecord, TuneRecord
from runner.tune import agree, journal


@pytest.mark.parametrize(
    ("stat", "values", "want"),
    [
        ("min", [3.0, 1.0, 2.0], 1.0),
        ("mean", [1.0, 2.0, 6.0], 3.0),
        ("iqm", [1.0, 2.0, 3.0, 100.0], 2.5),  # a quarter cut at each end: the mean of 2 and 3
        ("iqm", [5.0], 5.0),
    ],
)
def test_the_objective_is_its_stat_over_the_seeds(stat, values, want):
    assert agree.objective(stat, values) == pytest.approx(want)


# -- the journal ---------------------------------------------------------------------------

RECORD = json.dumps({"op_code": 0, "worker_id": "w", "study_name": "s", "directions": [1]})


def test_a_sound_journal_is_left_as_it_is(tmp_path):
    path = tmp_path / "study.journal"
    path.write_text(f"{RECORD}\n{RECORD}\n")
    assert journal.repair(path) == []
    assert path.read_text() == f"{RECORD}\n{RECORD}\n"


def test_no_journal_yet_is_nothing_to_repair(tmp_path):
    assert journal.repair(tmp_path / "study.journal") == []


def test_a_last_line_cut_off_mid_write_is_removed_and_said(tmp_path):
    path = tmp_path / "study.journal"
    path.write_text(f"{RECORD}\n{RECORD[:17]}")
    (note,) = journal.repair(path)
    assert note.startswith(f"{path}:2: its last line was cut off mid-write") and "17 bytes" in note
    assert path.read_text() == f"{RECORD}\n"


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("not json at all", "not JSON"),
        ('{"op": 1}', "without an integer op_code"),
        ("[1]", "op_code"),
    ],
)
def test_a_damaged_line_is_refused_naming_its_line_and_nothing_is_changed(tmp_path, line, why):
    path = tmp_path / "study.journal"
    text = f"{RECORD}\n{line}\n{RECORD}\n"
    path.write_text(text)
    with pytest.raises(RunFileError) as err:
        journal.repair(path)
    message = str(err.value)
    assert message.startswith(f"{path}:2: not one of Optuna's journal records") and why in message
    assert "\n" not in message
    assert path.read_text() == text


def test_optunas_leftover_lock_is_removed_and_said(tmp_path):
    path = tmp_path / "study.journal"
    path.write_text(f"{RECORD}\n")
    lock = tmp_path / journal.OPTUNA_LOCK
    lock.symlink_to(tmp_path / "gone")  # dangling, as a killed runner leaves it
    (note,) = journal.repair(path)
    assert str(lock) in note and "removed a lock" in note
    assert not lock.is_symlink()


# -- tune.json against the journal -----------------------------------------------------------


def _record(*trials: TrialRecord) -> TuneRecord:
    study = StudyRecord(
        metric="eval.mean_reward", stat="mean", direction="maximize", sampler="tpe",
        sampler_seed=0, optuna_version="5", storage="study.journal", trials=3, parallel=1,
    )  # fmt: skip
    return TuneRecord(name="s", run_id="r", seeds=[0], study=study, trials=list(trials))


def _trial(number: int, state: str, lr: float, objective: float | None = None) -> TrialRecord:
    return TrialRecord(
        number=number, variant=f"trial-{number:03d}", params={"algo.params.lr": lr},
        state=state, objective=objective,
    )  # fmt: skip


def _frozen(number: int, state: str, lr: float, value: float | None = None):
    import optuna

    trial = optuna.trial.create_trial(
        state=getattr(optuna.trial.TrialState, state),
        params={"lr": lr},
        distributions={"lr": optuna.distributions.FloatDistribution(1e-5, 1.0)},
        value=value,
    )
    trial.number = number
    return trial


def _values(trial) -> dict[str, float]:
    return {"algo.params.lr": trial.params["lr"]}


def test_a_record_and_its_journal_that_agree():
    pytest.importorskip("optuna")
    record = _record(_trial(0, "complete", 0.1, 5.0), _trial(1, "running", 0.2))
    frozen = [_frozen(0, "COMPLETE", 0.1, 5.0), _frozen(1, "RUNNING", 0.2)]
    assert agree.journal_disagrees(record, frozen, _values) is None


@pytest.mark.parametrize(
    ("trials", "frozen", "file", "says"),
    [
        ([], [(0, "COMPLETE", 0.1, 5.0)], TUNE_FILE, "holds trial 0 as complete"),
        ([(0, "complete", 0.1, 5.0)], [], "study.journal", "lists trial 0 as complete"),
        ([(0, "complete", 0.3, 5.0)], [(0, "COMPLETE", 0.1, 5.0)], TUNE_FILE, "values"),
        ([(0, "failed", 0.1, None)], [(0, "COMPLETE", 0.1, 5.0)], TUNE_FILE, "is failed there"),
        ([(0, "complete", 0.1, 4.0)], [(0, "COMPLETE", 0.1, 5.0)], TUNE_FILE, "objective 4.0"),
    ],
)
def test_where_a_record_and_its_journal_disagree_is_named(trials, frozen, file, says):
    pytest.importorskip("optuna")
    record = _record(*(_trial(*t) for t in trials))
    found = agree.journal_disagrees(record, [_frozen(*f) for f in frozen], _values)
    assert found is not None and found[0] == file and says in found[1], found


def test_a_journal_with_finished_trials_and_no_record_is_a_missing_record():
    pytest.importorskip("optuna")
    found = agree.journal_disagrees(None, [_frozen(0, "PRUNED", 0.1)], _values)
    assert found == (
        TUNE_FILE,
        "the study's journal holds trial 0 as pruned, and tune.json is missing",
    )


def test_units_of_trials_the_record_does_not_list_are_named():
    record = _record(_trial(0, "complete", 0.1, 5.0))
    units = ["trial-000", "trial-002", "default", "trial-001"]
    assert agree.unlisted_units(record, units) == ["trial-001", "trial-002"]
    assert agree.unlisted_units(None, ["trial-000"]) == ["trial-000"]
