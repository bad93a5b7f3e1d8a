"""Manifest: parse -> validate -> resolve (the checks that consult backends and trainers are
`runner.checks`). Only resolved, typed objects reach the jobs."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from runner.manifest.load import load_unchecked
from runner.manifest.matrix import Variant, apply_overrides, expand
from runner.manifest.resolved import (
    ResolvedRun,
    ResolvedVariant,
    parse_resolved,
    read_resolved,
)
from runner.manifest.resolved import resolve as resolved
from runner.manifest.schema import Manifest

SCHEMA_ID = "https://rlcrate.dev/schema/manifest-v1.json"

__all__ = [
    "Manifest",
    "ResolvedRun",
    "ResolvedVariant",
    "Variant",
    "apply_overrides",
    "expand",
    "load_unchecked",
    "json_schema",
    "parse_resolved",
    "read_resolved",
    "resolved",
]


def json_schema(
    backends: list[str] | None = None, trainers: list[str] | None = None
) -> dict[str, Any]:
    """The manifest's JSON Schema: its `env` one of the backends' options models, chosen by
    `backend`, and its `algo` one of the trainers' (`algo_variants`). `backends`, `trainers`:
    these only (default: every installed one)."""
    from typing import Annotated, Literal, Union

    from pydantic import Field, create_model

    from runner.manifest.algo import default_algo
    from runner.manifest.schema import env_model, env_models

    algo_help = Manifest.model_fields["algo"].description

    models = env_models() if backends is None else {n: env_model(n) for n in backends}
    variants = tuple(
        create_model(  # the same options, `backend` fixed to this one's name
            f"{name.title().replace('_', '')}Env",
            __base__=model,
            __doc__=model.__doc__,
            backend=(Literal[name], Field(description="Which backend makes the environments.")),  # type: ignore[arg-type]
        )
        for name, model in models.items()
        if model is not None
    )
    env: Any = Annotated[Union[variants], Field(discriminator="backend")]  # noqa: UP007
    algo: Any = Union[algo_variants(trainers)]  # noqa: UP007
    described = create_model(
        "Manifest",
        __base__=Manifest,
        __doc__=Manifest.__doc__,
        env=(env, Field(description=Manifest.model_fields["env"].description)),
        algo=(algo, Field(default_factory=default_algo, description=algo_help)),
    )
    schema = described.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMA_ID
    schema["title"] = "rlcrate manifest (format version 1)"
    return schema


def algo_variants(trainers: list[str] | None = None) -> tuple[type[BaseModel], ...]:
    """Each trainer's `algo` as the schema shows it: its options with `trainer` naming it, and
    (for a trainer that declares algorithms it trains by default) its options with `trainer`
    left out and `name` one of those algorithms."""
    from typing import Literal

    from pydantic import Field, create_model

    from runner.manifest.algo import DEFAULT_ALGO, algo_model, algo_models, declared_algorithms

    models = algo_models() if trainers is None else {n: algo_model(n) for n in trainers}
    out: list[type[BaseModel]] = []
    for name, model in models.items():
        if model is None:
            continue
        title = name.title().replace("_", "")
        named: Any = (Literal[name], Field(description=f"The {name} trainer."))
        out.append(
            create_model(f"{title}Algo", __base__=model, __doc__=model.__doc__, trainer=named)
        )
        algorithms = declared_algorithms(name)
        if not algorithms:
            continue
        default = DEFAULT_ALGO if DEFAULT_ALGO in algorithms else ...
        help = f"An algorithm the {name} trainer trains by default."
        by_name: Any = (Literal[algorithms], Field(default, description=help))
        left_out = (type(None), Field(None, description=f"Left out: the {name} trainer trains it."))
        out.append(
            create_model(
                f"{title}Algorithms",
                __base__=model,
                __doc__=model.__doc__,
                name=by_name,
                trainer=left_out,
            )
        )
    return tuple(out)
