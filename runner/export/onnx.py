"""A Stable-Baselines3 unit's policy as ONNX (see `runner.export`): pick the unit, rebuild the
model from the run directory, trace it, and keep the file only if onnxruntime gives the model's
own answers on the check observations."""

from __future__ import annotations

import contextlib
import hashlib
import os
import warnings
from pathlib import Path
from typing import Any

from runner.errors import RunnerError, UserInputError
from runner.record.rundir import UnitRef

LAYOUTS = ("godot-rl", "sb3")
OPSET = 17
CHECK_SAMPLES = 256  # observations drawn from the observation space (infinite bounds: +-10)
TOLERANCE = 1e-4  # largest difference allowed between onnxruntime's numbers and torch's
ACTION_TOLERANCE = 1e-5  # a continuous action's largest difference from predict()'s
EPISODE_CAP = 2000  # steps of the replayed evaluation episode the check keeps at most


def pick_unit(run_dir: Path, variants: list[str], seeds: list[int], variant: str | None,
              seed: int | None) -> UnitRef:  # fmt: skip
    """The unit `--variant`/`--seed` name; either may be left out where the run has only one."""
    if variant is None:
        if len(variants) > 1:
            raise UserInputError(
                f"{run_dir} has {len(variants)} variants ({', '.join(variants)}); name one "
                "with --variant"
            )
        variant = variants[0]
    elif variant not in variants:
        raise UserInputError(f"--variant {variant}: {run_dir} has {', '.join(variants)}")
    if seed is None:
        seed = seeds[0]
    elif seed not in seeds:
        raise UserInputError(f"--seed {seed}: {run_dir} has seeds {', '.join(map(str, seeds))}")
    return UnitRef(variant, seed)


