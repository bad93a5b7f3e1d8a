"""What one unit asks a scheduler for: CPUs (its env workers, torch threads) and GPUs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from runner.backends import get_backend
from runner.record.rundir import UnitRef

if TYPE_CHECKING:
    from runner.manifest import Manifest, ResolvedRun


@dataclass(frozen=True)
class Needs:
    cpus: int
    gpus: int


def cpus_of(config: Manifest) -> int:
    par = config.parallel
    per_unit = max(1, par.workers, config.algo.threads())
    return max(per_unit, par.envs) if par.mode == "subproc" else per_unit


def gpus_of(config: Manifest) -> int:
    """One GPU for a unit that trains on CUDA or steps a GPU simulator; `auto` asks for none (it
    uses a GPU where the scheduler happened to give one)."""
    gpu_sim = get_backend(config.env.backend).TRAITS.needs_gpu
    return int(config.algo.compute_device().startswith("cuda") or gpu_sim)


def unit_needs(res: ResolvedRun, units: list[UnitRef]) -> dict[UnitRef, Needs]:
    """Per unit, from the resolved manifest's variant config."""
    out = {}
    for u in units:
        config = res.variants[u.variant].config
        out[u] = Needs(cpus_of(config), gpus_of(config))
    return out
