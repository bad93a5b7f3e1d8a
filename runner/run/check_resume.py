"""`rlcrate check-determinism MANIFEST --resume`: does a stopped unit resume exactly here?

The manifest's first unit trains a short slice three times, each in a fresh process of the
units' Python (`python -m runner.run.check_resume CONFIG.json SEED UNIT_DIR OUT.json`), through
its trainer's own `train` with a checkpoint every quarter of the slice: once to the end; once
killed with SIGKILL at a step drawn from the seed (after a checkpoint, as a lost machine stops
it); and once more in the killed unit's directory, which resumes it. The final parameters
(every tensor of the model's files) and the TensorBoard scalars per step (wall-clock `time/`
tags aside) are compared: `exact`, or what differs. Exit status 0 exact, 1 differs. The result
is remembered for this environment beside `check-determinism`'s own and written into later runs'
provenance (`resume_checked`; one that differs lowers a declared `exact` in `resume`).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from runner.trainers.abilities import KILL_ENV  # read by a trainer with KillForResume


def _tensors_digest(h: Any, key: str, value: Any) -> None:
    if isinstance(value, dict):
        for k in sorted(value, key=str):
            _tensors_digest(h, f"{key}.{k}", value[k])
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _tensors_digest(h, f"{key}.{i}", v)
    else:
        h.update(key.encode())
        h.update(value.detach().cpu().numpy().tobytes() if hasattr(value, "detach") else
                 repr(value).encode())  # fmt: skip


def params_digest(unit_dir: Path, files: list[str]) -> str:
    """SHA-256 of every tensor in the model's zips (read through torch's restricted
    unpickler), and of the bytes of its other files."""
    from runner.record.datafiles import torch_load

    h = hashlib.sha256()
    for name in files:
        path = unit_dir / name
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                for member in sorted(m for m in z.namelist() if m.endswith(".pth")):
                    with z.open(member) as f:
                        _tensors_digest(h, f"{name}/{member}", torch_load(f))
        elif path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()


def scalars(unit_dir: Path) -> dict[str, float]:
    """'tag@step' -> value over every training segment's TensorBoard files."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out: dict[str, float] = {}
    for folder in sorted({p.parent for p in (unit_dir / "tb").rglob("events.out.tfevents.*")}):
        acc = EventAccumulator(str(folder)).Reload()
        for tag in acc.Tags()["scalars"]:
            for e in [] if tag.startswith("time/") else acc.Scalars(tag):
                out[f"{tag}@{e.step}"] = e.value
    return out


def train_unit(config: dict[str, Any], seed: int, unit_dir: Path) -> dict[str, Any]:
    """Train the unit in this process (resuming from `unit_dir`'s checkpoints, as a unit does)."""
    from runner.manifest.schema import Manifest
    from runner.record.seeding import derive, seed_everything
    from runner.trainers import trainer_of

    cfg = Manifest.model_validate(config)
    seeds, trainer = derive(seed), trainer_of(cfg)
    seed_everything(seeds, torch_threads=cfg.algo.threads(), with_torch=trainer.USES_TORCH)
    fields = trainer.train(cfg, unit_dir, seeds)
    return {
        "params": params_digest(unit_dir, trainer.model_files(cfg)),
        "scalars": scalars(unit_dir),
        "resumes": fields.resumes,
        "resume": fields.resume,
    }


def _spawn(python: str, cfg_file: Path, seed: int, unit: Path, kill: str | None) -> Any:
    out = unit.with_suffix(".json")
    env = {k: v for k, v in os.environ.items() if k != KILL_ENV}
    env.update({KILL_ENV: kill} if kill else {})
    cmd = [python, "-m", "runner.run.check_resume", str(cfg_file), str(seed), str(unit), str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if kill:
        return proc.returncode
    if proc.returncode != 0 or not out.is_file():
        from runner.errors import BackendUnavailable

        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise BackendUnavailable(f"check-determinism --resume: a training failed ({tail})")
    return json.loads(out.read_text(encoding="utf-8"))


def check_resume(manifest_path: Path, steps: int | None, seed: int, console: Console) -> int:
    """Train, stop, resume, compare; print the verdict. Exit status: 0 exact, 1 differs."""
    from runner.checks.load import load_manifest
    from runner.manifest import resolved
    from runner.provenance import determinism
    from runner.provenance.determinism import resume_level
    from runner.run.check_determinism import default_steps, units_python

    res = resolved(load_manifest(manifest_path))
    variant, spec = next(iter(res.variants.items()))
    manifest, backend = spec.config, spec.config.env.backend
    steps = steps or 4 * default_steps(manifest)
    config = manifest.model_dump(mode="json", exclude={"matrix", "expect", "track"})
    config["train"].update(timesteps=steps, checkpoint_every=max(steps // 4, 1))
    kill = round(random.Random(seed).uniform(0.3, 0.95), 3)
    console.print(
        f"check-determinism --resume: {backend} {manifest.env.id}, variant {variant}, seed "
        f"{seed}, {steps} env steps; killed at {kill:.0%} of them, then resumed "
        f"(declared: {resume_level(backend, manifest.env)})"
    )
    python, t0 = units_python(backend), time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rlcrate-resume-") as tmp:
        cfg_file = Path(tmp) / "config.json"
        cfg_file.write_text(json.dumps(config), encoding="utf-8")
        full = _spawn(python, cfg_file, seed, Path(tmp) / "full", None)
        _spawn(python, cfg_file, seed, Path(tmp) / "stopped", str(kill))
        resumed = _spawn(python, cfg_file, seed, Path(tmp) / "stopped", None)
    took = round(time.perf_counter() - t0, 1)
    differ = [what for what in ("params", "scalars") if full[what] != resumed[what]]
    where = f"resumed from step {', '.join(map(str, resumed['resumes'])) or 'none'}"
    result = {
        "result": "approximate" if differ else "exact",
        "differ": differ,
        "declared": resume_level(backend, manifest.env),
        "env": manifest.env.id,
        "algo": manifest.algo.name,
        "steps": steps,
        "killed_at": kill,
        "resumed_from": resumed["resumes"],
        "seconds": took,
        "checked": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if not differ:
        console.print(
            f"exact: final parameters and TensorBoard scalars identical ({where}; {took} s)"
        )
    else:
        console.print(f"approximate: {' and '.join(differ)} differ ({where}; {took} s)")
    unrecorded = determinism.record(backend, result, resume=True)
    if unrecorded is not None:
        console.print(f"[yellow]warning: {escape(unrecorded)}[/]", soft_wrap=True)
    return 1 if differ else 0


def main(argv: list[str]) -> int:
    config = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    result = train_unit(config, int(argv[1]), Path(argv[2]))
    Path(argv[3]).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
