"""Markdown building blocks: number formatting, tables, and writing a .md file atomically."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def fmt(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "–"
    return f"{x:.{digits}g}" if abs(x) < 10**digits else f"{x:,.0f}"


def md_table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return lines + [""]


def write_md(path: Path, lines: list[str]) -> Path:
    from runner.rundir import write_text_atomic

    write_text_atomic(path, "\n".join(lines), durable=False)
    return path


def rel_path(path: Path | None, root: Path) -> str | None:
    return str(path.relative_to(root)) if path else None
