"""`algo`: the part every trainer shares (`AlgoSpec`), and the options each trainer owns.

As `env` is validated against the options model of the backend it names, `algo` is validated
against the options model of its trainer (the trainer's `Options`, a subclass of `AlgoSpec`):
the one `algo.trainer` names, else the one whose plugin declares that it trains `algo.name` by
default (`Trainer.ALGORITHMS`; rlcrate's own trainers are asked first). A field of another
trainer's options is an error at its line, naming the trainer that has it, and resolved.yaml
records only the chosen trainer's options. The trainers are found by entry point
(`runner.plugins`), so this module names none of them.
"""

from __future__ import annotations

import difflib
from typing import Any, ClassVar

from pydantic import Field, ValidationError, field_validator

from runner.manifest.options import Strict, key_problem, refuse, refuse_all, validate_options

DEFAULT_ALGO = "PPO"


class AlgoSpec(Strict):
    """The part of `algo` every trainer shares. Each trainer adds the options it owns in a
    model of its own (a subclass, the trainer's `Options`)."""

    name: str = Field(
        DEFAULT_ALGO,
        min_length=1,
        description="The algorithm: a Stable-Baselines3 or sb3-contrib algorithm class (PPO, "
        "SAC, ...; trainer sb3), brax_ppo (Brax's own PPO, backend brax), rsl_rl_ppo (RSL-RL's "
        "PPO, backend isaaclab), or one a trainer an installed package adds declares.",
    )
    trainer: str | None = Field(
        None,
        description="The training loop: sb3, brax_ppo, rsl_rl_ppo, or one an installed package "
        "adds (entry point rlcrate.trainers). Null: the trainer that declares it trains "
        "`name` by default.",
    )
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="The algorithm's own keyword arguments, as its trainer passes them on (sb3: "
        "the algorithm's constructor; brax_ppo: ppo.train; rsl_rl_ppo: the runner "
        "configuration). Schedules (learning_rate, clip_range, clip_range_vf, delta_std): "
        "lin_<value> or {schedule: linear, start, end}.",
    )
    # key -> what a manifest of this trainer writes instead of another trainer's option, said
    # where that option is refused (brax_ppo: normalize -> algo.params.normalize_observations)
    INSTEAD: ClassVar[dict[str, str]] = {}

    @field_validator("params")
    @classmethod
    def _schedules(cls, params: dict[str, Any]) -> dict[str, Any]:
        from runner.manifest.schedules import canonical_params

        return canonical_params(params)

    def compute_device(self) -> str:
        """Where the loop computes, as the manifest asks it (cpu, cuda, cuda:N, auto): a
        scheduler gives a `cuda` unit a GPU, and validate refuses one on a machine without.
        cpu for a trainer whose options name no device."""
        return "cpu"

    def threads(self) -> int:
        """CPU threads one unit's loop computes with (a scheduler reserves them): 1 unless the
        trainer's options say."""
        return 1

    def nondeterminism(self) -> str | None:
        """Why this loop's results need not repeat bitwise although the env does (a GPU, several
        threads summing in varying order); None when they do."""
        return None


def _trainer_class(name: str) -> Any:
    """The class the trainer plugin `name` names, or None when none has that name;
    UserInputError (one line naming its package) when it cannot be imported."""
    from runner import plugins

    plugin = plugins.find("trainer", name)
    return None if plugin is None else plugins.load("trainer", plugin)


def algo_model(trainer: str) -> type[AlgoSpec] | None:
    """The options model of the trainer `trainer` (found by entry point), or None when no
    trainer has that name."""
    from runner import plugins

    loaded = _trainer_class(trainer)
    if loaded is None:
        return None
    options = getattr(loaded, "Options", None) if isinstance(loaded, type) else None
    if not (isinstance(options, type) and issubclass(options, AlgoSpec)):
        plugin = plugins.find("trainer", trainer)
        assert plugin is not None  # it was just loaded
        raise plugins.not_a("trainer", plugin, "runner.trainers.base.Trainer (with its Options)")
    return options


def algo_models() -> dict[str, type[AlgoSpec]]:
    """Every trainer's options model that can be imported, by name."""
    from runner import plugins
    from runner.errors import UserInputError

    out = {}
    for name in plugins.names("trainer"):
        try:
            model = algo_model(name)
        except UserInputError:  # a broken package's trainer: its own line where it is named
            continue
        if model is not None:
            out[name] = model
    return out


