"""The SB3 trainer's files, read as data: models and normalization statistics.

- A model or checkpoint zip is SB3's own `save` format, but it is never read with SB3's `load`:
  that unpickles (with cloud-pickle) every `:serialized:` entry of the zip's `data` member (the
  policy class, the spaces, the schedules), which runs whatever the file supplies. Instead the
  model is built from the manifest, as the unit built it (`make_model`), and only its weights
  are taken from the file: the `.pth` members through torch's restricted unpickler
  (`weights_only=True`), after the zip's member names and sizes are checked, and the training
  counters from `data` as plain JSON numbers. Nothing of `data`'s `:serialized:` entries is read.
- VecNormalize's statistics are arrays in `vecnormalize.npz` (`STATS_FILE`); the settings they
  are used with (clipping, epsilon, gamma) come from the manifest. An older run's
  `vecnormalize.pkl` (a pickle) is refused in one line, never loaded.
"""

from __future__ import annotations

import json
import pickle
import zipfile
from pathlib import Path
from typing import Any

from runner.errors import RunFileError
from runner.record.datafiles import (
    LegacyPickle,
    check_zip,
    read_npz,
    torch_load,
    write_npz_atomic,
)

STATS_FILE = "vecnormalize.npz"
LEGACY_STATS_FILE = "vecnormalize.pkl"
# What SB3's `save` writes, and nothing else, is accepted in a model zip.
_META = {"data", "_stable_baselines3_version", "system_info.txt", "pytorch_variables.pth"}
# The training counters a resumed model continues from: plain JSON numbers in `data`. Every
# other attribute (hyperparameters, spaces, schedules) comes from the manifest.
COUNTERS = {
    "num_timesteps": int,
    "_n_updates": int,
    "_episode_num": int,
    "_n_calls": int,  # DQN: when its target network is next updated
    "_current_progress_remaining": float,
    "exploration_rate": float,
}


def checkpoint_stats(checkpoint: Path) -> Path:
    """checkpoints/step-N.zip -> checkpoints/step-N.vecnormalize.npz"""
    return checkpoint.with_name(f"{checkpoint.stem}.{STATS_FILE}")


def legacy_stats(path: Path) -> Path:
    return path.with_name(path.name.replace(STATS_FILE, LEGACY_STATS_FILE))


# --- normalization statistics -----------------------------------------------------------------


def _rms_arrays(prefix: str, rms: Any) -> dict[str, Any]:
    if isinstance(rms, dict):  # a Dict observation space: one RunningMeanStd per key
        out: dict[str, Any] = {}
        for key, one in rms.items():
            out.update(_rms_arrays(f"{prefix}[{key}]", one))
        return out
    return {f"{prefix}.mean": rms.mean, f"{prefix}.var": rms.var, f"{prefix}.count": rms.count}


def save_stats(model: Any, path: Path) -> None:
    """The model's VecNormalize statistics as arrays, atomically; nothing when it has none."""
    env = model.get_vec_normalize_env()
    if env is not None:
        write_stats(env, path)


def write_stats(env: Any, path: Path) -> None:
    """A VecNormalize's running statistics (`obs_rms`, `ret_rms`) as STATS_FILE arrays. Also
    how statistics a person trusts (rl-zoo3's own vecnormalize.pkl, loaded by them) become
    what rlcrate reads."""
    write_npz_atomic(path, {**_rms_arrays("obs", env.obs_rms), **_rms_arrays("ret", env.ret_rms)})


def _restore_rms(arrays: dict[str, Any], prefix: str, rms: Any, path: Path) -> None:
    if isinstance(rms, dict):
        for key, one in rms.items():
            _restore_rms(arrays, f"{prefix}[{key}]", one, path)
        return
    mean, var, count = (arrays.get(f"{prefix}.{part}") for part in ("mean", "var", "count"))
    if mean is None or var is None or count is None:
        raise RunFileError(f"{path}: the normalization statistics have no {prefix} arrays")
    if mean.shape != rms.mean.shape or var.shape != rms.var.shape or count.shape != ():
        raise RunFileError(
            f"{path}: the normalization statistics are for {prefix} of shape {mean.shape}, "
            f"this env's are {rms.mean.shape}"
        )
    _check_moments(path, prefix, mean, var, count)
    rms.mean, rms.var = mean.astype(rms.mean.dtype), var.astype(rms.var.dtype)
    rms.count = float(count)


