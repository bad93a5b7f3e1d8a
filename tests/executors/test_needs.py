"""What a unit asks a cluster for, from its resolved manifest."""

from __future__ import annotations

from runner.checks.load import load_manifest
from runner.executors.needs import Needs, unit_needs
from runner.manifest import resolved
from runner.record.rundir import UnitRef
from tests.helpers import tiny_manifest


def test_cpus_and_gpus_per_variant(write_manifest):
    m = tiny_manifest(
        seeds=[0],
        matrix=[
            {"parallel.envs": 4, "parallel.workers": 4, "parallel.mode": "subproc"},
            {"parallel.envs": 2, "parallel.workers": 1, "algo.device": "cuda"},
            {"parallel.envs": 2, "parallel.workers": 1, "algo.device": "auto"},
        ],
    )
    # check=False: `algo.device: cuda` is refused by the checks on a machine without a GPU
    res = resolved(load_manifest(write_manifest(m), check=False))
    units = [UnitRef(v, 0) for v in res.variants]
    needs = list(unit_needs(res, units).values())
    assert needs == [Needs(4, 0), Needs(1, 1), Needs(1, 0)]
