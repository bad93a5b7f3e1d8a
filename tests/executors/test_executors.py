"""The executor registry and protocol: options made from each executor's settings, refused
where they do not apply, and a toy executor (tests/plugins_executor: a package whose entry point
is all that registers it) runs a real CartPole run."""

from __future__ import annotations

import json
import os

import pytest

from tests.helpers import PLUGINS, ROOT, rlcrate, run_dir_of, tiny_manifest

# The toy executor's package on the path, as `pip install` would put it
TOY = {
    "PYTHONPATH": os.pathsep.join(
        [str(ROOT), str(PLUGINS), str(ROOT / "tests" / "plugins_executor")]
    )
}


def _one_error(res) -> str:
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert res.returncode == 2 and len(errors) == 1, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    return errors[0]


@pytest.mark.parametrize("command", ["run", "train", "eval", "reproduce"])
def test_every_running_command_takes_every_executors_options(command):
    out = rlcrate(command, "--help", env_extra=TOY)
    assert out.returncode == 0, out.stderr
    for flag in ("--executor", "--ray-address", "--partition", "--profile", "--toy-note"):
        assert flag in out.stdout, (command, flag)
    assert "local | ray | slurm | toy" in out.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--ray-address", "127.0.0.1:1"], "--ray-address applies only to --executor ray"),
        (["-x", "slurm", "--ray-address", "h:1"], "--ray-address applies only to --executor ray"),
        (["-x", "ray", "--partition", "gpu"], "--partition applies only to --executor slurm"),
        (["-x", "ray", "--ray-address", "nonsense"], "expected HOST:PORT or ray://HOST:PORT"),
        (["-x", "potato"], "no executor named 'potato' is installed"),
        (["-x", "rya"], "did you mean 'ray'?"),
    ],
)
def test_options_of_another_executor_are_refused_before_anything(
    write_manifest, tmp_path, args, expected
):
    out = tmp_path / "runs"
    res = rlcrate("run", str(write_manifest(tiny_manifest())), "--out", str(out), *args)
    assert expected in _one_error(res)
    assert not out.exists()  # no half-made run directory


@pytest.mark.slow  # trains a real CartPole agent per unit
@pytest.mark.gymnasium
def test_a_toy_executor_installed_as_a_package_runs_a_real_run(write_manifest, tmp_path):
    manifest = write_manifest(tiny_manifest(seeds=[0, 1]))
    res = rlcrate(
        "run", str(manifest), "--out", str(tmp_path), "-x", "toy", "--toy-note", "ran by toy",
        env_extra=TOY,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    run = run_dir_of(tmp_path, "tiny")
    for seed in (0, 1):
        unit = run / "units" / "default" / f"seed-{seed}"
        assert (unit / "toy.txt").read_text() == "ran by toy"
        assert json.loads((unit / "status.json").read_text())["state"] == "done"
        assert len(json.loads((unit / "eval.json").read_text())["episodes"]) == 3
    assert json.loads((run / "summary.json").read_text())["complete"] is True
    status = rlcrate("status", str(run), env_extra=TOY)
    assert status.returncode == 0 and "still running" not in status.stdout, status.stdout


def _compared_strings(path) -> list[tuple[int, str, str]]:
    """(line, string, the other side's source) of every comparison with a string literal."""
    import ast

    text = path.read_text()
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            for side in sides:
                values = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
                for v in values:
                    if isinstance(v, ast.Constant) and isinstance(v.value, str):
                        other = " ".join(ast.get_source_segment(text, s) or "" for s in sides)
                        found.append((node.lineno, v.value, other))
    return found


def test_no_module_outside_executors_compares_an_executor_name():
    """The name is looked up once (runner.executors); the runner asks the entry after that.
    ("local" is also the name of an image, compared as `image`/`where`: those are not it.)"""
    from runner.plugins import OWN

    EXECUTORS = OWN["executor"]
    bad = []
    for path in sorted((ROOT / "runner").rglob("*.py")):
        if "executors" in path.relative_to(ROOT).parts:
            continue
        for line, value, other in _compared_strings(path):
            if value in EXECUTORS and (value != "local" or "executor" in other):
                bad.append(f"{path.relative_to(ROOT)}:{line}: {other}")
    assert not bad, "executor names compared outside runner/executors:\n" + "\n".join(bad)


def test_no_module_indexes_the_resolved_run_as_a_dict():
    """resolved.yaml is read by runner.manifest.resolved alone, into the typed run model."""
    import re

    reader = ROOT / "runner" / "manifest" / "resolved.py"
    bad = []
    for path in sorted((ROOT / "runner").rglob("*.py")):
        text = path.read_text()
        for n, line in enumerate(text.splitlines(), 1):
            if path != reader and re.search(r"\bres(olved)?\[|read_yaml\([^)]*resolved", line):
                bad.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not bad, "\n".join(bad)


def test_the_local_runner_wakes_when_a_unit_ends_not_at_its_tick():
    """The local executor waits for its units' processes to end (a process descriptor each),
    so the summary follows the last unit at once, not after its next half-second sleep: here a
    wait of up to 60 s returns as soon as the first of two children ends."""
    import subprocess
    import sys
    import time

    from runner.executors.local import wait_for_an_exit

    quick = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    slow = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        t = time.monotonic()
        wait_for_an_exit([slow, quick], 60)
        assert time.monotonic() - t < 30  # woken by the exit (the timeout alone would be 60)
        assert quick.wait(timeout=1) == 0 and slow.poll() is None
    finally:
        slow.kill()
        slow.wait()
