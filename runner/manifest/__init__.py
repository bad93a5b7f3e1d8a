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


def json_schema() -> dict[str, Any]:
    schema = Manifest.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMA_ID
    schema["title"] = "rlcrate manifest (format version 1)"
    return schema
