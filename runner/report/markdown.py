"""Markdown building blocks: number formatting, tables, and writing a .md file atomically."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def fmt(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "–"
    return f"{x:.{digits}g}" if abs(x) < 10**digits else f"{x:,.0f}"


def _finite(x: Any) -> bool:
    return x is not None and bool(np.isfinite(x))


def mean_pm(mean: Any, std: Any, n: int) -> str:
    """`m ± s` over n values; one value is shown as such (no `± 0`), none as `–`."""
    if n == 0 or not _finite(mean):
        return "–"
    return f"{fmt(mean)} (1 seed)" if n == 1 else f"{fmt(mean)} ± {fmt(std)}"


def with_ci(point: Any, low: Any, high: Any, n: int) -> str:
    """`p [low, high]`; a single value has no interval worth printing."""
    if n == 0 or not _finite(point):
        return "–"
    return f"{fmt(point)} (1 seed, no CI)" if n == 1 else f"{fmt(point)} [{fmt(low)}, {fmt(high)}]"


def md_table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return lines + [""]


def write_md(path: Path, lines: list[str]) -> Path:
    from runner.record.rundir import write_text_atomic

    write_text_atomic(path, "\n".join(lines), durable=False)
    return path


def rel_path(path: Path | None, root: Path) -> str | None:
    return str(path.relative_to(root)) if path else None
