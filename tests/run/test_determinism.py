"""`rlcrate check-determinism`: two real attempts per backend compared step by step; the
comparison and the level `reproduce` uses, on fixed inputs."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from runner.manifest import Manifest
from runner.provenance import determinism
from runner.record.provenance import DeterminismCheck
from runner.run.check_determinism import first_divergence
from tests.archive_tools import altered
from tests.helpers import ROOT, one_error_line, rlcrate, run_dir_of, tiny_manifest, toy_manifest


def _attempt(rows, params="p"):
    return {"steps": [list(r) for r in rows], "params": params}


def test_first_divergence_names_step_and_stream():
    a = _attempt([("o0", "", ""), ("o1", "a0", "r0"), ("o2", "a1", "r1")])
    assert first_divergence(a, a) is None
    b = _attempt([("o0", "", ""), ("o1", "a0", "r0"), ("o2", "a1", "rX")])
    assert first_divergence(a, b) == {"step": 2, "in": ["rewards"]}
    c = _attempt([("o0", "", ""), ("oX", "aX", "r0"), ("o2", "a1", "r1")])
    assert first_divergence(a, c) == {"step": 1, "in": ["observations", "actions"]}
    assert first_divergence(a, {**a, "params": "q"}) == {"step": 3, "in": ["final parameters"]}
    shorter = first_divergence(a, _attempt(a["steps"][:2]))
    assert shorter is not None and shorter["in"] == ["number of steps"]


def _config(backend="gymnasium", **over):
    cfg: dict[str, Any] = {
        "rlcrate": 1,
        "name": "levels",
        "env": {"backend": backend, "id": "CartPole-v1"},
        "algo": {"device": "cpu", "torch_threads": 1},
    }
    for key, value in over.items():
        section, field = key.split("__")
        cfg[section][field] = value
    return Manifest.model_validate(cfg)


def test_levels_declared_and_overruled_by_a_recorded_check():
    assert determinism.level(_config(), {})[0] == "bitwise"
    assert determinism.level(_config("godot", env__pacing="paced"), {})[0] == "statistical"
    assert determinism.level(_config(algo__device="cuda"), {})[0] == "statistical"
    assert determinism.level(_config(algo__torch_threads=4), {})[0] == "statistical"
    assert determinism.level(_config("isaaclab"), {})[0] == "statistical"
    check = {"result": "diverged", "first_divergence": {"step": 3}}
    diverged = {"gymnasium": DeterminismCheck.model_validate(check)}
    assert determinism.level(_config(), diverged) == (
        "statistical",
        "check-determinism found diverged",
    )


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("RLCRATE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.gymnasium
def test_a_crashing_attempt_is_no_verdict(write_manifest, cache_dir):
    """An attempt that crashes (Adam's capturable=True builds on the CPU and fails in the first
    step) is trouble, exit 2, not the answer "diverged" (exit 1); nothing is recorded."""
    capturable = {"optimizer_kwargs": {"capturable": True}}
    m = tiny_manifest(algo__params={"n_steps": 64, "policy_kwargs": capturable})
    out = rlcrate("check-determinism", str(write_manifest(m)))
    assert out.returncode == 2, out.stdout + out.stderr
    (line,) = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert "attempt 1 failed" in line and "no verdict" in line and "capturable" in line
    assert not (cache_dir / "determinism.json").exists()


@pytest.mark.slow
@pytest.mark.gymnasium
def test_gymnasium_bitwise_and_recorded_in_provenance(write_manifest, tmp_path, cache_dir):
    path = write_manifest(tiny_manifest())
    out = rlcrate("check-determinism", str(path))
    assert out.returncode == 0, out.stdout + out.stderr
    # what was compared, as trained: 128 vector steps of 2 envs (SB3 trains whole rollouts)
    assert (
        "bitwise: observations, actions and rewards of 128 vector steps (256 env steps over 2"
        in (" ".join(out.stdout.split()))
    )
    cached = json.loads((cache_dir / "determinism.json").read_text())
    (entry,) = cached.values()
    assert entry["gymnasium"]["result"] == "bitwise" and entry["gymnasium"]["steps"] == 256
    assert rlcrate("run", str(path), "--out", str(tmp_path / "runs")).returncode == 0
    prov = json.loads((run_dir_of(tmp_path / "runs", "tiny") / "provenance.json").read_text())
    assert prov["determinism"]["gymnasium"]["result"] == "bitwise"


@pytest.mark.slow
@pytest.mark.envpool
def test_envpool_bitwise(write_manifest, cache_dir):
    pytest.importorskip("envpool", reason="envpool is not installed")
    data = yaml.safe_load((ROOT / "manifests" / "quickstart.yaml").read_text())
    out = rlcrate("check-determinism", str(write_manifest(data)), "--steps", "1024")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "bitwise" in out.stdout


@pytest.mark.slow
@pytest.mark.godot
def test_godot_unpaced_bitwise(write_manifest, cache_dir):
    from runner.backends.godot import godot_binary

    try:
        godot_binary()
    except Exception as exc:
        pytest.skip(f"no Godot binary here: {exc}")
    data = yaml.safe_load((ROOT / "manifests" / "ballchase-smoke.yaml").read_text())
    out = rlcrate("check-determinism", str(write_manifest(data)), "--steps", "2048")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "bitwise" in out.stdout


@pytest.mark.slow
@pytest.mark.gymnasium
def test_a_damaged_cache_is_never_copied_on(write_manifest, tmp_path, cache_dir):
    """A string where a check's result belongs in the determinism cache: a run records no check, and
    an archive crafted to carry one is refused by reproduce in one line."""
    cache_dir.mkdir()
    poisoned = {determinism.fingerprint(): {"gymnasium": "bitwise", "resume": {"gymnasium": 5}}}
    (cache_dir / "determinism.json").write_text(json.dumps(poisoned))
    path = write_manifest(toy_manifest(train__timesteps=128))
    res = rlcrate("run", str(path), "--out", str(tmp_path / "runs"))
    assert res.returncode == 0, res.stdout + res.stderr
    run = run_dir_of(tmp_path / "runs", "toy")
    prov = json.loads((run / "provenance.json").read_text())
    assert prov["determinism"] == {} and prov["resume_checked"] == {}
    assert not prov["resume"]["gymnasium"].startswith("approximate: check-determinism")
    archive = tmp_path / "toy.tar.gz"
    assert rlcrate("archive", str(run), "-o", str(archive)).returncode == 0

    def crafted(files):
        prov = json.loads(files["provenance.json"])
        prov["determinism"] = {"gymnasium": "bitwise"}
        files["provenance.json"] = json.dumps(prov).encode()

    bad = altered(archive, tmp_path / "bad.tar.gz", crafted, sums=True)
    res = rlcrate("reproduce", str(bad), "--out", str(tmp_path / "rerun"))
    one_error_line(res, f"{bad}: refused, its provenance.json is damaged (determinism.gymnasium")
    assert not (tmp_path / "rerun").exists()


@pytest.mark.slow
@pytest.mark.gymnasium
def test_a_cache_folder_that_is_a_file_still_gives_the_verdict(write_manifest, tmp_path):
    (tmp_path / "cache").write_text("a file, not a folder")
    path = write_manifest(toy_manifest(train__timesteps=128))
    env = {"RLCRATE_CACHE_DIR": str(tmp_path / "cache")}
    res = rlcrate("check-determinism", str(path), env_extra=env)
    assert res.returncode == 0, res.stdout + res.stderr
    text = " ".join(res.stdout.split())
    assert "bitwise:" in text and "Traceback" not in res.stdout + res.stderr
    assert (
        "warning: the result is not remembered for later runs' provenance: RLCRATE_CACHE_DIR "
        f"{tmp_path / 'cache'} is not a folder"
    ) in text
