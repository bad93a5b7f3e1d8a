"""RSL-RL's PPO (`OnPolicyRunner`) on Isaac Lab tasks, to the trainer contract in `base.py`.

It trains the way Isaac Lab's own `train_rsl_rl` workflow (isaaclab_rl.entrypoints) does: the
task's registered runner configuration (`rsl_rl_cfg_entry_point`), migrated for the installed
RSL-RL (`handle_deprecated_rsl_rl_cfg`), Isaac Lab's `RslRlVecEnvWrapper` with the config's
`clip_actions`, `OnPolicyRunner.learn` with its `init_at_random_ep_len`, on the task's device.

`algo.params` override the runner configuration, nested as it is (`num_steps_per_env: 16`,
`algorithm: {learning_rate: 3.0e-4}`, `actor: {hidden_dims: [64, 64]}`); a key the configuration
does not have is refused before any unit starts. The runner supplies `seed` (the unit's model
seed), `device` (the task's), and `max_iterations` (train.timesteps / (num_steps_per_env x
parallel.envs), rounded up).

RSL-RL's own logs (its TensorBoard tags against iterations, its model_<it>.pt) stay in
`rsl_rl/`; TB_DIR gets REWARD_TAG (the mean return of the last 100 training episodes, RSL-RL's
own `Train/mean_reward`) against env steps. model.zip and checkpoints/step-N.zip are RSL-RL's
`save` (a torch zip file).
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

from runner.backends.base import ISAACLAB_ENV
from runner.errors import FieldError, FieldProblem
from runner.manifest.schema import Manifest
from runner.record.checkpoint import CheckpointRecord, write_checkpoint_record
from runner.record.progress import Progress, write_progress
from runner.record.status import read_status
from runner.trainers.base import MODEL_FILE, REWARD_TAG, TB_DIR, Trainer, write_eval
from runner.trainers.resume import newest_readable, train_once

ENV_INTERFACE = ISAACLAB_ENV  # Isaac Lab's task env, which RSL-RL's wrapper takes as it is
ENTRY_POINT = "rsl_rl_cfg_entry_point"
RUNNER_SUPPLIED = ("seed", "device", "max_iterations", "load_run", "load_checkpoint", "resume")
LOG_DIR = "rsl_rl"


def agent_cfg(cfg: Manifest, seed: int, device: str) -> Any:
    """The task's runner configuration with algo.params applied, for the installed RSL-RL."""
    from isaaclab_rl.rsl_rl import check_rsl_rl_version, handle_deprecated_rsl_rl_cfg
    from isaaclab_tasks.utils.parse_cfg import load_cfg_from_registry

    try:
        agent = load_cfg_from_registry(cfg.env.id, ENTRY_POINT)
    except ValueError:
        raise FieldError(
            ("algo", "name"), f"{cfg.env.id} registers no RSL-RL configuration ({ENTRY_POINT})"
        ) from None
    agent = getattr(agent, "default", agent)  # a preset family: its default member
    apply_params(agent, cfg.algo.params, ("algo", "params"))
    agent.seed, agent.device = seed, device
    return handle_deprecated_rsl_rl_cfg(agent, check_rsl_rl_version())


def apply_params(node: Any, params: dict[str, Any], at: tuple[str, ...]) -> None:
    """Set nested keys on the configuration; a key it does not have is a FieldError."""
    for key, value in params.items():
        where = (*at, key)
        if len(at) == 2 and key in RUNNER_SUPPLIED:
            raise FieldError(where, f"'{key}' is set by the runner from the manifest")
        if not hasattr(node, key) or key.startswith("_"):
            raise FieldError(where, f"RSL-RL's runner configuration has no '{'.'.join(where[2:])}'")
        current = getattr(node, key)
        if isinstance(value, dict) and hasattr(current, "__dataclass_fields__"):
            apply_params(current, value, where)
        else:
            setattr(node, key, value)


def config_problem(cfg: Manifest) -> tuple[tuple[str, ...], str] | None:
    """(field, message) when the runner configuration refuses algo.params; None when it takes
    them (the dry construction asks before any unit starts)."""
    import isaaclab_tasks  # noqa: F401  (registers the tasks)

    try:
        agent_cfg(cfg, 0, "cpu")
    except FieldError as exc:
        return tuple(str(p) for p in exc.path), exc.message
    return None


def iteration_steps(agent: Any, n_envs: int) -> int:
    return int(agent.num_steps_per_env) * n_envs


