"""`rlcrate check-determinism MANIFEST`: is this backend bitwise deterministic on this machine?

A short slice of the manifest's first unit trains twice, each time in a fresh process with the
same master seed (`python -m runner.run.check_determinism RESOLVED.json SEED STEPS OUT.json`).
Both run in the Python the unit would run in (a backend's own environment: Brax's venv, Isaac
Lab's), through the unit's trainer (`determinism_attempt`). Each attempt records what its
trainer can watch: SB3's, per vector step, SHA-256 digests of the observations, the actions and
the rewards; every trainer's, a digest of the final parameters. Equal everywhere: `bitwise`;
else the first step where they part, and in what. The result is remembered for this environment
(`runner.provenance.determinism.record`) and written into the provenance of later runs, where
`reproduce` reads it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from runner.manifest.schema import Manifest

STREAMS = ("observations", "actions", "rewards")


def default_steps(config: Manifest) -> int:
    """Two rollouts of an on-policy algorithm (so parameters change twice), at least 256."""
    n_steps = int(config.algo.params.get("n_steps", 64))
    return max(256, 2 * n_steps * config.parallel.envs)


def attempt(config: dict[str, Any], seed: int, steps: int) -> dict[str, Any]:
    """One attempt, in this process, through the unit's trainer."""
    from runner.manifest.schema import Manifest
    from runner.record.seeding import derive, seed_everything
    from runner.trainers import trainer_of

    cfg = Manifest.model_validate(config)
    seeds, trainer = derive(seed), trainer_of(cfg)
    seed_everything(seeds, torch_threads=cfg.algo.threads(), with_torch=trainer.USES_TORCH)
    return trainer.determinism_attempt(cfg, seeds, steps).fields()


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


def units_python(backend: str) -> str:
    """The Python this backend's units run in, proven able to import the backend's package:
    BackendUnavailable (exit 2, one line) when it is missing or broken there."""
    from runner.backends import get_backend, python_env_var, unit_interpreter
    from runner.checks.installed import install_hint, missing_packages
    from runner.errors import BackendUnavailable

    python = unit_interpreter(backend)
    if python is None:  # the runner's own Python
        missing = missing_packages(backend)
        if missing:
            raise BackendUnavailable(
                f"the {backend} backend needs {', '.join(missing)}, not installed here: "
                f"{install_hint(backend)}"
            )
        python = sys.executable
    module = get_backend(backend).TRAITS.module
    try:
        probe = subprocess.run(
            [python, "-c", f"import {module}"], capture_output=True, text=True, timeout=300
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BackendUnavailable(f"{python} cannot import {module}: {exc}") from None
    if probe.returncode != 0:
        tail = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        where = python_env_var(backend) if python_env_var(backend) in os.environ else python
        raise BackendUnavailable(
            f"the Python that runs {backend} units ({where}: {python}) cannot import {module}: "
            f"{tail}; reinstall it there ({install_hint(backend)})"
        )
    return python


def _spawn(
    python: str, config: dict[str, Any], seed: int, steps: int, tmp: Path, n: int
) -> dict[str, Any]:
    """One attempt in a fresh Python process (the units' own), as two separate runs would be."""
    cfg_file, out = tmp / "config.json", tmp / f"attempt-{n}.json"
    cfg_file.write_text(json.dumps(config), encoding="utf-8")
    cmd = [
        python,
        "-m",
        "runner.run.check_determinism",
        str(cfg_file),
        str(seed),
        str(steps),
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or not out.is_file():
        from runner.errors import BackendUnavailable

        # exit 2, as cmp's "trouble": 1 stays the answer "diverged"
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise BackendUnavailable(
            f"check-determinism: attempt {n} failed in {python} ({tail}); no verdict"
        )
    found: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return found


def check(manifest_path: Path, steps: int | None, seed: int, console: Console) -> int:
    """Run both attempts, print and record the result. Exit status: 0 bitwise, 1 diverged."""
    from runner.checks.load import load_manifest
    from runner.manifest import resolved
    from runner.provenance import determinism

    res = resolved(load_manifest(manifest_path))
    variant, spec = next(iter(res.variants.items()))
    manifest, backend = spec.config, spec.config.env.backend
    config = manifest.model_dump(mode="json", exclude={"matrix", "expect", "track"})
    python = units_python(backend)
    steps = steps or default_steps(manifest)
    console.print(
        f"check-determinism: {backend} {manifest.env.id}, variant {variant}, "
        f"seed {seed}, asking {steps} env steps, twice"
    )
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rlcrate-determinism-") as tmp:
        a, b = (_spawn(python, config, seed, steps, Path(tmp), n) for n in (1, 2))
    where = first_divergence(a, b)
    result = {
        "result": determinism.BITWISE if where is None else "diverged",
        "first_divergence": where,
        "env": manifest.env.id,
        "algo": manifest.algo.name,
        "steps": steps,
        "env_steps": a.get("env_steps"),
        "compared": a.get("compares"),
        "seconds": round(time.perf_counter() - t0, 2),
        "checked": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if where is None:
        console.print(f"bitwise: {a['compares']} are identical ({result['seconds']} s)")
        console.print(
            f"  (here: {_machine()}, with this Python's packages; the same run repeats bitwise "
            "on this machine and image, and another CPU model or build may train to other "
            "numbers: `rlcrate reproduce` names what differs)"
        )
    else:
        step = (
            f"at vector step {where['step']} of {len(a['steps'])}" if a["steps"] else "at the end"
        )
        console.print(
            f"diverged {step}: {', '.join(where['in'])} differ (compared: {a['compares']}; "
            f"{result['seconds']} s)"
        )
    unrecorded = determinism.record(backend, result)
    if unrecorded is not None:
        console.print(f"[yellow]warning: {escape(unrecorded)}[/]", soft_wrap=True)
    return 0 if where is None else 1


def _machine() -> str:
    from runner.record.machine import cpu_info

    cpu = cpu_info()
    return f"{cpu.get('model') or 'this CPU'}, {cpu.get('count', '?')} cores"


def main(argv: list[str]) -> int:
    config = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    result = attempt(config, int(argv[1]), int(argv[2]))
    Path(argv[3]).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
