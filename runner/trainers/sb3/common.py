"""What train, eval and bench share: making the vector env and the algorithm."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.backends import get_backend
from runner.manifest.schema import Manifest, ParallelSpec
from runner.trainers.sb3.algos import ALGOS
from runner.trainers.sb3.options import options

if TYPE_CHECKING:
    from runner.backends.abilities import Video

# SB3's warning (PPO, and the algorithms derived from it) when batch_size does not divide the
# rollout buffer: a regular expression matched against the start of the message.
MINI_BATCH_ADVICE = "You have specified a mini-batch size"


def algo_class(name: str) -> Any:
    module, cls, _ = ALGOS[name]
    return getattr(importlib.import_module(module), cls)


def one_env(cfg: Manifest, mode: str | None = "dummy") -> ParallelSpec:
    """The smallest layout of the manifest's env, for one env's worth of work (evaluation, the
    dry construction): one env, or one process of a game with a fixed number of agents."""
    small = get_backend(cfg.env.backend).smallest_layout(cfg.env, cfg.parallel)
    return small.model_copy(update={"mode": mode})


def make_env(
    cfg: Manifest,
    *,
    seed: int,
    log_dir: Path | None = None,
    parallel: ParallelSpec | None = None,
    monitor: bool = True,
    stats: Path | None = None,
    training: bool = True,
    evaluation: bool = False,
) -> Any:
    """The manifest's VecEnv (wrapped in VecMonitor for episode statistics, then VecNormalize
    when `algo.normalize` asks); `parallel` overrides the manifest's (evaluation runs one
    in-process env). `stats`: normalization statistics to start from (evaluation: to freeze).
    `evaluation`: its episodes cut at their bound (`trainers.base.episode_bound`)."""
    from stable_baselines3.common.vec_env import VecMonitor

    from runner.trainers.base import episode_bound
    from runner.trainers.sb3.hyperparams import normalize_env

    backend = get_backend(cfg.env.backend)
    venv = backend.make_vec_env(cfg.env, parallel or cfg.parallel, seed=seed, log_dir=log_dir)
    if evaluation and venv.num_envs == 1 and (bound := episode_bound(cfg))[2]:
        from runner.trainers.sb3.episode_cap import EpisodeCap

        venv = EpisodeCap(venv, bound[0])
    venv = VecMonitor(venv) if monitor else venv
    try:
        return normalize_env(venv, cfg, stats=stats, training=training)
    except BaseException:
        venv.close()
        raise


def video_ability(cfg: Manifest) -> Video[Any]:
    """The config's backend as the `Video` ability (validate refused `eval.video` on one
    without it: `backends.base.video_problems`); UserInputError, one line, if it lacks it."""
    from runner.backends.abilities import Video
    from runner.backends.base import no_video
    from runner.errors import UserInputError

    backend = get_backend(cfg.env.backend)
    if not isinstance(backend, Video):
        raise UserInputError(no_video(backend)[0].message)
    return backend


def with_video_env(cfg: Manifest) -> Manifest:
    """`cfg` with its env as the backend renders it for `eval.video` (`Backend.video_env`)."""
    video = cfg.eval.video
    size = (video.size[0], video.size[1]) if video and video.size else None
    env = video_ability(cfg).video_env(cfg.env, size=size)
    return cfg.model_copy(update={"env": env})


def make_model(cfg: Manifest, venv: Any, *, seed: int | None, tb_dir: Path | None) -> Any:
    """The manifest's algorithm on `venv`, logging to TensorBoard in `tb_dir` (None: no logging).
    `seed` None: SB3 seeds nothing (neither the global generators nor `venv`)."""
    from stable_baselines3.common.logger import Logger, configure

    from runner.trainers.sb3.hyperparams import model_kwargs
    from runner.trainers.torch_startup import defer_dynamo

    defer_dynamo()  # building and stepping optimizers would import TorchDynamo: no unit uses it
    algo = options(cfg)
    cls = algo_class(algo.name)
    kwargs = model_kwargs(algo, venv.action_space)
    model = cls(algo.policy, venv, seed=seed, device=algo.device, verbose=0, **kwargs)
    # SB3's configure(None, ...) makes an empty $TMPDIR/SB3-<date> folder: a bare Logger does not
    logger = configure(str(tb_dir), ["tensorboard"]) if tb_dir is not None else Logger(None, [])
    model.set_logger(logger)
    return model


def load_model(
    cfg: Manifest, path: Path, venv: Any, *, seed: int | None, resume: bool = False
) -> Any:
    """The model saved at `path`, rebuilt from the manifest on `venv` and given the file's
    weights (`files.load_weights`: nothing in the file is unpickled); `resume`: also its
    training counters, and TensorBoard stays off until the caller sets a logger.

    A model rebuilt to act (evaluation, export: one env) never trains on its rollout buffer, so
    SB3's advice on a batch size that does not divide `n_steps x envs` there is not the user's
    (it would print around `rlcrate export`'s one line); a resumed one trains as it did."""
    import warnings

    from runner.trainers.sb3.files import load_weights

    with warnings.catch_warnings():
        if not resume:
            warnings.filterwarnings("ignore", MINI_BATCH_ADVICE, UserWarning)
        model = make_model(cfg, venv, seed=seed, tb_dir=None)
    load_weights(model, path, counters=resume)
    return model
