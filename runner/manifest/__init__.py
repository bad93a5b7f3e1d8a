"""Manifest: parse -> validate -> resolve (the checks that consult backends and trainers are
`runner.checks`). Only resolved, typed objects reach the jobs."""

from __future__ import annotations

import json
from typing import Any

from runner.manifest.load import load_unchecked
from runner.manifest.matrix import Variant, apply_overrides, expand, override_modes
from runner.manifest.schema import Manifest

SCHEMA_ID = "https://rlcrate.dev/schema/manifest-v1.json"

__all__ = [
    "Manifest",
    "Variant",
    "apply_overrides",
    "expand",
    "load_unchecked",
    "json_schema",
    "resolved",
]


def json_schema() -> dict[str, Any]:
    schema = Manifest.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMA_ID
    schema["title"] = "rlcrate manifest (format version 1)"
    return schema


def resolved(manifest: Manifest) -> dict[str, Any]:
    """The manifest with every default filled in and the matrix expanded into variants.

    Each variant records how its overrides were applied: `merge` for a mapping set over a
    mapping (the other keys kept), `replace` for everything else.
    """
    data = manifest.model_dump(mode="json")
    data["variants"] = {
        v.name: {
            "overrides": v.overrides,
            "override_modes": override_modes(manifest, v.overrides),
            "config": v.config.model_dump(mode="json", exclude={"matrix", "expect"}),
        }
        for v in expand(manifest)
        if v.config is not None
    }
    data["sources"] = dict(manifest._sources)
    return json.loads(json.dumps(data))
