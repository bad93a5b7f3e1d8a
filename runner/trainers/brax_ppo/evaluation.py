"""brax_ppo's `evaluate`: `eval.episodes` independent episodes run side by side (vmap) under
jit, and `eval.video` drawn from the states they kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.backends.base import JaxEnv
from runner.manifest.schema import Manifest
from runner.trainers.base import MODEL_FILE, write_eval
from runner.trainers.brax_ppo import _jax_platform, jax_env
from runner.trainers.brax_ppo.model import _networks, load_params, model_config
from runner.trainers.results import EvalResult


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

    def pose(state: Any) -> Any:
        return task.pose(state) if task.pose is not None else None

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


def evaluate(cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> EvalResult:
    _jax_platform(cfg)
    from brax.training.agents.ppo import networks as ppo_networks

    model_path = unit_dir / MODEL_FILE
    if not model_path.exists():
        raise FileNotFoundError(f"{model_path} is missing; run the train job first")
    task = jax_env(cfg)  # made once: each making runs the physics system's setup again
    config = model_config(cfg, task)
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
    from runner.video.offline import record_episodes

    spec = cfg.eval.video
    assert spec is not None
    if poses is None or task.painter is None:  # no `pose`: nothing was kept to draw
        from runner.video.capture import VideoFailed

        msg = f"eval.video: {cfg.env.id} has no physics system to draw; eval.json is kept"
        raise VideoFailed(msg)
    painter = task.painter((spec.size[0], spec.size[1]) if spec.size else None)
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
