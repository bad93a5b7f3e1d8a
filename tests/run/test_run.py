"""Integration: real Stable-Baselines3 training of tiny budgets through both backends, and the
run directory it leaves: determinism, failures, Ctrl-C and resume."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
import zipfile
from pathlib import Path

import pytest
import yaml
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.helpers import (
    children_of,
    rlcrate,
    run_dir_of,
    start_run,
    tiny_manifest,
    unit_processes,
    wait_for,
)

pytestmark = pytest.mark.slow


def _eval_returns(unit: Path) -> list[float]:
    return [e["return"] for e in json.loads((unit / "eval.json").read_text())["episodes"]]


def _params(unit: Path) -> bytes:
    with zipfile.ZipFile(unit / "model.zip") as z:
        return z.read("policy.pth")


@pytest.mark.gymnasium
def test_gymnasium_run_directory(write_manifest, tmp_path):
    m = tiny_manifest(
        seeds=[0, 1],
        train__checkpoint_every=256,
        eval__reward_levels=[10],
        matrix=[
            {"parallel.mode": "dummy", "parallel.workers": 1},
            {"parallel.mode": "subproc", "parallel.workers": 2},
        ],
        expect={"eval.mean_reward": {">=": 0}},
    )
    path = write_manifest(m)
    out = rlcrate("run", str(path), "--out", str(tmp_path / "runs"))
    assert out.returncode == 0, out.stdout + out.stderr
    run = run_dir_of(tmp_path / "runs", "tiny")
    for name in ("manifest.yaml", "resolved.yaml", "provenance.json", "summary.json"):
        assert (run / name).is_file(), name
    assert (run / "manifest.yaml").read_text() == path.read_text()
    res = yaml.safe_load((run / "resolved.yaml").read_text())
    assert list(res["variants"]) == ["mode-dummy_workers-1", "mode-subproc_workers-2"]
    for variant in res["variants"]:
        for seed in (0, 1):
            unit = run / "units" / variant / f"seed-{seed}"
            status = json.loads((unit / "status.json").read_text())
            assert status["state"] == "done"
            assert set(status["seeds"]) == {"python", "numpy", "torch", "model", "env", "eval_env"}
            assert (unit / "model.zip").is_file()
            # at rollout boundaries below the budget: the final model.zip holds step 512
            assert sorted(p.name for p in (unit / "checkpoints").iterdir()) == [
                "step-256.json",
                "step-256.state.json",  # what an exact resume needs (test_exact_resume)
                "step-256.state.npz",
                "step-256.zip",
            ]
            assert json.loads((unit / "train.json").read_text())["timesteps_done"] == 512
            # the TensorBoard file is whole: its last scalars are the last rollout's (the unit's
            # process ends without Python's finalization, so nothing is flushed there)
            (events,) = (unit / "tb").glob("events.out.tfevents.*")
            acc = EventAccumulator(str(events)).Reload()
            assert max(e.step for tag in acc.Tags()["scalars"] for e in acc.Scalars(tag)) == 512
            ev = json.loads((unit / "eval.json").read_text())
            assert len(ev["episodes"]) == 3 and all(e["length"] > 0 for e in ev["episodes"])
    summary = json.loads((run / "summary.json").read_text())
    v = summary["variants"]["mode-dummy_workers-1"]
    assert v["eval"]["n_seeds"] == 2 and v["missing"] == []
    assert v["eval"]["iqm_ci95"][0] <= v["eval"]["iqm"] <= v["eval"]["iqm_ci95"][1]
    assert v["train_steps_per_s"]["mean"] > 0
    assert v["expect"][0]["met"] is True and summary["expectations_met"] is True
    reach = v["time_to_reward"]["10.0"]
    assert reach["reached"] == 2 and 0 < reach["mean_s"] < v["wall_time_s"]["mean"]
    prov = json.loads((run / "provenance.json").read_text())
    assert prov["packages"]["stable_baselines3"] and prov["cpu"]["count"] >= 1
    assert prov["finished"] >= prov["started"]
    assert "mode-dummy_workers-1" in out.stdout  # the summary table


@pytest.mark.envpool
def test_envpool_trains_and_evaluates(write_manifest, tmp_path):
    """... and records its eval.video through Gymnasium's equivalent env, saying so."""
    m = tiny_manifest(
        env={"backend": "envpool", "id": "CartPole-v1"},
        parallel={"envs": 4, "workers": 2},
        eval__video={"episodes": 1, "format": "gif", "size": [120, 80]},
    )
    out = rlcrate("run", str(write_manifest(m)), "--out", str(tmp_path / "runs"), report=True)
    assert out.returncode == 0, out.stdout + out.stderr
    run = run_dir_of(tmp_path / "runs", "tiny")
    unit = run / "units/default/seed-0"
    assert json.loads((unit / "status.json").read_text())["timesteps_done"] >= 512
    assert len(_eval_returns(unit)) == 3
    record = json.loads((unit / "video" / "video.json").read_text())
    assert "Gymnasium's CartPole-v1" in record["equivalent"]
    assert "not the episodes eval.json scores" in record["equivalent"]
    (clip,) = record["clips"]
    assert clip["frames"] > 1 and (clip["width"], clip["height"]) == (120, 80)
    import imageio.v3 as iio

    frames = iio.imread(unit / "video" / clip["file"], index=None)
    assert frames.shape[1:3] == (80, 120) and frames.std() > 0
    report = (run / "report.md").read_text()
    assert "Recorded on an equivalent env" in report and "video/episode-0.gif" in report


