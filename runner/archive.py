"""`rlcrate archive` / `rlcrate reproduce`: bundle a run for a paper, rerun it and compare."""

from __future__ import annotations

import tarfile
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from runner.errors import UserInputError
from runner.rundir import read_json

SKIP_WITHOUT_MODELS = ("model.zip", "checkpoints")


def archive(run_dir: Path, output: Path, *, models: bool = True) -> Path:
    if not (run_dir / "resolved.yaml").is_file():
        raise UserInputError(f"{run_dir}: not a run directory (no resolved.yaml)")

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        parts = Path(info.name).parts
        if not models and any(p in SKIP_WITHOUT_MODELS for p in parts):
            return None
        return info

    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(f".{output.name}.tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        tar.add(run_dir, arcname=run_dir.name, filter=keep)
    tmp.replace(output)
    return output


def _extract(archive_file: Path, into: Path) -> Path:
    try:
        with tarfile.open(archive_file, "r:gz") as tar:
            tar.extractall(into, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise UserInputError(f"{archive_file}: not an rlcrate archive ({exc})") from None
    found = [p.parent for p in into.glob("*/resolved.yaml")]
    if len(found) != 1:
        raise UserInputError(
            f"{archive_file}: expected one run directory inside, found {len(found)}"
        )
    return found[0]


def compare(old: dict[str, Any], new: dict[str, Any]) -> tuple[Table, bool]:
    table = Table(title="reproduction")
    for col in ("variant", "original eval mean", "rerun eval mean", "identical", "expect (rerun)"):
        table.add_column(col)
    all_ok = True
    for name, v in old["variants"].items():
        nv = new["variants"].get(name, {})
        a, b = v["eval"]["per_seed_mean"], nv.get("eval", {}).get("per_seed_mean", {})
        same = a == b
        met = all(c["met"] for c in nv.get("expect", []))
        all_ok &= met
        table.add_row(
            name,
            _round(v["eval"]["mean"]),
            _round(nv.get("eval", {}).get("mean")),
            "yes" if same else "no",
            "met" if met else "NOT met",
        )
    return table, all_ok


def _round(x: Any) -> str:
    return "-" if x is None else f"{x:,.2f}"


def reproduce(archive_file: Path, out: Path, executor: str, console: Console) -> bool:
    from runner.orchestrate import RunOptions, run

    with tempfile.TemporaryDirectory() as tmp:
        original = _extract(archive_file, Path(tmp))
        old = read_json(original / "summary.json")
        if old is None:
            raise UserInputError(f"{archive_file}: the archived run has no summary.json")
        run_dir = run(
            original / "manifest.yaml", RunOptions(["train", "eval"], executor, out), console
        )
        new = read_json(run_dir / "summary.json") or {"variants": {}}
    table, ok = compare(old, new)
    console.print(table)
    return ok