def export_unit(
    run_dir: Path,
    output: Path,
    *,
    variant: str | None = None,
    seed: int | None = None,
    layout: str | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Write the unit's policy to `output` (and what was checked to `output`.json); returns that
    record. Nothing is written unless the check passes; nothing is replaced unless `force`, and
    never a run's own file or anything but a regular file."""
    from runner.backends import get_backend
    from runner.manifest.resolved import read_resolved
    from runner.record.output import check_output
    from runner.trainers import trainer_name, trainer_of
    from runner.trainers.abilities import ExportsPolicy
    from runner.trainers.base import MODEL_FILE
    from runner.trainers.resume import check_final

    res = read_resolved(run_dir)
    unit = pick_unit(run_dir, list(res.variants), res.seeds, variant, seed)
    cfg = res.variants[unit.variant].config
    trainer = trainer_of(cfg)
    if not isinstance(trainer, ExportsPolicy):
        raise UserInputError(
            f"{unit.key}: export writes Stable-Baselines3 policies; this unit was trained by "
            f"the {trainer_name(cfg)} trainer"
        )
    layout = layout or get_backend(cfg.env.backend).TRAITS.export_layout
    if layout not in LAYOUTS:
        raise UserInputError(f"--layout {layout}: expected one of {', '.join(LAYOUTS)}")
    model_file = unit.dir(run_dir) / MODEL_FILE
    if not model_file.is_file():
        raise UserInputError(f"{model_file} is missing: the unit has not finished training")
    record_file = output.with_name(output.name + ".json")
    check_output(output, force=force)
    check_output(record_file, force=force, what="the export's record")
    _needs("onnx", "onnxruntime")
    check_final(unit.dir(run_dir))  # the model (and its statistics) as training left them
    model_sha256 = hashlib.sha256(model_file.read_bytes()).hexdigest()
    model, venv = trainer.export_model(cfg, unit.dir(run_dir), unit.seed)
    try:
        record = _export(model, venv, cfg, layout, output)
    finally:
        venv.close()
    record["unit"] = {
        "run": str(run_dir.resolve()),
        "variant": unit.variant,
        "seed": unit.seed,
        "model_sha256": model_sha256,
        "algo": cfg.algo.name,
        "env": f"{cfg.env.backend}:{cfg.env.id}",
    }
    from runner.record.output import write_failed
    from runner.record.rundir import write_json_atomic

    try:
        write_json_atomic(record_file, record)
    except OSError as exc:
        raise write_failed(record_file, exc) from None
    return record


def _needs(*modules: str) -> None:
    import importlib.util

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise UserInputError(
            f"export needs {' and '.join(missing)}, not installed here: pip install "
            "'rlcrate[export]'"
        )


def _normalization(venv: Any) -> tuple[Any, Any, float, float] | None:
    """VecNormalize's frozen observation statistics (mean, var, epsilon, clip), or None."""
    from stable_baselines3.common.vec_env import VecNormalize

    if not isinstance(venv, VecNormalize) or not venv.norm_obs:
        return None
    if isinstance(venv.obs_rms, dict):
        raise UserInputError(
            "export folds observation normalization of one array only; this model normalizes a "
            "dict of observations"
        )
    return venv.obs_rms.mean, venv.obs_rms.var, float(venv.epsilon), float(venv.clip_obs)


def _module(model: Any, venv: Any, layout: str, norm: tuple[Any, Any, float, float] | None) -> Any:
    """The policy as one torch module: raw observations in, the layout's outputs out."""
    import numpy as np
    import torch
    from gymnasium import spaces
    from stable_baselines3.common.policies import ActorCriticPolicy

    policy = model.policy
    if layout == "godot-rl" and not isinstance(policy, ActorCriticPolicy):
        raise UserInputError(
            f"--layout godot-rl: godot-rl's plugin runs actor-critic policies (PPO, A2C); this "
            f"is {type(model).__name__}: use --layout sb3"
        )
    if not isinstance(venv.observation_space, spaces.Box):
        raise UserInputError(
            "export takes one array of observations; this env's observations are "
            f"{type(venv.observation_space).__name__}"
        )
    action_space = venv.action_space

    class Policy(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.policy = policy
            if norm is not None:
                mean, var, eps, clip = norm
                self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32))
                self.register_buffer(
                    "scale", torch.as_tensor(np.sqrt(var + eps), dtype=torch.float32)
                )
                self.clip = clip

        def forward(self, obs: Any, state_ins: Any = None) -> Any:
            if norm is not None:
                obs = torch.clamp((obs - self.mean) / self.scale, -self.clip, self.clip)
            if layout == "godot-rl":
                features = self.policy.extract_features(obs)
                if isinstance(features, tuple):  # separate actor and critic extractors
                    features = features[0]
                latent = self.policy.mlp_extractor.forward_actor(features)
                return self.policy.action_net(latent), state_ins
            action = self.policy._predict(obs, deterministic=True)
            if isinstance(action_space, spaces.Box):  # what predict() does after _predict
                low = torch.as_tensor(action_space.low, dtype=torch.float32)
                high = torch.as_tensor(action_space.high, dtype=torch.float32)
                if self.policy.squash_output:
                    action = low + 0.5 * (action + 1.0) * (high - low)
                else:
                    action = torch.maximum(torch.minimum(action, high), low)
            return action

    return Policy().eval()


def _raw(venv: Any, obs: Any) -> Any:
    """The observation as the env gave it (VecNormalize keeps it: `get_original_obs`)."""
    import numpy as np

    with contextlib.suppress(AttributeError):
        obs = venv.get_original_obs()
    return np.asarray(obs, dtype=np.float32)


def _check_observations(model: Any, venv: Any) -> tuple[Any, int]:
    """The observations of the unit's first evaluation episode, replayed (the eval env's seed,
    the model's deterministic actions: the episode eval.json's first one is, on an env that is
    deterministic), then samples from the observation space; and how many are the episode's."""
    import numpy as np

    obs = venv.reset()
    episode = [_raw(venv, obs)]
    for _ in range(EPISODE_CAP - 1):
        action, _ = model.predict(obs, deterministic=True)
        obs, _, dones, _ = venv.step(action)
        if dones[0]:  # the VecEnv has reset: the next observation is another episode's
            break
        episode.append(_raw(venv, obs))
    space = venv.observation_space
    rng = np.random.default_rng(0)
    low = np.where(np.isfinite(space.low), space.low, -10.0)
    high = np.where(np.isfinite(space.high), space.high, 10.0)
    sampled = rng.uniform(low, high, size=(CHECK_SAMPLES, *space.shape)).astype(np.float32)
    return np.concatenate([*episode, sampled]), len(episode)