def _check_moments(path: Path, prefix: str, mean: Any, var: Any, count: Any) -> None:
    """Statistics a running mean and variance can have: finite numbers, variances and the count
    not negative (anything else normalizes every observation to NaN or a square root's error)."""
    import numpy as np

    arrays = {"mean": mean, "var": var, "count": count}
    for part, arr in arrays.items():
        if arr.dtype.kind not in "fiu":
            raise RunFileError(f"{path}: {prefix}.{part} holds {arr.dtype}, not numbers")
        if not np.all(np.isfinite(arr)):
            raise RunFileError(f"{path}: {prefix}.{part} holds NaN or infinite values")
    for part in ("var", "count"):
        if np.any(arrays[part] < 0):
            raise RunFileError(f"{path}: {prefix}.{part} holds negative values")


def require_stats(path: Path) -> None:
    """The model's statistics are on disk as data: an older run's pickle in their place is
    one line (LegacyPickle), no file at all FileNotFoundError."""
    if path.is_file():
        return
    if legacy_stats(path).is_file():
        raise LegacyPickle(legacy_stats(path), "normalization statistics")
    raise FileNotFoundError(f"{path} is missing: the normalization statistics of the model")


def restore_stats(env: Any, path: Path) -> None:
    """Continue from (or freeze) saved statistics: the running means, variances and counts,
    checked against the env's shapes."""
    require_stats(path)
    arrays = read_npz(path, what="normalization statistics")
    _restore_rms(arrays, "obs", env.obs_rms, path)
    _restore_rms(arrays, "ret", env.ret_rms, path)


# --- models -----------------------------------------------------------------------------------


def check_model_zip(model: Any, path: Path) -> None:
    """Before anything opens it: the members SB3 writes for this model, and no others."""
    states, _ = model._get_torch_save_params()
    check_zip(path, _META | {f"{name}.pth" for name in states}, what="model")


def saved_counters(path: Path) -> dict[str, Any]:
    """The training counters of an SB3 zip's `data` member, as plain JSON numbers (nothing in
    `data` is unpickled)."""
    try:
        with zipfile.ZipFile(path) as z:
            data = json.loads(z.read("data"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, RuntimeError) as exc:
        raise RunFileError(f"{path}: the model's data is not readable ({exc})") from None
    out = {}
    for key, kind in COUNTERS.items():
        value = data.get(key) if isinstance(data, dict) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = kind(value)
    return out


def load_weights(model: Any, path: Path, *, counters: bool) -> None:
    """Put the weights (and optimizer states) of the SB3 zip at `path` into `model`, which the
    manifest built; with `counters`, also its training counters (a resumed checkpoint).
    RunFileError when the file is not this model's."""
    from stable_baselines3.common.save_util import load_from_zip_file

    check_model_zip(model, path)
    states, variables = model._get_torch_save_params()
    try:
        _, params, tensors = load_from_zip_file(path, load_data=False, device=model.device)
    except (pickle.UnpicklingError, RuntimeError, ValueError, EOFError, OSError) as exc:
        raise RunFileError(
            f"{path}: the model's weights are not readable as tensors ({_first(exc)})"
        ) from None
    if set(params) != set(states):
        raise RunFileError(
            f"{path}: the model holds {sorted(params)}, this algorithm saves {sorted(states)}"
        )
    try:
        model.set_parameters(params, exact_match=True, device=model.device)
    except (RuntimeError, ValueError, KeyError) as exc:
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        raise RunFileError(
            f"{path}: its weights do not fit the network the manifest builds ({first})"
        ) from None
    for name in variables:
        value = (tensors or {}).get(name)
        if value is not None:
            _set_variable(model, name, value, path)
    if counters:
        for key, value in saved_counters(path).items():
            setattr(model, key, value)


def _set_variable(model: Any, name: str, value: Any, path: Path) -> None:
    """A torch variable SB3 keeps beside its state dicts (SAC's log_ent_coef), in place."""
    import torch

    target = model
    for part in name.split("."):
        target = getattr(target, part)
    if not isinstance(value, torch.Tensor) or value.shape != target.shape:
        raise RunFileError(f"{path}: its {name} is not a tensor of shape {tuple(target.shape)}")
    target.data = value.data.to(target.device)


def _first(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:200]


def peek_params(path: Path) -> dict[str, Any]:
    """The state dicts of an SB3 zip (for a warm start, which takes the policy only), through
    torch's restricted unpickler after the zip's members are checked."""
    check_zip(path, what="model")
    params: dict[str, Any] = {}
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            if name.endswith(".pth") and name != "pytorch_variables.pth":
                try:
                    with z.open(name) as f:
                        params[name[: -len(".pth")]] = torch_load(f)
                except (pickle.UnpicklingError, RuntimeError, ValueError, EOFError) as exc:
                    raise RunFileError(
                        f"{path}: its {name} is not readable as tensors ({_first(exc)})"
                    ) from None
    return params
