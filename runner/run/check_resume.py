"""`rlcrate check-determinism MANIFEST --resume`: does a stopped unit resume exactly here?

The manifest's first unit trains a short slice three times, each in a fresh process of the
units' Python (`python -m runner.run.check_resume CONFIG.json SEED UNIT_DIR OUT.json`), through
its trainer's own `train` with a checkpoint every quarter of the slice: once killed with SIGKILL
at a step drawn from the seed (after a checkpoint, as a lost machine stops it); once to the end;
and once more in the killed unit's directory, which resumes it. The final parameters
(every tensor of the model's files) and the TensorBoard scalars per step (wall-clock `time/`
tags aside) are compared: `exact`, or what differs. Exit status 0 exact, 1 differs.

Only a kill that happened is a check: a trainer that does not declare it can be killed
(`abilities.KillForResume`, `runner.trainers.kill`) is refused before anything trains; a unit
that was not killed by SIGKILL at the step asked, or whose resume found no checkpoint, gives no
verdict (exit 2). The result is remembered for this environment, per backend and trainer, beside
`check-determinism`'s own, and written into later runs' provenance (`resume_checked`; one that
differs lowers a declared `exact` in `resume`).
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
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from runner.errors import BackendUnavailable, ManifestError
from runner.trainers.kill import KILL_ENV, KILL_RECORD_ENV, KILL_SIGNAL_ENV, kill_problem

if TYPE_CHECKING:
    from runner.manifest.schema import Manifest


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


def _train(
    python: str, cfg_file: Path, seed: int, unit: Path, kill: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """One training of the unit in a fresh process; `kill`: the kill hook's settings."""
    out = unit.with_suffix(".json")
    ours = (KILL_ENV, KILL_SIGNAL_ENV, KILL_RECORD_ENV)
    env = {k: v for k, v in os.environ.items() if k not in ours} | kill
    cmd = [python, "-m", "runner.run.check_resume", str(cfg_file), str(seed), str(unit), str(out)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def _tail(proc: subprocess.CompletedProcess[str]) -> str:
    return (proc.stderr.strip().splitlines() or ["no output"])[-1]


def _spawn(python: str, cfg_file: Path, seed: int, unit: Path) -> Any:
    """The unit trained to its end (or resumed to it): what `train_unit` found."""
    proc = _train(python, cfg_file, seed, unit, {})
    out = unit.with_suffix(".json")
    if proc.returncode != 0 or not out.is_file():
        raise BackendUnavailable(f"check-determinism --resume: a training failed ({_tail(proc)})")
    return json.loads(out.read_text(encoding="utf-8"))


def _killed(python: str, cfg_file: Path, seed: int, unit: Path, asked: int, cfg: Manifest) -> int:
    """The unit trained and killed at env step `asked`: the step it was killed at, checked
    (its exit by SIGKILL, the step its hook recorded); no verdict when it was not killed."""
    from runner.record.rundir import read_json
    from runner.trainers import trainer_name

    record = unit.with_suffix(".kill.json")
    proc = _train(
        python, cfg_file, seed, unit, {KILL_ENV: str(asked), KILL_RECORD_ENV: str(record)}
    )
    found = read_json(record) if record.is_file() else None
    why = kill_problem(proc.returncode, found, asked, cfg.parallel.envs)
    if why is not None:
        failed = f" ({_tail(proc)})" if proc.returncode > 0 else ""
        raise BackendUnavailable(
            f"check-determinism --resume: the {trainer_name(cfg)} trainer was told to kill its "
            f"unit at env step {asked}, and {why}{failed}; no verdict"
        )
    return int(found["step"]) if isinstance(found, dict) else asked


def _refuse_unkillable(manifest_path: Path, cfg: Manifest) -> None:
    """ManifestError at `algo.trainer` when the unit's trainer does not declare that it can be
    killed for the check: without a kill, a resume check would compare two plain trainings."""
    import contextlib

    from runner.errors import RunnerError
    from runner.manifest.load import read_manifest
    from runner.manifest.problems import at
    from runner.trainers import get_trainer, names, trainer_name
    from runner.trainers.abilities import KillForResume

    name = trainer_name(cfg)
    if isinstance(get_trainer(name), KillForResume):
        return
    able = []
    for other in names():
        with contextlib.suppress(RunnerError):
            able += [other] if isinstance(get_trainer(other), KillForResume) else []
    lines = read_manifest(manifest_path)[2]
    message = (
        f"the {name} trainer does not declare that its units can be killed for a resume check "
        f"(the KillForResume ability; trainers that do: {', '.join(able) or 'none'}): "
        "check-determinism --resume cannot check it"
    )
    raise ManifestError([at(str(manifest_path), lines, ("algo", "trainer"), message)])


def check_resume(manifest_path: Path, steps: int | None, seed: int, console: Console) -> int:
    """Train, stop, resume, compare; print the verdict. Exit status: 0 exact, 1 differs."""
    from runner.checks.load import load_manifest
    from runner.manifest import resolved
    from runner.provenance import determinism
    from runner.provenance.determinism import resume_level
    from runner.run.check_determinism import default_steps, units_python
    from runner.trainers import trainer_name

    res = resolved(load_manifest(manifest_path))
    variant, spec = next(iter(res.variants.items()))
    manifest, backend = spec.config, spec.config.env.backend
    _refuse_unkillable(manifest_path, manifest)
    steps = steps or 4 * default_steps(manifest)
    config = manifest.model_dump(mode="json", exclude={"matrix", "expect", "track"})
    config["train"].update(timesteps=steps, checkpoint_every=max(steps // 4, 1))
    kill = round(random.Random(seed).uniform(0.3, 0.95), 3)
    asked = int(kill * steps)
    console.print(
        f"check-determinism --resume: {backend} {manifest.env.id}, variant {variant}, trainer "
        f"{trainer_name(manifest)}, seed {seed}, {steps} env steps; killed at step {asked} "
        f"({kill:.0%} of them), then resumed (declared: {resume_level(backend, manifest.env)})"
    )
    python, t0 = units_python(backend), time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rlcrate-resume-") as tmp:
        cfg_file = Path(tmp) / "config.json"
        cfg_file.write_text(json.dumps(config), encoding="utf-8")
        # the kill first: a trainer that was not killed is found after one training, not two
        killed = _killed(python, cfg_file, seed, Path(tmp) / "stopped", asked, manifest)
        full = _spawn(python, cfg_file, seed, Path(tmp) / "full")
        resumed = _spawn(python, cfg_file, seed, Path(tmp) / "stopped")
    if not resumed["resumes"]:
        raise BackendUnavailable(
            f"check-determinism --resume: the unit killed at env step {killed} resumed from no "
            f"checkpoint (none was written before the kill; give more --steps than {steps}); "
            "no verdict"
        )
    took = round(time.perf_counter() - t0, 1)
    differ = [what for what in ("params", "scalars") if full[what] != resumed[what]]
    where = f"killed at step {killed}, resumed from step {', '.join(map(str, resumed['resumes']))}"
    result = {
        "result": "approximate" if differ else "exact",
        "differ": differ,
        "declared": resume_level(backend, manifest.env),
        "env": manifest.env.id,
        "algo": manifest.algo.name,
        "trainer": trainer_name(manifest),
        "steps": steps,
        "killed_at": kill,
        "killed_at_step": killed,
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
    unrecorded = determinism.record_resume(backend, trainer_name(manifest), result)
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
