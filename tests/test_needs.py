"""What a unit asks a cluster for, from its resolved manifest."""

from __future__ import annotations

from runner.executors.needs import Needs, unit_needs
from runner.manifest import load_manifest, resolved
from runner.rundir import UnitRef
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
    res = resolved(load_manifest(write_manifest(m)))
    units = [UnitRef(v, 0) for v in res["variants"]]
    needs = list(unit_needs(res, units).values())
    assert needs == [Needs(4, 0), Needs(1, 1), Needs(1, 0)]
