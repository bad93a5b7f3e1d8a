"""`rlcrate reproduce`: rerun a real archive (or a sample of it), compare, one verdict line,
exit 0 only when the verdict holds; Ctrl-C leaves nothing half-written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.archive_tools import altered
from tests.helpers import children_of, rlcrate, run_dir_of

pytestmark = [pytest.mark.slow, pytest.mark.gymnasium]  # each case trains again

EVAL0 = "units/default/seed-0/eval.json"


@pytest.fixture(scope="module")
def bundle(tiny_run, tmp_path_factory):
    """The archive of the session's finished run (two seeds, 10 eval episodes, a claim)."""
    out = tmp_path_factory.mktemp("run") / "tiny.tar.gz"
    made = rlcrate("archive", str(tiny_run), "-o", str(out), "--no-models")
    assert made.returncode == 0, made.stderr
    return out


def _reproduce(archive: Path, out: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    res = rlcrate("reproduce", str(archive), "--out", str(out), *extra)
    report = json.loads((run_dir_of(out, "tiny") / "reproduce.json").read_text())
    last = res.stdout.strip().splitlines()[-1]
    assert last.startswith("verdict: ") and last == report["line"], res.stdout
    return res, report


def test_identical_sample_by_seed(bundle, tmp_path):
    res, report = _reproduce(bundle, tmp_path / "rerun", "--seeds", "1,")
    assert res.returncode == 0, res.stdout + res.stderr
    assert report["verdict"] == "identical" and report["holds"] is True
    assert report["seeds"] == [1] and "verdict: identical (1 unit(s) rerun" in res.stdout
    assert "environment, same as archived: rlcrate, Python" in res.stdout
    rerun = yaml.safe_load((run_dir_of(tmp_path / "rerun", "tiny") / "resolved.yaml").read_text())
    assert rerun["seeds"] == [1]  # only the sample ran


def _shift(delta: float, episodes: int | None = None):
    """Archived eval returns moved by `delta` (all episodes, or the first few), and every figure
    made from them (eval.json's mean and std, summary.json's), as a careful forger would."""
    import numpy as np

    def edit(files):
        ev = json.loads(files[EVAL0])
        for e in ev["episodes"][:episodes]:
            e["return"] += delta
        returns = [e["return"] for e in ev["episodes"]]
        ev["mean"], ev["std"] = float(np.mean(returns)), float(np.std(returns))
        files[EVAL0] = json.dumps(ev).encode()
        summary = json.loads(files["summary.json"])
        var = summary["variants"]["default"]
        var["units"]["0"]["eval_mean"] = var["eval"]["per_seed_mean"]["0"] = ev["mean"]
        var["eval"]["mean"] = float(np.mean(list(var["eval"]["per_seed_mean"].values())))
        files["summary.json"] = json.dumps(summary).encode()

    return edit


def _other_cpu(files):
    prov = json.loads(files["provenance.json"])
    prov["cpu"]["model"] = "Some Other CPU"
    files["provenance.json"] = json.dumps(prov).encode()


def _named_by_an_older_rlcrate(files):
    """The archive of a run whose variant an older rlcrate named otherwise than this one does
    (long automatic names were shortened): `default` recorded as `old-name` throughout."""
    res = yaml.safe_load(files["resolved.yaml"])
    res["variants"] = {"old-name": res["variants"]["default"]}
    files["resolved.yaml"] = yaml.safe_dump(res, sort_keys=False).encode()
    summary = json.loads(files["summary.json"])
    summary["variants"] = {"old-name": summary["variants"]["default"]}
    files["summary.json"] = json.dumps(summary).encode()
    for key in [k for k in files if k.startswith("units/default/")]:
        files[key.replace("units/default/", "units/old-name/", 1)] = files.pop(key)


def test_an_archive_whose_variants_an_older_rlcrate_named_reruns_under_those_names(
    bundle, tmp_path
):
    old = altered(bundle, tmp_path / "old.tar.gz", _named_by_an_older_rlcrate, sums=True)
    res, report = _reproduce(old, tmp_path / "rerun", "--seeds", "1,")
    assert res.returncode == 0, res.stdout + res.stderr
    assert report["verdict"] == "identical", res.stdout
    assert (run_dir_of(tmp_path / "rerun", "tiny") / "units/old-name/seed-1/eval.json").is_file()


def test_bitwise_level_any_difference_is_different(bundle, tmp_path):
    bad = altered(bundle, tmp_path / "a.tar.gz", _shift(1.0, 1), sums=True)
    res, report = _reproduce(bad, tmp_path / "rerun", "--seeds", "0,")
    assert res.returncode == 1, res.stdout + res.stderr
    assert report["verdict"] == "different" and report["variants"][0]["level"] == "bitwise"
    assert report["variants"][0]["units"][0]["identical"] is False
    assert "nothing of the environment differs" in report["line"]  # the same machine and packages
    assert "default/seed-0" in res.stdout and "-0.1" in res.stdout  # per-seed difference


@pytest.mark.parametrize(
    ("delta", "verdict", "code"), [(1.0, "within tolerance", 0), (1000.0, "different", 1)]
)
def test_statistical_when_environment_differs(bundle, tmp_path, delta, verdict, code):
    def edit(files):
        _other_cpu(files)
        _shift(delta, None if delta > 100 else 1)(files)

    bad = altered(bundle, tmp_path / "a.tar.gz", edit, sums=True)
    res, report = _reproduce(bad, tmp_path / "rerun", "--seeds", "0,")
    assert res.returncode == code, res.stdout + res.stderr
    assert report["verdict"] == verdict and report["same_environment"] is False
    assert "Mann-Whitney U" in report["line"] and "Some Other CPU" in res.stdout
    # the verdict itself names what of the environment changed since the archived run
    assert "differs from the archived run's: CPU" in report["line"]


def test_expect_rechecked(bundle, tmp_path):
    def edit(files):
        for name in ("manifest.yaml", "resolved.yaml"):
            files[name] = files[name].replace(b"'>=': 0", b"'>=': 1000000")

    bad = altered(bundle, tmp_path / "a.tar.gz", edit, sums=True)
    res, report = _reproduce(bad, tmp_path / "rerun", "--units", "1")
    assert res.returncode == 1, res.stdout + res.stderr
    assert report["verdict"] == "identical" and report["holds"] is False
    assert report["expect_not_met"] == [
        line for line in res.stdout.splitlines() if line.startswith("expect not met: ")
    ]
    assert "expect: 1 not met" in report["line"]


def test_ctrl_c_leaves_nothing_half_written(bundle, tmp_path):
    def longer(files):
        for name in ("manifest.yaml", "resolved.yaml"):
            files[name] = files[name].replace(b"timesteps: 512", b"timesteps: 200000")

    bad = altered(bundle, tmp_path / "long.tar.gz", longer, sums=True)
    tmpdir, out = tmp_path / "tmp", tmp_path / "rerun"
    tmpdir.mkdir()
    exe = Path(sys.executable).with_name("rlcrate")
    proc = subprocess.Popen(
        [str(exe), "reproduce", str(bad), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmpdir)},
    )
    deadline = time.monotonic() + 120
    while not list(out.glob("tiny/*/units/default/seed-0/progress.json")):
        assert time.monotonic() < deadline and proc.poll() is None, "rerun never started"
        time.sleep(0.2)
    kids = children_of(proc.pid)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 130, err
    run = run_dir_of(out, "tiny")
    assert not (run / "reproduce.json").exists()
    assert not list(run.rglob(".*tmp*")) and not list(tmpdir.glob("rlcrate-*"))
    assert not [k for k in kids if Path(f"/proc/{k}").exists()], "processes left behind"
    assert json.loads((run / "units/default/seed-0/status.json").read_text())["state"] == (
        "interrupted"
    )


def test_rerun_that_could_not_run_gives_no_verdict(bundle, small_disk):
    """A full disk under --out: the rerun's unit fails; that is no difference, and no verdict."""
    # room for the rerun's run directory, not for its model (~140 KB)
    subprocess.run(["mount", "-o", "remount,size=100k", str(small_disk)], check=True)
    res = rlcrate("reproduce", str(bundle), "--seeds", "0,", "--out", str(small_disk))
    assert res.returncode == 1, res.stdout + res.stderr
    assert "Traceback" not in res.stderr and "verdict: different" not in res.stdout
    errors = res.stderr.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("error: no verdict: the rerun could not"), (
        res.stderr
    )
    assert "out of disk space" in errors[0]
