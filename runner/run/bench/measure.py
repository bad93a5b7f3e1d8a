"""Measuring one bench point where its units run: here, through its trainer's `bench`, or in the
backend's own interpreter (`python -m runner.run.bench.point IN OUT`); and the host measured on.
"""

from __future__ import annotations

import os
import platform
import sys
from typing import Any

from runner.manifest.schema import Manifest
from runner.run.bench.plan import Point


def host_info() -> dict[str, Any]:
    from runner.record.machine import cpu_info

    cpu = cpu_info()
    model = cpu["model"] or platform.machine()
    usable = cpu["usable"] or os.cpu_count()
    return {
        "cpu_model": model,
        "cpu_count": os.cpu_count(),
        "cpu_usable": usable,
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def measure_here(cfg: Manifest) -> dict[str, Any]:
    """Measure a point in this interpreter, with the trainer that trains its algorithm: what its
    `bench` returns, checked against `BenchResult` (a ValueError naming the field otherwise)."""
    from runner.record.seeding import derive, seed_everything
    from runner.trainers import trainer_of

    seeds, trainer = derive(cfg.seeds[0]), trainer_of(cfg)
    seed_everything(seeds, torch_threads=cfg.algo.threads(), with_torch=trainer.USES_TORCH)
    return measured(trainer.bench(cfg, seeds))


def measured(found: Any) -> dict[str, Any]:
    """A trainer's measurements of one point (its `BenchResult`, or the JSON of one from
    another interpreter) as bench.json keeps them: the fields it set; a ValueError, one line
    naming the field, when they do not fit."""
    from pydantic import ValidationError

    from runner.record.bench import BenchResult

    data = found.fields() if isinstance(found, BenchResult) else found
    try:
        return BenchResult.model_validate(data).fields()
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "its result"
        raise ValueError(f"the trainer's bench returned {where}: {err['msg']}") from None


def run_point(point: Point) -> dict[str, Any]:
    """Measure one point, in the interpreter its backend's units run in (Brax and Isaac Lab have
    their own); a failure is recorded in the point, not raised."""
    from runner.backends import unit_interpreter
    from runner.trainers import trainer_name

    cfg = point.config
    python = unit_interpreter(cfg.env.backend) or sys.executable
    out: dict[str, Any] = {
        "label": point.label,
        "variant": point.variant,
        "x": point.x,
        "overrides": point.overrides,
        "error": None,
        "backend": cfg.env.backend,
        "env_id": cfg.env.id,
        "envs": cfg.parallel.envs,
        "workers": cfg.parallel.workers,
        "mode": cfg.parallel.mode,
        "algo": cfg.algo.name,
        "trainer": trainer_name(cfg),
        "python": python,
    }
    try:
        # the same bin folder is the same environment (venv Pythons link to one binary)
        if os.path.dirname(os.path.abspath(python)) == os.path.dirname(sys.executable):
            out.update(measure_here(cfg))
        else:
            out.update(measured(measure_elsewhere(python, cfg)))
        out.setdefault("inference", None)
        out["cold_start"] = cold_start(python, cfg) if _times_cold_start(cfg) else None
    except Exception as exc:  # noqa: BLE001 - one broken point must not lose the others
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out


def _times_cold_start(cfg: Manifest) -> bool:
    """Whether the point's cold start is measured: `bench.cold_start`, by a trainer that can say
    when its first step ends (`ColdStart`; without it, said once and left out)."""
    from runner import plugins
    from runner.trainers import trainer_name, trainer_of
    from runner.trainers.abilities import ColdStart

    if not cfg.bench.cold_start:
        return False
    if isinstance(trainer_of(cfg), ColdStart):
        return True
    plugins.lacks(
        "trainer",
        trainer_name(cfg),
        "say when its first env step ends",
        "the bench measures no cold start (bench.cold_start: false says nothing)",
    )
    return False


def measure_elsewhere(python: str, cfg: Manifest) -> dict[str, Any]:
    """Measure a point in another interpreter: `python -m runner.run.bench.point IN OUT`, the
    point's config in and its measurements out as JSON files; its stderr becomes the error."""
    return _child(python, "runner.run.bench.point", cfg)


def cold_start(python: str, cfg: Manifest) -> dict[str, Any] | None:
    """Seconds from starting a fresh `python` to the end of its env's first vector step, as a
    unit starts (`runner.run.bench.cold`); None when the point's trainer cannot say when its
    first step ends."""
    import time

    t0 = time.time()
    found = _child(python, "runner.run.bench.cold", cfg)
    at = found.get("first_step_at")
    if not isinstance(at, int | float):
        return None
    return {"seconds": float(at) - t0, "processes": 1}


def _child(python: str, module: str, cfg: Manifest) -> dict[str, Any]:
    """`python -m MODULE IN OUT` with the point's config in IN; OUT's JSON. RuntimeError with the
    last line of its stderr when it fails."""
    import json
    import subprocess
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="rlcrate-bench-") as tmp:
        src, dst = Path(tmp) / "point.json", Path(tmp) / "result.json"
        src.write_text(json.dumps(cfg.model_dump(mode="json")))
        proc = subprocess.run(
            [python, "-m", module, str(src), str(dst)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            check=False,
        )
        if proc.returncode != 0 or not dst.is_file():
            lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
            raise RuntimeError(
                f"{python} exited with {proc.returncode}: {lines[-1] if lines else 'no output'}"
            )
        found = json.loads(dst.read_text())
        return found if isinstance(found, dict) else {}
