"""The runner's side of the dry construction (runner.trainers.sb3.construct, a child process).

Light on purpose: it starts the child, reads its answer and turns it into `Problem` values.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from runner.errors import ManifestError
from runner.manifest.overrides import Override, attribute, cli_args
from runner.manifest.problems import Problem

TIMEOUT_S = 600.0


def construct(
    manifest_path: Path,
    *,
    check_device: bool = True,
    pythons: Mapping[str, str | None] | None = None,
    overrides: Sequence[Override] = (),
) -> None:
    """Build every variant's env and model once, each with the Python its units will run with
    (`pythons`: variant -> interpreter, None for the runner's own); ManifestError with one line
    per variant that cannot be built."""
    groups: dict[str, list[str]] = {}
    for variant, python in (pythons or {}).items():
        groups.setdefault(python or sys.executable, []).append(variant)
    found: list[Problem] = []
    for python, variants in (groups or {sys.executable: []}).items():
        found += _construct_with(python, manifest_path, variants, check_device, overrides)
    if found:
        raise ManifestError(found)


def _construct_with(
    python: str,
    manifest_path: Path,
    variants: list[str],
    check_device: bool,
    overrides: Sequence[Override] = (),
) -> list[Problem]:
    with tempfile.TemporaryDirectory(prefix="rlcrate-construct-") as tmp:
        out = Path(tmp) / "problems.json"
        cmd = [python, "-m", "runner.trainers.sb3.construct", str(manifest_path), str(out)]
        cmd += [f"--only={','.join(variants)}"] if variants else []
        cmd += cli_args(overrides)
        if not check_device:
            cmd.append("--cpu")
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            log, _ = proc.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:  # a hung interpreter or env: one line, not a hang
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            why = f"building the envs and models with {python} did not end within {TIMEOUT_S:.0f} s"
            return [Problem(str(manifest_path), 0, (), f"{why} (hung?); ended it")]
        except BaseException:  # Ctrl-C, SIGTERM: nothing of it stays behind
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # a game or worker it started
        found = json.loads(out.read_text()) if proc.returncode == 0 and out.exists() else None
    source = str(manifest_path)
    if found is None:
        tail = log.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        code = proc.returncode
        why = f"exit status {code}" if code >= 0 else f"killed by {signal.Signals(-code).name}"
        return [Problem(source, 0, (), f"building the envs and models failed ({why}): {tail[0]}")]
    return attribute(
        [Problem(source, line, tuple(loc), msg) for line, loc, msg in found], overrides
    )
