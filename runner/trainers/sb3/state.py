"""What an SB3 checkpoint holds beyond the model, so a resumed unit continues exactly.

Beside `step-N.zip` (weights, optimizers, counters) a checkpoint taken at a rollout boundary has
`step-N.state.json` and `step-N.state.npz`, data only (JSON and arrays read without pickles):

- the generators: Python's `random`, NumPy's global one, torch's (and each CUDA device's, where
  torch has started CUDA), and the model's action and observation spaces' (SAC's first random
  actions);
- the loop's bookkeeping: the episode statistics window (`ep_info_buffer`, `ep_success_buffer`),
  the logger's values recorded but not yet written (an update's losses, written with the next
  rollout's statistics), and for off-policy algorithms the replay buffer;
- the vectorised env: each sub-env's episode in progress (`backends.replay`: how it started and
  its actions, replayed on resume), VecMonitor's counters, VecNormalize's running return, and the
  model's last observation, so `learn` does not reset the envs on resume.

`identity` (algorithm, env, env count, seeds) is checked before anything is applied: a state of
another unit is RunFileError, and the caller tries an older checkpoint. A backend that cannot
replay its envs (`Backend.resume_approximate`) saves no env part: the resumed unit then restarts
its episodes, as SB3's `learn` does, and says so.
"""

from __future__ import annotations

import json
import random
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from runner.errors import RunFileError
from runner.record.datafiles import read_npz, write_npz_atomic
from runner.record.rundir import write_json_atomic

FORMAT = 1
REQUIRED = ("torch_rng", "numpy_keys", "ep.r", "ep.l", "ep.t", "ep_success")
BUFFER_FIELDS = ("observations", "next_observations", "actions", "rewards", "dones", "timeouts")


def state_files(checkpoint: Path) -> tuple[Path, Path]:
    """checkpoints/step-N.zip -> (step-N.state.json, step-N.state.npz)"""
    return (
        checkpoint.with_name(f"{checkpoint.stem}.state.json"),
        checkpoint.with_name(f"{checkpoint.stem}.state.npz"),
    )


def _vec_layers(model: Any) -> dict[str, Any]:
    """The model's env and the VecMonitor under it (None when there is none)."""
    from stable_baselines3.common.vec_env import VecMonitor

    env, monitor = model.get_env(), None
    layer = env
    while layer is not None and monitor is None:
        monitor = layer if isinstance(layer, VecMonitor) else None
        layer = getattr(layer, "venv", None)
    return {"env": env, "monitor": monitor, "norm": model.get_vec_normalize_env()}


def _buffer(model: Any) -> Any | None:
    """The off-policy replay buffer when it is a plain ReplayBuffer; None for on-policy."""
    return getattr(model, "replay_buffer", None)


def saveable_buffer(buf: Any) -> bool:
    from stable_baselines3.common.buffers import ReplayBuffer

    return type(buf) is ReplayBuffer


def _logger_state(model: Any) -> dict[str, Any]:
    """Values recorded but not yet written: numbers only, with their NumPy type."""
    lg = model.logger
    values = {}
    for key, value in lg.name_to_value.items():
        if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
            kind = type(value).__name__ if isinstance(value, np.number) else ""
            values[key] = [value.item() if isinstance(value, np.number) else value, kind]
    excluded = {k: (list(v) if isinstance(v, tuple) else v) for k, v in lg.name_to_excluded.items()}
    return {"values": values, "counts": dict(lg.name_to_count), "excluded": excluded}


def _episode_arrays(model: Any) -> dict[str, Any]:
    infos = list(model.ep_info_buffer or [])
    out = {f"ep.{k}": np.asarray([i[k] for i in infos]) for k in ("r", "l", "t")}
    out["ep_success"] = np.asarray(list(model.ep_success_buffer or []))
    return out