def declared_algorithms(name: str) -> tuple[str, ...]:
    """The algorithms the trainer `name` declares it trains by default (none when its package
    is broken: its own line says so where a manifest names it)."""
    from runner.errors import UserInputError

    try:
        loaded = _trainer_class(name)
    except UserInputError:
        return ()
    found = getattr(loaded, "ALGORITHMS", ()) if isinstance(loaded, type) else ()
    return tuple(a for a in found if isinstance(a, str)) if isinstance(found, tuple) else ()


def default_trainer(algo: str) -> str | None:
    """The trainer that declares it trains `algo` by default: the first to, rlcrate's own (and
    those this process registered) before the installed packages'; None when none does. A
    package's module is imported only when no trainer before it declares `algo`."""
    from runner import plugins

    first = plugins.first_names("trainer")
    for name in first:
        if algo in declared_algorithms(name):
            return name
    for name in plugins.names("trainer"):  # the installed packages, read only now
        if name not in first and algo in declared_algorithms(name):
            return name
    return None


def unknown_algo(algo: str) -> str:
    """One sentence for an algorithm no trainer declares, with a suggestion."""
    from runner import plugins
    from runner.errors import did_you_mean

    known = list(dict.fromkeys(a for n in plugins.names("trainer") for a in declared_algorithms(n)))
    return (
        f"unknown algorithm {algo!r}{did_you_mean(algo, known)} (known: {', '.join(known)}; "
        "another algorithm needs its trainer named in algo.trainer)"
    )


def trainer_of_algo(value: dict[str, Any]) -> str | None:
    """The trainer an `algo` mapping names or implies; None when neither says (or an unknown
    algorithm)."""
    trainer = value.get("trainer")
    if isinstance(trainer, str) and trainer:
        return trainer
    name = value.get("name", DEFAULT_ALGO)
    return default_trainer(name) if trainer is None and isinstance(name, str) else None


def validate_algo(value: Any) -> AlgoSpec:
    """`value` (the algo mapping) as the options model of its trainer: every problem at once,
    a field of another trainer named as such (ValidationError)."""
    if isinstance(value, AlgoSpec):
        return value
    if not isinstance(value, dict):
        return AlgoSpec.model_validate(value)  # the base model says what is wrong
    trainer = trainer_of_algo(value)
    if trainer is None:
        name = value.get("name", DEFAULT_ALGO)
        if value.get("trainer") is not None or not isinstance(name, str) or not name:
            return AlgoSpec.model_validate(value)  # a wrong type: the base model says so
        raise _unknown_algo_problems(value, name)
    from runner import plugins
    from runner.errors import UserInputError

    try:
        model = algo_model(trainer)
    except UserInputError as exc:  # its package is broken: at algo.trainer's line
        raise refuse("AlgoSpec", ("trainer",), str(exc), trainer) from None
    if model is None:
        raise refuse("AlgoSpec", ("trainer",), plugins.unknown("trainer", trainer), trainer)
    found = model

    def unknown(key: str) -> str:
        return key_problem(key, trainer, "trainer", found, algo_models(), found.INSTEAD.get(key))

    return validate_options(model, value, unknown, "AlgoSpec")


def _unknown_algo_problems(value: dict[str, Any], name: str) -> ValidationError:
    """An algorithm no trainer declares: that, at algo.name, and every key no trainer has."""
    models = algo_models()
    owners: list[type[AlgoSpec]] = [AlgoSpec, *models.values()]
    fields = {f for m in owners for f in m.model_fields}
    problems: list[tuple[tuple[str, ...], str, Any]] = [(("name",), unknown_algo(name), name)]
    known = sorted(fields)
    for k, v in value.items():
        if k not in fields:
            close = difflib.get_close_matches(str(k), known, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            msg = f"unknown key{hint} (no trainer has it; their options: {', '.join(known)})"
            problems.append(((str(k),), msg, v))
    return refuse_all("AlgoSpec", problems)


def default_algo() -> AlgoSpec:
    """`algo` when a manifest leaves it out: the default algorithm's trainer's defaults."""
    return validate_algo({})
