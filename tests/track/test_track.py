"""Experiment tracking through the console script: MLflow against a real `mlflow server` on
127.0.0.1 (a SQLite store and artifacts under tmp_path), Weights & Biases in offline mode (its own
run folders), an unreachable server, and a tracker that is not installed."""

from __future__ import annotations

import hashlib
import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import rlcrate, run_dir_of, start_run, tiny_manifest, toy_manifest, wait_for
from tests.mlflow_server import Hold, free_port, serving

mlflow = pytest.importorskip("mlflow", reason="pip install 'rlcrate[track]'")


def _runs(uri: str, experiment: str = "tiny") -> tuple[Any, list]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None
    return client, client.search_runs([exp.experiment_id])


def _children(runs: list) -> list:
    return [r for r in runs if "mlflow.parentRunId" in r.data.tags]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow  # trains CartPole twice (interrupted, resumed) and runs an MLflow server
@pytest.mark.gymnasium
def test_mlflow_params_metrics_artifact_and_resumed_unit(
    write_manifest, tmp_path, mlflow_uri, monkeypatch
):
    # toy_climb (no torch): what is tested is the upload; SB3's own TensorBoard files reach
    # MLflow in the next test, and W&B's after it. 1 ms per vector step: about 5 s of training.
    # Each call may take a minute: CI once saw the test's own server need more than the default
    # 15 s to open a run on a loaded machine (the bounds are test_track_bounds's to test)
    monkeypatch.setenv("RLCRATE_TRACK_CALL_TIMEOUT_S", "60")
    m = toy_manifest(
        name="tiny",
        train__timesteps=8_000,
        train__checkpoint_every=512,
        algo__params={"noise": 0.5, "step_ms": 1},
    )
    path = write_manifest(m)
    uri, experiment = mlflow_uri, "resumed-unit"  # the test run's server: an experiment of its own
    sets = ["-s", f"track.mlflow.uri={uri}", "-s", f"track.mlflow.experiment={experiment}"]
    sets += ["-s", "track.mlflow.log_model=true"]
    proc = start_run(path, tmp_path / "runs", *sets)
    unit = lambda: list((tmp_path / "runs").glob("tiny/*/units/default/seed-0"))  # noqa: E731
    wait_for(
        lambda: bool(unit()) and any((unit()[0] / "checkpoints").glob("*.zip")),
        120,
        "a first checkpoint",
    )
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=90)
    assert proc.returncode == 130, proc.communicate()
    run = run_dir_of(tmp_path / "runs", "tiny")
    unit_dir = run / "units/default/seed-0"
    # the interrupted unit, uploaded later by hand: a tracked run, stopped part way
    up = rlcrate("track", str(run))
    assert up.returncode == 0 and "mlflow: 1 unit(s)" in up.stdout, up.stdout + up.stderr
    client, runs = _runs(uri, experiment)
    (child,) = _children(runs)
    first = client.get_metric_history(child.info.run_id, "rollout/ep_rew_mean")
    assert first and max(p.step for p in first) < 8_000 and child.info.status == "KILLED"
    # resumed (the recorded --set applies): the unit continues the same tracked run
    res = rlcrate("run", str(run / "manifest.yaml"), "--resume", str(run))
    assert res.returncode == 0, res.stdout + res.stderr
    client, runs = _runs(uri, experiment)
    (child,) = _children(runs)
    assert json.loads((unit_dir / "track.json").read_text())["trackers"]["mlflow"]["run_id"] == (
        child.info.run_id
    )
    (parent,) = [r for r in runs if r.info.run_id == child.data.tags["mlflow.parentRunId"]]
    assert parent.info.run_name == run.name and child.info.status == "FINISHED"
    assert child.data.params["algo.params.step_ms"] == "1"
    assert child.data.params["train.timesteps"] == "8000"
    hist = client.get_metric_history(child.info.run_id, "rollout/ep_rew_mean")
    steps = [p.step for p in hist]
    assert steps == sorted(set(steps)) and len(hist) > len(first) and max(steps) >= 7_000
    assert steps[: len(first)] == [p.step for p in first]  # continued, nothing sent twice
    ev = json.loads((unit_dir / "eval.json").read_text())
    assert child.data.metrics["eval/mean_reward"] == pytest.approx(ev["mean"])
    got = Path(client.download_artifacts(child.info.run_id, "model.zip", str(tmp_path)))
    assert _sha(got) == _sha(unit_dir / "model.zip")
    prov = json.loads((run / "provenance.json").read_text())
    where = prov["units"]["default/seed-0"]["track"]["mlflow"]
    assert where == {"uri": uri, "experiment": experiment, "run_id": child.info.run_id}
    # idempotent: a second upload sends nothing
    again = rlcrate("track", str(run))
    assert again.returncode == 0 and "mlflow: 0 unit(s)" in again.stdout, again.stdout
    n = len(client.get_metric_history(child.info.run_id, "rollout/ep_rew_mean"))
    assert n == len(hist)