@pytest.mark.gymnasium
def test_same_seed_is_bit_identical_and_seeds_differ(write_manifest, tmp_path):
    path = write_manifest(tiny_manifest(seeds=[0, 1], eval__deterministic=False))
    for out in ("a", "b"):
        res = rlcrate("run", str(path), "--out", str(tmp_path / out))
        assert res.returncode == 0, res.stderr
    a, b = (run_dir_of(tmp_path / o, "tiny") / "units/default" for o in ("a", "b"))
    assert _eval_returns(a / "seed-0") == _eval_returns(b / "seed-0")
    assert _params(a / "seed-0") == _params(b / "seed-0")
    assert _params(a / "seed-0") != _params(a / "seed-1")


@pytest.mark.gymnasium
def test_failed_unit_does_not_stop_the_others(write_manifest, tmp_path):
    # Adam with capturable=True builds on the CPU (the dry construction passes it) and fails in
    # its first step, inside the unit; an unbuildable n_steps=1 is refused before any unit starts
    capturable = {"optimizer_kwargs": {"capturable": True}}
    m = tiny_manifest(
        matrix=[{"variant": "good"}, {"variant": "bad", "algo.params.policy_kwargs": capturable}]
    )
    out = rlcrate("run", str(write_manifest(m)), "--out", str(tmp_path / "runs"))
    assert out.returncode == 1, out.stderr
    run = run_dir_of(tmp_path / "runs", "tiny")
    good = json.loads((run / "units/good/seed-0/status.json").read_text())
    bad = json.loads((run / "units/bad/seed-0/status.json").read_text())
    assert good["state"] == "done" and bad["state"] == "failed"
    assert "capturable" in bad["error"]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["variants"]["bad"]["missing"] == [0]
    assert summary["variants"]["good"]["eval"]["n_seeds"] == 1
    assert "Traceback" not in out.stderr
    refused = tiny_manifest(parallel={"envs": 1}, matrix={"algo.params.n_steps": [64, 1]})
    out = rlcrate("run", str(write_manifest(refused, "r.yaml")), "--out", str(tmp_path / "r"))
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("error:")]
    assert out.returncode == 2 and len(errors) == 1 and "variant n_steps-1" in errors[0]
    assert not (tmp_path / "r").exists()


