"""Manifest: parse -> validate -> resolve (the checks that consult backends and trainers are
`runner.checks`). Only resolved, typed objects reach the jobs."""

from __future__ import annotations

from typing import Any

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


def json_schema(backends: list[str] | None = None) -> dict[str, Any]:
    """The manifest's JSON Schema, its `env` one of the backends' options models, chosen by
    `backend` (`backends`: these backends' only; default: every installed one)."""
    from typing import Annotated, Literal, Union

    from pydantic import Field, create_model

    from runner.manifest.schema import env_model, env_models

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
    described = create_model(
        "Manifest",
        __base__=Manifest,
        __doc__=Manifest.__doc__,
        env=(env, Field(description=Manifest.model_fields["env"].description)),
    )
    schema = described.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMA_ID
    schema["title"] = "rlcrate manifest (format version 1)"
    return schema
