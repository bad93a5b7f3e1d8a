"""Dry construction: build each variant's env and model once, and take one action, no training.

`python -m runner.trainers.sb3.construct MANIFEST OUT.json [--cpu] [--only=V1,V2]` writes a JSON
list of problems `[line, [path...], message]`, one per variant that cannot be built. The runner
starts it before any unit (and `rlcrate validate --deep` on demand), so a configuration that the
schema allows but the algorithm, the policy, the device or the env refuses is one line per variant
with exit status 2, never N failed units. It runs as a child process so the runner stays free of
torch and a crash in a backend takes down only this check.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from runner.errors import FieldError, RunnerError
from runner.manifest.schema import Manifest, ParallelSpec


def device_problem(device: str) -> str | None:
    """Why `device` is not usable on this machine (SB3 would quietly fall back to the CPU)."""
    import torch

    if device == "auto":
        return None
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError):
        return f"{device!r} is not a torch device; expected cpu, cuda, cuda:N or auto"
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            return f"{device!r} asked for, but this machine has no usable CUDA GPU"
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            return f"{device!r} asked for, but this machine has {torch.cuda.device_count()} GPU(s)"
    elif dev.type != "cpu":
        return f"{device!r}: only cpu, cuda, cuda:N or auto are supported"
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else ""
    line = f"{type(exc).__name__}: {line}" if line else type(exc).__name__
    return line if len(line) <= 300 else line[:297] + "..."


def build_once(cfg: Manifest, *, check_device: bool = True) -> tuple[tuple[str, ...], str] | None:
    """(field path, message) if the variant's env or model cannot be built; None if it can.
    A trainer with a `dry_construct(cfg)` of its own (a loop that builds its own env, e.g. one
    without torch) does all of it; the others get one env of the backend and build on it."""
    from runner.trainers import trainer_of

    trainer = trainer_of(cfg)
    own = getattr(trainer, "dry_construct", None)
    if own is not None:
        return _failed(cfg, lambda: own(cfg))
    if check_device:
        problem = device_problem(cfg.algo.device)
        if problem:
            return ("algo", "device"), problem
    else:
        cfg = cfg.model_copy(update={"algo": cfg.algo.model_copy(update={"device": "cpu"})})
    from runner.record.machine import cpu_count
    from runner.record.seeding import derive, seed_everything
    from runner.trainers.sb3.common import make_env

    if cfg.algo.torch_threads > 8 * cpu_count():
        return ("algo", "torch_threads"), (
            f"{cfg.algo.torch_threads} threads on {cpu_count()} CPUs is more than torch can start "
            f"here; use at most {cpu_count()}"
        )
    try:
        seed_everything(derive(0), torch_threads=cfg.algo.torch_threads)
    except Exception as exc:
        return ("algo", "torch_threads"), f"torch refuses it: {_first_line(exc)}"
    try:
        one = ParallelSpec(envs=1, workers=1, mode="dummy")
        venv = make_env(cfg, seed=0, parallel=one)
    except RunnerError as exc:  # rlcrate's own line, whole (e.g. every asset file a task needs)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return ("env",), f"cannot build the env: {first}"
    except Exception as exc:
        return ("env",), f"cannot build the env: {_first_line(exc)}"
    try:
        return _failed(cfg, lambda: trainer.dry_build(cfg, venv))
    finally:
        venv.close()


def _failed(cfg: Manifest, build: Any) -> tuple[tuple[str, ...], str] | None:
    """What `build()` raised, as (field path, message); None when it built."""
    try:
        build()
    except FieldError as exc:  # a field the trainer names (an own loop's config key)
        return tuple(str(p) for p in exc.path), exc.message
    except Exception as exc:
        return ("algo",), f"cannot build the {cfg.algo.name} model: {_first_line(exc)}"
    return None


def with_parent(cfg: Manifest, parent: dict[str, Any] | None) -> Manifest:
    """A warm-started variant's config naming the parent unit the runner found for it."""
    if parent is None or cfg.train.init_from is None:
        return cfg
    init = cfg.train.init_from.model_copy(update=parent)
    return cfg.model_copy(update={"train": cfg.train.model_copy(update={"init_from": init})})


def problems(
    path: Path,
    *,
    check_device: bool = True,
    only: set[str] | None = None,
    overrides: Any = (),
    parents: dict[str, dict[str, Any]] | None = None,
) -> list[list[Any]]:
    """[line, path, message] for every variant that cannot be built (each distinct config once)."""
    from runner.backends import anchor_paths
    from runner.manifest import expand
    from runner.manifest.load import load_unchecked
    from runner.manifest.parse import read_yaml
    from runner.manifest.problems import line_of
    from runner.trainers import defaults

    _, lines = read_yaml(path)
    out: list[list[Any]] = []
    seen: dict[str, tuple[tuple[str, ...], str] | None] = {}
    manifest = anchor_paths(load_unchecked(path, defaults.apply, overrides), path.resolve().parent)
    for variant in expand(manifest):
        if variant.config is None or (only is not None and variant.name not in only):
            continue
        config = with_parent(variant.config, (parents or {}).get(variant.name))
        cfg = config.model_dump_json(exclude={"matrix", "expect", "bench", "seeds"})
        if cfg not in seen:
            seen[cfg] = build_once(config, check_device=check_device)
        found = seen[cfg]
        if found is not None:
            loc, message = found
            where = "" if variant.name == "default" else f"variant {variant.name}: "
            out.append([line_of(loc, lines), list(loc), where + message])
    return out


def main(argv: list[str]) -> int:
    import logging
    import warnings

    warnings.simplefilter("ignore")  # SB3's advice on batch sizes is not a problem here
    logging.disable(logging.WARNING)
    from runner.manifest.overrides import from_args

    only = next((a.split("=", 1)[1] for a in argv if a.startswith("--only=")), None)
    parents = next((a.split("=", 1)[1] for a in argv if a.startswith("--parents=")), None)
    found = problems(
        Path(argv[0]),
        check_device="--cpu" not in argv,
        only=set(only.split(",")) if only is not None else None,
        overrides=from_args(argv),
        parents=json.loads(parents) if parents else None,
    )
    Path(argv[1]).write_text(json.dumps(found), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
