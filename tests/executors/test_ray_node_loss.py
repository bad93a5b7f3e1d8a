"""A Ray worker node lost mid-run, on its own two-node cluster. In a module of its own so that
test_ray.py's shared cluster has been torn down before this one starts: two clusters at once on
a 2-core machine left this one's worker node unable to join in CI."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from tests import ray_nodes
from tests.helpers import ROOT, run_dir_of, toy_manifest

pytestmark = [pytest.mark.ray, pytest.mark.slow]

MATRIX = {"algo.params.noise": [0.3, 0.6]}
SEEDS = [0, 1, 2]


def _running(run_root: Path) -> int:
    n = 0
    for p in run_root.glob("tiny/*/units/*/seed-*/status.json"):
        try:
            n += json.loads(p.read_text()).get("state") == "running"
        except ValueError:
            continue
    return n


def test_worker_node_killed_mid_run_every_unit_completes(
    tmp_path_factory, write_manifest, tmp_path
):
    """Its own cluster: the worker node's whole process tree is SIGKILLed while units run on
    it; those units are retried on the head and the run still completes every unit."""
    if ray_nodes.ray_exe() is None:
        pytest.skip("ray is not installed (pip install 'rlcrate[ray]')")
    tmp = tmp_path_factory.mktemp("ray-kill")
    address, head, worker = ray_nodes.start(tmp, head_cpus=1, worker_cpus=2)
    try:
        # units of about 4 s (toy_climb, 2 ms per vector step), so that the kill lands while two
        # of them run on the worker node
        m = toy_manifest(name="tiny", seeds=SEEDS, matrix=MATRIX, train__timesteps=4096,
                         algo__params__step_ms=2)  # fmt: skip
        m = write_manifest(m)
        ray = ray_nodes.ray_exe()
        assert ray is not None  # the cluster fixture started ray with it
        exe = Path(ray).with_name("rlcrate")
        cmd = [str(exe), "run", str(m), "--out", str(tmp_path / "runs"), "-x", "ray"]
        proc = subprocess.Popen(
            [*cmd, "--ray-address", address],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 300
        while _running(tmp_path / "runs") < 3 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _running(tmp_path / "runs") >= 3, "three units never ran at once"
        worker.kill()  # 1 CPU on the head: at least two of the three running units were here
        stdout, stderr = proc.communicate(timeout=900)
        assert proc.returncode == 0, stdout + stderr
    finally:
        for node in (worker, head):
            if node.proc.poll() is None:
                node.kill()
    run = run_dir_of(tmp_path / "runs", "tiny")
    states = [json.loads(p.read_text()) for p in (run / "units").glob("*/seed-*/status.json")]
    assert len(states) == 6 and all(s["state"] == "done" for s in states)
    assert max(s["attempts"] for s in states) >= 2, states
