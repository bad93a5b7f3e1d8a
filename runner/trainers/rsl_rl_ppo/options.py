"""The rsl_rl_ppo trainer's `algo` options: RSL-RL takes everything else from the task's runner
configuration, which `algo.params` overrides."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from runner.trainers.options import TorchOptions


class RslRlPPOOptions(TorchOptions):
    """The rsl_rl_ppo trainer's options. `params` override the task's runner configuration,
    nested as it is (`num_steps_per_env: 16`, `algorithm: {learning_rate: 3.0e-4}`)."""

    defaults: Literal["task"] | None = Field(
        None,
        description="task: start from the runner configuration the Isaac Lab task registers "
        "for RSL-RL (rsl_rl_cfg_entry_point), as Isaac Lab's own training script does (the "
        "trainer starts from it in any case; this also takes its max_iterations as "
        "train.timesteps). Anything the manifest sets overrides it.",
    )
    INSTEAD: ClassVar[dict[str, str]] = {
        "normalize": "RSL-RL normalizes observations through its runner configuration "
        "(algo.params)",
        "policy": "RSL-RL's networks come from its runner configuration (algo.params)",
    }
