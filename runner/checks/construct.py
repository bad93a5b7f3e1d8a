"""Dry construction: build each variant's env and model once, and take one action, no training.

`python -m runner.checks.construct MANIFEST OUT.json [--cpu] [--only=V1,V2]` writes a JSON
list of problems `[line, [path...], message]`, one per variant that cannot be built. The runner
starts it before any unit (and `rlcrate validate --deep` on demand), so a configuration that the
schema allows but the algorithm, the policy, the device or the env refuses is one line per variant
with exit status 2, never N failed units. It runs as a child process so the runner stays free of
torch and a crash in a backend takes down only this check. What is built is each trainer's own
business (its `dry_construct`: SB3's builds one env of the backend, the model on it, and acts).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from runner.errors import FieldError, first_line
from runner.manifest.schema import Manifest
from runner.trainers import quick_exit


def build_once(cfg: Manifest, *, check_device: bool = True) -> tuple[tuple[str, ...], str] | None:
    """(field path, message) if the variant's env or model cannot be built; None if it can.
    Without `check_device` (units run elsewhere: a cluster), the device is taken to be the CPU
    here, so the rest is still checked."""
    from runner.trainers import trainer_of

    if not check_device:
        cfg = cfg.model_copy(update={"algo": cfg.algo.model_copy(update={"device": "cpu"})})
    trainer = trainer_of(cfg)
    quick_exit.allow(trainer.QUICK_EXIT)
    return _failed(cfg, lambda: trainer.dry_construct(cfg))


def _failed(cfg: Manifest, build: Any) -> tuple[tuple[str, ...], str] | None:
    """What `build()` raised, as (field path, message); None when it built."""
    try:
        build()
    except FieldError as exc:  # a field the trainer names (the device, the env, a config key)
        return tuple(str(p) for p in exc.path), exc.message
    except Exception as exc:
        return ("algo",), f"cannot build the {cfg.algo.name} model: {first_line(exc)}"
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
    quick_exit.end(main(sys.argv[1:]))
