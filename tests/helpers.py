"""Helpers shared by the tests (importable as tests.helpers)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

# The checkout under test and its tests/ folder: every path a test names starts from one of these,
# never from the test file's own location (the tests live in folders that mirror runner/'s).
ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
# A package of plugins (tests/plugins/rlcrate_toys, with its dist-info: what pip installs), on the
# path of every process the tests start, so its entry points are found as an installed package's.
PLUGINS = TESTS / "plugins"


def checkout_env(base: dict[str, str] | None = None, **extra: str) -> dict[str, str]:
    """An environment for a subprocess that imports this checkout's `runner`, whichever checkout
    the venv's editable install points to (`base`: the environment to start from, os.environ
    by default; a test that clears the environment passes its own)."""
    env = dict(os.environ if base is None else base)
    rest = env.get("PYTHONPATH", "")
    ours = [str(ROOT), str(PLUGINS)]
    parts = ours + [p for p in rest.split(os.pathsep) if p and p not in ours]
    return {**env, "PYTHONPATH": os.pathsep.join(parts), **extra}


def env_spec(**fields: Any) -> Any:
    """An env as the manifest validates it: the options model its `backend` names."""
    from runner.manifest.schema import validate_env

    return validate_env(fields)


def tiny_manifest(**over) -> dict:
    """A CartPole manifest that trains in a few seconds."""
    m = {
        "rlcrate": 1,
        "name": "tiny",
        "env": {"backend": "gymnasium", "id": "CartPole-v1"},
        "parallel": {"envs": 2, "workers": 1, "mode": "dummy"},
        "algo": {"name": "PPO", "params": {"n_steps": 64, "batch_size": 64, "n_epochs": 2}},
        "train": {"timesteps": 512},
        "eval": {"episodes": 3},
        "seeds": [0],
    }
    for key, value in over.items():
        node: dict[str, Any] = m
        *head, last = key.split("__")
        for part in head:
            node = node.setdefault(part, {})
        node[last] = value
    return m


def toy_manifest(**over) -> dict:
    """`tiny_manifest` trained by the torch-free toy_climb trainer (tests/plugins): for the
    tests of the runner around a unit (signals, files, executors, records), where the training
    loop is not what is tested. `algo__params__step_ms` paces it when a test needs time to act."""
    algo = {"trainer": "toy_climb", "name": "climb", "params": {"noise": 0.5}}
    return tiny_manifest(**{"name": "toy", "algo": algo, **over})


def _report_flag(args: tuple[str, ...], report: bool) -> list[str]:
    """`rlcrate run` with `--no-report` unless the test reads the report: report.md and its
    plots cost a run 1.5-3.5 s of CPU (Matplotlib, SciPy, drawing), a few minutes of the suite's
    two cores; tests/report/test_report.py and the tests that pass `report=True` cover them."""
    if args[:1] == ("run",) and not report and "--report" not in args:
        return ["run", "--no-report", *args[1:]]
    return list(args)


def rlcrate(
    *args: str,
    cwd: Path | None = None,
    timeout: float = 600,
    env_extra: dict[str, str] | None = None,
    report: bool = False,
    **kw,
) -> subprocess.CompletedProcess:
    """Run the real console script in a subprocess (what a user types), with `env_extra` set;
    `run` without its report unless `report` (`_report_flag`)."""
    exe = Path(sys.executable).with_name("rlcrate")
    return subprocess.run(
        [str(exe), *_report_flag(args, report)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**checkout_env(), "COLUMNS": "200", **(env_extra or {})},
        **kw,
    )


def one_error_line(res: subprocess.CompletedProcess, *words: str, code: int = 2) -> str:
    """The command's one line on stderr (`error: ...`, exit `code`, no traceback), holding each
    of `words`."""
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == code, (res.returncode, res.stdout[-2000:], res.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr[-3000:]
    assert "Traceback" not in res.stdout + res.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def as_run_by(run: Path, executor: str) -> None:
    """Record in a finished run's provenance.json that `executor` ran it (what `status` asks):
    for the tests that give a local run another executor's records (Slurm's jobs.json)."""
    import json

    prov = json.loads((run / "provenance.json").read_text())
    prov["executor"] = {"name": executor, "settings": {}}
    (run / "provenance.json").write_text(json.dumps(prov))


def run_dir_of(out: Path, name: str) -> Path:
    dirs = sorted((out / name).iterdir())
    assert len(dirs) == 1, dirs
    return dirs[0]


def children_of(pid: int) -> list[int]:
    """Every live descendant of pid, from /proc."""
    kids: dict[int, list[int]] = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(p.name))
    out, todo = [], [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def unit_processes(pid: int) -> list[int]:
    """The unit processes (`python -m runner.run.unit`) among pid's descendants."""
    return processes_of(pid, "runner.run.unit")


def processes_of(pid: int, module: str) -> list[int]:
    """pid's descendants running `python -m module` (their exec done)."""
    found = []
    for k in children_of(pid):
        try:
            if module.encode() in Path(f"/proc/{k}/cmdline").read_bytes():
                found.append(k)
        except OSError:  # ended meanwhile
            continue
    return found


def rlcrate_exe() -> str:
    return str(Path(sys.executable).with_name("rlcrate"))


def start_run(
    path: Path,
    out: Path,
    *extra: str,
    env_extra: dict[str, str] | None = None,
    report: bool = False,
) -> subprocess.Popen:
    """`rlcrate run` in the background, for tests that stop it part way (`report`: as
    `rlcrate`'s)."""
    return subprocess.Popen(
        [rlcrate_exe(), *_report_flag(("run", str(path), "--out", str(out), *extra), report)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env_extra or {})},
    )


def wait_for(pred, timeout: float, what: str) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")
