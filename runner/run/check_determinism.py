"""`rlcrate check-determinism MANIFEST`: is this backend bitwise deterministic on this machine?

A short slice of the manifest's first unit trains twice, each time in a fresh process with the
same master seed (`python -m runner.run.check_determinism RESOLVED.json SEED STEPS OUT.json`).
Each attempt records, per env step, SHA-256 digests of the observations, the actions and the
rewards, and at the end a digest of the final parameters. Equal everywhere: `bitwise`; else the
first step where they part, and in what. The result is remembered for this environment
(`runner.provenance.determinism.record`) and written into the provenance of later runs, where
`reproduce` reads it.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

if TYPE_CHECKING:
    from runner.manifest import Manifest

STREAMS = ("observations", "actions", "rewards")


def _digest(x: Any) -> str:
    import numpy as np

    h = hashlib.sha256()
    if isinstance(x, dict):
        for key in sorted(x):
            h.update(key.encode())
            h.update(_digest(x[key]).encode())
    else:
        h.update(np.ascontiguousarray(x).tobytes())
    return h.hexdigest()[:16]


def _recorder(venv: Any, log: list[list[str]]) -> Any:
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class Recorder(VecEnvWrapper):
        """Digests of what passes between the algorithm and the envs, one row per step."""

        def reset(self) -> Any:
            obs = self.venv.reset()
            log.append([_digest(obs), "", ""])
            return obs

        def step_async(self, actions: Any) -> None:
            self._action = _digest(actions)
            self.venv.step_async(actions)

        def step_wait(self) -> Any:
            obs, rew, done, info = self.venv.step_wait()
            log.append([_digest(obs), self._action, _digest(rew)])
            return obs, rew, done, info

    return Recorder(venv)


def default_steps(config: Manifest) -> int:
    """Two rollouts of an on-policy algorithm (so parameters change twice), at least 256."""
    n_steps = config.algo.params.get("n_steps", 64)
    return max(256, 2 * n_steps * config.parallel.envs)


def attempt(config: dict[str, Any], seed: int, steps: int) -> dict[str, Any]:
    """One attempt, in this process: train `steps` env steps and return the digests."""
    from runner.manifest.schema import Manifest
    from runner.record.seeding import derive, seed_everything
    from runner.trainers.sb3.common import make_env, make_model

    cfg = Manifest.model_validate(config)
    seeds = derive(seed)
    seed_everything(seeds, torch_threads=cfg.algo.torch_threads)
    log: list[list[str]] = []
    t0 = time.perf_counter()
    venv = _recorder(make_env(cfg, seed=seeds["env"], monitor=False), log)
    try:
        model = make_model(cfg, venv, seed=seeds["model"], tb_dir=None)
        model.learn(total_timesteps=steps, progress_bar=False)
        state = model.policy.state_dict()
        params = _digest({k: v.detach().cpu().numpy() for k, v in state.items()})
    finally:
        venv.close()
    return {"steps": log, "params": params, "seconds": time.perf_counter() - t0}


def first_divergence(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any] | None:
    """None when both attempts agree everywhere; else where and in what they first differ."""
    for i, (ra, rb) in enumerate(zip(a["steps"], b["steps"], strict=False)):
        differ = [name for name, x, y in zip(STREAMS, ra, rb, strict=True) if x != y]
        if differ:
            return {"step": i, "in": differ}
    if len(a["steps"]) != len(b["steps"]):
        return {"step": min(len(a["steps"]), len(b["steps"])), "in": ["number of steps"]}
    if a["params"] != b["params"]:
        return {"step": len(a["steps"]), "in": ["final parameters"]}
    return None


def _spawn(config: Manifest, seed: int, steps: int, tmp: Path, n: int) -> dict[str, Any]:
    """One attempt in a fresh Python process, as two separate runs would be."""
    cfg_file, out = tmp / "config.json", tmp / f"attempt-{n}.json"
    cfg_file.write_text(config.model_dump_json(), encoding="utf-8")
    cmd = [
        sys.executable,
        "-m",
        "runner.run.check_determinism",
        str(cfg_file),
        str(seed),
        str(steps),
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or not out.is_file():
        from runner.errors import RunnerError

        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RunnerError(f"check-determinism: attempt {n} failed ({tail})")
    return json.loads(out.read_text(encoding="utf-8"))


def check(manifest_path: Path, steps: int | None, seed: int, console: Console) -> int:
    """Run both attempts, print and record the result. Exit status: 0 bitwise, 1 diverged."""
    from runner.checks.load import load_manifest
    from runner.manifest import resolved
    from runner.provenance import determinism

    res = resolved(load_manifest(manifest_path))
    variant, spec = next(iter(res.variants.items()))
    config, backend = spec.config, spec.config.env.backend
    steps = steps or default_steps(config)
    console.print(
        f"check-determinism: {backend} {config.env.id}, variant {variant}, "
        f"seed {seed}, {steps} steps, twice"
    )
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rlcrate-determinism-") as tmp:
        a, b = (_spawn(config, seed, steps, Path(tmp), n) for n in (1, 2))
    where = first_divergence(a, b)
    result = {
        "result": determinism.BITWISE if where is None else "diverged",
        "first_divergence": where,
        "env": config.env.id,
        "algo": config.algo.name,
        "steps": steps,
        "seconds": round(time.perf_counter() - t0, 2),
        "checked": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    determinism.record(backend, result)
    if where is None:
        console.print(
            f"bitwise: observations, actions, rewards of {len(a['steps'])} vector steps and "
            f"the final parameters are identical ({result['seconds']} s)"
        )
        return 0
    console.print(
        f"diverged at vector step {where['step']} of {len(a['steps'])}: "
        f"{', '.join(where['in'])} differ ({result['seconds']} s)"
    )
    return 1


def main(argv: list[str]) -> int:
    config = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    result = attempt(config, int(argv[1]), int(argv[2]))
    Path(argv[3]).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
