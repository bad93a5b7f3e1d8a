"""What a unit has to track, read from its directory: its resolved variant (as flat parameters),
every TensorBoard scalar (with TensorBoard's own reader), its eval result and its model."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.manifest.resolved import ResolvedRun

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.record.rundir import UnitRef
from runner.record.status import read_status

Point = tuple[int, float, float]  # (step, wall time in seconds, value)


@dataclass
class UnitData:
    unit: UnitRef
    dir: Path
    state: str
    params: dict[str, str]
    scalars: dict[str, list[Point]] = field(default_factory=dict)
    eval: dict[str, float] = field(default_factory=dict)
    eval_file: Path | None = None
    model: Path | None = None


def flat(config: Any, prefix: str = "") -> dict[str, str]:
    """`{algo: {params: {n_steps: 64}}}` -> `{"algo.params.n_steps": "64"}` (lists as YAML)."""
    if isinstance(config, dict) and config:
        out: dict[str, str] = {}
        for key, value in config.items():
            out.update(flat(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    import json

    text = json.dumps(config) if not isinstance(config, str) else config
    return {prefix: text}


def scalars(tb_dir: Path) -> dict[str, list[Point]]:
    """Every scalar under `tb_dir`, per tag, sorted by step (a resumed unit's segments joined:
    a step written again by a later segment keeps the later value)."""
    from tensorboard.backend.event_processing import event_accumulator as ea

    folders = sorted({f.parent for f in tb_dir.rglob("events.out.tfevents.*")})
    by_tag: dict[str, dict[int, Point]] = {}
    for folder in folders:
        acc = ea.EventAccumulator(str(folder), size_guidance={ea.SCALARS: 0})
        try:
            acc.Reload()
        except Exception:  # a damaged file: the others are still tracked
            continue
        for tag in acc.Tags().get("scalars", []):
            points = by_tag.setdefault(tag, {})
            for e in acc.Scalars(tag):
                points[int(e.step)] = (int(e.step), float(e.wall_time), float(e.value))
    return {tag: [pts[s] for s in sorted(pts)] for tag, pts in by_tag.items()}


def _eval(path: Path) -> dict[str, float]:
    from runner.record.eval import read_eval

    ev = read_eval(path)
    if ev is None:
        return {}
    lengths = ev.lengths()
    return {
        "eval/mean_reward": ev.mean,
        "eval/std_reward": ev.std,
        "eval/mean_ep_length": float(sum(lengths) / len(lengths)),
    }


def unit_data(run_dir: Path, res: ResolvedRun, unit: UnitRef) -> UnitData | None:
    """The unit's data, or None for a unit that never started (nothing to track yet)."""
    d = unit.dir(run_dir)
    state = read_status(d).state
    if state == "pending" and not (d / "tb").is_dir():
        return None
    variant = res.variants[unit.variant]
    params = flat(variant.model_dump(mode="json")["config"])
    params.update({"rlcrate.variant": unit.variant, "rlcrate.seed": str(unit.seed)})
    data = UnitData(unit, d, state, params)
    if (d / "tb").is_dir():
        data.scalars = scalars(d / "tb")
    if (d / "eval.json").is_file():
        data.eval, data.eval_file = _eval(d / "eval.json"), d / "eval.json"
    if state == "done" and (d / "model.zip").is_file():
        data.model = d / "model.zip"
    return data
