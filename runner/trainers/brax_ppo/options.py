"""The brax_ppo trainer's `algo` options: Brax's PPO takes everything else as `ppo.train`'s own
keyword arguments in `algo.params`."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from runner.trainers.options import OnDevice


class BraxPPOOptions(OnDevice):
    """The brax_ppo trainer's options. `params` are `ppo.train`'s keyword arguments, plus
    `network` (keyword arguments of `make_ppo_networks`, e.g. hidden layer sizes)."""

    device: str = Field(
        "cpu",
        min_length=1,
        description="JAX's device: cpu pins JAX to the CPU (on a GPU machine too); cuda or auto "
        "leave JAX its own choice, its GPU where it has one.",
    )
    defaults: Literal["task"] | None = Field(
        None,
        description="task: start from the Brax PPO hyperparameters the env's task publishes "
        "(MuJoCo Playground's, for its environments: the ones its own training script uses), "
        "with their source recorded; num_timesteps -> train.timesteps, num_envs -> "
        "parallel.envs, episode_length and action_repeat -> env.kwargs, network_factory -> "
        "algo.params.network. Anything the manifest sets overrides it.",
    )
    INSTEAD: ClassVar[dict[str, str]] = {
        "normalize": "Brax's PPO normalizes observations itself: "
        "algo.params.normalize_observations: true",
        "policy": "Brax's PPO builds its own networks: size them with algo.params.network",
        "torch_threads": "Brax's PPO runs on JAX, not torch",
    }
