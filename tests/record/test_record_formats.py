"""Every run record and resolved.yaml carries `format`: each is written and read back through its
one model, a file rlcrate wrote before records were versioned (format 0: tests/records/format-0,
real records of rlcrate 0.1.0) reads through its record's migration with no value lost, and a
newer format is refused in one line naming the file and the rlcrate that wrote it."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.errors import RunFileError
from runner.manifest.resolved import RESOLVED, parse_resolved, read_resolved, write_resolved
from runner.record import (
    bench,
    checkpoint,
    evals,
    jobs,
    progress,
    provenance,
    reproduce,
    status,
    summary,
    track,
    train,
    tune,
    video,
)
from runner.record import eval as evaluation
from runner.record.versioned import WRITTEN_BY, Format, NewerFormat, Versioned
from tests.helpers import TESTS, rlcrate

OLD = TESTS / "records" / "format-0"
UNIT = "units/default/seed-0"
CKPT = f"{UNIT}/checkpoints/step-256.zip"


@dataclass(frozen=True)
class Record:
    """Where a record lies in a run directory, its reader and its writer (each the record's own)."""

    file: str
    read: Callable[[Path], Any]  # the run directory -> its model (None: none, or damaged)
    write: Callable[[Path, Any], object]  # (the run directory, the model)


def _unit(run: Path) -> Path:
    return run / UNIT


def _add_evaluations(unit_dir: Path, record: Any) -> None:
    for e in record.evaluations:
        evals.add_evaluation(unit_dir, e.step, e.returns)


RECORDS = {
    "status": Record(
        f"{UNIT}/status.json",
        lambda r: status.read_status(_unit(r), strict=True),
        lambda r, m: status.write_status(
            _unit(r), m.state, **{k: getattr(m, k) for k in m.model_fields_set - status.NOT_WRITTEN}
        ),
    ),
    "progress": Record(
        f"{UNIT}/progress.json",
        lambda r: progress.read_progress(_unit(r), strict=True),
        lambda r, m: progress.write_progress(_unit(r), m),
    ),
    "train": Record(
        f"{UNIT}/train.json",
        lambda r: train.read_train(_unit(r)),
        lambda r, m: train.write_train(_unit(r), m),
    ),
    "step-N": Record(
        f"{UNIT}/checkpoints/step-256.json",
        lambda r: checkpoint.read_checkpoint_record(r / CKPT),
        lambda r, m: checkpoint.write_checkpoint_record(r / CKPT, m),
    ),
    "eval": Record(
        f"{UNIT}/eval.json",
        lambda r: evaluation.read_eval(_unit(r) / evaluation.EVAL_FILE),
        lambda r, m: evaluation.write_eval_record(
            _unit(r),
            m.returns(),
            m.lengths(),
            deterministic=m.deterministic,
            seed=m.seed,
            limit=(m.episode_limit.steps, m.episode_limit.source),
        ),  # fmt: skip
    ),
    "evals": Record(
        f"{UNIT}/evals.json",
        lambda r: evals.read_evals_record(_unit(r)),
        lambda r, m: _add_evaluations(_unit(r), m),
    ),
    "prune": Record(
        f"{UNIT}/prune.json",
        lambda r: evals.prune_requested(_unit(r)),
        lambda r, m: evals.request_prune(_unit(r), m.step, m.reason),
    ),
    "video": Record(
        f"{UNIT}/video/video.json",
        lambda r: video.read_video(_unit(r)),
        lambda r, m: video.write_video_record(_unit(r), m),
    ),
    "summary": Record("summary.json", summary.read_summary, summary.write_summary_record),
    "provenance": Record(
        "provenance.json", provenance.read_provenance, provenance.write_provenance
    ),
    "tune": Record("tune.json", tune.read_tune, tune.write_tune),
    "bench": Record("bench.json", lambda r: bench.read_bench(r, strict=True), bench.write_bench),
    "reproduce": Record("reproduce.json", reproduce.read_reproduce, reproduce.write_reproduce),
    "track": Record(
        f"{UNIT}/track.json",
        lambda r: track.read_track(_unit(r)),
        lambda r, m: track.write_track(_unit(r), m),
    ),
    "jobs": Record(
        "slurm/jobs.json",
        lambda r: jobs.read_jobs_record(r / "slurm/jobs.json"),
        lambda r, m: jobs.write_jobs(r / "slurm/jobs.json", m.jobs),
    ),
    "resolved": Record(RESOLVED, read_resolved, write_resolved),
}


def _old_run(tmp_path: Path) -> Path:
    run = tmp_path / "old"
    shutil.copytree(OLD, run)
    return run


def _load(path: Path) -> Any:
    text = path.read_text()
    return yaml.safe_load(text) if path.suffix == ".yaml" else json.loads(text)


def _save(path: Path, data: Any) -> None:
    text = yaml.safe_dump(data, sort_keys=False) if path.suffix == ".yaml" else json.dumps(data)
    path.write_text(text)


def _leaves(data: Any, at: str = "") -> dict[str, Any]:
    """Every value of a JSON document by its dotted path."""
    if isinstance(data, dict) and data:
        return {k: v for key, val in data.items() for k, v in _leaves(val, f"{at}.{key}").items()}
    if isinstance(data, list) and data:
        return {k: v for i, val in enumerate(data) for k, v in _leaves(val, f"{at}[{i}]").items()}
    return {at: data}


# format 0 -> 1 renamed these (old path prefix -> new)
RENAMED = {"video": {".format": ".encoding"}, "track": {"": ".trackers"}, "jobs": {"": ".jobs"}}


@pytest.mark.parametrize("name", list(RECORDS))
def test_a_format_0_record_reads_through_its_migration_with_every_value_kept(name, tmp_path):
    record = RECORDS[name]
    run = _old_run(tmp_path)
    old = _load(run / record.file)
    assert "format" not in old or name == "video", "the fixture is of today's shape"
    model = record.read(run)
    assert isinstance(model, Versioned) or name == "resolved", name
    assert model.format == 1 and model.written_by is None  # too old to say who wrote it
    new = _leaves(model.model_dump(mode="json", by_alias=True))
    if name == "resolved":  # as written: the model's own dump holds its variants' configs
        new = _leaves(model.dump())
    for path, value in _leaves(old).items():
        for was, now in RENAMED.get(name, {}).items():
            path = now + path[len(was) :] if path.startswith(was) else path
        assert new.get(path, "missing") == value, (name, path, value, new.get(path, "missing"))


@pytest.mark.parametrize("name", list(RECORDS))
def test_a_record_written_through_its_model_reads_back_the_same(name, tmp_path):
    record = RECORDS[name]
    model = record.read(_old_run(tmp_path))
    run = tmp_path / "new"
    (run / UNIT / "checkpoints").mkdir(parents=True)
    record.write(run, model)
    data = _load(run / record.file)
    assert list(data)[:2] == ["format", "written_by"], list(data)[:3]
    assert data["format"] == 1 and data["written_by"] == WRITTEN_BY
    again = record.read(run)
    assert again is not None and again.written_by == WRITTEN_BY
    mine = again.model_copy(update={"written_by": None})
    if name == "status":  # `updated` is when it was written
        mine = mine.model_copy(update={"updated": model.updated})
    if name == "tune":  # `written` too
        mine = mine.model_copy(update={"written": model.written})
    assert mine == model


@pytest.mark.parametrize("name", list(RECORDS))
def test_a_record_of_a_newer_format_is_refused_naming_the_file_and_its_rlcrate(name, tmp_path):
    record = RECORDS[name]
    run = _old_run(tmp_path)
    path = run / record.file
    _save(path, {**_load(path), "format": 2, "written_by": "rlcrate 9.1.0"})
    with pytest.raises(NewerFormat) as refused:
        record.read(run)
    line = str(refused.value)
    assert line.startswith(f"{path}: written by rlcrate 9.1.0 in ") and "format 2" in line, line
    assert "\n" not in line and isinstance(refused.value, RunFileError)  # exit 2, one line


def test_lenient_readers_and_writers_never_take_a_newer_record_for_a_damaged_one(tmp_path):
    """A damaged status.json reads as none and is replaced; a newer one is neither."""
    unit = tmp_path
    (unit / "status.json").write_text("[1, 2]")
    assert status.recorded_status(unit) is None
    newer = json.dumps({"format": 3, "written_by": "rlcrate 4.0.0", "state": "done"})
    (unit / "status.json").write_text(newer)
    with pytest.raises(NewerFormat):
        status.recorded_status(unit)
    with pytest.raises(NewerFormat):
        status.write_status(unit, "pending")
    assert (unit / "status.json").read_text() == newer


@pytest.mark.parametrize("found", ["1", 1.0, True, -1, None])
def test_a_format_that_is_no_whole_number_is_a_damaged_record(found, tmp_path):
    (tmp_path / "progress.json").write_text(json.dumps({"format": found, "steps": 3}))
    assert progress.read_progress(tmp_path) is None
    with pytest.raises(RunFileError, match="progress.json: damaged"):
        progress.read_progress(tmp_path, strict=True)


def test_a_format_without_a_migration_for_each_older_one_is_no_format():
    with pytest.raises(TypeError, match="format 2 needs 2 migrations"):
        Format("x.json", 2, (lambda d: d,))


def test_status_fields_an_older_rlcrate_wrote_are_kept_under_legacy(tmp_path):
    old = {"state": "running", "seed": 0, "node": "n1", "gpu_note": "slow", "slurm_job": "7"}
    (tmp_path / "status.json").write_text(json.dumps(old))
    found = status.read_status(tmp_path)
    assert (found.node, found.slurm_job, found.legacy) == ("n1", "7", {"gpu_note": "slow"})
    status.write_status(tmp_path, "done", eval_mean=1.0)  # a rewrite keeps them
    data = json.loads((tmp_path / "status.json").read_text())
    assert data["legacy"] == {"gpu_note": "slow"} and data["state"] == "done"
    assert (data["format"], data["slurm_job"], data["eval_mean"]) == (1, "7", 1.0)


def test_status_json_takes_only_the_fields_its_model_names(tmp_path):
    with pytest.raises(ValueError, match="colour"):
        status.write_status(tmp_path, "done", colour="blue")  # type: ignore[call-arg]
    assert not (tmp_path / "status.json").exists()
    fields = set(status.StatusFields.__annotations__)
    assert fields == set(status.UnitStatus.model_fields) - status.NOT_WRITTEN


@pytest.mark.parametrize("written", ["per backend", "per trainer"])
def test_provenance_format_0_keeps_every_resume_verdict_by_backend_and_trainer(written, tmp_path):
    """Before records were versioned, `resume_checked` went from backend -> verdict to backend ->
    trainer -> verdict; both read as the latter, a verdict that named no trainer under
    `unknown`."""
    verdict = {"result": "approximate", "differ": ["params"], "checked": "2025-01-01T00:00:00Z"}
    per_trainer = {"gymnasium": {"sb3" if written == "per trainer" else "unknown": verdict}}
    old = _load(OLD / "provenance.json")
    checked = per_trainer if written == "per trainer" else {"gymnasium": verdict}
    _save(tmp_path / "provenance.json", {**old, "resume_checked": checked})
    found = provenance.read_provenance(tmp_path)
    assert found is not None and found.format == 1
    assert found.model_dump(mode="json", exclude_unset=True)["resume_checked"] == per_trainer


def test_a_progress_tick_reads_back_with_its_checkpoint_size(tmp_path):
    tick = {
        "steps": 300,
        "total": 512,
        "steps_per_s": 10.5,
        "started": 1.5,
        "checkpoint_bytes": 4096,
    }  # fmt: skip  (the SB3 callback's, today's shape)
    (tmp_path / "progress.json").write_text(json.dumps(tick))
    found = progress.read_progress(tmp_path)
    assert found is not None and not found.finished
    assert found.model_dump(include=set(tick)) == tick


def _flat_env(data: dict, config: dict, **flat: Any) -> None:
    """A format-0 config as rlcrate wrote it before each backend owned its options: every
    backend's env options in every config."""
    config["env"].update(flat)
    config["parallel"]["mode"] = "dummy"


FLAT = {"pacing": "unpaced", "speedup": 1.0, "action_repeat": 1, "timeout": 60.0, "atari": None}


def test_resolved_yaml_format_0_keeps_each_configs_own_backend_options(tmp_path):
    data = _load(OLD / RESOLVED)
    for config in (data, data["variants"]["default"]["config"]):
        _flat_env(data, config, **FLAT)
    res = parse_resolved(data, "old/resolved.yaml")
    env = res.variants["default"].config.env.model_dump()
    # gymnasium owns action_repeat and atari; pacing, speedup and timeout were Godot's
    assert {"action_repeat", "atari"} <= set(env) and not {"pacing", "speedup", "timeout"} & set(
        env
    )
    assert res.parallel.mode == "dummy"  # gymnasium's own modes


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda d: d["env"].update(colour="blue"), id="format-0-unknown-key"),
        pytest.param(lambda d: d["env"].update(pacing="paced", format=1), id="format-1-flat-key"),
    ],
)
def test_resolved_yaml_drops_no_key_but_the_migrations(change, tmp_path):
    """An unknown key is refused as damaged, never deleted on read; format 1's configs hold their
    backend's options only, so a flat option there is one too."""
    data = _load(OLD / RESOLVED)
    env = data["env"]
    change({"env": env})
    if "format" in env:
        data["format"] = env.pop("format")
    with pytest.raises(RunFileError, match=r"old/resolved.yaml: damaged at env\.(colour|pacing)"):
        parse_resolved(data, "old/resolved.yaml")


