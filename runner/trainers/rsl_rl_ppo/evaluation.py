"""rsl_rl_ppo's `evaluate`: `eval.episodes` episodes of the saved policy on one fresh env."""

from __future__ import annotations

from pathlib import Path

from runner.manifest.schema import Manifest
from runner.trainers.base import MODEL_FILE, write_eval
from runner.trainers.results import EvalResult
from runner.trainers.rsl_rl_ppo import _load, _runner, _setup


def evaluate(cfg: Manifest, unit_dir: Path, seeds: dict[str, int]) -> EvalResult:
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
