"""What a new user meets in their first hour: the manifest's `image:` and `bench:` obeyed, doctor
telling installed from usable, greppable listings, comparisons in a folder of their own, and the
runner installed alone (no extras) driving an image."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from runner import __version__
from runner.checks.load import load_manifest
from runner.images import engine
from runner.report.diff import manifest_differences
from runner.report.segments import Segment, join
from runner.run.orchestrate import manifest_jobs
from tests.helpers import ROOT, rlcrate, tiny_manifest


def _fake(folder: Path, name: str, script: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + textwrap.dedent(script))
    path.chmod(0o755)


@pytest.fixture
def fake_docker(tmp_path, monkeypatch):
    """A docker whose daemon answers, that has the CPU image and logs every `run`."""
    folder, log = tmp_path / "bin", tmp_path / "docker.log"
    folder.mkdir()
    labels = {engine.LABEL_VARIANT: "cpu"}
    inspect = json.dumps([{"Id": "sha256:" + "c" * 64, "Config": {"Labels": labels}}])
    _fake(
        folder,
        "docker",
        f"""
        [ "$1" = "version" ] && echo 27.0 && exit 0
        [ "$1 $2" = "image inspect" ] && echo '{inspect}' && exit 0
        [ "$1" = "run" ] && echo "$@" >> {log} && exit 0
        exit 99
        """,
    )
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("RLCRATE_ENGINE", "docker")
    return log


def test_manifest_image_sends_the_units_into_that_image(fake_docker, write_manifest, tmp_path):
    path = write_manifest(tiny_manifest(image="cpu"))
    out = rlcrate("run", str(path), "--out", str(tmp_path / "runs"))
    assert out.returncode == 0, out.stderr
    argv = fake_docker.read_text().split()
    tag = f"rlcrate-cpu:{__version__}"
    # inside, the runner runs the units right there and decides the jobs from the manifest
    assert argv[argv.index(tag) + 1 :] == [
        "rlcrate",
        "run",
        f"/in/{path.name}",
        "--out",
        "/out",
        "--image",
        "local",
        "--executor",
        "local",
    ]
    assert not (tmp_path / "runs" / "tiny").exists()  # nothing ran here


def test_image_option_overrides_the_manifest(fake_docker, write_manifest, tmp_path):
    path = write_manifest(tiny_manifest(image="cuda"))
    out = rlcrate("run", str(path), "--image", "cpu", "--jobs", "train", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert f"rlcrate-cpu:{__version__}" in fake_docker.read_text()
    assert "--jobs train" in fake_docker.read_text()


def test_image_default_is_local(write_manifest):
    assert load_manifest(write_manifest(tiny_manifest())).image == "local"


def test_bench_section_means_run_benches(write_manifest):
    plain = load_manifest(write_manifest(tiny_manifest(), "a.yaml"))
    benched = load_manifest(write_manifest(tiny_manifest(bench={"steps": 100}), "b.yaml"))
    assert manifest_jobs(plain) == ["train", "eval"]
    assert manifest_jobs(benched) == ["train", "eval", "bench"]


@pytest.mark.slow  # trains and benchmarks a tiny CartPole (about 20 s)
@pytest.mark.gymnasium
def test_run_runs_the_declared_bench_here_with_image_local(write_manifest, tmp_path):
    m = tiny_manifest(image="cpu", bench={"steps": 200, "warmup": 0, "repeats": 1, "train": False})
    path = write_manifest(m)
    out = rlcrate("run", str(path), "--image", "local", "--out", str(tmp_path / "runs"))
    assert out.returncode == 0, out.stderr
    run = next((tmp_path / "runs" / "tiny").iterdir())
    assert (run / "bench.json").is_file() and (run / "units/default/seed-0/eval.json").is_file()
    assert json.loads((run / "provenance.json").read_text())["image"]["tag"] is None  # ran here


def test_doctor_lists_docker_without_daemon_as_not_usable(tmp_path, monkeypatch):
    folder = tmp_path / "bin"
    folder.mkdir()
    _fake(folder, "docker", 'echo "Cannot connect to the Docker daemon" >&2; exit 1\n')
    _fake(folder, "podman", "echo crun; exit 0\n")
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.delenv("RLCRATE_ENGINE", raising=False)
    out = rlcrate("doctor")
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if "engine docker" in line)
    cells = [c.strip() for c in row.split("│")]
    assert cells[2:5] == ["yes", "no", "no daemon answers: Cannot connect to the Docker daemon"]
    # image commands take the first engine that answers, not the first one installed (the probe
    # of whether an engine starts containers is cached per process: ask afresh for these fakes)
    from runner.checks import installed

    installed.container_problem.cache_clear()
    try:
        assert engine.detect_engine() == "podman"
    finally:
        installed.container_problem.cache_clear()


def test_doctor_suggests_installs_only_for_what_could_run():
    out = rlcrate("doctor")
    assert out.returncode == 0, out.stderr
    for line in out.stdout.splitlines():
        if "backend isaaclab" in line:  # its own Python 3.12 environment, not a pip extra here
            assert "pip install 'rlcrate[isaaclab]'" not in line


def test_envs_all_is_one_id_per_line():
    out = rlcrate("envs", "gymnasium", "--all")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "CartPole-v1" in lines and all(" " not in line and line for line in lines)


def test_joined_segments_have_no_dip_and_no_stopped_time():
    first = Segment("PPO_1", 100.0, [(110.0, 100, 1.0), (120.0, 200, 2.0), (130.0, 300, 3.0)])
    # killed after step 300, continued from the checkpoint at 200, an hour later
    second = Segment("resumed-200", 4000.0, [(4005.0, 300, 2.5), (4015.0, 400, 4.0)])
    points, used = join([second, first])
    assert used == 2
    assert [p[1] for p in points] == [100, 200, 300, 400]
    assert [p[2] for p in points] == [1.0, 2.0, 2.5, 4.0]
    assert [p[0] for p in points] == [10.0, 20.0, 25.0, 35.0]  # training seconds, no gap
    scratch = Segment("PPO_2", 5000.0, [(5010.0, 100, 0.5)])
    assert [p[1] for p in join([first, scratch])[0]] == [100]


def test_manifest_differences_are_listed():
    a = {"name": "a", "algo": {"name": "PPO", "params": {}}, "seeds": [0], "variants": {"x": 1}}
    b = {"name": "b", "algo": {"name": "A2C", "params": {"n_steps": 5}}, "seeds": [0]}
    assert manifest_differences(a, b) == [
        ("algo.name", "PPO", "A2C"),
        ("algo.params", {}, "(not set)"),
        ("algo.params.n_steps", "(not set)", 5),
        ("name", "a", "b"),
    ]


def test_resume_hint_is_one_line_when_not_a_terminal(tmp_path):
    from runner.run.orchestrate import resume_hint

    run_dir = tmp_path / ("a-long-folder-name-" * 6) / "run"
    console_out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from rich.console import Console; "
            "from runner.run.orchestrate import resume_hint; "
            f"resume_hint(Console(width=60), Path({str(run_dir)!r}))",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert resume_hint is not None
    expected = f"rlcrate run {run_dir / 'manifest.yaml'} --resume {run_dir}"
    assert expected in console_out.stdout.splitlines(), console_out.stdout


@pytest.mark.slow  # builds and installs rlcrate into a fresh virtual environment (about 1 min)
def test_light_install_validates_doctors_and_drives_an_image(fake_docker, tmp_path):
    venv = tmp_path / "light"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run(
        [str(venv / "bin/pip"), "install", "-q", str(ROOT)], capture_output=True, text=True
    )
    assert pip.returncode == 0, pip.stderr
    assert "License" not in pip.stderr  # no setuptools license-table deprecation banner
    exe = str(venv / "bin/rlcrate")
    py = str(venv / "bin/python")
    for module in ("torch", "numpy", "stable_baselines3"):
        assert subprocess.run([py, "-c", f"import {module}"], capture_output=True).returncode
    quick = str(ROOT / "manifests/quickstart.yaml")
    val = subprocess.run([exe, "validate", quick], capture_output=True, text=True)
    assert val.returncode == 0 and "not checked" in val.stdout, val.stderr
    assert subprocess.run([exe, "doctor"], capture_output=True, text=True).returncode == 0
    here = subprocess.run(
        [exe, "run", quick, "--out", str(tmp_path)], capture_output=True, text=True
    )
    assert here.returncode == 2 and "--image cpu" in here.stderr and "Traceback" not in here.stderr
    there = subprocess.run(
        [exe, "run", quick, "--image", "cpu", "--out", str(tmp_path / "runs")],
        capture_output=True,
        text=True,
    )
    assert there.returncode == 0, there.stderr
    assert "/in/quickstart.yaml" in fake_docker.read_text()
    data = yaml.safe_load(Path(quick).read_text())
    assert data.get("image", "local") == "local"  # quickstart runs here unless told otherwise


def test_image_builds_find_the_checkout():
    from runner.images.build import source_root

    assert (source_root() / "Dockerfile.cpu").is_file()