def _pending_sigterm(pid: int) -> bool:
    """Whether a SIGTERM waits for (stopped) process pid, from /proc/PID/status (False once it
    is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    fields = dict(line.split(":", 1) for line in text.splitlines())
    pending = int(fields["SigPnd"], 16) | int(fields["ShdPnd"], 16)
    return bool(pending & (1 << (signal.SIGTERM - 1)))


@pytest.mark.gymnasium
def test_ctrl_c_marks_interrupted_and_resume_finishes(write_manifest, tmp_path):
    m = tiny_manifest(
        train__timesteps=20_000,
        train__checkpoint_every=1024,
        algo__params={"n_steps": 128, "batch_size": 64, "n_epochs": 1},
    )
    path = write_manifest(m)
    proc = start_run(path, tmp_path / "runs")
    ckpts = lambda: list((tmp_path / "runs").glob("tiny/*/units/default/seed-0/checkpoints/*.zip"))  # noqa: E731
    wait_for(lambda: len(ckpts()) >= 1, 120, "a first checkpoint")
    kids = children_of(proc.pid)
    # freeze the unit, so that on a stalled machine it cannot finish before the stop reaches it;
    # the runner's SIGTERM waits, pending, until it continues
    (unit,) = unit_processes(proc.pid)
    os.kill(unit, signal.SIGSTOP)
    run = run_dir_of(tmp_path / "runs", "tiny")
    assert not (run / "units/default/seed-0/model.zip").exists(), "trained before the stop"
    proc.send_signal(signal.SIGINT)
    # the runner's SIGTERM shows as pending; or it does not: a thread still running when the
    # stop was sent may have taken it into Python's handler, which runs once the unit goes on
    # (and whose exception, if swallowed, the trainer's per-step check of STOP replaces)
    deadline = time.monotonic() + 10
    while not _pending_sigterm(unit) and time.monotonic() < deadline:
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(unit, signal.SIGCONT)
    proc.wait(timeout=90)
    assert proc.returncode == 130
    status = json.loads((run / "units/default/seed-0/status.json").read_text())
    assert status["state"] == "interrupted", status
    assert not [k for k in kids if Path(f"/proc/{k}").exists()], "unit processes left behind"
    assert not list(run.rglob(".*tmp*")), "half-written files left behind"
    # resume with a smaller budget is refused (a different manifest) ...
    bad = rlcrate(
        "run",
        str(write_manifest({**m, "train": {"timesteps": 1000}}, "other.yaml")),
        "--resume",
        str(run),
    )
    assert bad.returncode == 2 and "resolves differently" in bad.stderr
    # ... the run's own manifest continues from the checkpoint
    res = rlcrate("run", str(run / "manifest.yaml"), "--resume", str(run), report=True)
    assert res.returncode == 0, res.stderr
    status = json.loads((run / "units/default/seed-0/status.json").read_text())
    assert status["state"] == "done" and status["resumed_from"] >= 1024
    assert status["resumes"] == [status["resumed_from"]]
    # the hint is one line that pastes as it is, though stdout was a pipe, not a terminal
    hint = f"rlcrate run {run / 'manifest.yaml'} --resume {run}"
    assert hint in proc.communicate()[0].splitlines()
    # finished: progress.json says so; unit.log has no colour codes
    progress = json.loads((run / "units/default/seed-0/progress.json").read_text())
    assert progress["finished"] is True and progress["steps"] == status["timesteps_done"] >= 20_000
    assert "\x1b[" not in (run / "units/default/seed-0/unit.log").read_text()
    # the report marks the resumed unit and joins its two segments into one curve
    text = (run / "report.md").read_text()
    assert "## Resumed units (*)" in text and "0*: " in text
    assert f"continued from the checkpoint(s) at step {status['resumed_from']:,}" in text
    from runner.report.tb import read_curve

    curve, _ = read_curve(run / "units/default/seed-0/tb", None)
    assert curve is not None and curve.segments == 2
    assert (curve.steps[1:] > curve.steps[:-1]).all() and (
        curve.wall_s[1:] >= curve.wall_s[:-1]
    ).all()


@pytest.mark.gymnasium
def test_killed_run_resumes_to_the_same_summary(write_manifest, tmp_path):
    # two seeds, one unit at a time: the kill comes when seed 0 is done and seed 1 is not
    m = tiny_manifest(seeds=[0, 1], parallel__units=1, train__timesteps=2048)
    path = write_manifest(m)
    full = rlcrate("run", str(path), "--out", str(tmp_path / "full"))
    assert full.returncode == 0, full.stderr
    proc = start_run(path, tmp_path / "killed")
    done = lambda: list((tmp_path / "killed").glob("tiny/*/units/default/seed-0/eval.json"))  # noqa: E731
    wait_for(lambda: bool(done()), 120, "the first unit")
    kids = children_of(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)  # no chance to clean up: the worst case
    proc.wait()
    wait_for(
        lambda: not [k for k in kids if Path(f"/proc/{k}").exists()],
        30,
        "unit processes to follow their dead parent",
    )
    run = run_dir_of(tmp_path / "killed", "tiny")
    res = rlcrate("run", str(run / "manifest.yaml"), "--resume", str(run))
    assert res.returncode == 0, res.stderr
    a = json.loads((run_dir_of(tmp_path / "full", "tiny") / "summary.json").read_text())
    b = json.loads((run / "summary.json").read_text())
    assert a["variants"]["default"]["eval"] == b["variants"]["default"]["eval"]
    assert b["complete"] is True
    # units restarted from scratch: the abandoned segment's steps are not plotted twice
    from runner.report.tb import read_curve

    for seed in (0, 1):
        curve, _ = read_curve(run / f"units/default/seed-{seed}/tb", None)
        assert curve is not None and (curve.steps[1:] > curve.steps[:-1]).all()


@pytest.mark.gymnasium
def test_bench_only_run_leaves_no_empty_units(write_manifest, tmp_path):
    m = tiny_manifest(
        bench={
            "steps": 256,
            "warmup": 64,
            "repeats": 1,
            "train": False,
            "sweep": {"parallel.envs": [1, 2]},
            "inference": False,  # measured in test_bench
            "cold_start": False,
        }
    )
    out = rlcrate("bench", str(write_manifest(m)), "--out", str(tmp_path / "runs"))
    assert out.returncode == 0, out.stdout + out.stderr
    run = run_dir_of(tmp_path / "runs", "tiny")
    bench = json.loads((run / "bench.json").read_text())
    assert len(bench["points"]) == 2
    assert not (run / "units").exists() and not (run / "summary.json").exists()


@pytest.mark.gymnasium
def test_archive_and_reproduce(write_manifest, tmp_path):
    m = tiny_manifest(expect={"eval.mean_reward": {">=": 0}})
    assert rlcrate("run", str(write_manifest(m)), "--out", str(tmp_path / "runs")).returncode == 0
    run = run_dir_of(tmp_path / "runs", "tiny")
    bundle = tmp_path / "paper" / "tiny.tar.gz"
    out = rlcrate("archive", str(run), "-o", str(bundle), "--no-models")
    assert out.returncode == 0, out.stderr
    import tarfile

    with tarfile.open(bundle) as tar:
        names = tar.getnames()
    assert f"{run.name}/summary.json" in names and not any(n.endswith("model.zip") for n in names)
    again = rlcrate("reproduce", str(bundle), "--out", str(tmp_path / "rerun"))
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.strip().splitlines()[-1].startswith("verdict: identical")
    new = run_dir_of(tmp_path / "rerun", "tiny")
    old_eval = json.loads((run / "summary.json").read_text())["variants"]["default"]["eval"]
    new_eval = json.loads((new / "summary.json").read_text())["variants"]["default"]["eval"]
    assert old_eval == new_eval
    bad = rlcrate("reproduce", str(write_manifest("not a tarball", "x.tar.gz")))
    assert bad.returncode == 2 and "not an rlcrate archive" in bad.stderr, bad.stderr
