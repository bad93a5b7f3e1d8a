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
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.backends.base import BATCHED_TORCH_ENV
from runner.errors import FieldError, FieldProblem
from runner.manifest.schema import Manifest
from runner.trainers.abilities import CountsSteps
from runner.trainers.base import Trainer
from runner.trainers.results import BenchResult, DeterminismAttempt, EvalResult, TrainResult
from runner.trainers.rsl_rl_ppo.options import RslRlPPOOptions

# a batched torch env of Isaac Lab's API, which RSL-RL's wrapper (isaaclab_rl's) takes as it is
ENV_INTERFACE = BATCHED_TORCH_ENV
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


def _setup(
    cfg: Manifest, unit_dir: Path | None, n_envs: int, seed: int, seeds: dict[str, int]
) -> tuple[Any, Any, Callable[[], None]]:
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


def saved_steps(path: Path) -> int | None:
    """The env steps an RSL-RL save of this trainer says it trained (its `infos`); None when the
    file is not one."""
    try:
        infos = _saved(path).get("infos") or {}
    except Exception:  # a damaged or foreign file fails in many ways (zip, torch, RunFileError)
        return None
    steps = infos.get("timesteps") if isinstance(infos, dict) else None
    return steps if isinstance(steps, int) and not isinstance(steps, bool) and steps >= 0 else None


def determinism_attempt(cfg: Manifest, seeds: dict[str, int], steps: int) -> DeterminismAttempt:
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
    return DeterminismAttempt(
        steps=[],
        params=digest(params),
        env_steps=iters * batch,
        compares=f"the final parameters after {iters * batch} env steps",
        seconds=time.perf_counter() - t0,
    )


class RslRlPPO(Trainer[RslRlPPOOptions], CountsSteps):
    """RSL-RL's PPO on a batched torch env (Isaac Lab's tasks), as Isaac Lab's own training
    script runs it."""

    name = "rsl_rl_ppo"
    Options = RslRlPPOOptions
    ALGORITHMS = ("rsl_rl_ppo",)
    ENV_INTERFACE = ENV_INTERFACE
    QUICK_EXIT = True  # training closes both TensorBoard writers; every env is closed and ended

    def check_params(self, cfg: Manifest, action_kind: str | None) -> list[FieldProblem]:
        """What the runner supplies is refused here; every other key is the task's runner
        config, which only Isaac Lab's Python can read (`dry_construct`, before any unit
        starts)."""
        return [
            FieldProblem(("algo", "params", key), f"'{key}' is set by the runner from the manifest")
            for key in cfg.algo.params
            if key in RUNNER_SUPPLIED
        ]

    def check_limits(self, cfg: Manifest) -> list[FieldProblem]:
        return []  # RSL-RL's own limits are its runner configuration's (`dry_construct`)

    def dry_construct(self, cfg: Manifest) -> None:
        """The task launched with one env, as a unit launches it, and its runner configuration
        taking algo.params (FieldError naming the key if not); the policy itself is built by
        OnPolicyRunner inside training."""
        from runner.backends import get_backend
        from runner.trainers.torch_startup import device_problem

        problem = device_problem(self.options(cfg).device)
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

    def deep_only(self, cfg: Manifest) -> list[str]:
        return ["the task's runner configuration (algo.params)"]  # read in Isaac Lab's Python

    def train(self, cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> TrainResult:
        """Train one unit (continuing from its newest readable checkpoint)."""
        from runner.trainers.rsl_rl_ppo.training import train

        return train(cfg, unit_dir, seeds)

    def evaluate(self, cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> EvalResult:
        from runner.trainers.rsl_rl_ppo.evaluation import evaluate

        return evaluate(cfg, unit_dir, seeds)

    def saved_steps(self, path: Path) -> int | None:
        return saved_steps(path)

    def determinism_attempt(
        self, cfg: Manifest, seeds: dict[str, int], steps: int
    ) -> DeterminismAttempt:
        return determinism_attempt(cfg, seeds, steps)

    def bench(self, cfg: Manifest, seeds: dict[str, int]) -> BenchResult:
        """Env-only and training steps/s of RSL-RL's own loop (see `benchmark`)."""
        from runner.trainers.rsl_rl_ppo.benchmark import bench as measure

        return measure(cfg, seeds)
