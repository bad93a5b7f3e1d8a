"""How two runs' manifests differ: every resolved field whose value is not the same, as
`field.path: A -> B` rows (the expanded variants are left out; the matrix itself is compared)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.report.markdown import md_table

MISSING = "(not set)"


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """{'algo': {'name': 'PPO'}} -> {'algo.name': 'PPO'}; lists and empty mappings are leaves."""
    if not isinstance(data, dict) or not data:
        return {prefix: data}
    out: dict[str, Any] = {}
    for key, value in data.items():
        out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def manifest_differences(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(field, value in A, value in B) for every resolved field that differs."""
    fa = flatten({k: v for k, v in a.items() if k != "variants"})
    fb = flatten({k: v for k, v in b.items() if k != "variants"})
    return [
        (path, fa.get(path, MISSING), fb.get(path, MISSING))
        for path in sorted(set(fa) | set(fb))
        if fa.get(path, MISSING) != fb.get(path, MISSING)
    ]


def _cell(value: Any) -> str:
    return value if value == MISSING else f"`{value}`"


def where_ran(run_dir: Path) -> str:
    """'in image TAG' or 'outside any image', from provenance.json."""
    from runner.record.provenance import read_provenance

    prov = read_provenance(run_dir)
    if prov is None:
        return "somewhere unrecorded (no readable provenance.json)"
    tag = prov.image.get("tag")
    return f"in image `{tag}`" if tag else "outside any image"


def diff_section(a: dict[str, Any], b: dict[str, Any], a_path: Path, b_path: Path) -> list[str]:
    out = ["## How the manifests differ", ""]
    out += [f"A ran {where_ran(a_path)}; B ran {where_ran(b_path)}.", ""]
    if not a or not b:
        missing = a_path if not a else b_path
        return out + [f"Not compared: {missing} has no readable resolved.yaml.", ""]
    rows = manifest_differences(a, b)
    if not rows:
        return out + ["The resolved manifests are identical.", ""]
    out += ["Every field of the resolved manifests (defaults filled in) that differs.", ""]
    return out + md_table(["field", "A", "B"], [[p, _cell(x), _cell(y)] for p, x, y in rows])