def _export(model: Any, venv: Any, cfg: Any, layout: str, output: Path) -> dict[str, Any]:
    import numpy as np
    import onnxruntime
    import torch
    from gymnasium import spaces

    from runner.record.output import write_failed

    norm = _normalization(venv)
    module = _module(model, venv, layout, norm)
    obs, replayed = _check_observations(model, venv)
    example = torch.as_tensor(obs[:1])
    if layout == "godot-rl":
        args: tuple[Any, ...] = (example, torch.zeros(1))
        names = (["obs", "state_ins"], ["output", "state_outs"])
        axes = {"obs": {0: "batch"}, "state_ins": {0: "batch"}, "output": {0: "batch"},
                "state_outs": {0: "batch"}}  # fmt: skip
    else:
        args, names = (example,), (["obs"], ["action"])
        axes = {"obs": {0: "batch"}, "action": {0: "batch"}}
    partial = output.with_name(f".{output.name}.{os.getpid()}.partial")
    try:
        try:
            output.parent.mkdir(parents=True, exist_ok=True)
            with warnings.catch_warnings():  # the TorchScript exporter (no onnxscript needed)
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    module, args, str(partial), dynamo=False, opset_version=OPSET,
                    input_names=names[0], output_names=names[1], dynamic_axes=axes,
                )  # fmt: skip
        except OSError as exc:
            raise write_failed(output, exc) from None
        session = onnxruntime.InferenceSession(str(partial), providers=["CPUExecutionProvider"])
        godot = layout == "godot-rl"
        feed = {"obs": obs} | ({"state_ins": np.zeros(len(obs), np.float32)} if godot else {})
        got = session.run(None, feed)[0]
        with torch.no_grad():
            inputs = [torch.as_tensor(obs)] + ([torch.zeros(len(obs))] if godot else [])
            want = module(*inputs)
        want = (want[0] if isinstance(want, tuple) else want).numpy()
        seen = venv.normalize_obs(obs) if norm is not None else obs  # what the model sees
        predicted, _ = model.predict(seen, deterministic=True)
        discrete = isinstance(venv.action_space, spaces.Discrete)
        actions = np.argmax(got, axis=-1) if godot and discrete else got  # the plugin's argmax
        diff = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
        agree, action_diff = _agreement(actions, predicted, venv.action_space, layout)
        if not (diff <= TOLERANCE and agree >= 1.0):  # NaN is no agreement
            raise RunnerError(
                f"the exported graph does not give the model's answers (largest difference "
                f"{diff:.2e}, actions agreeing {agree:.1%} on {len(obs)} observations); "
                "nothing written"
            )
        try:
            partial.replace(output)
        except OSError as exc:
            raise write_failed(output, exc) from None
    finally:
        partial.unlink(missing_ok=True)
    return {
        "format": "onnx",
        "layout": layout,
        "opset": OPSET,
        "inputs": names[0],
        "outputs": names[1],
        "observation_shape": list(venv.observation_space.shape),
        "action_space": str(venv.action_space),
        "normalization": "folded into the graph" if norm is not None else None,
        "check": {
            "observations": len(obs),
            "episode_observations": replayed,
            "largest_difference": diff,
            "tolerance": TOLERANCE,
            "actions_agreeing": agree,
            "largest_action_difference": action_diff,
            "action_tolerance": 0.0 if discrete else ACTION_TOLERANCE,
            "against": "onnxruntime vs torch, and the actions vs the model's predict()",
        },
        "onnxruntime": onnxruntime.__version__,
        "torch": torch.__version__,
    }


def _agreement(actions: Any, predicted: Any, space: Any, layout: str) -> tuple[float, float]:
    """The fraction of observations where the exported action is the model's own (a discrete
    action identical, a continuous one within ACTION_TOLERANCE), and the largest difference."""
    import numpy as np
    from gymnasium import spaces

    if layout == "godot-rl" and not isinstance(space, spaces.Discrete):
        low, high = space.low, space.high  # predict() clips the means into the space
        actions = np.clip(actions, low, high)
    a = np.asarray(actions).reshape(len(predicted), -1).astype(np.float64)
    b = np.asarray(predicted).reshape(len(predicted), -1).astype(np.float64)
    gap = np.abs(a - b)
    limit = ACTION_TOLERANCE if isinstance(space, spaces.Box) else 0.0
    return float(np.mean(np.all(gap <= limit, axis=1))), float(gap.max(initial=0.0))