def test_a_newer_format_is_refused_in_one_line_by_the_console_script(tmp_path):
    run = tmp_path / "runs" / "tiny" / "20990101-000000-abcd"
    run.mkdir(parents=True)
    (run / RESOLVED).write_text("format: 5\nwritten_by: rlcrate 7.0.0\nvariants: {}\n")
    res = rlcrate("status", str(run))
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1, res.stdout + res.stderr
    assert lines[0] == (
        f"error: {run / RESOLVED}: written by rlcrate 7.0.0 in resolved.yaml format 5; this "
        f"rlcrate ({WRITTEN_BY.split()[1]}) reads format 1 and older: read it with rlcrate "
        "7.0.0 or newer"
    )


def _as_format_0(run: Path) -> None:
    """The run as rlcrate 0.1.0 left it: no record says its format (video.json's `format` was its
    encoding), and provenance.json pins the resolved.yaml it started with."""
    from runner.record.started import fingerprint

    for path in [*run.rglob("*.json"), run / RESOLVED]:
        data = _load(path)
        if isinstance(data, dict) and "written_by" in data:
            data = {k: v for k, v in data.items() if k not in ("format", "written_by")}
            if path.name == "video.json":
                data["format"] = data.pop("encoding")
            _save(path, data)
    prov = _load(run / "provenance.json")
    _save(run / "provenance.json", {**prov, "started_with": fingerprint(run)})


@pytest.mark.slow  # the session's trained run, resumed and archived (no training)
@pytest.mark.gymnasium
def test_a_run_written_before_records_were_versioned_resumes_and_archives(tiny_run, tmp_path):
    run = tmp_path / "runs" / "tiny" / tiny_run.name
    shutil.copytree(tiny_run, run)
    (run / ".lock").unlink(missing_ok=True)
    _as_format_0(run)
    unit = json.loads((run / UNIT / "status.json").read_text())
    assert "format" not in unit and unit["state"] == "done"
    res = rlcrate("run", str(run / "manifest.yaml"), "--resume", str(run))
    said = res.stdout + res.stderr
    assert res.returncode == 0 and "no record of the files the run started" not in said, said
    assert json.loads((run / UNIT / "status.json").read_text()) == unit  # done: not rewritten
    assert json.loads((run / "summary.json").read_text())["complete"] is True
    packed = rlcrate("archive", str(run), "-o", str(tmp_path / "old.tar.gz"), "--no-models")
    assert packed.returncode == 0, packed.stdout + packed.stderr