@pytest.mark.slow  # trains CartPole once; the upload goes through a proxy to the shared server
@pytest.mark.gymnasium
def test_unreachable_server_one_warning_then_track_completes(write_manifest, tmp_path, mlflow_uri):
    port = free_port()  # nothing listens there while the run runs; the proxy does afterwards
    uri = f"http://127.0.0.1:{port}"
    path = write_manifest(
        tiny_manifest(track={"mlflow": {"uri": uri, "experiment": "unreachable-first"}})
    )
    started = time.monotonic()
    out = rlcrate("run", str(path), "--out", str(tmp_path / "runs"))
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout + out.stderr
    warnings = [line for line in text.splitlines() if "warning: track.mlflow" in line]
    assert len(warnings) == 1 and "unreachable" in warnings[0], text
    assert time.monotonic() - started < 120
    run = run_dir_of(tmp_path / "runs", "tiny")
    assert (run / "units/default/seed-0/eval.json").is_file()
    assert not (run / "units/default/seed-0/track.json").exists()
    with serving(Hold(mlflow_uri).handler(), port):  # the recorded uri answers now
        up = rlcrate("track", str(run))
        assert up.returncode == 0 and "mlflow: 1 unit(s)" in up.stdout, up.stdout + up.stderr
    client, runs = _runs(mlflow_uri, "unreachable-first")
    (child,) = _children(runs)
    assert child.data.params["env.id"] == "CartPole-v1"
    assert client.get_metric_history(child.info.run_id, "rollout/ep_rew_mean")
    assert "eval/mean_reward" in child.data.metrics


def _offline_runs(wandb_dir: Path) -> list[Path]:
    return sorted((wandb_dir / "wandb").glob("offline-run-*"))


def _records(run_folder: Path) -> list:
    """The protobuf records of an offline run's .wandb file: LevelDB's log format (32 KiB
    blocks of crc32, length, type, data) behind W&B's 7-byte header; W&B's own Python reader
    is gone from its recent releases (its Go core reads the file)."""
    import struct

    from wandb.proto import wandb_internal_pb2

    (path,) = run_folder.glob("run-*.wandb")
    data = path.read_bytes()
    ident, magic, _version = struct.unpack("<4sHB", data[:7])
    assert ident == b":W&B" and magic == 0xBEE1, (ident, magic)
    block, pos, out, parts = 32768, 7, [], b""
    while pos + 7 <= len(data):
        left = block - pos % block
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if left < 7 or (kind == 0 and length == 0):  # the rest of a block is padding
            pos += left
            continue
        parts += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # a whole record, or the last part of one
            rec = wandb_internal_pb2.Record()  # type: ignore[attr-defined]  # generated
            rec.ParseFromString(parts)
            out.append(rec)
            parts = b""
    return out


def _items(items) -> dict:
    return {i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in items}