def _setup(cfg: Manifest, unit_dir: Path | None, n_envs: int, seed: int, seeds: dict[str, int]):
    """(wrapped env, agent config, end): the task launched and wrapped for RSL-RL."""
    from isaaclab_rl.rsl_rl import RslRlVecEnvWrapper

    from runner.backends import get_backend

    parallel = cfg.parallel.model_copy(update={"envs": n_envs})
    backend = get_backend(cfg.env.backend)
    base, end = backend.make_env(
        cfg.env, parallel, interface=ENV_INTERFACE, seed=seed, log_dir=unit_dir
    )
    try:
        device = str(base.unwrapped.device)
        agent = agent_cfg(cfg, seeds["model"], device)
        return RslRlVecEnvWrapper(base, clip_actions=agent.clip_actions), agent, end
    except BaseException:
        base.close()
        end()
        raise


def _runner(env: Any, agent: Any, log_dir: Path | None) -> Any:
    from isaaclab.utils import to_dict
    from rsl_rl.runners import OnPolicyRunner

    from runner.trainers.torch_startup import defer_dynamo

    defer_dynamo()  # its optimizer's first step would import TorchDynamo, unused unless compiling
    return OnPolicyRunner(
        env, to_dict(agent), log_dir=str(log_dir) if log_dir else None, device=agent.device
    )


