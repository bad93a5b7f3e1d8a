"""Observation calibration: do two envs show a policy observations on the same scale?

A policy trained on one env (a surrogate) and run in another (the game) sees each observation
dimension through the scale it learned. `compare` takes two observation arrays (random
rollouts of each env, `rollout`) and names every dimension whose spread (std, or the 1st..99th
percentile range: min and max hang on single samples) differs by more than `factor`, or whose
mean moved by more than `factor - 1` of the larger spread; `warning` turns that into text.
`compare_envs` does it all for two env specs (a warm start has those); from the shell:

    python -m runner.checks.calibrate A.yaml B.yaml [--steps 300] [--factor 1.5]

exits 0 when the scales agree, 1 (printing the warning) when they do not, 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from runner.manifest.schema import EnvSpec

DEFAULT_FACTOR = 1.5
_EPS = 1e-6  # spreads below this count as constant: a constant dimension matches a constant one


@dataclass(frozen=True)
class ObsStats:
    """Per-dimension statistics of a (samples, dims) observation array."""

    min: np.ndarray
    max: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    p1: np.ndarray
    p99: np.ndarray

    @classmethod
    def of(cls, obs: Any) -> ObsStats:
        a = np.asarray(obs, dtype=np.float64)
        a = a.reshape(len(a), -1)
        p1, p99 = np.percentile(a, [1, 99], axis=0)
        return cls(a.min(0), a.max(0), a.mean(0), a.std(0), p1, p99)


@dataclass(frozen=True)
class Mismatch:
    dim: int
    what: str  # "std", "range" or "mean"
    a: float
    b: float

    def text(self, names: tuple[str, str]) -> str:
        return f"dim {self.dim} {self.what}: {names[0]} {self.a:.3g}, {names[1]} {self.b:.3g}"


def _ratio(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x, y = np.maximum(x, _EPS), np.maximum(y, _EPS)
    return np.maximum(x / y, y / x)


def compare(a: Any, b: Any, *, factor: float = DEFAULT_FACTOR) -> list[Mismatch]:
    """The dimensions where observation arrays `a` and `b` (samples x dims) differ in scale."""
    sa, sb = ObsStats.of(a), ObsStats.of(b)
    if sa.mean.shape != sb.mean.shape:
        raise ValueError(f"observation shapes differ: {sa.mean.shape} vs {sb.mean.shape}")
    out: list[Mismatch] = []
    range_a, range_b = sa.p99 - sa.p1, sb.p99 - sb.p1
    spread = np.maximum(np.maximum(sa.std, sb.std), _EPS)
    for d in range(len(sa.mean)):
        if _ratio(sa.std[d], sb.std[d]) > factor:
            out.append(Mismatch(d, "std", float(sa.std[d]), float(sb.std[d])))
        elif _ratio(range_a[d], range_b[d]) > factor:
            out.append(Mismatch(d, "range", float(range_a[d]), float(range_b[d])))
        elif abs(sa.mean[d] - sb.mean[d]) > (factor - 1) * spread[d]:
            out.append(Mismatch(d, "mean", float(sa.mean[d]), float(sb.mean[d])))
    return out


def warning(
    mismatches: list[Mismatch], names: tuple[str, str] = ("a", "b"), factor: float = DEFAULT_FACTOR
) -> str | None:
    """One line naming the mismatched dimensions, or None when the scales agree."""
    if not mismatches:
        return None
    dims = "; ".join(m.text(names) for m in mismatches)
    return (
        f"observation scales of {names[0]} and {names[1]} differ by more than {factor:g}x in "
        f"{len(mismatches)} dimension(s) ({dims}); a policy moved between them sees inputs "
        "off the scale it learned (normalize observations, or fine-tune)"
    )


def rollout(env: EnvSpec, *, steps: int = 300, n_envs: int = 32, seed: int = 0) -> np.ndarray:
    """Observations of `steps` random-action steps of `n_envs` envs ((steps * n_envs, dims))."""
    from runner.backends import get_backend
    from runner.manifest.schema import ParallelSpec

    venv = get_backend(env.backend).make_vec_env(
        env, ParallelSpec(envs=n_envs, workers=1), seed=seed, log_dir=None
    )
    try:
        venv.action_space.seed(seed)
        obs = [np.asarray(venv.reset())]  # one array: the envs calibrated have Box observations
        for _ in range(steps - 1):
            actions = np.array([venv.action_space.sample() for _ in range(n_envs)])
            obs.append(np.asarray(venv.step(actions)[0]))
        return np.concatenate(obs)
    finally:
        venv.close()


def compare_envs(
    a: EnvSpec,
    b: EnvSpec,
    *,
    steps: int = 300,
    factor: float = DEFAULT_FACTOR,
    seed: int = 0,
    names: tuple[str, str] | None = None,
) -> tuple[list[Mismatch], str | None]:
    """Random rollouts of both envs compared; (mismatches, warning text or None). The defaults
    (32 envs x 300 steps) keep sampling noise under 1.25x on BallChase, well inside 1.5x.
    `names`: what the warning calls them (default: backend:id of each)."""
    obs_a, obs_b = rollout(a, steps=steps, seed=seed), rollout(b, steps=steps, seed=seed)
    found = compare(obs_a, obs_b, factor=factor)
    names = names or (f"{a.backend}:{a.id}", f"{b.backend}:{b.id}")
    return found, warning(found, names, factor)


def main(argv: list[str] | None = None) -> int:
    from runner.checks.load import load_manifest
    from runner.errors import RunnerError

    first_line = (__doc__ or "").split("\n")[0]
    p = argparse.ArgumentParser(prog="python -m runner.checks.calibrate", description=first_line)
    p.add_argument("manifests", nargs=2, help="two manifests; their env sections are compared")
    p.add_argument("--steps", type=int, default=300, help="random steps per env (32 envs)")
    p.add_argument("--factor", type=float, default=DEFAULT_FACTOR)
    p.add_argument("--json", action="store_true", help="the two arguments are env sections as JSON")
    p.add_argument("--names", nargs=2, help="what the warning calls the two envs")
    args = p.parse_args(argv)
    try:
        if args.json:
            import json

            from runner.manifest.schema import validate_env

            envs = [validate_env(json.loads(text)) for text in args.manifests]
        else:
            envs = [load_manifest(path).env for path in args.manifests]
        names = (args.names[0], args.names[1]) if args.names else None
        found, text = compare_envs(*envs, steps=args.steps, factor=args.factor, names=names)
    except (RunnerError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(text or f"observation scales agree within {args.factor:g}x in every dimension")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
