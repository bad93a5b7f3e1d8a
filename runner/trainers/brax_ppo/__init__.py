"""Brax's own PPO (`brax.training.agents.ppo.train`), to the trainer contract in `base.py`.

`algo.params` are `ppo.train`'s keyword arguments, plus `network` (keyword arguments of
`make_ppo_networks`, e.g. hidden layer sizes). The runner supplies the env, `num_timesteps`
(train.timesteps), `num_envs` (parallel.envs), `seed` (the unit's model seed), `episode_length`
and `action_repeat` (env.kwargs.episode_length, env.action_repeat), and defaults `num_evals` to 0
(Brax's in-loop evaluation is replaced by the eval job) and `log_training_metrics` to true, whose
mean training-episode return goes to TensorBoard under REWARD_TAG as SB3's `ep_rew_mean` does.

model.zip holds the trained parameters (params.npz: arrays, no pickle) and what rebuilds the
policy (config.json).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import time
import zipfile
from pathlib import Path
from typing import Any, cast

from runner.backends.base import BRAX_ENV, JaxEnv
from runner.manifest.schema import Manifest
from runner.record.progress import Progress, write_progress
from runner.trainers.base import MODEL_FILE, REWARD_TAG, TB_DIR, Trainer, write_eval
from runner.trainers.brax_ppo.params import check_limits, check_params
from runner.trainers.resume import newest_readable, step_in_name

__all__ = [
    "BraxPPO",
    "ENV_INTERFACE",
    "bench",
    "check_limits",
    "check_params",
    "determinism_attempt",
    "deep_only",
    "dry_construct",
    "evaluate",
    "start_files",
    "train",
]

ENV_INTERFACE = BRAX_ENV  # Brax's own env (JAX), stepped inside the jitted loop
TAGS = {  # Brax's progress metric -> the TensorBoard tag SB3's trainer writes
    "episode/sum_reward": REWARD_TAG,
    "episode/length": "rollout/ep_len_mean",
    "episode/sps": "time/fps",
    "eval/episode_reward": "eval/mean_reward",
}


def _jax_platform(cfg: Manifest) -> None:
    """Pin JAX to the manifest's device before JAX starts (cpu stays cpu on a GPU machine)."""
    if cfg.algo.device == "cpu":
        os.environ.setdefault("JAX_PLATFORMS", "cpu")


def jax_env(cfg: Manifest) -> JaxEnv:
    """The unit's Brax env as its backend makes it for this loop (ENV_INTERFACE)."""
    from runner.backends import get_backend

    backend = get_backend(cfg.env.backend)
    return cast(JaxEnv, backend.make_env(cfg.env, cfg.parallel, interface=ENV_INTERFACE, seed=0))


def ppo_kwargs(
    cfg: Manifest, seeds: dict[str, int], task: JaxEnv
) -> tuple[dict[str, Any], dict[str, Any]]:
    params = dict(cfg.algo.params)
    network = dict(params.pop("network", {}) or {})
    kwargs: dict[str, Any] = {
        "num_evals": 0,
        "log_training_metrics": True,
        "episode_length": task.episode_length,
        "action_repeat": task.action_repeat,
        **params,
        "num_timesteps": cfg.train.timesteps,
        "num_envs": cfg.parallel.envs,
        "seed": seeds["model"],
    }
    return kwargs, network


def _networks(config: dict[str, Any]) -> Any:
    from brax.training.acme import running_statistics
    from brax.training.agents.ppo import networks as ppo_networks

    preprocess = (
        running_statistics.normalize
        if config["normalize_observations"]
        else (lambda obs, _params: obs)
    )
    return ppo_networks.make_ppo_networks(
        config["observation_size"],
        config["action_size"],
        preprocess_observations_fn=preprocess,
        **_tuples(config["network"]),
    )


PARAMS_MEMBER = "params.npz"
CONFIG_MEMBER = "config.json"


