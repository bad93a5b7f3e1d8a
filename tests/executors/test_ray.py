"""The Ray executor against a real two-node Ray cluster on this host (head + worker node)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from tests import ray_nodes
from tests.helpers import ROOT, rlcrate, run_dir_of, tiny_manifest, toy_manifest

pytestmark = [pytest.mark.ray, pytest.mark.slow]

MATRIX = {"algo.params.n_epochs": [1, 2]}
SEEDS = [0, 1]  # 4 units: one more than the cluster's 3 CPUs, so one waits for a free node


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if ray_nodes.ray_exe() is None:
        pytest.skip("ray is not installed (pip install 'rlcrate[ray]')")
    tmp = tmp_path_factory.mktemp("ray")
    address, head, worker = ray_nodes.start(tmp, head_cpus=1, worker_cpus=2)
    yield address, head, worker
    for node in (worker, head):
        if node.proc.poll() is None:
            node.kill()


def _evals(run: Path) -> dict[str, list]:
    return {
        p.parent.relative_to(run / "units").as_posix(): json.loads(p.read_text())["episodes"]
        for p in sorted((run / "units").glob("*/seed-*/eval.json"))
    }


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("local")
    path = tmp / "m.yaml"
    import yaml

    path.write_text(yaml.safe_dump(tiny_manifest(seeds=SEEDS, matrix=MATRIX)))
    out = rlcrate("run", str(path), "--out", str(tmp / "runs"))
    assert out.returncode == 0, out.stdout + out.stderr
    return run_dir_of(tmp / "runs", "tiny")


def test_ray_run_matches_local_bit_for_bit(cluster, local_run, write_manifest, tmp_path):
    """The run directory is written only by the driver (units ran in temporary directories on
    the nodes and sent their files back), and every unit's eval equals the local executor's."""
    m = write_manifest(tiny_manifest(seeds=SEEDS, matrix=MATRIX))
    out = rlcrate(
        "run", str(m), "--out", str(tmp_path / "runs"), "-x", "ray", "--ray-address", cluster[0]
    )
    assert out.returncode == 0, out.stdout + out.stderr
    run = run_dir_of(tmp_path / "runs", "tiny")
    assert json.loads((run / "summary.json").read_text())["complete"] is True
    assert _evals(run) == _evals(local_run)
    assert len(_evals(run)) == 4
    for unit in (run / "units").glob("*/seed-*"):
        assert (unit / "model.zip").is_file() and list((unit / "tb").iterdir())
        status = json.loads((unit / "status.json").read_text())
        assert status["state"] == "done" and status["attempts"] >= 1


def test_unreachable_address_fails_fast_with_exit_2(write_manifest, tmp_path):
    port = ray_nodes.free_port()  # nothing listens there
    t0 = time.monotonic()
    out = rlcrate(
        "run",
        str(write_manifest(tiny_manifest())),
        "--out",
        str(tmp_path / "runs"),
        "-x",
        "ray",
        "--ray-address",
        f"127.0.0.1:{port}",
        timeout=120,
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert f"127.0.0.1:{port}" in out.stderr and "no Ray cluster answers" in out.stderr
    assert "Traceback" not in out.stderr
    assert time.monotonic() - t0 < 60


def test_interrupted_ray_run_resumes_from_checkpoints(cluster, write_manifest, tmp_path):
    """Ctrl-C on the driver: running units checkpoint on their nodes and send their files back;
    `--resume` on Ray continues them from those checkpoints."""
    import signal

    # toy_climb at 1 ms per vector step: 12,000 steps take about 7 s, long enough that a loaded
    # machine still shows progress on the driver before the end (the interrupt comes at 2,048)
    m = write_manifest(
        toy_manifest(name="tiny", seeds=[0, 1], train__timesteps=12000, algo__params__step_ms=1)
    )
    ray = ray_nodes.ray_exe()
    assert ray is not None  # the cluster fixture started ray with it
    exe = Path(ray).with_name("rlcrate")
    base = [str(exe), "run", str(m), "-x", "ray", "--ray-address", cluster[0]]
    proc = subprocess.Popen(
        [*base, "--out", str(tmp_path / "runs")],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    progress = tmp_path / "runs"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        steps = [
            json.loads(p.read_text() or "{}").get("steps", 0)
            for p in progress.glob("tiny/*/units/*/seed-*/progress.json")
        ]
        if len(steps) == 2 and min(steps) >= 2048:  # both units training, each past a step
            break
        time.sleep(0.5)
    assert proc.poll() is None, "the run ended before any progress reached the driver"
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130, stderr
    run = run_dir_of(tmp_path / "runs", "tiny")
    states = {
        p.parent.name: json.loads(p.read_text()) for p in run.glob("units/*/seed-*/status.json")
    }
    interrupted = [k for k, s in states.items() if s["state"] == "interrupted"]
    assert interrupted, states
    assert all(list((run / "units/default" / k / "checkpoints").glob("*.zip")) for k in interrupted)
    out = subprocess.run(
        [*base, "--resume", str(run)], cwd=ROOT, capture_output=True, text=True, timeout=900
    )
    assert out.returncode == 0, out.stdout + out.stderr
    for k in interrupted:
        st = json.loads((run / "units/default" / k / "status.json").read_text())
        assert st["state"] == "done" and st["resumed_from"] > 0


def test_a_study_runs_its_trials_units_on_the_cluster(cluster, write_manifest, tmp_path):
    """`rlcrate tune -x ray`: a trial's units go to the cluster (one per seed), their files
    come back, and the trial is judged from them."""
    m = tiny_manifest(name="study", seeds=SEEDS, train__timesteps=256)
    m["tune"] = {"space": {"algo.params.n_epochs": {"int": [1, 3]}}, "trials": 1}
    out = rlcrate(
        "tune", str(write_manifest(m)), "--out", str(tmp_path / "runs"),
        "-x", "ray", "--ray-address", cluster[0],
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    run = run_dir_of(tmp_path / "runs", "study")
    trials = json.loads((run / "tune.json").read_text())["trials"]
    assert [t["state"] for t in trials] == ["complete"]
    for t in trials:
        assert list(t["per_seed"]) == [str(s) for s in SEEDS]
        for seed in SEEDS:
            unit = run / "units" / t["variant"] / f"seed-{seed}"
            status = json.loads((unit / "status.json").read_text())
            assert status["state"] == "done" and status["attempts"] >= 1  # a Ray task's record
            returns = json.loads((unit / "eval.json").read_text())["episodes"]
            mean = sum(e["return"] for e in returns) / len(returns)
            assert t["per_seed"][str(seed)] == pytest.approx(mean)
    assert (run / "best.yaml").is_file()