def capture(
    model: Any, identity: dict[str, Any], with_env: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(JSON, arrays) of everything above; `with_env`: the env part too (see the module)."""
    import torch

    np_state: Any = np.random.get_state(legacy=True)
    doc: dict[str, Any] = {
        "format": FORMAT,
        "identity": identity,
        "rng": {
            "python": random.getstate(),
            "numpy": [np_state[0], *np_state[2:]],
            "action_space": model.action_space.np_random.bit_generator.state,
            "observation_space": model.observation_space.np_random.bit_generator.state,
        },
        "logger": _logger_state(model),
        "envs": None,
        "buffer": None,
    }
    arrays: dict[str, Any] = {"torch_rng": torch.get_rng_state().numpy(), "numpy_keys": np_state[1]}
    if torch.cuda.is_initialized():  # a model on a GPU draws (SAC's noise) from the device's
        for i, state in enumerate(torch.cuda.get_rng_state_all()):
            arrays[f"cuda_rng.{i}"] = state.numpy()
    arrays.update(_episode_arrays(model))
    buf = _buffer(model)
    if buf is not None:
        if not saveable_buffer(buf):
            with_env = False  # a buffer it cannot save: the resumed unit refills it
        else:
            n = buf.buffer_size if buf.full else buf.pos
            doc["buffer"] = {"pos": int(buf.pos), "full": bool(buf.full), "rows": int(n)}
            for name in BUFFER_FIELDS:
                value = getattr(buf, name, None)
                if isinstance(value, np.ndarray):
                    arrays[f"buffer.{name}"] = value[:n]
    if with_env and isinstance(model._last_obs, np.ndarray):
        from runner.trainers.sb3 import state_env

        doc["envs"], env_arrays = state_env.capture(model, _vec_layers(model))
        arrays.update(env_arrays)
    return doc, arrays


def write_state(
    model: Any, checkpoint: Path, identity: dict[str, Any], with_env: bool
) -> list[str]:
    """The checkpoint's state files (arrays first); their names, for the checkpoint's pins."""
    doc, arrays = capture(model, identity, with_env)
    try:
        json.dumps(doc)
    except (TypeError, ValueError):  # an env's generator state that is not plain data
        doc, arrays = capture(model, identity, False)
    doc_path, arrays_path = state_files(checkpoint)
    write_npz_atomic(arrays_path, arrays)
    write_json_atomic(doc_path, doc)
    return [arrays_path.name, doc_path.name]


def read_state(
    checkpoint: Path, identity: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The checkpoint's state, checked to be this unit's; None when it has none (an older
    run's checkpoint, or one taken when a stop came mid-rollout)."""
    doc_path, arrays_path = state_files(checkpoint)
    if not doc_path.is_file() and not arrays_path.is_file():
        return None
    try:
        doc = json.loads(doc_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunFileError(f"{doc_path}: the checkpoint's state is not readable ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise RunFileError(f"{doc_path}: not a checkpoint state of format {FORMAT}")
    if doc.get("identity") != identity:
        theirs = doc.get("identity")
        diff = sorted(
            k for k in identity if not isinstance(theirs, dict) or theirs.get(k) != identity[k]
        )
        raise RunFileError(
            f"{doc_path}: the checkpoint's state is of another unit (its {', '.join(diff)} "
            "differ from this manifest's)"
        )
    arrays = read_npz(arrays_path, what="checkpoint state")
    missing = [k for k in REQUIRED if k not in arrays]
    if missing or not all(k in doc for k in ("rng", "logger", "envs", "buffer")):
        raise RunFileError(f"{arrays_path}: the checkpoint's state lacks {missing or 'fields'}")
    return doc, arrays


def _restore_logger(model: Any, saved: dict[str, Any]) -> None:
    lg = model.logger
    for key, (value, kind) in saved["values"].items():
        lg.name_to_value[key] = getattr(np, kind)(value) if kind else value
    lg.name_to_count.update(saved["counts"])
    for key, ex in saved["excluded"].items():
        lg.name_to_excluded[key] = tuple(ex) if isinstance(ex, list) else ex


def _restore_buffer(model: Any, doc: dict[str, Any], arrays: dict[str, Any], path: Path) -> None:
    buf, saved = _buffer(model), doc.get("buffer")
    if buf is None or saved is None:
        return
    if not saveable_buffer(buf):
        raise RunFileError(f"{path}: a replay buffer of this kind is not restored")
    n = int(saved["rows"])
    for name in BUFFER_FIELDS:
        target, value = getattr(buf, name, None), arrays.get(f"buffer.{name}")
        if not isinstance(target, np.ndarray):
            continue
        if value is None or value.shape != (n, *target.shape[1:]) or n > target.shape[0]:
            raise RunFileError(f"{path}: its replay buffer's {name} does not fit this model's")
        target[:n] = value
    buf.pos, buf.full = int(saved["pos"]), bool(saved["full"])


def restore(
    model: Any, checkpoint: Path, identity: dict[str, Any], say: Callable[[str], None]
) -> Callable[[], None] | None:
    """Apply the checkpoint's state to `model` (built from the manifest, its weights and counters
    loaded); returns what restores the logger's pending values once the caller has set the
    logger, or None when the checkpoint has no state (then the resume is approximate)."""
    found = read_state(checkpoint, identity)
    if found is None:
        say(f"checkpoint {checkpoint.name} holds no generator or env state: resuming approximately")
        return None
    doc, arrays = found
    _restore_buffer(model, doc, arrays, checkpoint)  # checked before anything else is set
    n_ep = len(arrays.get("ep.r", ()))
    model.ep_info_buffer = deque(
        ({k: arrays[f"ep.{k}"][i] for k in ("r", "l", "t")} for i in range(n_ep)),
        maxlen=model._stats_window_size,
    )
    model.ep_success_buffer = deque(arrays["ep_success"], maxlen=model._stats_window_size)
    rng = doc["rng"]
    model.action_space.np_random.bit_generator.state = rng["action_space"]
    model.observation_space.np_random.bit_generator.state = rng["observation_space"]
    if doc.get("envs") is not None:
        from runner.trainers.sb3 import state_env

        if not state_env.restore(model, _vec_layers(model), doc["envs"], arrays):
            say(
                f"checkpoint {checkpoint.name}: the envs did not replay to their saved "
                "observations; resuming with fresh episodes (approximately)"
            )
    else:
        say(f"checkpoint {checkpoint.name} holds no env state: the envs restart their episodes")
    _restore_generators(rng, arrays)
    return lambda: _restore_logger(model, doc["logger"])


def _restore_generators(rng: dict[str, Any], arrays: dict[str, Any]) -> None:
    """Python's, NumPy's and torch's global generators, last: nothing after them draws."""
    import torch

    version, internal, gauss = rng["python"]
    random.setstate((version, tuple(internal), gauss))
    name, pos, has_gauss, cached = rng["numpy"]
    np.random.set_state((name, arrays["numpy_keys"], pos, has_gauss, cached))
    torch.set_rng_state(torch.from_numpy(arrays["torch_rng"].copy()))
    cuda = [arrays[k] for k in sorted(arrays, key=_device_order) if k.startswith("cuda_rng.")]
    if cuda and torch.cuda.is_available() and torch.cuda.device_count() == len(cuda):
        torch.cuda.set_rng_state_all([torch.from_numpy(a.copy()) for a in cuda])


def _device_order(key: str) -> int:
    return int(key.rpartition(".")[2]) if key.startswith("cuda_rng.") else -1