def save_params(path: Path, params: Any, config: dict[str, Any]) -> None:
    """model.zip: the parameters as named arrays (params.npz, one array per leaf, named by its
    path in the (normalizer, policy, value) tree) and config.json; atomically."""
    import io

    import jax
    import numpy as np

    leaves, _ = jax.tree_util.tree_flatten_with_path(params)
    buf = io.BytesIO()
    named = {jax.tree_util.keystr(k): np.asarray(v) for k, v in leaves}
    np.savez(buf, allow_pickle=False, **named)  # type: ignore[arg-type]  # numbers only
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{os.getpid()}.zip")
    try:
        with zipfile.ZipFile(tmp, "w") as z:
            z.writestr(PARAMS_MEMBER, buf.getvalue())
            z.writestr(CONFIG_MEMBER, json.dumps(config, indent=2))
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _template(config: dict[str, Any]) -> Any:
    """A (normalizer, policy, value) tree of the shapes `config` builds, to read arrays into."""
    import jax
    import jax.numpy as jnp
    from brax.training.acme import running_statistics, specs

    nets = _networks(config)
    key = jax.random.PRNGKey(0)
    size = config["observation_size"]
    obs = (
        {k: specs.Array(tuple(v)[-1:], jnp.dtype("float32")) for k, v in size.items()
         if not k.startswith("pixels/")}
        if isinstance(size, dict)
        else specs.Array((int(size),), jnp.dtype("float32"))
    )  # fmt: skip
    normalizer = running_statistics.init_state(obs)
    return (normalizer, nets.policy_network.init(key), nets.value_network.init(key))


def load_params(path: Path, config: dict[str, Any]) -> Any:
    """model.zip's parameters, as data: the zip's members checked first, the arrays read
    without pickles and fitted into the tree that `config` (built from the manifest, never
    read from the file) makes; RunFileError otherwise."""
    import io

    import jax
    import numpy as np

    from runner.errors import RunFileError
    from runner.record.datafiles import LegacyPickle, check_zip

    with contextlib.suppress(OSError, zipfile.BadZipFile), zipfile.ZipFile(path) as z:
        if "params.pkl" in z.namelist():
            raise LegacyPickle(path, "Brax parameters")
    check_zip(path, {PARAMS_MEMBER, CONFIG_MEMBER}, what="model")
    try:
        with zipfile.ZipFile(path) as z:
            data = z.read(PARAMS_MEMBER)
        with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
            saved = {name: arrays[name] for name in arrays.files}
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise RunFileError(f"{path}: its parameters are not readable as arrays ({exc})") from None
    # the tree's shapes only (jax.eval_shape): building it would run each initializer
    leaves, tree = jax.tree_util.tree_flatten_with_path(jax.eval_shape(lambda: _template(config)))
    out = []
    for keys, like in leaves:
        name = jax.tree_util.keystr(keys)
        arr = saved.pop(name, None)
        if arr is None or arr.shape != tuple(like.shape) or arr.dtype.kind not in "biuf":
            raise RunFileError(f"{path}: its parameter {name} is missing or not {like.shape}")
        out.append(arr)
    if saved:
        raise RunFileError(f"{path}: it holds parameters this network has not: {sorted(saved)[:3]}")
    return jax.tree_util.tree_unflatten(tree, out)


