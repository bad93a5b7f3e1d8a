"""`algo.defaults`: where a manifest's tuned hyperparameters come from before its own values.

Each source fills in the parsed manifest's data (`apply(data) -> (data, dotted path -> source)`)
and raises ValueError (one line) when it cannot: `zoo`, rl-zoo3's published values for this
algorithm and env id (runner.trainers.sb3.zoo); `task`, the agent config an Isaac Lab task
registers for the chosen library (runner.trainers.task_defaults). The manifest layer calls this
through `read_manifest(path, defaults)`, so it never imports a trainer itself.
"""

from __future__ import annotations

import importlib
from typing import Any, Final

SOURCES: Final[dict[str, str]] = {
    "zoo": "runner.trainers.sb3.zoo",
    "task": "runner.trainers.task_defaults",
}


def apply(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """`data` with the values of its `algo.defaults` source under it (none named, or one its
    trainer's options do not take: unchanged, and the schema says so at algo.defaults)."""
    algo = data.get("algo") if isinstance(data, dict) else None
    source = algo.get("defaults") if isinstance(algo, dict) else None
    if not isinstance(source, str) or source not in SOURCES or not _takes(algo, source):
        return data, {}
    module = importlib.import_module(SOURCES[source])
    found: tuple[dict[str, Any], dict[str, str]] = module.apply(data)
    return found


def _takes(algo: Any, source: str) -> bool:
    """Whether the trainer `algo` names or implies has `defaults: source` among its options."""
    from pydantic import ValidationError

    from runner.errors import UserInputError
    from runner.manifest.algo import algo_model, trainer_of_algo

    try:
        trainer = trainer_of_algo(algo) if isinstance(algo, dict) else None
        model = algo_model(trainer) if trainer is not None else None
        if model is None:
            return False
        model.model_validate({"defaults": source})
    except (ValidationError, UserInputError):
        return False
    return True


def put(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    """Set a dotted path in the manifest's data, making the mappings on the way."""
    for part in path[:-1]:
        if not isinstance(data.get(part), dict):
            data[part] = {}
        data = data[part]
    data[path[-1]] = value
