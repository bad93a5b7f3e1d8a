"""Where the commands that write a file the user names may write it, and what they read first,
through the console script on the session's tiny
run: `export -o` never replaces a run's own file, a device, a FIFO or an existing file without
--force, and exports only the model training left (its pin) with statistics that are numbers;
`archive -o` refuses a device and names its target on a read-only file system; `report` on a
read-only run names the run, and a report with nothing to draw keeps no older drawing."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import checkout_env, one_error_line, rlcrate

pytestmark = [pytest.mark.slow, pytest.mark.gymnasium]  # the session's tiny run (trained once)
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="device nodes and mounts need root")
UNIT = "units/default/seed-0"


def _copy(run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    return copy


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _device(path: Path) -> Path:
    os.mknod(path, 0o644 | stat.S_IFCHR, os.makedev(1, 3))  # what /dev/null is
    return path


@ROOT_ONLY
def test_export_never_replaces_a_run_file_a_device_or_a_file_without_force(tiny_run, tmp_path):
    run = _copy(tiny_run, tmp_path)
    before = _files(run)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    taken = tmp_path / "taken.onnx"
    taken.write_bytes(b"mine")
    cases = {
        run / UNIT / "model.zip": "inside the run directory",
        run / UNIT / "eval": "inside the run directory",  # its record would be eval.json
        run / "summary.json": "inside the run directory",
        _device(tmp_path / "null"): "it is a character device",
        fifo: "it is a FIFO",
        taken: "a file is there already; pass --force",
    }
    for target, says in cases.items():
        one_error_line(rlcrate("export", str(run), "-o", str(target)), f"-o {target}", says)
    assert _files(run) == before, "a file of the run changed"
    assert stat.S_ISCHR((tmp_path / "null").lstat().st_mode) and taken.read_bytes() == b"mine"
    res = rlcrate("export", str(run), "-o", str(taken), "--force")
    assert res.returncode == 0, res.stdout + res.stderr
    record = json.loads((tmp_path / "taken.onnx.json").read_text())
    model = hashlib.sha256((run / UNIT / "model.zip").read_bytes()).hexdigest()
    assert record["unit"]["model_sha256"] == model and taken.read_bytes()[:4] != b"mine"


def test_export_refuses_another_units_model_in_its_place(tiny_run, tmp_path):
    """eval refuses a model.zip training did not leave (train.json's pin); export does too."""
    run = _copy(tiny_run, tmp_path)
    shutil.copy(run / "units/default/seed-1/model.zip", run / UNIT / "model.zip")
    out = tmp_path / "p.onnx"
    res = rlcrate("export", str(run), "-o", str(out), "--seed", "0")
    one_error_line(res, f"{run / UNIT / 'model.zip'} has SHA-256", "not the file train.json")
    assert not out.exists() and not list(tmp_path.glob(".p.onnx*"))


def _read_only(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """`rlcrate ARGS` with `folder` mounted read-only (a private mount namespace)."""
    exe = Path(sys.executable).with_name("rlcrate")
    inner = f'mount --bind -o ro "{folder}" "{folder}" && exec "$0" "$@"'
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", inner, str(exe), *args],
        capture_output=True, text=True, timeout=300, env=checkout_env(COLUMNS="200"),
    )  # fmt: skip


@ROOT_ONLY
def test_archive_refuses_a_device_and_names_a_read_only_target(tiny_run, tmp_path):
    device = _device(tmp_path / "null")
    one_error_line(rlcrate("archive", str(tiny_run), "-o", str(device)), "a character device")
    assert stat.S_ISCHR(device.lstat().st_mode)
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    target = shelf / "a.tar.gz"
    res = _read_only(shelf, "archive", str(tiny_run), "-o", str(target))
    line = one_error_line(res, f"-o {target}: cannot write there (Read-only file system)")
    assert ".tmp" not in line and not list(shelf.iterdir())


@ROOT_ONLY
def test_report_on_a_read_only_run_is_one_line_naming_the_run(tiny_run, tmp_path):
    run = _copy(tiny_run, tmp_path)
    before = _files(run)
    line = one_error_line(_read_only(run, "report", str(run)), f"{run}: the run directory "
                          "cannot be written (Read-only file system)")  # fmt: skip
    assert ".tmp" not in line and ".png" not in line
    assert _files(run) == before


def test_a_report_keeps_no_drawing_its_files_no_longer_give(tiny_run, tmp_path):
    run = _copy(tiny_run, tmp_path)
    curves = run / "plots" / "learning_curves.png"
    assert curves.is_file()  # the session's run was reported
    for tb in run.glob("units/*/seed-*/tb/*"):
        tb.write_bytes(b"\x00 not a TensorBoard record")
    res = rlcrate("report", str(run))
    assert res.returncode == 0, res.stdout + res.stderr
    assert not curves.exists(), "a learning curve of unreadable files was kept"
    assert "No readable TensorBoard curves." in (run / "report.md").read_text()
