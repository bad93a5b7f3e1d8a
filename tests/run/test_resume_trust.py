"""A resume runs only what its run started with: manifest.yaml and resolved.yaml edited together,
consistently, are refused by `run --resume` and `eval --resume`."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.helpers import rlcrate, run_dir_of, toy_manifest

pytestmark = [pytest.mark.slow, pytest.mark.gymnasium]

UNIT = Path("units/default/seed-0")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("run")
    path = tmp / "tiny.yaml"
    m = toy_manifest(name="tiny", train__timesteps=256)  # what a resume trusts, not training
    path.write_text(yaml.safe_dump(m, sort_keys=False))
    made = rlcrate("train", str(path), "--out", str(tmp / "runs"), timeout=300)
    assert made.returncode == 0, made.stdout + made.stderr
    return run_dir_of(tmp / "runs", "tiny")


def _copy(run: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "runs" / "tiny" / run.name
    shutil.copytree(run, dst)
    return dst


def _files(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in run.rglob("*") if p.is_file()}


def _edit_consistently(run: Path) -> None:
    """Both files say 1024 timesteps: the resume would pass today's same-run check."""
    for name in ("manifest.yaml", "resolved.yaml"):
        path = run / name
        text = path.read_text()
        assert "timesteps: 256" in text, (name, text)
        path.write_text(text.replace("timesteps: 256", "timesteps: 1024"))


def test_the_run_records_what_it_started_with(trained):
    prov = json.loads((trained / "provenance.json").read_text())
    for name in ("manifest.yaml", "resolved.yaml"):
        digest = hashlib.sha256((trained / name).read_bytes()).hexdigest()
        assert prov["started_with"][name] == digest


@pytest.mark.parametrize("command", ["run", "eval"])
def test_consistent_edit_is_refused_on_resume(trained, tmp_path, command):
    run = _copy(trained, tmp_path)
    _edit_consistently(run)
    before = _files(run)
    res = rlcrate(command, str(run / "manifest.yaml"), "--resume", str(run), timeout=300)
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert res.returncode == 2, res.stdout + res.stderr
    assert len(errors) == 1 and "Traceback" not in res.stderr, res.stderr
    assert str(run / "manifest.yaml") in errors[0] or str(run / "resolved.yaml") in errors[0]
    assert "changed since the run was made" in errors[0]
    after = _files(run)
    after.pop(".lock", None)
    before.pop(".lock", None)
    assert after == before  # no unit marked, trained or evaluated


def test_a_run_without_the_record_resumes_with_a_warning(trained, tmp_path):
    """An older rlcrate's run (or one whose provenance.json is damaged, which a resume
    survives) has no record to check: it resumes, saying that it could not check."""
    run = _copy(trained, tmp_path)
    prov = json.loads((run / "provenance.json").read_text())
    del prov["started_with"]
    (run / "provenance.json").write_text(json.dumps(prov))
    res = rlcrate("run", str(run / "manifest.yaml"), "--resume", str(run), timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    warned = [ln for ln in res.stderr.splitlines() if ln.startswith("warning:")]
    assert any("started_with" in ln and "provenance.json" in ln for ln in warned), res.stderr


def test_an_untouched_run_resumes(trained, tmp_path):
    run = _copy(trained, tmp_path)
    res = rlcrate("eval", str(run / "manifest.yaml"), "--resume", str(run), timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads((run / UNIT / "eval.json").read_text())["episodes"]
