"""MLflow: one parent run per rlcrate run, a nested run per unit (tag mlflow.parentRunId), the
variant as parameters, every TensorBoard scalar and the eval result as metrics, model.zip as an
artifact when asked. Uses MlflowClient only (no fluent API: no global active run)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.manifest.resolved import ResolvedRun

import os
import re
import secrets
import urllib.request
from pathlib import Path
from typing import Any

from runner.track import state
from runner.track.deadline import PROBE_S
from runner.track.unit_data import UnitData

NONCE_TAG = "rlcrate.nonce"  # set on each tracked run when it is created, saved before that
NONCE = re.compile(r"[0-9a-f]{16}")
BATCH = 500  # MLflow's limit on metrics per log_batch is 1000
MAX_PARAM = 6000  # MLflow's limit on a parameter value's length


def _bounded() -> None:
    """An unreachable server costs seconds, not MLflow's default minutes of retries (the user's
    own MLFLOW_HTTP_* settings win)."""
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "20")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")


class MlflowSink:
    name = "mlflow"

    def __init__(self, run_dir: Path, res: ResolvedRun, spec: dict[str, Any]):
        self.run_dir, self.res, self.spec = run_dir, res, spec
        self.uri = spec.get("uri") or os.environ.get("MLFLOW_TRACKING_URI") or None
        self.experiment = spec.get("experiment") or res.name
        self.where = f"MLflow at {self.uri or 'its default tracking URI'}"
        self.client: Any = None
        self.exp_id = ""
        self.parent_id = ""

    def probe(self) -> None:
        """Fail fast (one small request) when an HTTP server is not there."""
        if not self.uri or not self.uri.startswith(("http://", "https://")):
            return
        try:
            with urllib.request.urlopen(self.uri.rstrip("/") + "/health", timeout=PROBE_S) as r:
                r.read(64)
        except OSError as exc:
            reason = getattr(exc, "reason", exc)
            raise ConnectionError(f"unreachable ({reason})") from None

    def load(self) -> None:
        """Import MLflow: seconds of local work (a minute on a loaded machine, or the first time
        from a fresh install, compiling its modules), not a wait on the server, so outside the
        bounds on calls."""
        _bounded()
        import mlflow.tracking  # noqa: F401

    def open(self) -> None:
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri=self.uri)
        exp = self.client.get_experiment_by_name(self.experiment)
        self.exp_id = exp.experiment_id if exp else self.client.create_experiment(self.experiment)
        tags = {"rlcrate.run": self.run_dir.name, "rlcrate.manifest": self.res.name}
        self.parent_id = self._run_of(self.run_dir, self.run_dir.name, tags)["run_id"]

    def _run_of(self, folder: Path, run_name: str, tags: dict[str, str]) -> dict[str, Any]:
        """The tracked run `folder`'s track.json records: the one it has (a resumed unit
        continues it); the one an upload that was killed had asked for, found by the nonce
        saved before asking (so a kill between the server's answer and the save makes no
        second run); else a new one."""
        entry = state.load(folder, self.name)
        same = entry.get("uri") == self.uri and entry.get("experiment") == self.experiment
        if same and entry.get("run_id"):
            return entry
        nonce = str(entry.get("nonce") or "") if same else ""
        if same and NONCE.fullmatch(nonce):  # data from a file: only a nonce of ours is used
            query = f"tags.`{NONCE_TAG}` = '{nonce}'"
            found = self.client.search_runs([self.exp_id], filter_string=query, max_results=1)
            if found:
                entry["run_id"] = found[0].info.run_id
                state.save(folder, self.name, entry)
                return entry
        else:
            nonce = secrets.token_hex(8)
            entry = {"uri": self.uri, "experiment": self.experiment, "nonce": nonce}
            state.save(folder, self.name, entry)
        run = self.client.create_run(
            self.exp_id, run_name=run_name, tags={**tags, NONCE_TAG: nonce}
        )
        entry["run_id"] = run.info.run_id
        state.save(folder, self.name, entry)
        return entry

    def upload(self, data: UnitData) -> bool:
        """Bring the unit's tracked run up to date; True when anything was sent."""
        entry = self._unit_run(data)
        sent = self._params(entry, data)
        sent = self._metrics(entry, data) or sent
        state.save(data.dir, self.name, entry)
        if self.spec.get("log_model") and data.model is not None:
            model_sum = state.fingerprint(data.model)
            if model_sum != entry.get("model"):
                self.client.log_artifact(entry["run_id"], str(data.model))
                entry["model"], sent = model_sum, True
                state.save(data.dir, self.name, entry)
        self._set_status(entry["run_id"], data.state)
        return sent

    def _unit_run(self, data: UnitData) -> dict[str, Any]:
        """The unit's record, with its tracked run nested under the run's parent."""
        tags = {
            "mlflow.parentRunId": self.parent_id,
            "rlcrate.run": self.run_dir.name,
            "rlcrate.variant": data.unit.variant,
            "rlcrate.seed": str(data.unit.seed),
        }
        return self._run_of(data.dir, data.unit.key, tags)

    def _params(self, entry: dict[str, Any], data: UnitData) -> bool:
        from mlflow.entities import Param

        if entry.get("params"):
            return False
        params = [Param(k, v[:MAX_PARAM]) for k, v in sorted(data.params.items())]
        for i in range(0, len(params), 100):  # MLflow takes 100 params per batch
            self.client.log_batch(entry["run_id"], params=params[i : i + 100])
        entry["params"] = True
        return True

    def _metrics(self, entry: dict[str, Any], data: UnitData) -> bool:
        """The scalars past the last step sent, and the eval result if it changed."""
        from mlflow.entities import Metric

        steps = entry.setdefault("steps", {})
        metrics = [
            Metric(tag, value, int(wall * 1000), step)
            for tag, points in data.scalars.items()
            for step, wall, value in points
            if step > steps.get(tag, -1)
        ]
        eval_sum = state.fingerprint(data.eval_file) if data.eval_file else None
        if data.eval_file and data.eval and eval_sum != entry.get("eval"):
            stamp = int(data.eval_file.stat().st_mtime * 1000)
            metrics += [Metric(k, v, stamp, 0) for k, v in data.eval.items()]
        for i in range(0, len(metrics), BATCH):
            self.client.log_batch(entry["run_id"], metrics=metrics[i : i + BATCH])
        for tag, points in data.scalars.items():
            steps[tag] = max([steps.get(tag, -1), *(p[0] for p in points)])
        entry["eval"] = eval_sum or entry.get("eval")
        return bool(metrics)

    def _set_status(self, run_id: str, unit_state: str) -> None:
        status = {"done": "FINISHED", "failed": "FAILED", "interrupted": "KILLED"}
        if unit_state in status:
            self.client.set_terminated(run_id, status=status[unit_state])
        else:
            self.client.update_run(run_id, status="RUNNING")

    def close(self) -> None:
        self.client.set_terminated(self.parent_id, status="FINISHED")