class _Progress:
    """progress_fn and policy_params_fn of ppo.train: TensorBoard, progress.json, checkpoints."""

    def __init__(self, cfg: Manifest, unit_dir: Path, config: dict[str, Any], done_before: int):
        from torch.utils.tensorboard import SummaryWriter

        self.cfg, self.unit_dir, self.config = cfg, unit_dir, config
        self.writer = SummaryWriter(str(unit_dir / TB_DIR))
        self.done_before, self.started, self.t0 = done_before, time.time(), time.perf_counter()
        self.latest: tuple[int, Any] | None = None
        every = cfg.train.checkpoint_every
        self.next_ckpt = (done_before // every + 1) * every if every else None

    def metrics(self, step: int, metrics: dict[str, Any]) -> None:
        step += self.done_before
        for name, tag in TAGS.items():
            if name in metrics:
                self.writer.add_scalar(tag, float(metrics[name]), step)
        self.writer.flush()
        rate = (step - self.done_before) / max(time.perf_counter() - self.t0, 1e-9)
        total = self.cfg.train.timesteps
        tick = Progress(steps=int(step), total=total, steps_per_s=float(rate), started=self.started)
        write_progress(self.unit_dir, tick)

    def params(self, step: int, make_policy: Any, params: Any) -> None:
        self.latest = (step + self.done_before, params)
        if self.next_ckpt is not None and self.latest[0] >= self.next_ckpt:
            self.checkpoint()
            self.next_ckpt += self.cfg.train.checkpoint_every

    def checkpoint(self) -> None:
        if self.latest is not None and self.latest[0] > self.done_before:
            step, params = self.latest
            save_params(self.unit_dir / "checkpoints" / f"step-{step}.zip", params, self.config)


def train(cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> dict[str, Any]:
    _jax_platform(cfg)
    from brax.training.agents.ppo import train as ppo

    task = jax_env(cfg)
    env = task.env
    kwargs, _ = ppo_kwargs(cfg, seeds, task)
    config = _config(cfg, env, seeds)
    done_before, restore = 0, None
    # the newest checkpoint that loads, falling back past damaged ones (as SB3's trainer does)
    start = newest_readable(
        unit_dir, lambda path: load_params(path, config), cfg.train.timesteps, steps_of=step_in_name
    )
    if start is not None:
        done_before, restore = start.steps_done, start.model
        kwargs["num_timesteps"] = max(cfg.train.timesteps - done_before, 1)
    progress = _Progress(cfg, unit_dir, config, done_before)
    t0 = time.perf_counter()
    try:
        _, params, _ = ppo.train(
            environment=env,
            network_factory=network_factory(config["network"]),
            progress_fn=progress.metrics,
            policy_params_fn=progress.params,
            restore_params=restore,
            **kwargs,
        )
    except KeyboardInterrupt:
        progress.checkpoint()
        raise
    finally:
        progress.writer.close()
    wall = time.perf_counter() - t0
    save_params(unit_dir / MODEL_FILE, params, config)
    steps = progress.latest[0] if progress.latest else done_before + kwargs["num_timesteps"]
    return {
        "timesteps_done": steps,
        "train_wall_time_s": wall,
        "train_started": progress.started,
        "train_steps_per_s": (steps - done_before) / wall if wall > 0 else 0.0,
        "resumed_from": done_before or None,
    }


def _config(cfg: Manifest, env: Any, seeds: dict[str, int]) -> dict[str, Any]:
    """What builds the policy's networks, from the manifest and its env (saved beside the
    parameters for people to read; loading builds it again, never reads it)."""
    from runner.backends.brax import observation_size

    params = dict(cfg.algo.params)
    network = dict(params.pop("network", {}) or {})
    return {
        "env": cfg.env.id, "observation_size": observation_size(env),
        "action_size": env.action_size, "network": network,
        "normalize_observations": bool(params.get("normalize_observations", False)),
    }  # fmt: skip


def network_factory(network: dict[str, Any]) -> Any:
    """`ppo.train`'s network_factory for the manifest's `network` sizes."""
    from brax.training.agents.ppo import networks as ppo_networks

    return functools.partial(ppo_networks.make_ppo_networks, **_tuples(network))


def _tuples(network: dict[str, Any]) -> dict[str, Any]:
    """Layer sizes come from YAML as lists; Flax wants tuples."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in network.items()}


def _episodes(cfg: Manifest, task: JaxEnv, policy: Any, seed: int) -> tuple[Any, Any, Any]:
    """Returns and lengths of `eval.episodes` independent episodes, each on one env with its own
    key from `seed` (run side by side with vmap; each is the same as run alone), and the joint
    positions and velocities (q, qd) of the state each agent step acted on, per episode and step
    (None for an env without a physics system): eval.video's frames are drawn from them. They
    are kept whether or not a video is asked for, so the compiled program, and with it every
    return, is the same either way."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from brax.envs.wrappers.training import EpisodeWrapper

    env = EpisodeWrapper(task.env, task.episode_length, task.action_repeat)
    steps = -(-task.episode_length // task.action_repeat)
    drawable = hasattr(task.env, "sys")

    def pose(state: Any) -> Any:
        return (state.pipeline_state.q, state.pipeline_state.qd) if drawable else None

    def one(key: Any) -> tuple[Any, Any, Any]:
        key_reset, key_act = jax.random.split(key)

        def body(carry: Any, _: Any) -> tuple[Any, Any]:
            state, key, ret, n, alive = carry
            key, k = jax.random.split(key)
            action, _ = policy(state.obs, k)
            nxt = env.step(state, action)
            carry = (nxt, key, ret + nxt.reward * alive, n + alive, alive * (1 - nxt.done))
            return carry, pose(state)  # the state this step acted on

        init = (env.reset(key_reset), key_act, 0.0, 0.0, 1.0)
        (_, _, ret, n, _), poses = jax.lax.scan(body, init, None, length=steps)
        return ret, n, poses

    keys = jax.random.split(jax.random.PRNGKey(seed), cfg.eval.episodes)
    returns, lengths, poses = jax.jit(jax.vmap(one))(keys)
    return (
        np.asarray(returns, dtype=np.float64),
        np.asarray(jnp.round(lengths), dtype=np.int64),
        None if poses is None else tuple(np.asarray(a) for a in poses),
    )


def evaluate(cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> dict[str, Any]:
    _jax_platform(cfg)
    from brax.training.agents.ppo import networks as ppo_networks

    model_path = unit_dir / MODEL_FILE
    if not model_path.exists():
        raise FileNotFoundError(f"{model_path} is missing; run the train job first")
    task = jax_env(cfg)  # made once: each making runs the physics system's setup again
    config = _config(cfg, task.env, seeds)
    params = load_params(model_path, config)
    make_policy = ppo_networks.make_inference_fn(_networks(config))
    policy = make_policy(params, deterministic=cfg.eval.deterministic)
    returns, lengths, poses = _episodes(cfg, task, policy, seeds["eval_env"])
    fields = write_eval(unit_dir, cfg, seeds["eval_env"], returns, lengths)
    if cfg.eval.video is not None:  # after eval.json: a video that fails keeps the eval
        _record_video(cfg, task, unit_dir, lengths, poses)
    return fields


def _record_video(cfg: Manifest, task: JaxEnv, unit_dir: Path, lengths: Any, poses: Any) -> None:
    """The first `eval.video.episodes` evaluation episodes, drawn from the states they kept: one
    frame per agent step, the state that step acted on (as every other backend's recordings)."""
    from runner.backends.brax.frames import DEFAULT_SIZE, Painter
    from runner.video.offline import record_episodes

    spec = cfg.eval.video
    assert spec is not None
    if poses is None:
        from runner.video.capture import VideoFailed

        msg = f"eval.video: {cfg.env.id} has no physics system to draw; eval.json is kept"
        raise VideoFailed(msg)
    w, h = spec.size or DEFAULT_SIZE
    painter = Painter(task.env.sys, (w, h))
    q, qd = poses
    try:
        record_episodes(
            (
                (painter.frame(q[i, t], qd[i, t]) for t in range(int(lengths[i])))
                for i in range(min(spec.episodes, len(lengths)))
            ),
            spec,
            unit_dir,
        )
    finally:
        painter.close()


def bench(cfg: Manifest, seeds: dict[str, int]) -> dict[str, Any]:
    """Env-only and training steps/s of Brax's own loop (see `brax_bench`)."""
    _jax_platform(cfg)
    from runner.trainers.brax_ppo.benchmark import bench as measure

    return measure(cfg, seeds)


def start_files(cfg: Manifest) -> list[str] | None:
    return None  # Brax's PPO starts from its own initialisation (no warm starts)


def dry_construct(cfg: Manifest) -> None:
    """The env, as its units make it; ppo.train builds its networks inside its jitted loop:
    what it asserts on first is checked by `check_limits`, and its params by `check_params`."""
    _jax_platform(cfg)
    jax_env(cfg)


def deep_only(cfg: Manifest) -> list[str]:
    return []  # check_params reads ppo.train's own signature: nothing more to build


def determinism_attempt(cfg: Manifest, seeds: dict[str, int], steps: int) -> dict[str, Any]:
    """Brax's loop runs jitted end to end (no step to watch from outside): the attempt trains
    about `steps` env steps (whole training steps of batch_size x unroll_length x
    num_minibatches) and is compared on its final parameters."""
    _jax_platform(cfg)
    import jax
    import numpy as np
    from brax.training.agents.ppo import train as ppo

    from runner.trainers.base import digest

    task = jax_env(cfg)
    kwargs, network = ppo_kwargs(cfg, seeds, task)
    kwargs["num_timesteps"] = steps
    trained = [0]
    t0 = time.perf_counter()
    _, params, _ = ppo.train(
        environment=task.env,
        network_factory=network_factory(network),
        policy_params_fn=lambda step, make_policy, params: trained.__setitem__(0, int(step)),
        **kwargs,
    )
    leaves = jax.tree_util.tree_leaves(jax.tree.map(np.asarray, params))
    return {
        "steps": [],
        "params": digest({str(i): leaf for i, leaf in enumerate(leaves)}),
        "env_steps": trained[0],
        "compares": f"the final parameters after {trained[0]} env steps",
        "seconds": time.perf_counter() - t0,
    }


class BraxPPO(Trainer):
    """Brax's own PPO, jitted end to end on Brax's env."""

    name = "brax_ppo"
    ENV_INTERFACE = BRAX_ENV

    # the hooks are this module's functions
    check_params = staticmethod(check_params)
    check_limits = staticmethod(check_limits)
    dry_construct = staticmethod(dry_construct)
    deep_only = staticmethod(deep_only)
    train = staticmethod(train)
    evaluate = staticmethod(evaluate)
    start_files = staticmethod(start_files)
    RECORDS_VIDEO = True  # drawn from the states its evaluation keeps (backends.brax.frames)
    determinism_attempt = staticmethod(determinism_attempt)
    bench = staticmethod(bench)
