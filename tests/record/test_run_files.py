"""Damaged files of a real run directory or archive: one line naming the file, exit 2, no
traceback, nothing created. Every reader of resolved.yaml goes through the one run
model (`runner.manifest.resolved`)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.archive_tools import altered
from tests.helpers import as_run_by, rlcrate

pytestmark = [pytest.mark.slow, pytest.mark.gymnasium]  # one real run, trained once

UNIT = Path("units/default/seed-0")


@pytest.fixture(scope="module")
def finished(tiny_run, tmp_path_factory):
    """(the session's finished two-seed CartPole run, its archive)."""
    run = tiny_run
    out = tmp_path_factory.mktemp("run") / "tiny.tar.gz"
    packed = rlcrate("archive", str(run), "-o", str(out), "--no-models")
    assert packed.returncode == 0, packed.stderr
    return run, out


def _copy(run: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "runs" / "tiny" / run.name
    shutil.copytree(run, dst)
    return dst


def _one_line(res: subprocess.CompletedProcess, name: str) -> str:
    """The one `error:` line, which names `name`; exit 2; no traceback."""
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr and len(errors) == 1, res.stderr
    assert name in errors[0], errors
    return errors[0]


def _commands(run: Path, tmp_path: Path) -> dict[str, list[str]]:
    manifest = str(run / "manifest.yaml")
    return {
        "status": ["status", str(run)],
        "archive": ["archive", str(run), "-o", str(tmp_path / "a.tar.gz")],
        "resume": ["run", manifest, "--resume", str(run)],
        "eval": ["eval", manifest, "--resume", str(run)],
    }


def _no_variants(text: str) -> str:
    data = yaml.safe_load(text)
    del data["variants"]
    return yaml.safe_dump(data)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda text: "- a list\n- not a run\n", id="list"),
        pytest.param(_no_variants, id="no-variants"),
        pytest.param(
            lambda text: text.replace("  default:\n", "  default: 3\n  x:\n"), id="scalar"
        ),
    ],
)
def test_damaged_resolved_yaml_is_one_line_for_every_reader(finished, tmp_path, damage):
    run = _copy(finished[0], tmp_path)
    path = run / "resolved.yaml"
    path.write_text(damage(path.read_text()))
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    for what, args in _commands(run, tmp_path).items():
        line = _one_line(rlcrate(*args), "resolved.yaml")
        assert "damaged" in line, (what, line)
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before  # nothing written
    assert not (tmp_path / "a.tar.gz").exists()


@pytest.mark.parametrize("text", ["[1, 2]", '"done"'], ids=["list", "string"])
def test_damaged_status_json_is_named_by_status_and_archive(finished, tmp_path, text):
    run = _copy(finished[0], tmp_path)
    (run / UNIT / "status.json").write_text(text)
    line = _one_line(rlcrate("status", str(run)), "status.json")
    assert str(UNIT) in line
    out = tmp_path / "a.tar.gz"
    _one_line(rlcrate("archive", str(run), "-o", str(out)), "status.json")
    assert not out.exists()


def test_damaged_status_json_on_resume_is_recovered_from_the_unit_files(finished, tmp_path):
    run = _copy(finished[0], tmp_path)
    (run / UNIT / "status.json").write_text("[1, 2]")
    res = rlcrate("run", str(run / "manifest.yaml"), "--resume", str(run))
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stdout + res.stderr
    said = "".join(res.stdout.split())  # Rich wraps a long path anywhere
    # its model and eval result are whole: recovered from them, not run again
    assert "status.jsonwasunreadable;itsmodelandevalresultarewhole" in said, res.stdout
    assert json.loads((run / UNIT / "status.json").read_text())["state"] == "done"


def test_damaged_jobs_json_and_progress_json_are_named_by_status(finished, tmp_path):
    run = _copy(finished[0], tmp_path)
    (run / "slurm").mkdir()
    (run / "slurm" / "jobs.json").write_text('["123", "124"]')
    as_run_by(run, "slurm")
    _one_line(rlcrate("status", str(run)), "jobs.json")
    shutil.rmtree(run / "slurm")
    (run / UNIT / "progress.json").write_text('{"steps": "many", "total": 512}')
    line = _one_line(rlcrate("status", str(run)), "progress.json")
    assert "steps" in line


def _resolved_edit(change):
    def edit(files):
        data = yaml.safe_load(files["resolved.yaml"])
        change(data)
        files["resolved.yaml"] = yaml.safe_dump(data, sort_keys=False).encode()

    return edit


def _scalar_episodes(files):
    name = f"{UNIT}/eval.json"
    ev = json.loads(files[name])
    ev["episodes"] = 5
    files[name] = json.dumps(ev).encode()


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        pytest.param(_resolved_edit(lambda d: d.pop("seeds")), "resolved.yaml", id="seedless"),
        pytest.param(
            _resolved_edit(lambda d: d["variants"].update(default=3)),
            "resolved.yaml",
            id="scalar-variant",
        ),
        pytest.param(_scalar_episodes, "eval.json", id="scalar-episodes"),
    ],
)
def test_reproduce_refuses_a_rechecksummed_damaged_archive_in_one_line(
    finished, tmp_path, edit, named
):
    bad = altered(finished[1], tmp_path / "bad.tar.gz", edit, sums=True)
    out = tmp_path / "rerun"
    _one_line(rlcrate("reproduce", str(bad), "--out", str(out)), named)
    assert not out.exists()  # refused before anything ran


def test_reproduce_with_an_unknown_executor_creates_nothing(finished, tmp_path):
    out = tmp_path / "rerun"
    line = _one_line(
        rlcrate("reproduce", str(finished[1]), "--out", str(out), "-x", "potato"), "potato"
    )
    assert "local" in line  # the executors there are
    assert not out.exists()
