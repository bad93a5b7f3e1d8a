"""What `rlcrate validate` adds after "ok": which checks only `--deep` makes, and (`--show`)
the resolved algorithm block with each value's source."""

from __future__ import annotations

import json
from typing import Any

from runner.manifest.resolved import ResolvedRun
from runner.manifest.schema import Manifest


def deep_note(m: Manifest) -> str:
    """One line: what plain validate did not check (names and types it did, from SB3's source)."""
    from runner.trainers import trainer_of

    extra = trainer_of(m).deep_only(m)
    also = f", and here {', '.join(extra)}" if extra else ""
    return (
        "building each variant's env and model (the device's presence, shapes, values only a "
        f"model checks{also}) needs `rlcrate validate --deep`"
    )


def _value(v: Any) -> str:
    return json.dumps(v, separators=(", ", ": "))


def show_lines(run: ResolvedRun) -> list[str]:
    """The resolved algo block, then the other values a source other than the manifest set."""
    sources, data = run.sources, run.dump()
    rows: list[tuple[str, Any]] = []
    for key, value in data["algo"].items():
        if key == "params":
            rows += [(f"algo.params.{k}", v) for k, v in value.items()]
        else:
            rows.append((f"algo.{key}", value))
    for path in sources:
        if not path.startswith("algo."):
            node: Any = data
            for part in path.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            rows.append((path, node))
    width = max(len(f"{k}: {_value(v)}") for k, v in rows)
    return [
        f"{(k + ': ' + _value(v)).ljust(width)}  # {sources.get(k, 'rlcrate default')}"
        for k, v in rows
    ]
