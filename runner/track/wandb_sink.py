"""Weights & Biases: a run per unit, `group=` the rlcrate run id, the variant as its config,
every TensorBoard scalar (against `global_step`) and the eval result as metrics, model.zip as an
artifact when asked. Offline mode writes W&B's own run folders (under WANDB_DIR) for `wandb sync`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.manifest.resolved import ResolvedRun

import os
import secrets
from pathlib import Path
from typing import Any

from runner.track import state
from runner.track.unit_data import UnitData

INIT_TIMEOUT_S = 30.0
STEP = "global_step"


class WandbSink:
    name = "wandb"

    def __init__(self, run_dir: Path, res: ResolvedRun, spec: dict[str, Any]):
        self.run_dir, self.res, self.spec = run_dir, res, spec
        self.project = spec.get("project") or res.name
        self.mode: Any = spec.get("mode") or "online"  # online | offline (the schema says)
        self.where = f"W&B project {self.project} ({self.mode})"

    def probe(self) -> None:
        """Nothing to ask before `open`: wandb.init bounds its own start (INIT_TIMEOUT_S)."""

    def load(self) -> None:
        """Import wandb (fails here, once, rather than per unit): local work, outside the bounds
        on calls."""
        import wandb  # noqa: F401

    def open(self) -> None:
        """Nothing to open: each unit is a wandb run of its own (`upload`)."""

    def upload(self, data: UnitData) -> bool:
        import wandb

        entry = state.load(data.dir, self.name)
        same = entry.get("project") == self.project and entry.get("mode") == self.mode
        run_id = entry.get("run_id") if same else None
        if not run_id:
            entry = {"project": self.project, "entity": self.spec.get("entity"), "mode": self.mode}
            run_id = entry["run_id"] = secrets.token_hex(4)  # W&B's own ids: 8 of [a-z0-9]
        steps = entry.setdefault("steps", {})
        new = {
            tag: [p for p in points if p[0] > steps.get(tag, -1)]
            for tag, points in data.scalars.items()
        }
        eval_sum = state.fingerprint(data.eval_file) if data.eval_file else None
        model_sum = (
            state.fingerprint(data.model) if data.model and self.spec.get("log_model") else None
        )
        todo = (
            any(new.values())
            or (data.eval and eval_sum != entry.get("eval"))
            or (model_sum and model_sum != entry.get("model"))
            or not entry.get("config")
        )
        if not todo:
            return False
        run = wandb.init(
            project=self.project,
            entity=self.spec.get("entity"),
            group=self.run_dir.name,
            job_type=data.unit.variant,
            name=data.unit.key,
            id=run_id,
            resume="allow",
            config=data.params,
            mode=self.mode,
            dir=os.environ.get("WANDB_DIR"),
            settings=wandb.Settings(init_timeout=INIT_TIMEOUT_S, silent=True, console="off"),
        )
        try:
            entry["config"] = True
            entry["url"] = getattr(run, "url", None)
            self._log(run, new, steps)
            if data.eval and eval_sum != entry.get("eval"):
                run.summary.update(data.eval)
                entry["eval"] = eval_sum
            if model_sum and model_sum != entry.get("model"):
                art = wandb.Artifact(f"model-{run_id}", type="model")
                art.add_file(str(data.model))
                run.log_artifact(art)
                entry["model"] = model_sum
        finally:
            run.finish(exit_code={"failed": 1}.get(data.state, 0))
        state.save(data.dir, self.name, entry)
        return True

    def _log(self, run: Any, new: dict[str, list[Any]], steps: dict[str, int]) -> None:
        """One log call per step, every tag written at that step in it, x-axis `global_step`."""
        run.define_metric(STEP)
        run.define_metric("*", step_metric=STEP)
        by_step: dict[int, dict[str, float]] = {}
        for tag, points in new.items():
            for step, _wall, value in points:
                by_step.setdefault(step, {})[tag] = value
            if points:
                steps[tag] = max(steps.get(tag, -1), points[-1][0])
        for step in sorted(by_step):
            run.log({STEP: step, **by_step[step]})

    def close(self) -> None:
        pass
