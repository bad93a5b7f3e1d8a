"""Every bad input through the installed console script, as a user types it: one line on stderr
naming what is wrong, exit status 2, no traceback, no run directory. Manifest cases run under a
1 GiB address-space limit, so an alias bomb or a deep nesting cannot hide behind a big machine.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import checkout_env, rlcrate, tiny_manifest
from tests.reliability_cases import Case, cases

EXE = Path(sys.executable).with_name("rlcrate")
MEMORY_LIMIT = 1 << 30


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_case(case: Case, timeout: float = 120) -> tuple[subprocess.CompletedProcess, float]:
    """(the finished process, seconds it took); deep cases need torch: no memory limit."""
    import time

    t0 = time.monotonic()
    proc = subprocess.run(
        [str(EXE), *case.argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=None if case.deep else _limit_memory,
        env=checkout_env({"PATH": "/usr/bin:/bin", "COLUMNS": "200", "HOME": str(Path.home())}),
    )
    return proc, time.monotonic() - t0


def one_clear_line(proc: subprocess.CompletedProcess) -> str | None:
    """Why the answer is not one `error:` line with exit 2 (None when it is)."""
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    if proc.returncode != 2:
        return f"exit status {proc.returncode}"
    if "Traceback" in proc.stderr + proc.stdout:
        return "a traceback"
    if len(errors) != 1 or len(errors[0]) > 1000:
        return f"{len(errors)} error lines: {errors[:3]}"
    return None


def _names(deep: bool) -> list[str]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return [c.name for c in cases(Path(tmp), Path(tmp) / "runs") if c.deep == deep]


@pytest.mark.parametrize("name", _names(deep=False))
def test_bad_input_is_one_line_and_exit_2(name, tmp_path):
    case = {c.name: c for c in cases(tmp_path / "in", tmp_path / "runs")}[name]
    proc, seconds = run_case(case)
    assert one_clear_line(proc) is None, (one_clear_line(proc), proc.stderr[-2000:])
    assert not (tmp_path / "runs").exists(), "a run directory was started"
    assert seconds < 30, f"took {seconds:.0f} s"


@pytest.mark.slow
@pytest.mark.gymnasium
@pytest.mark.parametrize("name", _names(deep=True))
def test_unbuildable_variant_is_one_line_before_any_unit(name, tmp_path):
    """What the schema allows but the algorithm, policy, device or torch refuses: `run` says so
    in one line with exit 2 before making a run directory (and validate --deep says the same)."""
    case = {c.name: c for c in cases(tmp_path / "in", tmp_path / "runs")}[name]
    proc, _ = run_case(case, timeout=300)
    assert one_clear_line(proc) is None, (one_clear_line(proc), proc.stderr[-2000:])
    assert not (tmp_path / "runs").exists(), "a run directory was started"


@pytest.mark.gymnasium
def test_a_good_env_suggestion_is_not_buried_in_ids(write_manifest):
    res = rlcrate("validate", str(write_manifest(tiny_manifest(env__id="CartPol-v1"))))
    assert res.returncode == 2
    [line] = res.stderr.strip().splitlines()
    assert "Did you mean 'CartPole-v1'" in line and "Known ids" not in line, line
    assert "`rlcrate envs gymnasium --all`" in line
    res = rlcrate("validate", str(write_manifest(tiny_manifest(env__id="Qqqq-v9"))))
    [line] = res.stderr.strip().splitlines()
    assert "Known ids: " in line and "`rlcrate envs gymnasium --all`" in line, line
