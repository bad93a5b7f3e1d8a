"""best.yaml: the manifest a study ran, with its best trial's values set at their paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.record.rundir import write_text_atomic
from runner.record.tune import TrialRecord

BEST_FILE = "best.yaml"


def write_best(run_dir: Path, data: dict[str, Any], best: TrialRecord, how: str) -> Path:
    """best.yaml: `data` (the manifest as run, its tune: section left out) with the best trial's
    values set at their paths, under a comment that says where they came from."""
    from runner.manifest.matrix import set_path
    from runner.manifest.parse import dump_yaml

    data = {k: v for k, v in data.items() if k != "tune"}
    for path, value in best.params.items():
        set_path(data, path, value)
    lines = [
        f"# The best trial of the study in {run_dir} (rlcrate tune): {best.variant},",
        f"# {how} = {best.objective:.6g}, per seed: "
        + ", ".join(f"{s}: {v:.6g}" for s, v in best.per_seed.items() if v is not None)
        + ".",
        "# Its values, set here at their paths:",
        *[f"#   {path}: {value!r}" for path, value in best.params.items()],
        "# The manifest's tune: section is left out: `rlcrate run` this file to run the winner.",
    ]
    text = "\n".join(lines) + "\n" + dump_yaml(data)
    write_text_atomic(run_dir / BEST_FILE, text)
    return run_dir / BEST_FILE
