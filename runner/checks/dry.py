"""The runner's side of the dry construction (runner.checks.construct, a child process).

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
from typing import Any

from runner.errors import ManifestError
from runner.manifest.overrides import Override, attribute, cli_args
from runner.manifest.problems import Problem
from runner.manifest.resolved import ResolvedRun, read_resolved

TIMEOUT_S = 600.0


def build_all(
    manifest_path: Path,
    res: ResolvedRun,
    *,
    check_device: bool = True,
    overrides: Sequence[Override] = (),
    remembered: bool = False,
) -> list[str]:
    """Before any unit: every variant built once in its units' Python (`construct`), a warm
    start's parent loaded into it; the warnings to print (observation scales a warm start
    crosses, `calibration_warnings`). `remembered`: skip the variants whose construction passed
    before with nothing it depends on changed since (`checks.dry_cache`), and remember the
    passes (a run does; `validate --deep` builds every time)."""
    from runner.backends import unit_interpreter
    from runner.checks import dry_cache, lineage

    pythons = {n: unit_interpreter(v.config.env.backend) for n, v in res.variants.items()}
    envs = {p: dry_cache.environment(p) for p in set(pythons.values())} if remembered else {}
    keys = {
        n: dry_cache.key(v, envs.get(pythons[n]), check_device=check_device)
        for n, v in res.variants.items()
    }
    todo = {n: python for n, python in pythons.items() if not dry_cache.passed(keys[n])}
    if todo:
        construct(
            manifest_path,
            check_device=check_device,
            pythons=todo,
            overrides=overrides,
            parents=lineage.dry_parents(res),
        )
    for name in todo:
        dry_cache.remember(keys[name])
    return calibration_warnings(res, pythons)


def calibration_warnings(res: ResolvedRun, pythons: Mapping[str, str | None]) -> list[str]:
    """For each warm-started variant whose env is not its parent's: random rollouts of both
    compared (`runner.checks.calibrate`, in the units' Python), one line when scales differ."""
    out: list[str] = []
    for name, variant in res.variants.items():
        if variant.parent is None:
            continue
        theirs = read_resolved(Path(variant.parent.run)).variants[variant.parent.variant]
        pair = (theirs.config.env, variant.config.env)
        if pair[0] == pair[1]:
            continue
        python = pythons.get(name) or sys.executable
        specs = [e.model_dump_json() for e in pair]
        cmd = [python, "-m", "runner.checks.calibrate", "--json", *specs]
        cmd += ["--names", "the parent's env", "this env"]
        try:
            done = subprocess.run(
                cmd, capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired:
            out.append(f"variant {name}: the calibration check did not end in {TIMEOUT_S:.0f} s")
            continue
        text = (done.stdout.strip() or done.stderr.strip()).splitlines()[-1:]
        if done.returncode != 0 and text:  # 1: scales differ; 2: the check could not run
            where = "" if name == "default" else f"variant {name}: "
            envs = " -> ".join(f"{e.backend}:{e.id}" for e in pair)
            out.append(f"{where}warm start from {variant.parent.run_id} ({envs}): {text[0]}")
    return out


def construct(
    manifest_path: Path,
    *,
    check_device: bool = True,
    pythons: Mapping[str, str | None] | None = None,
    overrides: Sequence[Override] = (),
    parents: Mapping[str, dict[str, Any]] | None = None,
) -> None:
    """Build every variant's env and model once, each with the Python its units will run with
    (`pythons`: variant -> interpreter, None for the runner's own); ManifestError with one line
    per variant that cannot be built. `parents`: variant -> the parent unit a warm start loads
    (`checks.lineage.dry_parents`), so its spaces and network are checked too."""
    groups: dict[str, list[str]] = {}
    for variant, python in (pythons or {}).items():
        groups.setdefault(python or sys.executable, []).append(variant)
    found: list[Problem] = []
    for python, variants in (groups or {sys.executable: []}).items():
        found += _construct_with(python, manifest_path, variants, check_device, overrides, parents)
    if found:
        raise ManifestError(found)


def _construct_with(
    python: str,
    manifest_path: Path,
    variants: list[str],
    check_device: bool,
    overrides: Sequence[Override] = (),
    parents: Mapping[str, dict[str, Any]] | None = None,
) -> list[Problem]:
    with tempfile.TemporaryDirectory(prefix="rlcrate-construct-") as tmp:
        out = Path(tmp) / "problems.json"
        cmd = [python, "-m", "runner.checks.construct", str(manifest_path), str(out)]
        cmd += [f"--only={','.join(variants)}"] if variants else []
        cmd += cli_args(overrides)
        cmd += [f"--parents={json.dumps(dict(parents))}"] if parents else []
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
