"""What `rlcrate export` asks of the sb3 trainer (`ExportsPolicy`): a unit's final model on one
env of its own, on the CPU, with the unit's frozen observation statistics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.manifest.schema import Manifest
from runner.trainers.base import MODEL_FILE
from runner.trainers.sb3.options import options


def export_model(cfg: Manifest, unit_dir: Path, seed: int) -> tuple[Any, Any]:
    """(model, VecEnv): its weights from the zip, nothing unpickled; the caller closes the env."""
    from runner.record.seeding import derive
    from runner.trainers.sb3.common import load_model, make_env, one_env
    from runner.trainers.sb3.files import STATS_FILE

    cfg = cfg.model_copy(update={"algo": options(cfg).model_copy(update={"device": "cpu"})})
    seeds = derive(seed)
    venv = make_env(cfg, seed=seeds["eval_env"], parallel=one_env(cfg), monitor=False,
                    stats=unit_dir / STATS_FILE, training=False)  # fmt: skip
    try:
        return load_model(cfg, unit_dir / MODEL_FILE, venv, seed=None), venv
    except BaseException:
        venv.close()
        raise
