"""The Ray executor against a real Ray cluster (a head node started by the test on this host)."""

from __future__ import annotations

import json

import pytest

from tests.helpers import rlcrate, run_dir_of, tiny_manifest

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_units_run_as_ray_tasks(ray_cluster, write_manifest, tmp_path):
    m = tiny_manifest(seeds=[0, 1], matrix={"algo.params.n_epochs": [1, 2]})
    out = rlcrate(
        "run",
        str(write_manifest(m)),
        "--out",
        str(tmp_path / "runs"),
        "--executor",
        "ray",
        "--ray-address",
        ray_cluster,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    run = run_dir_of(tmp_path / "runs", "tiny")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["complete"] is True
    for variant in ("n_epochs-1", "n_epochs-2"):
        assert summary["variants"][variant]["eval"]["n_seeds"] == 2
    # same seed, same variant: a unit gives the same result on Ray as locally
    local = rlcrate(
        "run",
        str(
            write_manifest(
                tiny_manifest(
                    seeds=[0], algo__params={"n_steps": 64, "batch_size": 64, "n_epochs": 1}
                ),
                "local.yaml",
            )
        ),
        "--out",
        str(tmp_path / "local"),
    )
    assert local.returncode == 0, local.stderr
    a = json.loads((run / "units/n_epochs-1/seed-0/eval.json").read_text())["episodes"]
    b = json.loads(
        (run_dir_of(tmp_path / "local", "tiny") / "units/default/seed-0/eval.json").read_text()
    )["episodes"]
    assert a == b
