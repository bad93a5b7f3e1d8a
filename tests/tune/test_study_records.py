"""A study's records checked against each other (and the sampler's seed),
through the console script on a real toy study (the torch-free toy_climb trainer): a
resumed study whose journal or tune.json was emptied, lost or edited is refused in one line
naming the file, never relabelled; a cut-off journal line is repaired and garbage refused; a
stale Optuna lock neither spins nor waits; an interrupted study draws its remaining trials as an
uninterrupted one does; a study archive whose tune.json disagrees with its units is refused by
`archive` and `reproduce`."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.archive_tools import altered
from tests.helpers import (
    checkout_env,
    one_error_line,
    rlcrate,
    rlcrate_exe,
    run_dir_of,
    toy_manifest,
)

pytestmark = [pytest.mark.slow, pytest.mark.gymnasium]  # one toy study (~10 s) per module


def _study(step_ms: float = 0.0) -> dict:
    m = toy_manifest(name="study", seeds=[0, 1], train__timesteps=256)
    m["algo"]["params"]["step_ms"] = step_ms
    m["tune"] = {
        "space": {"algo.params.noise": {"uniform": [0.1, 1.0]}},
        "trials": 4,
        "parallel": 2,
        "sampler": "random",
    }
    return m


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    """A finished study of four trials, two at a time (about 10 s)."""
    home = tmp_path_factory.mktemp("study")
    path = home / "study.yaml"
    path.write_text(yaml.safe_dump(_study(), sort_keys=False))
    res = rlcrate("tune", str(path), "--out", str(home / "runs"), timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    return run_dir_of(home / "runs", "study")


def _copy(study: Path, tmp_path: Path) -> Path:
    run = tmp_path / study.name
    shutil.copytree(study, run)
    return run


def _tune(run: Path) -> dict:
    return json.loads((run / "tune.json").read_text())


def _edit_tune(change: Callable[[dict], None]) -> Callable[[Path], None]:
    def edit(run: Path) -> None:
        data = _tune(run)
        change(data)
        (run / "tune.json").write_text(json.dumps(data))

    return edit


def _set(data: dict, trial: int, **fields) -> None:
    data["trials"][trial].update(fields)


DISAGREE = {
    "journal emptied": (lambda run: (run / "study.journal").write_text(""), "study.journal",
                        "holds 0 trial(s), and tune.json lists trial 0 as complete"),
    "tune.json lost": (lambda run: (run / "tune.json").unlink(), "tune.json",
                       "holds trial 0 as complete, and tune.json is missing"),
    "two trials dropped": (_edit_tune(lambda d: d.update(trials=d["trials"][:2])), "tune.json",
                           "holds trial 2 as complete, and tune.json does not list it"),
    "objective re-summed": (_edit_tune(lambda d: _set(d, 1, objective=1e300)), "tune.json",
                            "trial 1's objective 1e+300, the journal's"),
    "values edited": (_edit_tune(lambda d: _set(d, 3, params={"algo.params.noise": 0.5})),
                      "tune.json", "trial 3's values {'algo.params.noise': 0.5}, the journal's"),
}  # fmt: skip


@pytest.mark.parametrize("case", DISAGREE)
def test_a_resume_from_records_that_disagree_is_one_line_naming_the_file(study, tmp_path, case):
    edit, file, says = DISAGREE[case]
    run = _copy(study, tmp_path)
    edit(run)
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    res = rlcrate("tune", str(run / "manifest.yaml"), "--resume", str(run))
    line = one_error_line(res, f"{run / file}: disagrees with the study's other records", says)
    assert "nothing was run" in line
    after = {p: p.read_bytes() for p in run.rglob("*") if p.is_file() and p.name != ".lock"}
    assert after == {p: b for p, b in before.items() if p.name != ".lock"}, "a file changed"


def _resume_ok(run: Path) -> subprocess.CompletedProcess:
    res = rlcrate("tune", str(run / "manifest.yaml"), "--resume", str(run), timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    return res


def test_a_cut_off_journal_line_is_repaired_and_a_stale_lock_cleared(study, tmp_path):
    run = _copy(study, tmp_path)
    journal = run / "study.journal"
    whole = journal.read_bytes()
    journal.write_bytes(whole + b'{"op_code":4,"worker_id":"x","study_')  # a write cut by a kill
    (run / "study.journal.lock").symlink_to(tmp_path / "gone")  # dangling: Optuna spun on it
    t0 = time.monotonic()
    res = _resume_ok(run)
    assert time.monotonic() - t0 < 60, "a stale lock cost a wait"
    warnings = [ln for ln in res.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 2 and "Traceback" not in res.stderr, res.stderr
    cut_at = len(whole.splitlines()) + 1
    assert any(f"{journal}:{cut_at}: its last line was cut off" in w for w in warnings)
    assert any("study.journal.lock: removed a lock left by a runner that was stopped" in w
               for w in warnings)  # fmt: skip
    assert journal.read_bytes() == whole and not (run / "study.journal.lock").exists()
    assert _tune(run)["trials"] == _tune(study)["trials"]  # the study as it was


@pytest.mark.parametrize(
    ("line", "says"),
    [(b"garbage\n", ":3: not one of Optuna's journal records (not JSON"),
     (b'{"op_code": 99}\n', "Optuna cannot replay the study's journal")],
    ids=["not JSON", "unknown record"],
)  # fmt: skip
def test_a_damaged_journal_is_one_line_and_left_as_it_is(study, tmp_path, line, says):
    run = _copy(study, tmp_path)
    journal = run / "study.journal"
    lines = journal.read_bytes().splitlines(keepends=True)
    damaged = (
        b"".join([*lines[:2], line, *lines[2:]]) if b"garbage" in line else b"".join([*lines, line])
    )
    journal.write_bytes(damaged)
    res = rlcrate("tune", str(run / "manifest.yaml"), "--resume", str(run))
    one_error_line(res, str(journal), says, "nothing was run")
    assert journal.read_bytes() == damaged, "the journal was appended to"


def test_an_interrupted_study_draws_what_an_uninterrupted_one_drew(study, tmp_path):
    """Cut while its first batch trains (readiness: a unit of trial-000 running), resumed: every
    trial's values are the uninterrupted study's, and tune.json's `replays: exact` holds."""
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(_study(step_ms=10), sort_keys=False))  # a unit lasts ~3 s
    out = tmp_path / "runs"
    proc = subprocess.Popen(
        [rlcrate_exe(), "tune", str(path), "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=checkout_env(),
    )  # fmt: skip

    def running() -> bool:
        for f in out.glob("study/*/units/trial-000/seed-*/progress.json"):
            return bool(f.read_text())
        return False

    deadline = time.monotonic() + 120
    while not running():
        assert time.monotonic() < deadline and proc.poll() is None, "no unit started"
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    run = run_dir_of(out, "study")
    assert {t["state"] for t in _tune(run)["trials"]} == {"running"}
    _resume_ok(run)
    resumed, whole = _tune(run), _tune(study)
    assert [t["params"] for t in resumed["trials"]] == [t["params"] for t in whole["trials"]]
    assert resumed["study"]["sampler_seed"] == 0 and resumed["study"]["replays"].startswith("exact")


@pytest.fixture(scope="module")
def study_archive(study, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("archive") / "study.tar.gz"
    res = rlcrate("archive", str(study), "-o", str(path))
    assert res.returncode == 0, res.stderr
    return path


def _tune_member(change: Callable[[dict], None] | None) -> Callable[[dict[str, bytes]], None]:
    def edit(files: dict[str, bytes]) -> None:
        if change is None:
            files["tune.json"] = b"{not json"
            return
        data = json.loads(files["tune.json"])
        change(data)
        files["tune.json"] = json.dumps(data).encode()

    return edit


def _best_of_all(d: dict) -> None:
    """Trial 2 made best by re-summing its figures (NaN for trial 0 would sort first too)."""
    _set(d, 2, objective=1e300, per_seed={"0": 1e300, "1": 1e300})
    d["best"] = 2


TAMPERED = {
    "damaged": (None, "its tune.json is damaged"),
    "NaN objective": (lambda d: _set(d, 0, objective=float("nan")), "trial-000 is complete with "
                      "objective nan"),
    "re-summed best": (_best_of_all, "trial-002/seed-0: 1e+300, its unit's files give"),
    "best values edited": (lambda d: _set(d, 0, params={"algo.params.noise": 0.3}),
                           "trial-000's values {'algo.params.noise': 0.3} are not the ones "
                           "resolved.yaml says its units ran"),
}  # fmt: skip


@pytest.mark.parametrize("case", TAMPERED)
def test_a_study_archive_whose_tune_json_disagrees_is_refused(study_archive, tmp_path, case):
    change, says = TAMPERED[case]
    bad = altered(study_archive, tmp_path / "bad.tar.gz", _tune_member(change), sums=True)
    res = rlcrate("reproduce", str(bad), "--out", str(tmp_path / "rerun"))
    one_error_line(res, f"{bad}: refused", says, "nothing was rerun")
    assert not (tmp_path / "rerun").exists()


def test_archive_refuses_a_study_whose_tune_json_disagrees(study, tmp_path):
    run = _copy(study, tmp_path)
    _edit_tune(lambda d: d.update(best=3))(run)
    res = rlcrate("archive", str(run), "-o", str(tmp_path / "a.tar.gz"))
    one_error_line(res, f"{run / 'tune.json'}: disagrees", "its best trial is 3")
    (run / "tune.json").write_text("{not json")
    res = rlcrate("archive", str(run), "-o", str(tmp_path / "a.tar.gz"))
    one_error_line(res, f"{run / 'tune.json'}: damaged")
    assert not (tmp_path / "a.tar.gz").exists()