def save(runner: Any, path: Path, iterations: int, steps: int, wall_s: float) -> None:
    """RSL-RL's own save, written atomically; with step-N.json beside a checkpoint."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{os.getpid()}.zip")
    runner.current_learning_iteration = iterations
    try:
        runner.save(str(tmp), infos={"timesteps": steps, "train_wall_time_s": wall_s})
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if path.parent.name == "checkpoints":
        write_checkpoint_record(path, CheckpointRecord(timesteps=steps, train_wall_time_s=wall_s))


class _Hooks:
    """After each of RSL-RL's iterations: TensorBoard by env steps, progress.json, checkpoints."""

    def __init__(self, cfg: Manifest, unit_dir: Path, runner: Any, batch: int, done: tuple):
        from torch.utils.tensorboard import SummaryWriter

        self.cfg, self.unit_dir, self.runner, self.batch = cfg, unit_dir, runner, batch
        self.iters_before, self.wall_before = done
        self.iters = self.iters_before
        tb = unit_dir / TB_DIR
        self.writer = SummaryWriter(str(tb / f"resumed-{self.steps}" if self.iters else tb))
        self.started, self.t0 = time.time(), time.perf_counter()
        every = cfg.train.checkpoint_every
        self.next_ckpt = (self.steps // every + 1) * every if every else None
        original = runner.logger.log

        def log(*args: Any, **kwargs: Any) -> None:
            original(*args, **kwargs)
            self.iteration(int(kwargs["it"]))

        runner.logger.log = log

    @property
    def steps(self) -> int:
        return self.iters * self.batch

    def wall(self) -> float:
        return self.wall_before + time.perf_counter() - self.t0

    def iteration(self, it: int) -> None:
        import statistics

        self.iters = it + 1
        logger, steps = self.runner.logger, self.steps
        if logger.rewbuffer:
            self.writer.add_scalar(REWARD_TAG, statistics.mean(logger.rewbuffer), steps)
            self.writer.add_scalar("rollout/ep_len_mean", statistics.mean(logger.lenbuffer), steps)
        rate = (steps - self.iters_before * self.batch) / max(time.perf_counter() - self.t0, 1e-9)
        self.writer.add_scalar("time/fps", rate, steps)
        self.writer.flush()
        total = self.cfg.train.timesteps
        tick = Progress(steps=steps, total=total, steps_per_s=rate, started=self.started)
        write_progress(self.unit_dir, tick)
        if self.next_ckpt is not None and steps >= self.next_ckpt:
            self.checkpoint()
            self.next_ckpt = (steps // self.cfg.train.checkpoint_every + 1) * (
                self.cfg.train.checkpoint_every
            )

    def checkpoint(self) -> None:
        if self.iters > self.iters_before:
            path = self.unit_dir / "checkpoints" / f"step-{self.steps}.zip"
            save(self.runner, path, self.iters, self.steps, self.wall())


def _saved(path: Path, device: str = "cpu") -> dict[str, Any]:
    """An RSL-RL save of this trainer as data: torch's restricted unpickler (RSL-RL's own
    `runner.load` unpickles anything), and the keys its PPO saves."""
    from runner.errors import RunFileError
    from runner.record.datafiles import torch_load

    saved = torch_load(path, map_location=device)
    if not isinstance(saved, dict) or not {"actor_state_dict", "iter"} <= set(saved):
        raise RunFileError(f"{path}: not an RSL-RL PPO save (no actor_state_dict and iter)")
    return saved


def _load(runner: Any, path: Path, device: str) -> dict[str, Any]:
    """Put a save's models, optimizer and iteration into `runner`, as RSL-RL's `load` does."""
    saved = _saved(path, device)
    if runner.alg.load(saved, None, True):
        runner.current_learning_iteration = saved["iter"]
    infos = saved.get("infos")
    return dict(infos) if isinstance(infos, dict) else {}


def train(cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> dict[str, Any]:
    """Train one unit (continuing from its newest readable checkpoint); TRAIN_FIELDS."""

    def final_ok(path: Path) -> None:
        _saved(path)

    budget = cfg.train.timesteps
    return train_once(
        unit_dir, budget, lambda: _train(cfg, unit_dir, seeds), final_ok, steps_of=saved_steps
    )


def saved_steps(path: Path) -> int | None:
    """The env steps an RSL-RL save of this trainer says it trained (its `infos`); None when the
    file is not one."""
    try:
        infos = _saved(path).get("infos") or {}
    except Exception:  # a damaged or foreign file fails in many ways (zip, torch, RunFileError)
        return None
    steps = infos.get("timesteps") if isinstance(infos, dict) else None
    return steps if isinstance(steps, int) and not isinstance(steps, bool) and steps >= 0 else None


def _train(cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> dict[str, Any]:
    env, agent, end = _setup(cfg, unit_dir, cfg.parallel.envs, seeds["env"], seeds)
    try:
        runner = _runner(env, agent, unit_dir / LOG_DIR)
        batch = iteration_steps(agent, cfg.parallel.envs)
        total_iters = max(1, math.ceil(cfg.train.timesteps / batch))
        start = newest_readable(
            unit_dir,
            lambda p: _load(runner, p, agent.device),
            cfg.train.timesteps,
            steps_of=saved_steps,
        )
        before = (start.steps_done // batch, start.wall_before_s) if start else (0, 0.0)
        runner.current_learning_iteration = before[0]
        hooks = _Hooks(cfg, unit_dir, runner, batch, before)
        try:
            runner.learn(
                num_learning_iterations=max(total_iters - before[0], 0),
                init_at_random_ep_len=agent.init_at_random_ep_len,
            )
        except KeyboardInterrupt:
            hooks.checkpoint()
            raise
        finally:
            hooks.writer.close()
            _close_own_writer(runner)
        return _finish(cfg, unit_dir, runner, hooks, before[0] * batch)
    finally:
        env.close()
        end()


def _close_own_writer(runner: Any) -> None:
    """Close RSL-RL's own TensorBoard writer (its runner leaves it open, flushing every 10 s)."""
    writer = getattr(getattr(runner, "logger", None), "writer", None)
    if writer is not None and hasattr(writer, "close"):
        writer.close()


def _finish(cfg: Manifest, unit_dir: Path, runner: Any, hooks: _Hooks, before: int) -> dict:
    """model.zip, the last progress.json and the train job's status fields."""
    wall, steps = hooks.wall(), hooks.steps
    save(runner, unit_dir / MODEL_FILE, hooks.iters, steps, wall)
    rate = steps / wall if wall > 0 else 0.0
    final = Progress(steps=steps, total=cfg.train.timesteps, finished=True, steps_per_s=rate,
                     started=hooks.started)  # fmt: skip
    write_progress(unit_dir, final)
    resumes = read_status(unit_dir).resumes + ([before] if before else [])
    return {
        "timesteps_done": steps,
        "train_wall_time_s": wall,
        "train_started": hooks.started,
        "train_steps_per_s": rate,
        "resumed_from": before or None,
        "resumes": resumes,
    }


def evaluate(cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> dict[str, Any]:
    """`eval.episodes` episodes of the saved policy on one fresh env seeded `eval_env`."""
    import torch

    model_path = unit_dir / MODEL_FILE
    if not model_path.exists():
        raise FileNotFoundError(f"{model_path} is missing; run the train job first")
    env, agent, end = _setup(cfg, unit_dir / "eval-logs", 1, seeds["eval_env"], seeds)
    try:
        runner = _runner(env, agent, None)
        _load(runner, model_path, agent.device)
        policy = runner.get_inference_policy(device=agent.device)
        returns: list[float] = []
        lengths: list[int] = []
        ret, n, obs = 0.0, 0, env.get_observations()
        with torch.inference_mode():
            while len(returns) < cfg.eval.episodes:
                actions = policy(obs, stochastic_output=not cfg.eval.deterministic)
                obs, rewards, dones, _ = env.step(actions)
                policy.reset(dones)
                ret, n = ret + float(rewards[0]), n + 1
                if bool(dones[0]):
                    returns.append(ret)
                    lengths.append(n)
                    ret, n = 0.0, 0
    finally:
        env.close()
        end()
    return write_eval(unit_dir, cfg, seeds["eval_env"], returns, lengths)


def bench(cfg: Manifest, seeds: dict[str, int]) -> dict[str, Any]:
    """Env-only and training steps/s of RSL-RL's own loop (see `benchmark`)."""
    from runner.trainers.rsl_rl_ppo.benchmark import bench as measure

    return measure(cfg, seeds)


def check_params(cfg: Manifest, action_kind: str | None) -> list[FieldProblem]:
    """What the runner supplies is refused here; every other key is the task's runner config,
    which only Isaac Lab's Python can read (`dry_construct`, before any unit starts)."""
    return [
        FieldProblem(("algo", "params", key), f"'{key}' is set by the runner from the manifest")
        for key in cfg.algo.params
        if key in RUNNER_SUPPLIED
    ]


def check_limits(cfg: Manifest) -> list[FieldProblem]:
    if cfg.algo.normalize is not None:
        msg = (
            f"normalize applies to Stable-Baselines3 algorithms; {cfg.algo.name} has its own loop "
            "(RSL-RL's runner config has its own obs_normalization)"
        )
        return [FieldProblem(("algo", "normalize"), msg)]
    return []


def start_files(cfg: Manifest) -> list[str] | None:
    return None  # RSL-RL's runner starts from its own initialisation (no warm starts)


def dry_construct(cfg: Manifest) -> None:
    """The task launched with one env, as a unit launches it, and its runner configuration
    taking algo.params (FieldError naming the key if not); the policy itself is built by
    OnPolicyRunner inside training."""
    from runner.backends import get_backend
    from runner.trainers.torch_startup import device_problem

    problem = device_problem(cfg.algo.device)
    if problem:
        raise FieldError(("algo", "device"), problem)
    one = cfg.parallel.model_copy(update={"envs": 1})
    backend = get_backend(cfg.env.backend)
    base, end = backend.make_env(cfg.env, one, interface=ENV_INTERFACE, seed=0)
    try:
        import isaaclab_tasks  # noqa: F401  (registers the tasks)

        agent_cfg(cfg, 0, "cpu")
    finally:
        base.close()
        end()


def deep_only(cfg: Manifest) -> list[str]:
    return ["the task's runner configuration (algo.params)"]  # read in Isaac Lab's Python


def determinism_attempt(cfg: Manifest, seeds: dict[str, int], steps: int) -> dict[str, Any]:
    """RSL-RL's learn runs whole iterations with no step to watch from outside: the attempt
    trains about `steps` env steps (whole iterations) and is compared on its final parameters."""
    import torch

    from runner.trainers.base import digest

    env, agent, end = _setup(cfg, None, cfg.parallel.envs, seeds["env"], seeds)
    t0 = time.perf_counter()
    try:
        runner = _runner(env, agent, None)
        batch = iteration_steps(agent, cfg.parallel.envs)
        iters = max(1, math.ceil(steps / batch))
        # as the unit trains (its random first episode lengths come from the seeded torch RNG)
        runner.learn(
            num_learning_iterations=iters, init_at_random_ep_len=agent.init_at_random_ep_len
        )
        # RSL-RL's own save: each model's state dict (actor, critic; RND's when configured)
        params = {
            f"{part}/{key}": value.detach().cpu().numpy()
            for part, state in runner.alg.save().items()
            if "optimizer" not in part
            for key, value in state.items()
            if torch.is_tensor(value)
        }
    finally:
        env.close()
        end()
    return {
        "steps": [],
        "params": digest(params),
        "env_steps": iters * batch,
        "compares": f"the final parameters after {iters * batch} env steps",
        "seconds": time.perf_counter() - t0,
    }


class RslRlPPO(Trainer):
    """RSL-RL's PPO on an Isaac Lab task, as Isaac Lab's own training script runs it."""

    name = "rsl_rl_ppo"
    ENV_INTERFACE = ISAACLAB_ENV
    QUICK_EXIT = True  # _train closes both TensorBoard writers; every env is closed and ended

    # the hooks are this module's functions
    check_params = staticmethod(check_params)
    check_limits = staticmethod(check_limits)
    dry_construct = staticmethod(dry_construct)
    deep_only = staticmethod(deep_only)
    train = staticmethod(train)
    evaluate = staticmethod(evaluate)
    start_files = staticmethod(start_files)
    determinism_attempt = staticmethod(determinism_attempt)
    bench = staticmethod(bench)
