"""The sb3 trainer's `algo` options: the policy, VecNormalize, the torch device and threads, and
where tuned defaults come from."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from runner.manifest.schema import Manifest, Strict
from runner.trainers.base import options_of
from runner.trainers.options import TorchOptions


class NormalizeSpec(Strict):
    """SB3's VecNormalize: running mean/std of observations and of the discounted return
    (gamma is the algorithm's); saved beside the model, frozen for evaluation."""

    obs: bool = Field(True, description="Normalize observations (running mean and std).")
    reward: bool = Field(
        True,
        description="Scale rewards by the running std of the discounted return (training only).",
    )
    clip_obs: float = Field(10.0, gt=0, description="Normalized observations clipped to +-this.")
    clip_reward: float = Field(10.0, gt=0, description="Normalized rewards clipped to +-this.")
    epsilon: float = Field(1e-8, gt=0, description="Added to the variance before dividing.")


def _also_a_flag(schema: dict[str, Any]) -> None:
    """`normalize: true` and `false` are written as often as the mapping (`_normalize_flag`)."""
    schema["anyOf"] = [*schema.get("anyOf", []), {"type": "boolean"}]


class SB3Options(TorchOptions):
    """The sb3 trainer's options: every Stable-Baselines3 and sb3-contrib algorithm. `params`
    are the algorithm's constructor's keyword arguments; policy_kwargs names activation_fn and
    optimizer_class (ReLU, Tanh, Adam ...), net_arch as a list or {pi: [...], vf: [...]} /
    {pi: [...], qf: [...]}."""

    defaults: Literal["zoo", "task"] | None = Field(
        None,
        description="zoo: start from the hyperparameters the installed rl-zoo3 package publishes "
        "for this algorithm and env id (n_envs, n_timesteps, normalize, policy, policy_kwargs, "
        "schedules, the Atari wrapper). task (backend isaaclab): start from the agent config the "
        "Isaac Lab task registers for Stable-Baselines3 (sb3_cfg_entry_point), processed as "
        "Isaac Lab's own training script does. Anything the manifest sets overrides them.",
    )
    policy: str = Field("MlpPolicy", description="Policy name, e.g. MlpPolicy or CnnPolicy.")
    normalize: NormalizeSpec | None = Field(
        None,
        description="VecNormalize: true (observations and rewards), false/null (off), or a "
        "mapping {obs, reward, clip_obs, clip_reward, epsilon}.",
        json_schema_extra=_also_a_flag,
    )

    @field_validator("normalize", mode="before")
    @classmethod
    def _normalize_flag(cls, value: Any) -> Any:
        if value is True:
            return {}
        return None if value is False else value


def options(cfg: Manifest) -> SB3Options:
    """A config's algo as the sb3 trainer's options (what validation made of it)."""
    return options_of(cfg, SB3Options)