@pytest.mark.slow  # trains CartPole once; W&B starts its own service process
@pytest.mark.gymnasium
def test_wandb_offline_folders_hold_params_metrics_and_model(write_manifest, tmp_path):
    pytest.importorskip("wandb", reason="pip install 'rlcrate[track]'")
    path = write_manifest(tiny_manifest())
    env = {"WANDB_DIR": str(tmp_path / "wb"), "WANDB_SILENT": "true"}
    (tmp_path / "wb").mkdir()
    sets = ["-s", "track.wandb={project: tiny-proj, mode: offline, log_model: true}"]
    out = rlcrate("run", str(path), "--out", str(tmp_path / "runs"), *sets, env_extra=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "warning" not in out.stdout + out.stderr
    run = run_dir_of(tmp_path / "runs", "tiny")
    unit_dir = run / "units/default/seed-0"
    entry = json.loads((unit_dir / "track.json").read_text())["trackers"]["wandb"]
    (folder,) = _offline_runs(tmp_path / "wb")
    assert folder.name.endswith(entry["run_id"])
    records = _records(folder)
    run_rec = next(r.run for r in records if r.HasField("run"))
    assert run_rec.project == "tiny-proj" and run_rec.run_group == run.name
    assert run_rec.display_name == "default/seed-0"
    config = _items(run_rec.config.update)
    assert config["algo.params.n_steps"] == "64" and config["env.id"] == "CartPole-v1"
    history = [_items(r.history.item) for r in records if r.HasField("history")]
    steps = [h["global_step"] for h in history if "rollout/ep_rew_mean" in h]
    assert len(steps) >= 2 and steps == sorted(set(steps)) and steps[-1] == 512
    summary: dict = {}
    for r in records:
        if r.HasField("summary"):
            summary.update(_items(r.summary.update))
    ev = json.loads((unit_dir / "eval.json").read_text())
    assert summary["eval/mean_reward"] == pytest.approx(ev["mean"])
    assert any(r.HasField("artifact") and r.artifact.type == "model" for r in records)
    prov = json.loads((run / "provenance.json").read_text())
    assert prov["units"]["default/seed-0"]["track"]["wandb"]["run_id"] == entry["run_id"]
    # nothing new to upload: a second `rlcrate track` leaves the folders as they are
    again = rlcrate("track", str(run), env_extra=env)
    assert again.returncode == 0 and "wandb: 0 unit(s)" in again.stdout, again.stdout
    assert len(_offline_runs(tmp_path / "wb")) == 1


def test_tracker_not_installed_one_line_exit_2_before_any_run_dir(write_manifest, tmp_path):
    # the one fake here: this environment has MLflow, so a sitecustomize hides it
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text("import sys\nsys.modules['mlflow'] = None\n")
    path = write_manifest(tiny_manifest(track={"mlflow": {"uri": "http://127.0.0.1:1"}}))
    out = rlcrate(
        "run", str(path), "--out", str(tmp_path / "runs"), env_extra={"PYTHONPATH": str(hide)}
    )
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "track.mlflow: mlflow is not installed here" in lines[0], lines
    assert "rlcrate[track]" in lines[0] and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("wrapped", [False, True], ids=["plain", "wrapped-by-the-library"])
def test_a_fired_bound_is_a_timeout_whatever_the_call_turned_it_into(wrapped):
    """CI once saw MLflow's client building a JSON Schema validator when the alarm fired: its
    `except` turned the timeout into "SchemaError: Error building ... validator", and the upload's
    warning no longer said what bound it ran past."""
    from runner.track.deadline import CallTimeout, deadline

    def call() -> None:
        try:
            time.sleep(5)
        except BaseException as exc:
            if wrapped:
                raise ValueError("Error building 'definitions' validator") from exc
            raise

    started = time.monotonic()
    with (
        pytest.raises(CallTimeout, match="uploading seed-0 did not finish within 0 s"),
        deadline(0.2, "uploading seed-0"),
    ):
        call()
    assert time.monotonic() - started < 2
    with deadline(0.2, "a quick call"):  # a body that ends in time: no alarm left behind
        pass
    time.sleep(0.3)
    # a library's error before the bound fires stays its own
    with pytest.raises(ValueError, match="its own"), deadline(5, "another call"):
        raise ValueError("its own")
